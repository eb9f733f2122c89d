"""Slicing and indexing ops against numpy; gradients by finite differences; error messages."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import check_grad, grads, run  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(11)


def infer(name, attrs, shapes):
    op = ops.get(name)
    return op.shapes(op.parse_attrs(attrs), shapes)[1]


@pytest.mark.parametrize("attrs,index", [
    ({"begin": (None, 1), "end": (None, None), "step": (1, 2)}, (slice(None), slice(1, None, 2))),
    ({"begin": (8,), "end": (2,), "step": (-2,)}, (slice(8, 2, -2),)),
    ({"begin": (None,), "end": (None,), "step": (-1,)}, (slice(None, None, -1),)),
    ({"begin": (1, -3), "end": (3, -1)}, (slice(1, 3), slice(-3, -1))),
    ({"begin": "(0,)", "end": "(2,)"}, (slice(0, 2),)),
])
def test_slice(attrs, index):
    x = rng.standard_normal((10, 6))
    np.testing.assert_array_equal(run("slice", [x], attrs), x[index])
    check_grad("slice", [x[:4, :5]], attrs if attrs["begin"] != (8,) else {"begin": (3,), "end": (0,), "step": (-2,)})


def test_slice_errors():
    with pytest.raises(ShapeError, match="slice: begin .* and end .* same length"):
        infer("slice", {"begin": (0, 1), "end": (2,)}, [(4, 4)])
    with pytest.raises(ShapeError, match="slice: step must not be 0"):
        infer("slice", {"begin": (0,), "end": (2,), "step": (0,)}, [(4, 4)])
    with pytest.raises(OperatorError, match="slice: required attribute 'begin'"):
        ops.get("slice").parse_attrs({"end": (1,)})


def test_slice_axis():
    x = rng.standard_normal((4, 5, 3))
    np.testing.assert_array_equal(run("slice_axis", [x], {"axis": 1, "begin": 1, "end": 4}), x[:, 1:4])
    np.testing.assert_array_equal(run("slice_axis", [x], {"axis": -1, "begin": -2, "end": None}), x[..., -2:])
    check_grad("slice_axis", [x], {"axis": 1, "begin": 1, "end": 4})
    with pytest.raises(ShapeError, match=r"slice_axis: slice \[3, 2\) is invalid for axis 1 of length 5"):
        infer("slice_axis", {"axis": 1, "begin": 3, "end": 2}, [(4, 5, 3)])


def test_slice_like():
    x = rng.standard_normal((4, 5, 3))
    like = np.zeros((2, 3, 3))
    np.testing.assert_array_equal(run("slice_like", [x, like]), x[:2, :3])
    np.testing.assert_array_equal(run("slice_like", [x, like], {"axes": (1,)}), x[:, :3])
    check_grad("slice_like", [x, like], {"axes": (0, 1)}, wrt=[0])
    with pytest.raises(ShapeError, match="slice_like: shape_like .* larger than data"):
        infer("slice_like", {}, [(2, 2), (3, 1)])


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_take(mode, axis):
    a = rng.standard_normal((4, 5))
    idx = np.array([[0, 3], [7, -1]], np.float32)  # float indices, some out of range
    out = run("take", [a, idx], {"axis": axis, "mode": mode})
    np.testing.assert_array_equal(out, np.take(a, idx.astype(int), axis=axis, mode=mode))
    check_grad("take", [a, idx], {"axis": axis, "mode": mode}, wrt=[0])


def test_take_raise_and_shapes():
    a = rng.standard_normal((4, 5))
    with pytest.raises(IndexError, match="take: index 9 is out of bounds for axis of size 4"):
        run("take", [a, np.array([1, 9])], {"mode": "raise"})
    assert infer("take", {"axis": 1}, [(4, 5, 6), (2, 3)]) == [(4, 2, 3, 6)]
    with pytest.raises(OperatorError, match="take: invalid value 'nope' for attribute 'mode'"):
        ops.get("take").parse_attrs({"mode": "nope"})


@pytest.mark.parametrize("axis,keepdims", [(-1, False), (0, False), (1, True)])
def test_pick(axis, keepdims):
    x = rng.standard_normal((3, 4))
    n = x.shape[axis]
    other = x.shape[1 - (axis % 2)]
    idx = rng.integers(0, n, other).astype(np.float32)
    out = run("pick", [x, idx if not keepdims else idx.reshape(-1, 1) if axis == 1 else idx.reshape(1, -1)],
              {"axis": axis, "keepdims": keepdims})
    want = np.take_along_axis(x, np.expand_dims(idx.astype(int), axis), axis=axis)
    np.testing.assert_array_equal(out, want if keepdims else want.squeeze(axis))
    if not keepdims:
        check_grad("pick", [x, idx], {"axis": axis}, wrt=[0])


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("layout", ["last_axis", "strided", "middle_axis"])
def test_pick_modes_and_layouts(mode, layout):
    """Out-of-range, negative and fractional indices in both modes; the last axis of a contiguous
    array (the flat-index path) and arrays that take the general path give MXNet's answer."""
    x = rng.standard_normal((6, 5, 7)).astype(np.float32)
    axis = 1 if layout == "middle_axis" else 2
    if layout == "strided":
        x = x[:, ::2]
    n = x.shape[axis]
    shape = x.shape[:axis] + x.shape[axis + 1:]
    idx = rng.choice([-9, -1, -0.5, 0, 1.7, 3, n - 1, n, n + 4, 40], size=shape).astype(np.float32)
    i = idx.astype(np.int64)
    i = np.clip(i, 0, n - 1) if mode == "clip" else np.mod(i, n)
    want = np.take_along_axis(x, np.expand_dims(i, axis), axis=axis).squeeze(axis)
    np.testing.assert_array_equal(run("pick", [x, idx], {"axis": axis, "mode": mode}), want)
    g = rng.standard_normal(shape).astype(np.float32)
    want_grad = np.zeros_like(x)
    np.put_along_axis(want_grad, np.expand_dims(i, axis), np.expand_dims(g, axis), axis=axis)
    got = run("_backward_pick", [g, x, idx], {"axis": axis, "mode": mode})
    np.testing.assert_array_equal(got, want_grad)


def test_pick_index_shape_error():
    with pytest.raises(ShapeError, match=r"pick: index has shape \(5,\)"):
        infer("pick", {"axis": 1}, [(3, 4), (5,)])


def test_one_hot():
    idx = np.array([[1, 0], [3, 5]], np.float32)  # 5 is out of range: all off_value
    out = run("one_hot", [idx], {"depth": 4, "on_value": 2.0, "off_value": -1.0, "dtype": "int32"})
    want = np.full((2, 2, 4), -1, np.int32)
    want[0, 0, 1] = want[0, 1, 0] = want[1, 0, 3] = 2
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, want)


def test_where():
    x = rng.standard_normal((3, 4))
    y = rng.standard_normal((3, 4))
    c = (rng.standard_normal((3, 4)) > 0).astype(np.float64)
    np.testing.assert_array_equal(run("where", [c, x, y]), np.where(c != 0, x, y))
    check_grad("where", [c, x, y], wrt=[1, 2])
    rows = np.array([1.0, 0.0, 1.0])
    np.testing.assert_array_equal(run("where", [rows, x, y]), np.where(rows[:, None] != 0, x, y))
    check_grad("where", [rows, x, y], wrt=[1, 2])
    with pytest.raises(ShapeError, match="where: condition has shape"):
        infer("where", {}, [(4,), (3, 4), (3, 4)])
    with pytest.raises(ShapeError, match="where: shapes must be equal, but x has shape"):
        infer("where", {}, [None, (3, 4), (3, 5)])


def test_gather_nd():
    d = rng.standard_normal((3, 4, 2))
    idx = np.array([[0, 2, 2], [1, 3, 3]])
    np.testing.assert_array_equal(run("gather_nd", [d, idx]), d[idx[0], idx[1]])
    check_grad("gather_nd", [d, idx.astype(np.int64)], wrt=[0])
    assert grads("gather_nd", [d, idx], {}, [np.ones((3, 2))])[1] is None


def test_ravel_unravel_match_mxnet():
    # MXNet 1.9.1: ravel_multi_index([[1, 2], [0, 1]], shape=(3, 4)) -> [4, 9]; unravel_index inverts it
    flat = run("ravel_multi_index", [np.array([[1, 2], [0, 1]], np.float32)], {"shape": (3, 4)})
    assert flat.dtype == np.float32
    np.testing.assert_array_equal(flat, [4, 9])
    np.testing.assert_array_equal(run("unravel_index", [np.array([4, 9], np.float32)], {"shape": (3, 4)}),
                                  [[1, 2], [0, 1]])
    with pytest.raises(ShapeError, match="_ravel_multi_index: data .* must have 2 rows"):
        infer("_ravel_multi_index", {"shape": (3, 4)}, [(3, 2)])
    # MXNet 1.9.1 checks no bounds: [[5], [0]] in shape (3, 4) is 5 * 4 + 0 = 20, and a leading -1 works
    np.testing.assert_array_equal(run("ravel_multi_index", [np.array([[5], [0]], np.float32)], {"shape": (3, 4)}),
                                  [20])
    np.testing.assert_array_equal(run("ravel_multi_index", [np.array([[1, 2], [0, 1]], np.float32)],
                                      {"shape": (-1, 4)}), [4, 9])
    np.testing.assert_array_equal(run("unravel_index", [np.array([4, 9, 39], np.float32)], {"shape": (-1, 4)}),
                                  [[1, 2, 9], [0, 1, 3]])


def test_scatter_nd_matches_mxnet():
    # MXNet 1.9.1: scatter_nd([1, 2, 3], [[0, 1, 1], [0, 2, 2]], shape=(2, 3)) -> [[1, 0, 0], [0, 0, 3]]
    out = run("scatter_nd", [np.array([1.0, 2.0, 3.0]), np.array([[0, 1, 1], [0, 2, 2]], np.float32)], {"shape": (2, 3)})
    np.testing.assert_array_equal(out, [[1, 0, 0], [0, 0, 3]])
    idx = np.array([[0, 1], [2, 0]], np.float32)
    check_grad("scatter_nd", [rng.standard_normal(2), idx], {"shape": (2, 3)}, wrt=[0])
    with pytest.raises(ShapeError, match="scatter_nd: data has shape"):
        infer("scatter_nd", {"shape": (2, 3)}, [(3,), (2, 2)])


def test_scatter_set_nd():
    lhs = rng.standard_normal((2, 3))
    idx = np.array([[0, 1], [1, 2]], np.float32)
    out = run("_scatter_set_nd", [lhs, np.array([7.0, 8.0]), idx], {"shape": (2, 3)})
    want = lhs.copy()
    want[0, 1], want[1, 2] = 7, 8
    np.testing.assert_array_equal(out, want)
    check_grad("_scatter_set_nd", [lhs, np.array([7.0, 8.0]), idx], {"shape": (2, 3)}, wrt=[0, 1])


def test_slice_assign_matches_mxnet():
    out = run("_slice_assign", [np.zeros((3, 4)), np.ones((2, 2))], {"begin": (1, 1), "end": (3, 3)})
    np.testing.assert_array_equal(out, [[0, 0, 0, 0], [0, 1, 1, 0], [0, 1, 1, 0]])
    out = run("_slice_assign_scalar", [np.zeros((3, 4))],
              {"scalar": 5, "begin": (None, 1), "end": (None, None), "step": (2, 2)})
    np.testing.assert_array_equal(out, [[0, 5, 0, 5], [0, 0, 0, 0], [0, 5, 0, 5]])
    attrs = {"begin": (1, 1), "end": (3, 3)}
    check_grad("_slice_assign", [rng.standard_normal((3, 4)), rng.standard_normal((2, 2))], attrs)
    check_grad("_slice_assign_scalar", [rng.standard_normal((3, 4))], dict(attrs, scalar=2.0))
    with pytest.raises(ShapeError, match=r"_slice_assign: rhs has shape \(3, 2\) but the slice"):
        infer("_slice_assign", attrs, [(3, 4), (3, 2)])
