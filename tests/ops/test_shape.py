"""Shape ops against numpy and MXNet's documented rules; gradients by finite differences."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import check_grad, grads, run  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(7)


def infer(name, attrs, shapes):
    op = ops.get(name)
    return op.shapes(op.parse_attrs(attrs), shapes)[1]


# expected values taken from MXNet 1.9.1 (mx.nd.reshape on zeros of the given shape)
@pytest.mark.parametrize("dshape,spec,reverse,want", [
    ((2, 3, 4), (0, -1), False, (2, 12)),
    ((2, 3, 4), (-3, -2), False, (6, 4)),
    ((2, 3, 4), (-4, -1, 1, 0, 0), False, (2, 1, 3, 4)),
    ((2, 3, 4), (2, -1, 2), False, (2, 6, 2)),
    ((2, 3, 4), (-4, 1, -1, -2), False, (1, 2, 3, 4)),
    ((10, 5, 4), (-1, 0), True, (50, 4)),
    ((2, 3, 4, 5), (-3, -3), True, (6, 20)),
    ((2, 3, 4, 5), (0, -1), True, (4, 30)),
    ((2, 3, 4), (-2,), True, (2, 3, 4)),
    ((2, 3, 4), (24,), False, (24,)),
])
def test_reshape_special_values(dshape, spec, reverse, want):
    assert infer("Reshape", {"shape": spec, "reverse": reverse}, [dshape]) == [want]
    x = rng.standard_normal(dshape).astype(np.float32)
    out = run("reshape", [x], {"shape": spec, "reverse": reverse})
    np.testing.assert_array_equal(out, x.reshape(want))


@pytest.mark.parametrize("spec,msg", [((5, -1), "cannot reshape"), ((-1, -1), "more than one -1"),
                                      ((7,), "size 24"), ((0, 0, 0, 0), "more dimensions"),
                                      ((-4, 5, -1, -2), "cannot split")])
def test_reshape_errors(spec, msg):
    with pytest.raises(ShapeError, match=msg):
        infer("Reshape", {"shape": spec}, [(2, 3, 4)])


def test_reshape_reverse_with_split_reads_the_reversed_shape_like_mxnet():
    # reversed, -4 comes last with nothing after it: refused (MXNet: "i + 2 < params_len")
    with pytest.raises(ShapeError, match="-4 in shape .* must be followed by two values"):
        infer("Reshape", {"shape": (-4, 1, -1, -2), "reverse": True}, [(2, 3, 4)])
    # reversed, (-4, 1, -1, -2) splits the last axis: MXNet 1.9.1 gives (2, 3, 4, 1)
    assert infer("Reshape", {"shape": (-2, -1, 1, -4), "reverse": True}, [(2, 3, 4)]) == [(2, 3, 4, 1)]


def test_reshape_like_gradient_and_unknown():
    x = rng.standard_normal((2, 6))
    check_grad("Reshape", [x], {"shape": (3, 4)})
    assert infer("Reshape", {"shape": (3, 4)}, [None]) == [None]
    out = run("reshape_like", [x, np.zeros((4, 3))])
    np.testing.assert_array_equal(out, x.reshape(4, 3))
    g = grads("reshape_like", [x, np.zeros((4, 3))], {}, [np.ones((4, 3))])
    assert g[0].shape == (2, 6) and g[1] is None
    with pytest.raises(ShapeError, match="reshape_like"):
        infer("reshape_like", {}, [(2, 6), (5,)])


def test_flatten_expand_squeeze():
    x = rng.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(run("Flatten", [x]), x.reshape(2, 12))
    assert infer("flatten", {}, [(5,)]) == [(5, 1)]
    np.testing.assert_array_equal(run("expand_dims", [x], {"axis": -1}), x[..., None])
    np.testing.assert_array_equal(run("expand_dims", [x], {"axis": 1}), x[:, None])
    y = x[:, :1, None]
    np.testing.assert_array_equal(run("squeeze", [y]), y.squeeze())
    np.testing.assert_array_equal(run("squeeze", [y], {"axis": 1}), y.squeeze(1))
    assert infer("squeeze", {}, [(1, 1)]) == [(1,)]
    with pytest.raises(ShapeError, match=r"squeeze: cannot squeeze axis 0 .* length is 2"):
        infer("squeeze", {"axis": 0}, [(2, 1)])
    with pytest.raises(ShapeError, match="expand_dims: axis 4 is out of range"):
        infer("expand_dims", {"axis": 4}, [(2, 3, 4)])
    for name, attrs in (("Flatten", {}), ("expand_dims", {"axis": 0}), ("squeeze", {})):
        check_grad(name, [y], attrs)


def test_transpose_and_swapaxes():
    x = rng.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(run("transpose", [x]), x.T)
    np.testing.assert_array_equal(run("transpose", [x], {"axes": (1, 0, 2)}), x.transpose(1, 0, 2))
    np.testing.assert_array_equal(run("transpose", [x], {"axes": (-1, 0, 1)}), x.transpose(2, 0, 1))
    check_grad("transpose", [x], {"axes": (2, 0, 1)})
    check_grad("transpose", [x])
    np.testing.assert_array_equal(run("SwapAxis", [x], {"dim1": 0, "dim2": 2}), x.swapaxes(0, 2))
    check_grad("swapaxes", [x], {"dim1": 0, "dim2": 1})
    with pytest.raises(ShapeError, match="transpose: axes .* not a permutation"):
        infer("transpose", {"axes": (0, 0, 1)}, [(2, 3, 4)])
    with pytest.raises(ShapeError, match="transpose: axes .* 3-D"):
        infer("transpose", {"axes": (0, 1)}, [(2, 3, 4)])


def test_reverse():
    x = rng.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(run("flip", [x], {"axis": 1}), x[:, ::-1])
    np.testing.assert_array_equal(run("reverse", [x], {"axis": (0, 2)}), x[::-1, :, ::-1])
    check_grad("reverse", [x], {"axis": (0, 2)})
    with pytest.raises(ShapeError, match="reverse: axis 3"):
        infer("reverse", {"axis": 3}, [(2, 3, 4)])


def test_broadcast_to_like_axis():
    x = rng.standard_normal((2, 1, 3))
    np.testing.assert_array_equal(run("broadcast_to", [x], {"shape": (0, 4, 3)}), np.broadcast_to(x, (2, 4, 3)))
    check_grad("broadcast_to", [x], {"shape": (2, 4, 3)})
    np.testing.assert_array_equal(run("broadcast_axis", [x], {"axis": 1, "size": 5}), np.broadcast_to(x, (2, 5, 3)))
    check_grad("broadcast_axes", [x], {"axis": (1,), "size": (2,)})
    like = np.zeros((2, 4, 3))
    np.testing.assert_array_equal(run("broadcast_like", [x, like]), np.broadcast_to(x, like.shape))
    check_grad("broadcast_like", [x, like], wrt=[0])
    assert infer("broadcast_like", {"lhs_axes": (1,), "rhs_axes": (0,)}, [(2, 1, 3), (7, 9)]) == [(2, 7, 3)]
    with pytest.raises(ShapeError, match=r"broadcast_to: cannot broadcast shape \(2, 1, 3\) to \(3, 4, 3\)"):
        infer("broadcast_to", {"shape": (3, 4, 3)}, [(2, 1, 3)])
    with pytest.raises(ShapeError, match="broadcast_axis: axis 0 .* has length 2, not 1"):
        infer("broadcast_axis", {"axis": 0, "size": 3}, [(2, 1, 3)])


@pytest.mark.parametrize("reps", [(2,), (2, 3), (1, 2, 2, 1)])
def test_tile(reps):
    x = rng.standard_normal((2, 3))
    np.testing.assert_array_equal(run("tile", [x], {"reps": reps}), np.tile(x, reps))
    check_grad("tile", [x], {"reps": reps})


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_repeat(axis):
    x = rng.standard_normal((2, 3))
    attrs = {"repeats": 3, "axis": axis}
    np.testing.assert_array_equal(run("repeat", [x], attrs), np.repeat(x, 3, axis=axis))
    check_grad("repeat", [x], attrs)


def test_cast():
    x = np.array([1.7, -1.7, 2.2])
    out = run("Cast", [x], {"dtype": "int32"})
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [1, -1, 2])
    assert run("cast", [x], {"dtype": "float16"}).dtype == np.float16
    g = grads("Cast", [x.astype(np.float16)], {"dtype": "float32"}, [np.ones(3, np.float32)])
    assert g[0].dtype == np.float16
    with pytest.raises(OperatorError, match="Cast: invalid value 'nope' for attribute 'dtype'"):
        ops.get("Cast").parse_attrs({"dtype": "nope"})


def test_shape_and_size_array():
    x = np.zeros((2, 3, 4))
    out = run("shape_array", [x])
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [2, 3, 4])
    np.testing.assert_array_equal(run("size_array", [x]), [24])


@pytest.mark.parametrize("k", [0, 1, -1])
def test_diag(k):
    v = rng.standard_normal(3)
    np.testing.assert_array_equal(run("diag", [v], {"k": k}), np.diag(v, k))
    check_grad("diag", [v], {"k": k})
    m = rng.standard_normal((2, 3, 4))
    np.testing.assert_array_equal(run("diag", [m], {"k": k, "axis1": 1, "axis2": 2}), np.diagonal(m, k, 1, 2))
    check_grad("diag", [m], {"k": k, "axis1": 1, "axis2": 2})
    check_grad("diag", [m], {"k": k, "axis1": 2, "axis2": 0})


def test_depth_space_roundtrip():
    x = rng.standard_normal((1, 8, 2, 3))
    y = run("depth_to_space", [x], {"block_size": 2})
    assert y.shape == (1, 2, 4, 6)
    # values printed by MXNet 1.9.1: mx.nd.depth_to_space(mx.nd.arange(16).reshape((1, 4, 2, 2)), 2)
    small = run("depth_to_space", [np.arange(16.0).reshape(1, 4, 2, 2)], {"block_size": 2})
    np.testing.assert_array_equal(small, [[[[0, 4, 1, 5], [8, 12, 9, 13], [2, 6, 3, 7], [10, 14, 11, 15]]]])
    np.testing.assert_array_equal(run("space_to_depth", [y], {"block_size": 2}), x)
    check_grad("depth_to_space", [x], {"block_size": 2})
    with pytest.raises(ShapeError, match="depth_to_space: channels 8 must be divisible by block_size"):
        infer("depth_to_space", {"block_size": 3}, [(1, 8, 2, 3)])


def test_identity_like_rhs_and_copyto():
    x = rng.standard_normal((2, 2))
    np.testing.assert_array_equal(run("_identity_with_attr_like_rhs", [x, np.zeros((2, 2))]), x)
    with pytest.raises(ShapeError, match="shapes must be equal"):  # MXNet's ElemwiseShape<2, 1>
        run("_identity_with_attr_like_rhs", [x, np.zeros(3)])
    assert ops.get("_copyto") is ops.get("_copy")


# values printed by MXNet 1.9.1: mx.nd.pad(mx.nd.arange(8).reshape((1, 1, 2, 4)), pad_width=(0,0,0,0,1,1,2,1), ...)
PAD_MXNET = {
    "constant": [[-1, -1, -1, -1, -1, -1, -1], [-1, -1, 0, 1, 2, 3, -1], [-1, -1, 4, 5, 6, 7, -1],
                 [-1, -1, -1, -1, -1, -1, -1]],
    "edge": [[0, 0, 0, 1, 2, 3, 3], [0, 0, 0, 1, 2, 3, 3], [4, 4, 4, 5, 6, 7, 7], [4, 4, 4, 5, 6, 7, 7]],
    "reflect": [[6, 5, 4, 5, 6, 7, 6], [2, 1, 0, 1, 2, 3, 2], [6, 5, 4, 5, 6, 7, 6], [2, 1, 0, 1, 2, 3, 2]],
}


@pytest.mark.parametrize("mode", sorted(PAD_MXNET))
def test_pad(mode):
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 2, 4)
    attrs = {"mode": mode, "pad_width": (0, 0, 0, 0, 1, 1, 2, 1), "constant_value": -1}
    np.testing.assert_array_equal(run("Pad", [x], attrs)[0, 0], PAD_MXNET[mode])
    check_grad("pad", [rng.standard_normal((1, 2, 3, 4))], attrs)
    with pytest.raises(ShapeError, match="Pad: padding on the first two axes must be zero"):
        infer("Pad", dict(attrs, pad_width=(1, 0, 0, 0, 1, 1, 2, 1)), [(1, 1, 2, 4)])


def test_amp_cast_and_multicast():
    x = rng.standard_normal(3).astype(np.float32)
    assert run("amp_cast", [x], {"dtype": "float16"}).dtype == np.float16
    assert run("amp_cast", [np.arange(3, dtype=np.int32)], {"dtype": "float16"}).dtype == np.int32
    a, b = run("amp_multicast", [x.astype(np.float16), x], {"num_outputs": 2})
    assert a.dtype == b.dtype == np.float32  # MXNet 1.9.1: widest type
    a, b = run("amp_multicast", [x.astype(np.float16), x], {"num_outputs": 2, "cast_narrow": True})
    assert a.dtype == b.dtype == np.float16
    g = grads("amp_multicast", [x.astype(np.float16), x], {"num_outputs": 2},
              [np.ones(3, np.float32), np.ones(3, np.float32)])
    assert g[0].dtype == np.float16 and g[1].dtype == np.float32


def test_all_finite():
    assert run("all_finite", [np.array([1.0, 2.0])]).tolist() == [1.0]
    assert run("all_finite", [np.array([1.0, np.inf])]).tolist() == [0.0]
    assert run("all_finite", [np.array([1.0, np.nan], np.float32)]).dtype == np.float32


def test_cast_storage_in_a_graph_copies_the_values_for_every_stype():
    import ember as mx
    x = rng.standard_normal((3, 4)) * (rng.uniform(size=(3, 4)) > 0.5)
    for stype in ("default", "csr", "row_sparse"):
        np.testing.assert_array_equal(run("cast_storage", [x], {"stype": stype}), x)
        assert infer("cast_storage", {"stype": stype}, [(3, 4)]) == [(3, 4)]
    # a graph computes densely: its output holds the values; a sparse gradient array receives the gradient
    sym = mx.sym.cast_storage(mx.sym.var("x", stype="csr"), stype="csr")
    xs, g = mx.nd.array(x).tostype("csr"), mx.nd.zeros((3, 4)).tostype("csr")
    ex = sym.bind(mx.cpu(), {"x": xs}, args_grad={"x": g})
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), x, rtol=1e-6)
    head = rng.standard_normal((3, 4))
    ex.backward(mx.nd.array(head))
    assert g.stype == "csr"
    np.testing.assert_allclose(g.asnumpy(), head, rtol=1e-6)
    with pytest.raises(OperatorError, match="stype"):
        infer("cast_storage", {"stype": "coo"}, [(3, 4)])
