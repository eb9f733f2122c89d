"""gluon.contrib.cnn.DeformableConvolution and ModulatedDeformableConvolution: MXNet's parameters and repr,
a plain convolution while the offsets are zero, the offset convolution's composition otherwise,
hybridized = imperative (values and gradients)."""
import numpy as np

import ember as mx
from ember import autograd, nd
from ember.gluon import nn
from ember.gluon.contrib.cnn import DeformableConvolution, ModulatedDeformableConvolution


def _data(shape, seed=0):
    return nd.array(np.random.RandomState(seed).uniform(-1, 1, shape).astype(np.float32))


def test_parameters_and_repr_as_mxnet():
    layer = DeformableConvolution(10, kernel_size=(3, 2), num_deformable_group=2, activation="relu")
    params = layer.collect_params()
    assert list(params.keys()) == ["deformable_conv0_offset_weight", "deformable_conv0_offset_bias",
                                   "deformable_conv0_deformable_conv_weight", "deformable_conv0_deformable_conv_bias"]
    assert layer.offset_weight.shape == (24, 0, 3, 2) and layer.deformable_conv_weight.shape == (10, 0, 3, 2)
    layer.initialize()
    layer(_data((2, 4, 7, 6)))
    assert layer.offset_weight.shape == (24, 4, 3, 2) and layer.deformable_conv_weight.shape == (10, 4, 3, 2)
    assert repr(layer) == "DeformableConvolution(4 -> 10, kernel_size=(3, 2), stride=(1, 1), " \
                          "Activation(relu))"
    nobias = DeformableConvolution(4, kernel_size=3, padding=1, use_bias=False, offset_use_bias=False)
    assert sorted(nobias.collect_params().keys()) == ["deformable_conv1_deformable_conv_weight",
                                                      "deformable_conv1_offset_weight"]
    assert "padding=(1, 1)" in repr(nobias) and "bias=False" in repr(nobias)


def test_zero_offsets_give_the_plain_convolution():
    x = _data((2, 3, 9, 8))
    layer = DeformableConvolution(5, kernel_size=3, strides=2, padding=1)  # offsets start at zero
    layer.initialize(mx.init.Xavier())
    conv = nn.Conv2D(5, 3, strides=2, padding=1, in_channels=3)
    conv.initialize()
    y = layer(x)
    conv.weight.set_data(layer.deformable_conv_weight.data())
    conv.bias.set_data(nd.array(np.arange(5, dtype=np.float32)))
    layer.deformable_conv_bias.set_data(conv.bias.data())
    np.testing.assert_allclose(layer(x).asnumpy(), conv(x).asnumpy(), rtol=1e-5, atol=1e-5)
    assert y.shape == (2, 5, 5, 4)


def test_learnt_offsets_hybridized_equal_imperative_with_gradients():
    x = _data((2, 4, 8, 8), seed=1)
    results = []
    for hybrid in (False, True):
        mx.random.seed(3)
        layer = DeformableConvolution(6, kernel_size=3, padding=1, num_deformable_group=2,
                                      offset_weight_initializer=mx.init.Uniform(0.3))
        layer.initialize(mx.init.Uniform(0.5))
        if hybrid:
            layer.hybridize()
        with autograd.record():
            y = layer(x)
        y.backward(nd.ones_like(y))
        named = {k[len(layer.prefix):]: p for k, p in layer.collect_params().items()}
        results.append((y.asnumpy(), {k: p.grad().asnumpy() for k, p in named.items()},
                        {k: p.data() for k, p in named.items()}))
    (y0, g0, p0), (y1, g1, _) = results
    np.testing.assert_allclose(y0, y1, rtol=1e-5, atol=1e-6)
    for k in g0:
        np.testing.assert_allclose(g0[k], g1[k], rtol=1e-4, atol=1e-5)
    assert np.abs(g0["offset_weight"]).sum() > 0  # the offsets learn
    # the layer is the offset convolution fed into the registry's DeformableConvolution
    w = p0
    offset = nd.Convolution(x, w["offset_weight"], w["offset_bias"], kernel=(3, 3), pad=(1, 1), num_filter=36)
    want = nd.contrib.DeformableConvolution(x, offset, w["deformable_conv_weight"], w["deformable_conv_bias"],
                                            kernel=(3, 3), pad=(1, 1), num_filter=6, num_deformable_group=2)
    np.testing.assert_allclose(y0, want.asnumpy(), rtol=1e-5, atol=1e-6)


def test_modulated_layer_parameters_and_composition():
    layer = ModulatedDeformableConvolution(6, kernel_size=3, padding=1, num_deformable_group=2,
                                           offset_weight_initializer=mx.init.Uniform(0.2))
    assert list(layer.collect_params().keys()) == [
        "modulated_deformable_conv0_deformable_conv_weight", "modulated_deformable_conv0_deformable_conv_bias",
        "modulated_deformable_conv0_offset_weight", "modulated_deformable_conv0_offset_bias"]
    assert layer.offset_weight.shape == (54, 0, 3, 3)
    layer.initialize(mx.init.Uniform(0.5))
    x = _data((2, 4, 7, 6), seed=4)
    with autograd.record():
        y = layer(x)
    y.backward(nd.ones_like(y))
    p = {k[len(layer.prefix):]: v for k, v in layer.collect_params().items()}
    both = nd.Convolution(x, p["offset_weight"].data(), p["offset_bias"].data(), kernel=(3, 3), pad=(1, 1),
                          num_filter=54)
    want = nd.contrib.ModulatedDeformableConvolution(
        x, both[:, :36], nd.sigmoid(both[:, 36:]) * 2, p["deformable_conv_weight"].data(),
        p["deformable_conv_bias"].data(), kernel=(3, 3), pad=(1, 1), num_filter=6, num_deformable_group=2)
    np.testing.assert_allclose(y.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    assert np.abs(p["offset_weight"].grad().asnumpy()).sum() > 0
    layer.hybridize()
    np.testing.assert_allclose(layer(x).asnumpy(), y.asnumpy(), rtol=1e-5, atol=1e-6)


def test_mxnet_saved_layers_load_and_give_mxnet_outputs():
    import os
    where = os.path.join(os.path.dirname(__file__), "..", "data", "deformable", "layers")
    fx = np.load(os.path.join(where, "outputs.npz"))
    x = nd.array(fx["x"])
    for cls in (DeformableConvolution, ModulatedDeformableConvolution):
        layer = cls(6, kernel_size=3, padding=1, num_deformable_group=2)
        layer.load_parameters(os.path.join(where, f"{cls.__name__}.params"))
        np.testing.assert_allclose(layer(x).asnumpy(), fx[cls.__name__], rtol=1e-4, atol=1e-5)
