"""mx.np.linalg against numpy.linalg, gradients against finite differences, hybridized blocks."""
import numpy as onp
import pytest

import ember as mx
from ember import np
from ember.gluon import HybridBlock

from ._numeric import central_difference


def _spd(shape, seed=0):
    a = onp.random.RandomState(seed).uniform(-1, 1, shape)
    return a @ onp.swapaxes(a, -1, -2) + 3 * onp.eye(shape[-1])


def _fd(f, x, w):
    return central_difference(f, x, w, eps=1e-5)


@pytest.mark.parametrize("name", ["cholesky", "inv", "det", "logdet", "eigvalsh", "norm"])
def test_values_and_gradients(name):
    x = _spd((2, 3, 3))
    ref = {"cholesky": onp.linalg.cholesky, "inv": onp.linalg.inv, "det": onp.linalg.det,
           "logdet": lambda v: onp.linalg.slogdet(v)[1], "eigvalsh": onp.linalg.eigvalsh,
           "norm": lambda v: onp.linalg.norm(v, axis=(1, 2))}[name]
    ours = {"cholesky": np.linalg.cholesky, "inv": np.linalg.inv, "det": np.linalg.det,
            "logdet": lambda v: np.linalg.slogdet(v)[1], "eigvalsh": np.linalg.eigvalsh,
            "norm": lambda v: np.linalg.norm(v, axis=(1, 2))}[name]
    xm = np.array(x, dtype="float64")
    xm.attach_grad()
    with mx.autograd.record():
        out = ours(xm)
    want = ref(x)
    onp.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6, atol=1e-9)
    assert out.shape == want.shape
    w = onp.random.RandomState(1).uniform(-1, 1, want.shape)
    out.backward(np.array(w, dtype="float64"))
    if name in ("cholesky", "eigvalsh"):  # only the symmetric part of a perturbation is meaningful
        sym = lambda v: ref((v + onp.swapaxes(v, -1, -2)) / 2)  # noqa: E731
        g = xm.grad.asnumpy()
        g = (g + onp.swapaxes(g, -1, -2)) / 2
        onp.testing.assert_allclose(g, _fd(sym, x, w), rtol=1e-4, atol=1e-6)
    else:
        onp.testing.assert_allclose(xm.grad.asnumpy(), _fd(ref, x, w), rtol=1e-4, atol=1e-6)


def test_eigh_solve_tensorinv():
    a = _spd((4, 4))
    w, v = np.linalg.eigh(np.array(a, dtype="float64"))
    onp.testing.assert_allclose((v.asnumpy() * w.asnumpy()) @ v.asnumpy().T, a, atol=1e-9)
    b = onp.arange(4.0)
    onp.testing.assert_allclose(np.linalg.solve(np.array(a), np.array(b)).asnumpy(), onp.linalg.solve(a, b),
                                rtol=1e-4)
    t = onp.eye(6).reshape(2, 3, 6) * 2 + 0.1
    onp.testing.assert_allclose(np.linalg.tensorinv(np.array(t, dtype="float64"), 2).asnumpy(),
                                onp.linalg.tensorinv(t, 2), rtol=1e-6)


@pytest.mark.parametrize("ord_,axis", [(None, None), (1, None), (onp.inf, 1), (0, 0), (3, 1), (-1, (1, 0))])
def test_norm_orders(ord_, axis):
    x = onp.random.RandomState(2).uniform(-1, 1, (3, 4))
    onp.testing.assert_allclose(np.linalg.norm(np.array(x, dtype="float64"), ord_, axis).asnumpy(),
                                onp.linalg.norm(x, ord_, axis), rtol=1e-6)


def test_hybridized():
    class Inv(HybridBlock):
        def hybrid_forward(self, F, x):
            return F.np.linalg.inv(x) + F.np.linalg.det(x).reshape(-1, 1, 1)

    mx.npx.set_np()
    try:
        x = np.array(_spd((2, 3, 3)), dtype="float64")
        blk = Inv()
        eager = blk(x).asnumpy()
        blk.hybridize()
        onp.testing.assert_allclose(blk(x).asnumpy(), eager, rtol=1e-6)
    finally:
        mx.npx.reset_np()


def test_errors():
    with pytest.raises(ValueError):
        np.linalg.inv(np.ones((2, 3)))
    with pytest.raises(ValueError):
        np.linalg.det(np.ones((3,)))
    with pytest.raises(ValueError):
        np.linalg.eigh(np.ones((2, 2)), UPLO="X")
    with pytest.raises(ValueError):
        np.linalg.tensorinv(np.ones((2, 3, 4)), 1)
    with pytest.raises(TypeError):
        np.linalg.inv(np.ones((2, 2), dtype="int32"))
