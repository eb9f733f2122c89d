"""gluon.nn / gluon.contrib.nn behaviour beyond the MXNet fixtures (tests/gluon/test_nn_fixtures.py):
training-only effects (BatchNorm running statistics, Dropout), containers, deferred shapes,
constructor errors, symbolic use, and numpy references for layers whose maths is easy to restate."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember as mx
from ember import autograd, nd
from ember.gluon import HybridBlock, nn
from ember.gluon.block import HybridizeError
from ember.gluon.contrib import nn as cnn

rng = np.random.default_rng(11)


def _fresh(factory):
    with mx.name.NameManager():
        return factory()


# -- BatchNorm running statistics --------------------------------------------------------------------
@pytest.mark.parametrize("hybridize", [False, True])
def test_batchnorm_updates_running_stats_only_when_training(hybridize):
    bn = _fresh(lambda: nn.BatchNorm(momentum=0.7))
    bn.initialize()
    if hybridize:
        bn.hybridize(inline_limit=0)
    x = nd.array(rng.standard_normal((6, 3, 2)) * 2 + 1)
    bn(x)  # predict mode: the running statistics stay at their initial values
    np.testing.assert_array_equal(bn.running_mean.data().asnumpy(), np.zeros(3))
    np.testing.assert_array_equal(bn.running_var.data().asnumpy(), np.ones(3))
    with autograd.record():
        y = bn(x)
    xn = x.asnumpy()
    mean, var = xn.mean(axis=(0, 2)), xn.var(axis=(0, 2))
    np.testing.assert_allclose(bn.running_mean.data().asnumpy(), 0.3 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.data().asnumpy(), 0.7 + 0.3 * var, rtol=1e-5)
    # the training output used the batch statistics
    np.testing.assert_allclose(y.asnumpy(), (xn - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5),
                               rtol=1e-4, atol=1e-5)
    # a predict-mode call afterwards normalises with the running statistics and changes nothing
    before = bn.running_mean.data().asnumpy().copy()
    out = bn(x).asnumpy()
    rm, rv = bn.running_mean.data().asnumpy(), bn.running_var.data().asnumpy()
    np.testing.assert_array_equal(rm, before)
    np.testing.assert_allclose(out, (xn - rm[None, :, None]) / np.sqrt(rv[None, :, None] + 1e-5), rtol=1e-4,
                               atol=1e-5)


def test_batchnorm_use_global_stats_never_updates():
    bn = _fresh(lambda: nn.BatchNorm(use_global_stats=True, in_channels=2))
    bn.initialize()
    x = nd.array(rng.standard_normal((4, 2, 3)))
    with autograd.record():
        y = bn(x)
    np.testing.assert_array_equal(bn.running_mean.data().asnumpy(), np.zeros(2))
    np.testing.assert_allclose(y.asnumpy(), x.asnumpy() / np.sqrt(1 + 1e-5), rtol=1e-5)


def test_batchnorm_center_scale_flags_and_cast():
    bn = _fresh(lambda: nn.BatchNorm(center=False, scale=False))
    assert bn.gamma.grad_req == "null" and bn.beta.grad_req == "null"
    assert bn.running_mean.grad_req == "null" and bn.running_var.grad_req == "null"
    bn.initialize()
    bn(nd.ones((2, 3)))
    bn.cast("float16")  # batch-norm parameters stay float32 in a float16 network, as in MXNet
    assert np.dtype(bn.gamma.dtype) == np.float32 and bn.gamma.data().dtype == np.float32


def test_syncbatchnorm_on_one_device_equals_batchnorm():
    x = nd.array(rng.standard_normal((4, 3, 2, 2)))
    outs = []
    for make in (lambda: nn.BatchNorm(momentum=0.5), lambda: cnn.SyncBatchNorm(num_devices=1, momentum=0.5)):
        layer = _fresh(make)
        layer.initialize()
        with autograd.record():
            outs.append((layer(x).asnumpy(), layer.running_var.data().asnumpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-6)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-6)


def test_syncbatchnorm_names_and_num_devices_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        layer = _fresh(lambda: cnn.SyncBatchNorm())
    assert any("num_devices" in str(w.message) for w in caught)
    assert layer.prefix == "syncbatchnorm0_"
    assert layer._kwargs["key"] == "syncbatchnorm0_"


def test_batchnorm_relu_is_relu_of_batchnorm():
    x = nd.array(rng.standard_normal((5, 3, 2)))
    bn, bnr = _fresh(lambda: nn.BatchNorm()), _fresh(lambda: nn.BatchNormReLU())
    for layer in (bn, bnr):
        layer.initialize()
    with autograd.record():
        a, b = bn(x), bnr(x)
    np.testing.assert_allclose(b.asnumpy(), np.maximum(a.asnumpy(), 0), rtol=1e-6)
    np.testing.assert_allclose(bnr.running_mean.data().asnumpy(), bn.running_mean.data().asnumpy(), rtol=1e-6)


# -- Dropout ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("hybridize", [False, True])
def test_dropout_only_in_training(hybridize):
    drop = nn.Dropout(0.4)
    if hybridize:
        drop.hybridize(inline_limit=0)
    x = nd.ones((200, 50))
    np.testing.assert_array_equal(drop(x).asnumpy(), x.asnumpy())     # predict mode: identity
    with autograd.record():
        y = drop(x).asnumpy()
    kept = y != 0
    assert 0.5 < kept.mean() < 0.7                                     # about 1 - rate kept
    np.testing.assert_allclose(y[kept], 1 / 0.6, rtol=1e-6)            # kept entries scaled by 1/(1-rate)
    with autograd.train_mode():                                        # training mode without recording
        assert (drop(x).asnumpy() == 0).any()
    with autograd.record(train_mode=False):
        np.testing.assert_array_equal(drop(x).asnumpy(), x.asnumpy())


def test_dropout_axes_share_the_mask():
    drop = nn.Dropout(0.5, axes=(1,))
    with autograd.record():
        y = drop(nd.ones((30, 4, 6))).asnumpy()
    assert (y == y[:, :1, :]).all()  # one mask per (batch, column), repeated along axis 1


# -- containers ----------------------------------------------------------------------------------------
def test_sequential_indexing_len_and_slices():
    def make():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(4), nn.Activation("relu"), nn.Dense(2))
        return net
    net = _fresh(make)
    assert len(net) == 3
    assert isinstance(net[1], nn.Activation) and net[-1] is net[2]
    part = net[1:]
    assert isinstance(part, nn.HybridSequential) and len(part) == 2 and part[1] is net[2]
    assert part.prefix == net.prefix
    net.initialize()
    x = nd.array(rng.standard_normal((3, 5)))
    np.testing.assert_allclose(part(net[0](x)).asnumpy(), net(x).asnumpy(), rtol=1e-6)


def test_sequential_hybridize_warns_when_all_children_hybrid():
    net = nn.Sequential()
    net.add(nn.Dense(2), nn.Dense(3))
    with pytest.warns(UserWarning, match="Consider using HybridSequential"):
        net.hybridize(inline_limit=0)


def test_hybrid_sequential_rejects_plain_blocks():
    net = nn.HybridSequential()
    with pytest.raises(ValueError, match="HybridBlock"):
        net.add(nn.Lambda("tanh"))


def test_concurrent_concatenates_children():
    def make():
        net = cnn.HybridConcurrent(axis=1)
        with net.name_scope():
            net.add(nn.Dense(3), cnn.Identity(), nn.Dense(2))
        return net
    net = _fresh(make)
    net.initialize()
    x = nd.array(rng.standard_normal((2, 4)))
    y = net(x)
    assert y.shape == (2, 9)
    np.testing.assert_allclose(y.asnumpy()[:, 3:7], x.asnumpy())
    net.hybridize(inline_limit=0)
    np.testing.assert_allclose(net(x).asnumpy(), y.asnumpy(), rtol=1e-6)
    assert isinstance(net[0:2], cnn.HybridConcurrent)


# -- deferred shapes and symbols -----------------------------------------------------------------------
@pytest.mark.parametrize("make,shape,expected", [
    (lambda: nn.Dense(5), (2, 3, 4), {"dense0_weight": (5, 12), "dense0_bias": (5,)}),
    (lambda: nn.Conv2D(6, 3, groups=2), (1, 4, 5, 5), {"conv0_weight": (6, 2, 3, 3), "conv0_bias": (6,)}),
    (lambda: nn.Conv3DTranspose(4, 2, groups=2), (1, 6, 2, 2, 2), {"conv0_weight": (6, 2, 2, 2, 2), "conv0_bias": (4,)}),
    (lambda: nn.LayerNorm(axis=1), (2, 7, 3), {"layernorm0_gamma": (7,), "layernorm0_beta": (7,)}),
    (lambda: nn.InstanceNorm(), (2, 3, 4), {"instancenorm0_gamma": (3,), "instancenorm0_beta": (3,)}),
])
def test_deferred_shapes_filled_at_first_call(make, shape, expected):
    layer = _fresh(make)
    assert any(0 in p.shape for p in layer.collect_params().values())  # unknown until the first call
    layer.initialize()
    layer(nd.array(rng.standard_normal(shape)))
    assert {n: p.shape for n, p in layer.collect_params().items()} == expected


def test_layers_trace_to_named_symbols():
    net = _fresh(lambda: nn.Dense(3, activation="relu"))
    out = net(mx.sym.var("data"))
    assert out.list_arguments() == ["data", "dense0_weight", "dense0_bias"]
    assert out.name == "dense0_relu_fwd"
    pool = _fresh(lambda: nn.MaxPool2D())
    assert pool(mx.sym.var("data")).name == "pool0_fwd"


def test_pooling_layers_use_layout_and_convention():
    x = nd.array(rng.standard_normal((1, 2, 5)))
    assert nn.MaxPool1D(2)(x).shape == (1, 2, 2)
    assert nn.MaxPool1D(2, ceil_mode=True)(x).shape == (1, 2, 3)
    assert nn.GlobalAvgPool1D()(x).shape == (1, 2, 1)
    np.testing.assert_allclose(nn.GlobalAvgPool1D()(x).asnumpy()[..., 0], x.asnumpy().mean(-1), rtol=1e-6)


# -- numpy references ---------------------------------------------------------------------------------------
def test_group_norm_layer_matches_numpy():
    layer = nn.GroupNorm(num_groups=2)
    layer.initialize()
    x = rng.standard_normal((2, 4, 3)).astype(np.float32)
    g = x.reshape(2, 2, -1)
    ref = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    np.testing.assert_allclose(layer(nd.array(x)).asnumpy(), ref, rtol=1e-4, atol=1e-5)


def test_reflection_pad_matches_numpy():
    x = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    out = nn.ReflectionPad2D(2)(nd.array(x)).asnumpy()
    np.testing.assert_array_equal(out, np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)), mode="reflect"))


def test_pixel_shuffle_matches_numpy():
    x = rng.standard_normal((2, 12, 2, 3)).astype(np.float32)
    out = cnn.PixelShuffle2D((2, 3))(nd.array(x)).asnumpy()
    ref = x.reshape(2, 2, 2, 3, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 9)
    np.testing.assert_array_equal(out, ref)
    x3 = rng.standard_normal((1, 24, 2, 1, 2)).astype(np.float32)
    out3 = cnn.PixelShuffle3D((2, 3, 2))(nd.array(x3)).asnumpy()
    ref3 = x3.reshape(1, 2, 2, 3, 2, 2, 1, 2).transpose(0, 1, 5, 2, 6, 3, 7, 4).reshape(1, 2, 4, 3, 4)
    np.testing.assert_array_equal(out3, ref3)


def test_swish_and_prelu_gradients():
    x = nd.array(rng.standard_normal((3, 4)))
    x.attach_grad()
    with autograd.record():
        y = nn.Swish(2.0)(x)
    y.backward()
    xn = x.asnumpy()
    s = 1 / (1 + np.exp(-2 * xn))
    np.testing.assert_allclose(x.grad.asnumpy(), s + 2 * xn * s * (1 - s), rtol=1e-5)
    prelu = nn.PReLU()
    prelu.initialize()
    np.testing.assert_allclose(prelu.alpha.data().asnumpy(), [0.25])
    with autograd.record():
        y = prelu(x)
    y.backward()
    np.testing.assert_allclose(prelu.alpha.grad().asnumpy(), [np.minimum(xn, 0).sum()], rtol=1e-5)


# -- constructor errors (MXNet's exception classes) ---------------------------------------------------------
@pytest.mark.parametrize("make,err,msg", [
    (lambda: nn.LeakyReLU(-0.1), AssertionError, "no less than 0"),
    (lambda: nn.Conv2D(3, (1, 2, 3)), AssertionError, "list of 2 ints"),
    (lambda: nn.Conv1D(3, 2, layout="NWC"), AssertionError, "NCW"),
    (lambda: nn.Conv2DTranspose(3, 2, output_padding=(1, 1, 1)), AssertionError, "output_padding"),
    (lambda: nn.MaxPool2D(layout="NCW"), AssertionError, "NCHW and NHWC"),
    (lambda: nn.AvgPool3D((2, 2)), AssertionError, "list of 3 ints"),
    (lambda: nn.ReflectionPad2D((1, 2)), AssertionError, None),
    (lambda: nn.Lambda("no_such_op"), AssertionError, "no_such_op"),
    (lambda: nn.Lambda(3), ValueError, "Unrecognized function"),
    (lambda: nn.HybridLambda("no_such_op"), AssertionError, "no_such_op"),
    (lambda: cnn.PixelShuffle2D((1, 2, 3)), AssertionError, "wrong length 3"),
])
def test_constructor_errors(make, err, msg):
    with pytest.raises(err, match=msg):
        make()


@pytest.mark.parametrize("hybridize", [False, True])
def test_channel_last_conv_layers(hybridize):
    x = rng.standard_normal((2, 3, 5, 6)).astype(np.float32)
    first = _fresh(lambda: nn.Conv2D(4, (3, 2), padding=1, in_channels=3))
    last = _fresh(lambda: nn.Conv2D(4, (3, 2), padding=1, layout="NHWC", in_channels=3))
    assert last.weight.shape == (4, 3, 2, 3)  # (F, kh, kw, C), as MXNet infers for NHWC
    for layer in (first, last):
        layer.initialize()
        if hybridize:
            layer.hybridize(inline_limit=0)
    last.weight.set_data(first.weight.data().transpose((0, 2, 3, 1)))
    np.testing.assert_allclose(last(nd.array(x.transpose(0, 2, 3, 1))).asnumpy(),
                               first(nd.array(x)).asnumpy().transpose(0, 2, 3, 1), rtol=1e-5, atol=1e-6)


def test_operator_errors_reach_the_caller():
    dense = nn.Dense(2, in_units=3)
    dense.initialize()
    with pytest.raises(mx.base.MXNetError, match="FullyConnected"):
        dense(nd.ones((2, 4)))


def test_lambda_wraps_functions():
    lam = nn.Lambda(lambda a, b: a * b)
    assert repr(lam) == "Lambda(<lambda>)"
    np.testing.assert_allclose(lam(nd.array([2.0]), nd.array([3.0])).asnumpy(), [6.0])
    hyb = nn.HybridLambda(lambda F, a, b: F.broadcast_add(a, b))
    hyb.hybridize(inline_limit=0)
    np.testing.assert_allclose(hyb(nd.array([2.0]), nd.array([3.0])).asnumpy(), [5.0])
    assert isinstance(hyb, HybridBlock)


def test_hybridized_container_is_one_graph():
    def make():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Conv2D(3, 3, padding=1), nn.InstanceNorm(scale=True), nn.GELU(), nn.GlobalAvgPool2D(),
                    nn.Flatten(), nn.Dense(2))
        return net
    net = _fresh(make)
    net.initialize(mx.init.Xavier())
    x = nd.array(rng.standard_normal((2, 2, 5, 5)))
    ref = net(x).asnumpy()
    net.hybridize(inline_limit=0)
    np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(HybridizeError):
        net(x, x)


def test_sparse_embedding_reads_rows_through_the_trainer():
    layer = _fresh(lambda: cnn.SparseEmbedding(10, 3))
    assert repr(layer) == "SparseEmbedding(10 -> 3, float32)"
    assert layer.weight.stype == "row_sparse" and layer.weight._grad_stype == "row_sparse"
    layer.initialize()
    x = nd.array([3, 4, 2, 4])
    with pytest.raises(RuntimeError, match="Trainer"):  # row_sparse weights are read through a Trainer
        layer(x)
    trainer = mx.gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 1.0})
    with autograd.record():
        y = layer(x)
    y.backward()
    w = layer.weight.row_sparse_data(nd.arange(10)).asnumpy()
    np.testing.assert_allclose(y.asnumpy(), w[[3, 4, 2, 4]])
    np.testing.assert_allclose(layer.weight.grad().asnumpy()[:, 0], [0, 0, 1, 1, 2, 0, 0, 0, 0, 0])
    trainer.step(1)
    np.testing.assert_allclose(layer.weight.row_sparse_data(nd.arange(10)).asnumpy()[4], w[4] - 2, rtol=1e-6)
