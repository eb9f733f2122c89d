"""NDArray operators against numpy: broadcasting, scalars, reflected and in-place forms."""
import operator

import numpy as np
import pytest

import ember as mx

RNG = np.random.default_rng(0)

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.mod]
SHAPES = [((2, 3), (2, 3)), ((2, 3), (1, 3)), ((4, 1, 3), (2, 1)), ((3,), (2, 3))]


def _pos(shape):
    return RNG.uniform(0.5, 2.0, size=shape).astype(np.float32)


@pytest.mark.parametrize("fn", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("shapes", SHAPES, ids=str)
def test_binary_broadcast_matches_numpy(fn, shapes):
    a, b = _pos(shapes[0]), _pos(shapes[1])
    got = fn(mx.nd.array(a), mx.nd.array(b))
    assert isinstance(got, mx.nd.NDArray)
    np.testing.assert_allclose(got.asnumpy(), fn(a, b), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("scalar", [2, 0.5, np.float32(3.0)])
def test_scalar_and_reflected(fn, scalar):
    a = _pos((3, 4))
    x = mx.nd.array(a)
    np.testing.assert_allclose(fn(x, scalar).asnumpy(), fn(a, np.float32(scalar)), rtol=1e-5)
    np.testing.assert_allclose(fn(scalar, x).asnumpy(), fn(np.float32(scalar), a), rtol=1e-5)


@pytest.mark.parametrize("op,ref", [(operator.iadd, np.add), (operator.isub, np.subtract),
                                    (operator.imul, np.multiply), (operator.itruediv, np.divide)])
def test_inplace_writes_same_storage(op, ref):
    a, b = _pos((2, 3)), _pos((1, 3))
    x = mx.nd.array(a)
    chunk, data = x._chunk, x._data
    view = x[1:2]  # a view made before the in-place op sees the update
    y = op(x, mx.nd.array(b))
    assert y is x and x._chunk is chunk and x._data is data
    np.testing.assert_allclose(x.asnumpy(), ref(a, b), rtol=1e-6)
    np.testing.assert_allclose(view.asnumpy(), ref(a, b)[1:2], rtol=1e-6)
    x = op(x, 2)
    np.testing.assert_allclose(x.asnumpy(), ref(ref(a, b), np.float32(2)), rtol=1e-6)


def test_inplace_shape_mismatch_is_an_error_and_leaves_data():
    x = mx.nd.array(np.ones((3,), np.float32))
    with pytest.raises(mx.base.ShapeError):
        x += mx.nd.ones((2, 3))
    np.testing.assert_array_equal(x.asnumpy(), np.ones(3))


@pytest.mark.parametrize("op", [operator.eq, operator.ne, operator.gt, operator.ge, operator.lt, operator.le])
def test_comparisons_give_float_arrays(op):
    a = np.array([[1, 2, 3], [3, 2, 1]], np.float32)
    b = np.array([2, 2, 2], np.float32)
    got = op(mx.nd.array(a), mx.nd.array(b))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.asnumpy(), op(a, b).astype(np.float32))
    np.testing.assert_array_equal(op(mx.nd.array(a), 2).asnumpy(), op(a, 2).astype(np.float32))


def test_unary_operators():
    a = np.array([[-1.5, 2.0], [0.0, -3.0]], np.float32)
    x = mx.nd.array(a)
    np.testing.assert_array_equal((-x).asnumpy(), -a)
    assert (+x) is x
    np.testing.assert_array_equal(abs(x).asnumpy(), np.abs(a))


def test_nd_helper_functions_take_scalars_either_side():
    a = _pos((2, 2))
    x = mx.nd.array(a)
    np.testing.assert_allclose(mx.nd.subtract(3, x).asnumpy(), 3 - a, rtol=1e-6)
    np.testing.assert_allclose(mx.nd.power(x, 2).asnumpy(), a ** 2, rtol=1e-6)
    np.testing.assert_allclose(mx.nd.maximum(x, 1.0).asnumpy(), np.maximum(a, 1.0))
    np.testing.assert_array_equal(mx.nd.greater(1.0, x).asnumpy(), (1.0 > a).astype(np.float32))
    assert mx.nd.add(2, 3) == 5


def test_unsupported_operand_type_is_type_error():
    x = mx.nd.ones((2,))
    with pytest.raises(TypeError, match="not supported"):
        x + np.ones(2)
    with pytest.raises(TypeError):
        x + "a"


def test_generated_op_functions_and_out():
    a, b = _pos((2, 3)), _pos((2, 3))
    x, y = mx.nd.array(a), mx.nd.array(b)
    out = mx.nd.zeros((2, 3))
    res = mx.nd.broadcast_add(x, y, out=out, name="ignored")
    assert res is out
    np.testing.assert_allclose(out.asnumpy(), a + b, rtol=1e-6)
    np.testing.assert_allclose(mx.nd.broadcast_mul(lhs=x, rhs=y).asnumpy(), a * b, rtol=1e-6)
    np.testing.assert_allclose(mx.nd._plus_scalar(x, 2.0).asnumpy(), a + 2, rtol=1e-6)
    np.testing.assert_allclose(mx.nd._internal._mul_scalar(x, scalar=3).asnumpy(), a * 3, rtol=1e-6)
    assert "broadcast_add" in dir(mx.nd)


def test_ops_registered_later_appear_in_nd():
    from ember.ops import OpDef, register

    def kernel(ctx, attrs, inputs, outputs, aux):
        np.add(inputs[0], attrs["k"], out=outputs[0])

    if not mx.ops.exists("_test_imperative_late_op"):
        register(OpDef("_test_imperative_late_op", attrs={"k": mx.ops.Attr("float", 1.0)},
                       infer_shape=lambda attrs, s: (s, [s[0]]), kernels={"any": kernel}))
    x = mx.nd.array([1.0, 2.0])
    np.testing.assert_array_equal(mx.nd._test_imperative_late_op(x, 5).asnumpy(), [6, 7])
    np.testing.assert_array_equal(mx.nd._test_imperative_late_op(x, k=0.5).asnumpy(), [1.5, 2.5])


def test_override_applies_to_imperative_calls():
    old = mx.ops.override("broadcast_add", "cpu", lambda ctx, attrs, i, o, aux: np.subtract(i[0], i[1], out=o[0]))
    try:
        got = (mx.nd.array([5.0]) + mx.nd.array([3.0])).asnumpy()
    finally:
        op = mx.ops.get("broadcast_add")
        del op.kernels["cpu"]
        if old is not op.kernels.get("any"):
            op.kernels["cpu"] = old
    assert got[0] == 2.0
    assert (mx.nd.array([5.0]) + mx.nd.array([3.0])).asnumpy()[0] == 8.0
