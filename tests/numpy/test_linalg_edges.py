"""mx.np.linalg's `_npi_*` operators (ember/ops/np_linalg.py): zero-size and shape edge cases against
numpy, MXNet's dtype and shape rules and errors, gradients against finite differences, graphs from
symbols without shapes, hybridized blocks against imperative calls."""
import numpy as onp
import pytest

import ember as mx
from ember import np
from ember.base import MXNetError

from ._np_blocks import FnBlock
from ._numeric import central_difference


def _fd(f, x, w):
    return central_difference(f, x, w, eps=1e-6)


def _well_conditioned(shape, seed=0):
    r = onp.random.RandomState(seed)
    return r.uniform(-1, 1, shape) + 4 * onp.eye(shape[-1])


def _grad(fn, *arrays, weights=None):
    """Values and gradients of sum(fn(*arrays) * weights) through autograd (float64)."""
    xs = [np.array(a, dtype="float64") for a in arrays]
    for x in xs:
        x.attach_grad()
    with mx.autograd.record():
        out = fn(*xs)
    out.backward(None if weights is None else np.array(weights, dtype="float64"))
    return out.asnumpy(), [x.grad.asnumpy() for x in xs]


@pytest.mark.usefixtures("np_semantics")  # 0-d and zero-size arrays need NumPy shape semantics
@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 0), (0, 3, 3), (3, 3), (2, 2, 4, 4)])
def test_det_slogdet_shapes_and_values(shape):
    a = _well_conditioned(shape) if 0 not in shape else onp.ones(shape)
    x = np.array(a, dtype="float64")
    assert np.linalg.det(x).shape == onp.linalg.det(a).shape
    onp.testing.assert_allclose(np.linalg.det(x).asnumpy(), onp.linalg.det(a), rtol=1e-10)
    sign, logdet = np.linalg.slogdet(x)
    ref = onp.linalg.slogdet(a)
    onp.testing.assert_allclose(sign.asnumpy(), ref[0])
    onp.testing.assert_allclose(logdet.asnumpy(), ref[1], rtol=1e-10, atol=1e-12)


def test_det_gradient_and_shapeless_symbol():
    a = _well_conditioned((2, 3, 3))
    w = onp.random.RandomState(1).uniform(-1, 1, (2,))
    _, (g,) = _grad(np.linalg.det, a, weights=w)
    onp.testing.assert_allclose(g, _fd(onp.linalg.det, a, w), rtol=1e-5)
    sym = mx.sym.np.linalg.det(mx.sym.Variable("a").as_np_ndarray()).as_nd_ndarray()
    _, out_shapes, _ = sym.infer_shape(a=(1, 4, 4))
    assert out_shapes == [(1,)]
    ex = sym.simple_bind(mx.cpu(), a=(2, 3, 3), type_dict={"a": "float64"})
    out = ex.forward(a=mx.nd.array(a, dtype="float64"))[0]
    onp.testing.assert_allclose(out.asnumpy(), onp.linalg.det(a), rtol=1e-10)


@pytest.mark.usefixtures("np_semantics")  # 0-d and zero-size arrays need NumPy shape semantics
@pytest.mark.parametrize("a_shape,b_shape", [((0, 0), (0, 0)), ((1, 0, 0), (1, 0, 0)), ((0, 5, 3, 3), (0, 5, 3, 3)),
                                             ((3, 3), (3,)), ((3, 3), (3, 0)), ((2, 4, 4), (2, 4, 2))])
def test_solve_shapes_values_gradients(a_shape, b_shape):
    r = onp.random.RandomState(2)
    a = _well_conditioned(a_shape) if 0 not in a_shape else onp.ones(a_shape)
    b = r.uniform(-1, 1, b_shape)
    vector = len(b_shape) == len(a_shape) - 1
    ref = (lambda p, q: onp.linalg.solve(p, q[..., None])[..., 0]) if vector else onp.linalg.solve
    out, (ga, gb) = _grad(np.linalg.solve, a, b)
    assert out.shape == b_shape
    onp.testing.assert_allclose(out, ref(a, b), rtol=1e-10, atol=1e-12)
    if out.size:
        w = onp.ones(b_shape)
        onp.testing.assert_allclose(ga, _fd(lambda p: ref(p, b), a, w), rtol=1e-5, atol=1e-8)
        onp.testing.assert_allclose(gb, _fd(lambda q: ref(a, q), b, w), rtol=1e-5, atol=1e-8)


def test_solve_dtype_and_errors():
    a = np.array(_well_conditioned((2, 2)), dtype="float32")
    assert np.linalg.solve(a, np.ones((2,), dtype="float32")).dtype == onp.float32
    assert np.linalg.solve(a, np.ones((2,), dtype="float64")).dtype == onp.float64  # MXNet: float64 unless both f32
    with pytest.raises(ValueError):  # batch shapes must be equal: MXNet does not broadcast them
        np.linalg.solve(np.ones((2, 3, 3)), np.ones((1, 3, 1)))
    with pytest.raises(MXNetError):
        np.linalg.solve(np.ones((3, 3)), np.ones((2,)))
    with pytest.raises(TypeError):
        np.linalg.solve(np.ones((2, 2), dtype="float16"), np.ones((2,), dtype="float16"))
    with pytest.raises(MXNetError):  # singular, raised when the operator runs
        np.linalg.solve(np.zeros((2, 2)), np.ones((2,))).asnumpy()


@pytest.mark.parametrize("shape,ind", [((6, 2, 3), 1), ((2, 3, 6), 2), ((1, 1), 1), ((2, 2, 2, 2), 2)])
def test_tensorinv_values_gradients(shape, ind):
    a = (_well_conditioned((int(onp.prod(shape[:ind])),) * 2)).reshape(shape)
    ref = lambda v: onp.linalg.tensorinv(v, ind)  # noqa: E731
    out, (g,) = _grad(lambda v: np.linalg.tensorinv(v, ind), a)
    assert out.shape == ref(a).shape
    onp.testing.assert_allclose(out, ref(a), rtol=1e-10, atol=1e-12)
    onp.testing.assert_allclose(g, _fd(ref, a, onp.ones(out.shape)), rtol=1e-5, atol=1e-8)


def test_tensorinv_errors_and_legacy_trace():
    with pytest.raises(ValueError):
        np.linalg.tensorinv(np.ones((2, 3, 4)), 1)
    with pytest.raises(MXNetError):
        np.linalg.tensorinv(np.ones((2, 2)), 0)
    # a block traced with legacy symbols (no NumPy semantics: shapes known only when bound)
    a = np.array(_well_conditioned((6, 6)).reshape(6, 2, 3), dtype="float64")
    blk = FnBlock(lambda F, x: F.np.linalg.tensorinv(x, ind=1))
    eager = blk(a).asnumpy()
    blk.hybridize()
    onp.testing.assert_allclose(blk(a).asnumpy(), eager, rtol=1e-12)
    onp.testing.assert_allclose(eager, onp.linalg.tensorinv(a.asnumpy(), 1), rtol=1e-10)


@pytest.mark.usefixtures("np_semantics")  # 0-d and zero-size arrays need NumPy shape semantics
@pytest.mark.parametrize("a_shape,b_shape,axes", [((), (), None), ((1, 1, 1), (), (0, 1, 2)), ((1, 1, 1), (1, 1, 1), None),
                                                  ((1, 1), (1, 1, 1, 1, 1), None), ((6, 2, 3), (6,), None),
                                                  ((2, 3, 6), (6,), (0, 1)), ((2, 3, 3, 4, 2), (3, 4), (0, 2, 4))])
def test_tensorsolve_shapes_values_gradients(a_shape, b_shape, axes):
    r = onp.random.RandomState(3)
    if int(onp.prod(a_shape)) == 1:
        a = onp.full(a_shape, 2.0)
    else:
        n = int(onp.prod(b_shape))
        order = [i for i in range(len(a_shape)) if axes is None or i not in axes] + list(axes or [])
        at = _well_conditioned((n, n)).reshape(tuple(a_shape[i] for i in order))
        a = at.transpose(onp.argsort(order))
    b = r.uniform(-1, 1, b_shape)
    ref = lambda p, q: onp.linalg.tensorsolve(p, q, axes)  # noqa: E731
    out, (ga, gb) = _grad(lambda p, q: np.linalg.tensorsolve(p, q, axes), a, b)
    assert out.shape == ref(a, b).shape
    onp.testing.assert_allclose(out, ref(a, b), rtol=1e-10, atol=1e-12)
    w = onp.ones(out.shape)
    onp.testing.assert_allclose(ga, _fd(lambda p: ref(p, b), a, w), rtol=1e-5, atol=1e-8)
    onp.testing.assert_allclose(gb, _fd(lambda q: ref(a, q), b, w), rtol=1e-5, atol=1e-8)


def test_tensorsolve_errors():
    with pytest.raises(ValueError):
        np.linalg.tensorsolve(np.ones((2, 3, 4)), np.ones((2,)))
    with pytest.raises(ValueError):
        np.linalg.tensorsolve(np.ones((2, 2)), np.ones((3,)))


@pytest.mark.usefixtures("np_semantics")  # 0-d and zero-size arrays need NumPy shape semantics
@pytest.mark.parametrize("shape", [(0, 0), (1, 0, 0), (0, 4, 4), (1, 1), (3, 3), (2, 3, 4, 4)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_eigvalsh_edges(shape, dtype, uplo):
    r = onp.random.RandomState(4)
    a = (r.randint(1, 9, shape) if dtype in ("int32", "uint8") else r.uniform(-3, 3, shape)).astype(dtype)
    x = np.array(a, dtype=dtype)
    w, v = np.linalg.eigh(x, UPLO=uplo)
    want = onp.dtype("float32" if dtype == "float32" else "float64")  # MXNet: float64 for every non-f32 input
    assert w.dtype == want and v.dtype == want and np.linalg.eigvalsh(x, uplo).dtype == want
    rw, rv = onp.linalg.eigh(a.astype("float64"), UPLO=uplo)
    assert w.shape == rw.shape and v.shape == rv.shape
    tol = 1e-4 if dtype == "float32" else 1e-10
    onp.testing.assert_allclose(w.asnumpy(), rw, rtol=tol, atol=tol)
    onp.testing.assert_allclose(np.linalg.eigvalsh(x, uplo).asnumpy(), rw, rtol=tol, atol=tol)
    if a.size:  # eigenvectors up to sign: compare the projectors
        vn = v.asnumpy().astype("float64")
        onp.testing.assert_allclose(onp.abs(onp.sum(vn * rv, axis=-2)), onp.ones(rw.shape), rtol=1e-3)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_eigvalsh_gradients_read_one_triangle(uplo):
    a = onp.random.RandomState(5).uniform(-1, 1, (2, 3, 3)) + onp.diag([0.0, 2.0, 4.0])
    ww = onp.random.RandomState(6).uniform(-1, 1, (2, 3))
    _, (g,) = _grad(lambda x: np.linalg.eigvalsh(x, uplo), a, weights=ww)
    onp.testing.assert_allclose(g, _fd(lambda x: onp.linalg.eigvalsh(x, uplo), a, ww), rtol=1e-5, atol=1e-8)

    def sign_fixed_vecs(x):  # eigenvector signs fixed so the finite differences are smooth
        v = onp.linalg.eigh(x, uplo)[1]
        return v * onp.sign(v[..., :1, :])
    wv = onp.random.RandomState(7).uniform(-1, 1, (2, 3, 3))

    def ours(x):
        v = np.linalg.eigh(x, uplo)[1]
        return v * np.sign(v[..., :1, :])  # sign is piecewise constant: no gradient through it
    _, (gv,) = _grad(ours, a, weights=wv)
    onp.testing.assert_allclose(gv, _fd(sign_fixed_vecs, a, wv), rtol=1e-4, atol=1e-7)


def test_eigh_errors():
    with pytest.raises(ValueError):
        np.linalg.eigh(np.ones((2, 3)))
    with pytest.raises(ValueError):
        np.linalg.eigvalsh(np.ones((2, 2)), UPLO="X")
    with pytest.raises(TypeError):
        np.linalg.eigh(np.ones((2, 2), dtype="float16"))


@pytest.mark.parametrize("name", ["det", "solve", "tensorsolve", "eigh"])
def test_hybridized_equals_imperative(name, np_semantics):
    a = _well_conditioned((2, 3, 3)) if name != "tensorsolve" else _well_conditioned((6, 6)).reshape(6, 2, 3)
    b = onp.random.RandomState(8).uniform(-1, 1, (2, 3) if name != "tensorsolve" else (6,))
    fns = {"det": lambda F, x, y: F.np.linalg.det(x) + y.sum(),
           "solve": lambda F, x, y: F.np.linalg.solve(x, y),
           "tensorsolve": lambda F, x, y: F.np.linalg.tensorsolve(x, y),
           "eigh": lambda F, x, y: F.np.linalg.eigh(x)[0] * y}
    xs = [np.array(a, dtype="float64"), np.array(b, dtype="float64")]
    blk = FnBlock(fns[name])
    grads = []
    for hybrid in (False, True):
        if hybrid:
            blk.hybridize()
        for x in xs:
            x.attach_grad()
        with mx.autograd.record():
            out = blk(*xs)
        out.backward()
        grads.append((out.asnumpy(), [x.grad.asnumpy() for x in xs]))
    onp.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-10)
    for g1, g0 in zip(grads[1][1], grads[0][1]):
        onp.testing.assert_allclose(g1, g0, rtol=1e-8, atol=1e-12)
