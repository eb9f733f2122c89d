"""topk / sort / argsort / cumsum against numpy; gradients by finite differences."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import check_grad, run  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import ShapeError  # noqa: E402

rng = np.random.default_rng(17)


@pytest.mark.parametrize("axis", [-1, 0, None])
@pytest.mark.parametrize("ascend", [False, True])
def test_topk_values_indices_both(axis, ascend):
    x = rng.permutation(24).reshape(4, 6).astype(np.float32)
    k = 3
    data = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis
    order = np.argsort(data, axis=ax)
    if not ascend:
        order = np.flip(order, axis=ax)
    want_idx = np.take(order, np.arange(k), axis=ax)
    want_val = np.take_along_axis(data, want_idx, axis=ax)
    attrs = {"axis": axis, "k": k, "is_ascend": ascend}
    idx = run("topk", [x], attrs)
    assert idx.dtype == np.float32
    np.testing.assert_array_equal(idx, want_idx)
    np.testing.assert_array_equal(run("topk", [x], dict(attrs, ret_typ="value")), want_val)
    val, idx2 = run("topk", [x], dict(attrs, ret_typ="both", dtype="int32"))
    assert idx2.dtype == np.int32
    np.testing.assert_array_equal(val, want_val)
    check_grad("topk", [x.astype(np.float64)], dict(attrs, ret_typ="value"), eps=1e-3)


def test_topk_mask_ties_and_errors():
    x = np.array([[1.0, 3.0, 3.0, 0.0]])
    np.testing.assert_array_equal(run("topk", [x], {"k": 2, "ret_typ": "mask"}), [[0, 1, 1, 0]])
    np.testing.assert_array_equal(run("topk", [x], {"k": 3}), [[1, 2, 0]])  # ties: first index first
    op = ops.get("topk")
    assert op.visible_outputs(op.parse_attrs({"ret_typ": "value"})) == 1
    assert op.visible_outputs(op.parse_attrs({"ret_typ": "both"})) == 2
    with pytest.raises(ShapeError, match="topk: k=5 is larger than the axis length 4"):
        op.shapes(op.parse_attrs({"k": 5}), [(1, 4)])


@pytest.mark.parametrize("axis", [-1, 0, None])
@pytest.mark.parametrize("ascend", [True, False])
def test_sort_argsort(axis, ascend):
    x = rng.permutation(12).reshape(3, 4).astype(np.float64)
    data = x.reshape(-1) if axis is None else x
    ax = 0 if axis is None else axis
    want = np.sort(data, axis=ax)
    want = want if ascend else np.flip(want, axis=ax)
    attrs = {"axis": axis, "is_ascend": ascend}
    np.testing.assert_array_equal(run("sort", [x], attrs), want)
    idx = run("argsort", [x], attrs)
    assert idx.dtype == np.float32
    np.testing.assert_array_equal(np.take_along_axis(data, idx.astype(int), axis=ax), want)
    check_grad("sort", [x], attrs, eps=1e-4)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_cumsum(axis):
    x = rng.standard_normal((3, 4))
    out = run("cumsum", [x], {"axis": axis})
    np.testing.assert_allclose(out, np.cumsum(x, axis=axis))
    check_grad("cumsum", [x], {"axis": axis})
    assert run("cumsum", [x.astype(np.int32)], {"axis": 0, "dtype": "float64"}).dtype == np.float64
