"""_softmax_ce_per_sample (ember/ops/nn_softmax_ce.py): Gluon's SoftmaxCrossEntropyLoss as one node,
bit for bit the four ops it replaces, with finite-difference gradients and the loss's errors."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import check_grad, run_op  # noqa: E402

import ember as mx  # noqa: E402
from ember import autograd, gluon, ops  # noqa: E402
from ember.ops import registry  # noqa: E402
from ember.base import ShapeError  # noqa: E402

rng = np.random.default_rng(11)


def _reference(x, label):
    """-log_softmax(x)[i, label[i]] in float64, labels clipped into the classes as pick's."""
    x = x.astype(np.float64)
    z = x - x.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    idx = np.clip(label.reshape(-1).astype(np.int64), 0, x.shape[1] - 1)
    return -logp[np.arange(x.shape[0]), idx], logp


@pytest.mark.parametrize("label_shape", [(6,), (6, 1)])
def test_values_against_numpy_with_labels_clipped_like_pick(label_shape):
    x = rng.standard_normal((6, 5)) * 4
    label = np.array([0, 4, 2, -3, 9, 1], dtype=np.float32).reshape(label_shape)  # -3 and 9 clip to 0 and 4
    loss, logp = run_op("_softmax_ce_per_sample", [x, label])
    want, want_logp = _reference(x, label)
    assert loss.shape == (6,) and logp.shape == (6, 5)
    np.testing.assert_allclose(loss, want, rtol=1e-12)
    np.testing.assert_allclose(logp, want_logp, rtol=1e-12)


def test_gradient_against_finite_differences():
    x = rng.standard_normal((4, 7))
    label = np.array([3, 0, 6, 2], dtype=np.float64)
    check_grad("_softmax_ce_per_sample", [x, label], wrt=[0])


@pytest.mark.parametrize("shape,label_shape", [((2, 3, 4), (2, 3)), ((5,), (5,)), ((4, 3), (3,)), ((4, 3), (4, 2))])
def test_shapes_it_refuses(shape, label_shape):
    with pytest.raises(ShapeError, match="_softmax_ce_per_sample"):
        ops.get("_softmax_ce_per_sample").shapes({}, [shape, label_shape])


def _loss_both_ways(loss_block, pred, label, head):
    """(loss, pred.grad) through the fused node and through the four ops, for the same inputs."""
    results = []
    for fused in (True, False):
        if not fused:
            loss_block._fused = lambda *a: False  # the four ops' path
        try:
            with autograd.record():
                out = loss_block(pred, label)
            out.backward(head)
            results.append((out.asnumpy(), pred.grad.asnumpy().copy()))
        finally:
            loss_block.__dict__.pop("_fused", None)
    return results


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("label_shape", [(16,), (16, 1)])
def test_the_loss_block_gives_the_four_ops_numbers_bit_for_bit(dtype, label_shape):
    loss_block = gluon.loss.SoftmaxCrossEntropyLoss()
    pred = mx.nd.array(rng.standard_normal((16, 10)) * 6, dtype=dtype)
    label = mx.nd.array(rng.integers(-2, 12, size=label_shape).astype(np.float32))
    pred.attach_grad()
    head = mx.nd.array(rng.random(16), dtype=dtype)
    (fused, fused_grad), (plain, plain_grad) = _loss_both_ways(loss_block, pred, label, head)
    assert fused.dtype == plain.dtype == np.dtype(dtype) and fused.shape == plain.shape == (16,)
    np.testing.assert_array_equal(fused, plain)
    np.testing.assert_array_equal(fused_grad, plain_grad)


def test_the_loss_block_calls_one_node_only_in_the_common_imperative_form(monkeypatch):
    calls = []
    real = mx.nd._softmax_ce_per_sample
    monkeypatch.setattr(mx.nd, "_softmax_ce_per_sample", lambda *a: calls.append(1) or real(*a))
    pred, label = mx.nd.array(rng.standard_normal((4, 4))), mx.nd.array([0, 1, 3, 1])
    gluon.loss.SoftmaxCrossEntropyLoss()(pred, label)
    assert len(calls) == 1
    others = [gluon.loss.SoftmaxCrossEntropyLoss(weight=2.0), gluon.loss.SoftmaxCrossEntropyLoss(from_logits=True),
              gluon.loss.SoftmaxCrossEntropyLoss(axis=0), gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False)]
    for block in others:
        block(pred, label if block._sparse_label else mx.nd.ones((4, 4)) / 4)
    gluon.loss.SoftmaxCrossEntropyLoss()(pred, label, mx.nd.ones((4, 1)))  # a sample weight
    gluon.loss.SoftmaxCrossEntropyLoss()(mx.nd.ones((2, 3, 4)), mx.nd.zeros((2, 3)))  # 3-D scores
    assert len(calls) == 1
    hybrid = gluon.loss.SoftmaxCrossEntropyLoss()
    hybrid.hybridize()
    hybrid(pred, label)
    traced = {n.op.name for n in hybrid._cached_op.symbol._nodes() if n.op is not None}
    assert "_softmax_ce_per_sample" not in traced and {"log_softmax", "pick"} <= traced  # MXNet's own ops


def test_a_label_of_the_wrong_size_gets_the_four_ops_error():
    loss_block = gluon.loss.SoftmaxCrossEntropyLoss()
    with pytest.raises(ShapeError, match="pick"):
        loss_block(mx.nd.ones((4, 3)), mx.nd.zeros((5,))).wait_to_read()


def test_an_override_of_log_softmax_applies_to_the_fused_node():
    calls = []
    real = ops.get("log_softmax").kernel("cpu")

    def counted(ctx, attrs, inputs, outputs, aux):
        calls.append(inputs[0].shape)
        real(ctx, attrs, inputs, outputs, aux)
    ops.override("log_softmax", "cpu", counted)
    try:
        out = mx.nd._softmax_ce_per_sample(mx.nd.ones((2, 4)), mx.nd.array([1, 3]))
        np.testing.assert_allclose(out.asnumpy(), [np.log(4)] * 2, rtol=1e-6)
    finally:
        ops.get("log_softmax").kernels.pop("cpu")
        registry._changed()
    assert calls == [(2, 4)]


def test_misuse_takes_the_four_ops_and_their_errors():
    """Labels that are not NDArrays or sit on another device go through the four ops: the same error."""
    loss_block = gluon.loss.SoftmaxCrossEntropyLoss()
    pred = mx.nd.ones((4, 3))
    with pytest.raises(mx.base.ContextError, match="pick"):
        loss_block(pred, mx.nd.zeros((4,), ctx=mx.cpu(1))).wait_to_read()
    with pytest.raises(mx.base.OperatorError, match="pick"):
        loss_block(pred, np.zeros(4)).wait_to_read()


def test_float32_takes_the_native_rows_and_odd_labels_the_kernels(monkeypatch):
    """float32 scores run one native pass per row (native.softmax_ce_rows_f32, its backward too); a
    label that is not a finite class number (NaN) makes it decline, and the registered kernels give
    pick's answer: the same numbers as the four ops either way."""
    from ember.engine import native
    calls = []
    for name in ("softmax_ce_rows_f32", "softmax_ce_rows_backward_f32"):
        real = getattr(native, name)
        monkeypatch.setattr(native, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    loss_block = gluon.loss.SoftmaxCrossEntropyLoss()
    pred = mx.nd.array(rng.standard_normal((8, 5)))
    pred.attach_grad()
    head = mx.nd.array(rng.random(8))
    for labels in ([0, 4, 2, 1, 3, 0, 9, -1], [0, 4, np.nan, 1, 3, 0, 9, -1]):
        calls.clear()
        (fused, fused_grad), (plain, plain_grad) = _loss_both_ways(loss_block, pred, mx.nd.array(labels), head)
        np.testing.assert_array_equal(fused, plain)
        np.testing.assert_array_equal(fused_grad, plain_grad)
        assert calls == ["softmax_ce_rows_f32", "softmax_ce_rows_backward_f32"]
