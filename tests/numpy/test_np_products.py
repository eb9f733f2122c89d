"""_np_dot, _npi_tensordot(_int_axes), _np_roll, _npx_reshape (ember/ops/np_products.py): numpy's results,
graphs from variables without shapes (inferred at bind time), gradients against finite differences."""
import numpy as onp
import pytest

import ember as mx
from ember import autograd, np, npx
from ember.base import MXNetError
from ember.gluon import HybridBlock


pytestmark = pytest.mark.usefixtures("np_semantics")


def _rand(shape, seed):
    return onp.random.RandomState(seed).uniform(-1, 1, shape)


def _bind_forward_backward(sym, inputs, head):
    """Bind `sym` (legacy view) with shapes only at bind time; forward and backward with `head`."""
    args = {k: mx.nd.array(v, dtype="float64") for k, v in inputs.items()}
    grads = {k: mx.nd.zeros(v.shape, dtype="float64") for k, v in inputs.items()}
    ex = sym.bind(mx.cpu(), args, args_grad=grads)
    out = ex.forward(is_train=True)[0]
    ex.backward(mx.nd.array(head, dtype="float64"))
    return out.asnumpy(), {k: g.asnumpy() for k, g in grads.items()}


def _numeric_grad(f, inputs, head, eps=1e-6):
    res = {}
    for k, v in inputs.items():
        g = onp.zeros_like(v)
        for idx in onp.ndindex(v.shape):
            p, m = {kk: vv.copy() for kk, vv in inputs.items()}, {kk: vv.copy() for kk, vv in inputs.items()}
            p[k][idx] += eps
            m[k][idx] -= eps
            g[idx] = ((f(**p) - f(**m)) * head).sum() / (2 * eps)
        res[k] = g
    return res


PRODUCTS = [
    ("dot", lambda a, b: onp.dot(a, b), lambda F, a, b: F.dot(a, b), ((3, 4), (4, 5))),
    ("dot", lambda a, b: onp.dot(a, b), lambda F, a, b: F.dot(a, b), ((3, 4, 5), (5,))),
    ("dot", lambda a, b: onp.dot(a, b), lambda F, a, b: F.dot(a, b), ((3, 5, 4), (5, 4, 3))),
    ("dot", lambda a, b: onp.dot(a, b), lambda F, a, b: F.dot(a, b), ((), (3, 2))),
    ("dot", lambda a, b: onp.dot(a, b), lambda F, a, b: F.dot(a, b), ((4,), (4,))),
    ("tensordot", lambda a, b: onp.tensordot(a, b, ((3, 0), (1, 4))),
     lambda F, a, b: F.tensordot(a, b, ((3, 0), (1, 4))), ((3, 2, 4, 5), (4, 5, 2, 3, 3))),
    ("tensordot", lambda a, b: onp.tensordot(a, b, 2), lambda F, a, b: F.tensordot(a, b, 2),
     ((2, 3, 4), (3, 4, 2))),
    ("vdot", lambda a, b: onp.vdot(a, b), lambda F, a, b: F.vdot(a, b), ((2, 3), (3, 2))),
    ("inner", lambda a, b: onp.inner(a, b), lambda F, a, b: F.inner(a, b), ((2, 3, 4), (5, 4))),
]


@pytest.mark.parametrize("name,ref,build,shapes", PRODUCTS)
def test_products_from_shapeless_variables(name, ref, build, shapes):
    a, b = _rand(shapes[0], 1), _rand(shapes[1], 2)
    expected = ref(a, b)
    # imperative
    onp.testing.assert_allclose(build(np, np.array(a, dtype="float64"), np.array(b, dtype="float64")).asnumpy(),
                                expected, rtol=1e-10, atol=1e-12)
    # graph from variables with no shape: inferred at bind time
    sym = build(mx.sym.np, mx.sym.Variable("a").as_np_ndarray(), mx.sym.Variable("b").as_np_ndarray()).as_nd_ndarray()
    _, out_shapes, _ = sym.infer_shape(a=shapes[0], b=shapes[1])
    assert out_shapes == [expected.shape]
    head = _rand(expected.shape, 3)
    out, grads = _bind_forward_backward(sym, {"a": a, "b": b}, head)
    onp.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    num = _numeric_grad(ref, {"a": a, "b": b}, head)
    for k in ("a", "b"):
        onp.testing.assert_allclose(grads[k], num[k], rtol=1e-5, atol=1e-7)


def test_dot_fills_contracted_dimension_from_the_other_side():
    a, w = mx.sym.Variable("a", shape=(3, 4)), mx.sym.Variable("w")
    sym = mx.sym.np.dot(a.as_np_ndarray(), w.as_np_ndarray()).as_nd_ndarray()
    arg_shapes, out_shapes, _ = sym.infer_shape_partial()
    assert arg_shapes[0] == (3, 4)


def test_product_errors():
    with pytest.raises(MXNetError):
        np.dot(np.ones((4, 5)), np.ones((2, 3)))
    sym = mx.sym.np.dot(mx.sym.Variable("a").as_np_ndarray(), mx.sym.Variable("b").as_np_ndarray()).as_nd_ndarray()
    with pytest.raises(MXNetError):
        sym.infer_shape(a=(3, 4, 5), b=(6,))
    with pytest.raises(ValueError):
        np.tensordot(np.ones((2, 3)), np.ones((4, 3)), ([0], [0]))


@pytest.mark.parametrize("shift,axis", [(2, None), (-1, 0), ((1, 2), (0, 1)), (3, (0, 1)), ((1, -2), 1)])
def test_roll_graph_and_gradient(shift, axis):
    x = _rand((3, 4), 4)
    expected = onp.roll(x, shift, axis)
    onp.testing.assert_allclose(np.roll(np.array(x), shift, axis).asnumpy(), expected.astype(onp.float32), rtol=1e-6)
    sym = mx.sym.np.roll(mx.sym.Variable("x").as_np_ndarray(), shift=shift, axis=axis).as_nd_ndarray()
    head = _rand((3, 4), 5)
    out, grads = _bind_forward_backward(sym, {"x": x}, head)
    onp.testing.assert_allclose(out, expected)
    # roll is a permutation: its gradient rolls the head gradient back
    onp.testing.assert_allclose(grads["x"], _numeric_grad(lambda x: onp.roll(x, shift, axis), {"x": x}, head)["x"],
                                rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape,newshape,reverse,expected", [
    ((2, 3, 5, 5), (-2, -1), False, (2, 75)),
    ((2, 1, 4, 5), (-2, -3, -2, -2), False, (2, 4, 5)),
    ((2, 3, 5, 6), (6, 1, -4), False, (6, 1, 5, 6)),
    ((2, 3, 5, 6), (-5, -1), False, (6, 30)),
    ((64, 1, 2, 3), (-6, 16, -1, -4), False, (16, 4, 1, 2, 3)),
    ((8, 5, 4, 6), (-4, -1, 3, -6), True, (8, 5, 4, 2, 3)),
    ((10, 5, 4), (-1, 4), True, (50, 4)),
])
def test_npx_reshape(shape, newshape, reverse, expected):
    x = _rand(shape, 6)
    assert npx.reshape(np.array(x), newshape, reverse=reverse).shape == expected
    sym = mx.sym.npx.reshape(mx.sym.Variable("x").as_np_ndarray(), newshape, reverse=reverse).as_nd_ndarray()
    head = _rand(expected, 7)
    out, grads = _bind_forward_backward(sym, {"x": x}, head)
    onp.testing.assert_allclose(out, x.reshape(expected))
    onp.testing.assert_allclose(grads["x"], head.reshape(shape))


def test_npx_reshape_errors():
    with pytest.raises(MXNetError):
        npx.reshape(np.ones((2, 3)), (-3, -1))
    with pytest.raises(MXNetError):
        npx.reshape(np.ones((2, 3)), (4, -1))


def test_hybridized_block_gradient():
    class Net(HybridBlock):
        def hybrid_forward(self, F, a, b):
            return F.np.roll(F.np.tensordot(F.npx.reshape(a, (-2, -1)), b, 1), 1, 0)

    a, b = _rand((2, 3, 2), 8), _rand((6, 4), 9)
    results = []
    for hybridize in (False, True):
        net = Net()
        if hybridize:
            net.hybridize()
        xa, xb = np.array(a, dtype="float64"), np.array(b, dtype="float64")
        xa.attach_grad()
        xb.attach_grad()
        with autograd.record():
            y = net(xa, xb)
        y.backward()
        results.append((y.asnumpy(), xa.grad.asnumpy(), xb.grad.asnumpy()))
    onp.testing.assert_allclose(results[0][0], onp.roll(a.reshape(2, 6) @ b, 1, 0))
    for r0, r1 in zip(*results):
        onp.testing.assert_allclose(r0, r1)
