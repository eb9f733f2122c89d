"""softmax / log_softmax / SoftmaxActivation / SoftmaxOutput: values, gradients and MXNet's loss semantics."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import analytic_grads, check_grad, run_op  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(5)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis,temp", [(-1, None), (1, 2.0), (0, 0.5)])
def test_softmax_and_log_softmax(axis, temp):
    x = rng.standard_normal((3, 4, 2))
    attrs = {"axis": axis} | ({"temperature": temp} if temp else {})
    t = temp or 1.0
    np.testing.assert_allclose(run_op("softmax", [x], attrs)[0], softmax(x / t, axis), rtol=1e-12)
    np.testing.assert_allclose(run_op("log_softmax", [x], attrs)[0], np.log(softmax(x / t, axis)), rtol=1e-12)
    check_grad("softmax", [x], attrs)
    check_grad("log_softmax", [x], attrs)


def test_softmax_is_stable_and_dtype_attr():
    x = np.array([[1000.0, 0.0, -1000.0]], np.float32)
    out = run_op("softmax", [x], {"dtype": "float64"})[0]
    assert out.dtype == np.float64 and np.all(np.isfinite(out))
    np.testing.assert_allclose(out, [[1, 0, 0]], atol=1e-12)


def test_softmax_use_length_masks_tail():
    x = rng.standard_normal((2, 5))
    length = np.array([3, 5])
    out = run_op("softmax", [x, length], {"use_length": True})[0]
    np.testing.assert_allclose(out[0, :3], softmax(x[0, :3], 0), rtol=1e-12)
    np.testing.assert_array_equal(out[0, 3:], 0)
    np.testing.assert_allclose(out[1], softmax(x[1], 0), rtol=1e-12)
    check_grad("softmax", [x, length], {"use_length": True})


def test_log_softmax_has_no_length_input():
    op = ops.get("log_softmax")
    a = op.parse_attrs({"use_length": True})
    assert op.input_names(a) == ["data"]
    with pytest.raises(OperatorError, match="log_softmax: use_length"):
        op.shapes(a, [(2, 3)])


def test_softmax_bad_axis():
    op = ops.get("softmax")
    with pytest.raises(ShapeError, match="softmax: axis 3"):
        op.shapes(op.parse_attrs({"axis": 3}), [(2, 3)])


@pytest.mark.parametrize("mode,shape", [("channel", (2, 3, 4)), ("instance", (3, 5)), ("instance", (2, 3, 4))])
def test_softmax_activation(mode, shape):
    x = rng.standard_normal(shape)
    out = run_op("SoftmaxActivation", [x], {"mode": mode})[0]
    np.testing.assert_allclose(out, softmax(x, 1 if mode == "channel" else -1), rtol=1e-12)
    check_grad("SoftmaxActivation", [x], {"mode": mode})


def _onehot(label, c):
    return np.eye(c)[label.astype(int)]


def test_softmax_output_gradient_ignores_head_gradient():
    x, label = rng.standard_normal((4, 3)), np.array([0, 2, 1, 2.0])
    out = run_op("SoftmaxOutput", [x, label], {})[0]
    np.testing.assert_allclose(out, softmax(x, 1), rtol=1e-12)
    for head in (np.ones((4, 3)), rng.standard_normal((4, 3))):
        g = analytic_grads("SoftmaxOutput", [x, label], {"grad_scale": 0.5}, [head])
        np.testing.assert_allclose(g[0], (softmax(x, 1) - _onehot(label, 3)) * 0.5, rtol=1e-12)
        assert g[1] is None


def test_softmax_output_ignore_and_normalization():
    x, label = rng.standard_normal((5, 3)), np.array([0, -1, 2, -1, 1.0])
    ref = softmax(x, 1) - np.where(label[:, None] >= 0, _onehot(np.maximum(label, 0), 3), 0)
    ref[label == -1] = 0
    attrs = {"use_ignore": True, "ignore_label": -1}
    g = analytic_grads("SoftmaxOutput", [x, label], attrs | {"normalization": "valid"}, [np.ones((5, 3))])[0]
    np.testing.assert_allclose(g, ref / 3, rtol=1e-12)
    g = analytic_grads("SoftmaxOutput", [x, label], attrs | {"normalization": "batch"}, [np.ones((5, 3))])[0]
    np.testing.assert_allclose(g, ref / 5, rtol=1e-12)


def test_softmax_output_multi_output_and_preserve_shape():
    x = rng.standard_normal((2, 3, 4))
    label = rng.integers(0, 3, (2, 4)).astype(float)
    out = run_op("SoftmaxOutput", [x, label], {"multi_output": True})[0]
    np.testing.assert_allclose(out, softmax(x, 1), rtol=1e-12)
    g = analytic_grads("SoftmaxOutput", [x, label], {"multi_output": True}, [np.ones_like(x)])[0]
    ref = softmax(x, 1) - np.moveaxis(_onehot(label, 3), -1, 1)
    np.testing.assert_allclose(g, ref / 4, rtol=1e-12)  # MXNet divides multi-output gradients by the spatial size
    label2 = rng.integers(0, 4, (2, 3)).astype(float)
    out = run_op("SoftmaxOutput", [x, label2], {"preserve_shape": True})[0]
    np.testing.assert_allclose(out, softmax(x, -1), rtol=1e-12)


def test_softmax_output_label_shapes():
    op = ops.get("SoftmaxOutput")
    assert op.shapes(op.parse_attrs({}), [(8, 10), None])[0][1] == (8,)
    assert op.shapes(op.parse_attrs({"multi_output": True}), [(8, 10, 3, 3), None])[0][1] == (8, 9)
    assert op.shapes(op.parse_attrs({"multi_output": True}), [(8, 10, 3, 3), (8, 3, 3)])[0][1] == (8, 3, 3)
    assert op.shapes(op.parse_attrs({}), [(8, 10), (8, 10)])[0][1] == (8, 10)  # probability labels
    with pytest.raises(ShapeError, match="SoftmaxOutput: label"):
        op.shapes(op.parse_attrs({}), [(8, 10), (7,)])
    with pytest.raises(OperatorError, match="normalization"):
        op.parse_attrs({"normalization": "sum"})


def test_softmax_output_smoothing():
    x, label = rng.standard_normal((3, 4)), np.array([1, 0, 3.0])
    g = analytic_grads("SoftmaxOutput", [x, label], {"smooth_alpha": 0.3}, [np.ones((3, 4))])[0]
    target = np.full((3, 4), 0.1)
    target[np.arange(3), label.astype(int)] = 0.7
    np.testing.assert_allclose(g, softmax(x, 1) - target, rtol=1e-12)
