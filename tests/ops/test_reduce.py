"""Reductions against numpy: axis/keepdims/exclude semantics, dtypes, gradients, errors."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import check_grad, grads, run  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(5)
REF = {"sum": np.sum, "mean": np.mean, "max": np.max, "min": np.min, "prod": np.prod,
       "nansum": np.nansum, "nanprod": np.nanprod}
CASES = [({}, None), ({"axis": 1}, (1,)), ({"axis": (0, 2)}, (0, 2)), ({"axis": -1, "keepdims": True}, (2,)),
         ({"axis": 1, "exclude": True}, (0, 2)), ({"axis": "(0, 1)", "keepdims": "True"}, (0, 1))]


@pytest.mark.parametrize("name", sorted(REF))
@pytest.mark.parametrize("attrs,axes", CASES)
def test_values(name, attrs, axes):
    x = rng.uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    out = run(name, [x], attrs)
    keep = str(attrs.get("keepdims")) == "True"
    want = REF[name](x.astype(np.float64), axis=axes, keepdims=keep)
    want = np.asarray(want).reshape(want.shape if np.ndim(want) else (1,))
    assert out.dtype == np.float32 and out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_reduce_all_gives_shape_1():
    x = np.ones((2, 3), np.float32)
    assert run("sum", [x]).shape == (1,)
    assert run("sum", [x], {"axis": ()}).shape == (1,)
    assert run("sum", [x], {"axis": (0, 1), "keepdims": True}).shape == (1, 1)


@pytest.mark.parametrize("name", sorted(REF))
@pytest.mark.parametrize("attrs", [{}, {"axis": 1}, {"axis": (0, 2), "keepdims": True}, {"axis": 0, "exclude": True}])
def test_gradients(name, attrs):
    x = rng.uniform(0.5, 1.5, (2, 3, 2))
    check_grad(name, [x], attrs, rtol=1e-5)


def test_max_gradient_goes_to_every_tie_like_mxnet():
    x = np.array([[1.0, 1.0], [0.0, 2.0]], np.float32)
    g = grads("max", [x], {"axis": 1}, [np.ones(2, np.float32)])
    np.testing.assert_array_equal(g[0], [[1, 1], [0, 1]])


def test_nansum_skips_nan():
    x = np.array([[1.0, np.nan], [2.0, 3.0]])
    np.testing.assert_array_equal(run("nansum", [x], {"axis": 1}), [1.0, 5.0])
    g = grads("nansum", [x], {"axis": 1}, [np.ones(2)])
    np.testing.assert_array_equal(g[0], [[1, 0], [1, 1]])


def test_axis_errors():
    with pytest.raises(ShapeError, match="sum: axis 3 is out of range for a 2-D input"):
        ops.get("sum").shapes(ops.get("sum").parse_attrs({"axis": 3}), [(2, 3)])
    with pytest.raises(ShapeError, match="sum: axis .* twice"):
        ops.get("sum").shapes(ops.get("sum").parse_attrs({"axis": (1, -1)}), [(2, 3)])
    with pytest.raises(OperatorError, match="sum: invalid value"):
        ops.get("sum").parse_attrs({"axis": "x"})


@pytest.mark.parametrize("ord_", [1, 2])
@pytest.mark.parametrize("attrs", [{}, {"axis": 1}, {"axis": (0, 1), "keepdims": True}])
def test_norm(ord_, attrs):
    x = rng.standard_normal((3, 4)).astype(np.float32)
    out = run("norm", [x], dict(attrs, ord=ord_))
    axis = attrs.get("axis")
    want = np.sum(np.abs(x), axis=axis, keepdims=attrs.get("keepdims", False)) if ord_ == 1 else \
        np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=axis, keepdims=attrs.get("keepdims", False)))
    np.testing.assert_allclose(out, np.asarray(want).reshape(out.shape), rtol=1e-5)
    assert out.shape == (np.asarray(want).shape or (1,))
    check_grad("norm", [x.astype(np.float64)], dict(attrs, ord=ord_))


def test_norm_bad_ord():
    with pytest.raises(OperatorError, match="norm: ord must be 1 or 2"):
        ops.get("norm").shapes(ops.get("norm").parse_attrs({"ord": 3}), [(2,)])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name):
    x = rng.standard_normal((3, 5)).astype(np.float32)
    ref = getattr(np, name)
    out = run(name, [x], {"axis": 1})
    assert out.dtype == np.float32 and out.shape == (3,)
    np.testing.assert_array_equal(out, ref(x, axis=1))
    np.testing.assert_array_equal(run(name, [x], {"axis": 0, "keepdims": True}), ref(x, axis=0)[None])
    flat = run(name, [x])
    assert flat.shape == (1,) and flat[0] == ref(x)
    assert run(name, [x.astype(np.int32)], {"axis": 1}).dtype == np.int32
    g = grads(name, [x], {"axis": 1}, [np.ones(3, np.float32)])
    assert g[0].shape == x.shape and not g[0].any()


def test_argmax_channel():
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run("argmax_channel", [x]), np.argmax(x, axis=-1))


def test_backward_shape_check():
    op = ops.get("_backward_sum")
    with pytest.raises(ShapeError, match=r"_backward_sum: ograd has shape \(2,\)"):
        op.shapes(op.parse_attrs({"axis": 1}), [(2,), (4, 3), None])


def test_mean_of_integers_keeps_dtype():
    x = np.array([[1, 2], [3, 5]], np.int32)
    out = run("mean", [x], {"axis": 1})
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [1, 4])


@pytest.mark.parametrize("axes,keepdims", [((1,), False), ((0, 2), True), (None, False)])
def test_moments(axes, keepdims):
    x = rng.standard_normal((2, 3, 4))
    mean, var = run("moments", [x], {"axes": axes, "keepdims": keepdims})
    np.testing.assert_allclose(mean, np.asarray(np.mean(x, axis=axes, keepdims=keepdims)).reshape(mean.shape))
    np.testing.assert_allclose(var, np.asarray(np.var(x, axis=axes, keepdims=keepdims)).reshape(var.shape))
    check_grad("moments", [x[:, :2, :2]], {"axes": axes, "keepdims": keepdims})


def test_histogram_matches_mxnet():
    x = np.array([0.1, 0.5, 0.9, 1.0, 2.0], np.float32)
    counts, edges = run("_histogram", [x], {"bin_cnt": 4, "range": "(0, 1)"})
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts, [1, 0, 1, 2])  # MXNet 1.9.1 gives the same
    np.testing.assert_allclose(edges, [0, 0.25, 0.5, 0.75, 1])
    counts, _ = run("_histogram", [x, np.array([0, 0.5, 2], np.float32)], {})
    np.testing.assert_array_equal(counts, [1, 4])
    with pytest.raises(OperatorError, match="_histogram: bin_cnt needs range"):
        run("_histogram", [x], {"bin_cnt": 4})
