"""mx.np.linalg svd / pinv / eig / eigvals (ember/ops/np_linalg_more.py) and norm ord 2 / -2 / 'nuc':
numpy's results imperatively and hybridized, svd's gradient against finite differences, MXNet's errors."""
import numpy as onp
import pytest

import ember as mx
from ember import autograd, np
from ember.base import MXNetError

from ._np_blocks import FnBlock as _Fn


pytestmark = pytest.mark.usefixtures("np_semantics")


def _rand(shape, seed=0):
    return onp.random.RandomState(seed).uniform(-1, 1, shape)


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (2, 2, 4), (0, 2, 3), (3, 0, 0)])
def test_svd_values(shape):
    a = _rand(shape)
    for hyb in (False, True):
        blk = _Fn(lambda F, x: F.np.linalg.svd(x))
        if hyb:
            blk.hybridize()
        ut, l, v = (o.asnumpy() for o in blk(np.array(a)))
        assert ut.shape == shape[:-1] + (shape[-2],) and l.shape == shape[:-1] and v.shape == shape
        onp.testing.assert_allclose(onp.matmul(ut * l[..., None, :], v), a, atol=1e-10)
        if a.size:
            onp.testing.assert_allclose(l, onp.linalg.svd(a, compute_uv=False), atol=1e-10)


def test_svd_refuses_tall_and_integer():
    with pytest.raises(MXNetError):
        np.linalg.svd(np.ones((4, 3)))
    with pytest.raises(MXNetError):
        np.linalg.svd(np.ones((3, 3), dtype="int32"))


@pytest.mark.parametrize("which", [0, 1, 2])
def test_svd_gradient(which):
    a = _rand((3, 4), 1)
    head = _rand([(3, 3), (3,), (3, 4)][which], 2)

    def f(arr):
        # gauge-free outputs: singular values, or products of matching singular vector pairs' signs
        ut, l, v = onp.linalg.svd(arr, full_matrices=False)
        sign = onp.sign(ut[0])
        return [ut * sign, l, v * sign[:, None]][which]

    for hyb in (False, True):
        blk = _Fn(lambda F, x: F.np.linalg.svd(x))
        if hyb:
            blk.hybridize()
        x = np.array(a)
        x.attach_grad()
        with autograd.record():
            outs = blk(x)
            sign = np.sign(outs[0][0])
            out = [outs[0] * sign, outs[1], outs[2] * sign.reshape(3, 1)][which]
            loss = (out * np.array(head)).sum()
        loss.backward()
        num = onp.zeros_like(a)
        for idx in onp.ndindex(a.shape):
            p, m = a.copy(), a.copy()
            p[idx] += 1e-6
            m[idx] -= 1e-6
            num[idx] = ((f(p) - f(m)) * head).sum() / 2e-6
        onp.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("shape,rshape", [((5, 6), None), ((2, 4, 3), (2,)), ((2, 3, 4), ()), ((1, 1), 0.5)])
def test_pinv(shape, rshape):
    a = _rand(shape, 3)
    rcond = 1e-15 if rshape is None else (rshape if isinstance(rshape, float) else _rand(rshape, 4) * 0.1 + 0.1)
    want = onp.linalg.pinv(a, rcond)
    assert onp.allclose(np.linalg.pinv(np.array(a), rcond if onp.ndim(rcond) == 0 else np.array(rcond)).asnumpy(),
                        want)
    blk = _Fn(lambda F, x: F.np.linalg.pinv(x))
    blk.hybridize()
    assert onp.allclose(blk(np.array(a)).asnumpy(), onp.linalg.pinv(a))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32"])
def test_eig_eigvals(dtype):
    rs = onp.random.RandomState(5)
    q = rs.uniform(-1, 1, (2, 4, 4)) + 4 * onp.eye(4)
    d = onp.stack([onp.diag(rs.randint(1, 9, 4)) for _ in range(2)]).astype(float)
    a = d if dtype == "int32" else onp.matmul(onp.matmul(q, d), onp.linalg.inv(q))
    x = np.array(a, dtype=dtype)
    for hyb in (False, True):
        blk = _Fn(lambda F, y: F.np.linalg.eig(y))
        if hyb:
            blk.hybridize()
        w, v = blk(x)
        assert w.dtype == (onp.float32 if dtype != "float64" else onp.float64)
        tol = 1e-3 if dtype != "float64" else 1e-8
        onp.testing.assert_allclose(onp.sort(w.asnumpy(), -1), onp.sort(onp.diagonal(d, 0, 1, 2), -1), atol=tol * 10)
        av = onp.matmul(x.asnumpy().astype(float), v.asnumpy())
        onp.testing.assert_allclose(av, v.asnumpy() * w.asnumpy()[..., None, :], atol=tol * 10)
        onp.testing.assert_allclose(onp.sort(np.linalg.eigvals(x).asnumpy(), -1), onp.sort(w.asnumpy(), -1))
    assert np.linalg.eigvals(np.ones((0, 3, 3))).shape == (0, 3)
    with pytest.raises(MXNetError):
        np.linalg.eigvals(np.array([[0.0, -1.0], [1.0, 0.0]])).asnumpy()
    with pytest.raises(MXNetError):
        np.linalg.eig(np.ones((2, 3)))


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
@pytest.mark.parametrize("shape,axis", [((3, 4), None), ((2, 3, 4), (0, 2)), ((4, 2, 3), (2, 0))])
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm_singular_value_orders(ord, shape, axis, keepdims):
    a = _rand(shape, 6)
    want = onp.linalg.norm(a, ord=ord, axis=axis, keepdims=keepdims)
    for hyb in (False, True):
        blk = _Fn(lambda F, x: F.np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims))
        if hyb:
            blk.hybridize()
        x = np.array(a)
        x.attach_grad()
        with autograd.record():
            got = blk(x)
        got.backward()
        assert got.shape == want.shape
        onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-10)
        if ord == "nuc" and axis is None:  # d||A||_* / dA = U V^T
            u, _, vt = onp.linalg.svd(a, full_matrices=False)
            onp.testing.assert_allclose(x.grad.asnumpy(), u @ vt, atol=1e-8)
    assert float(np.linalg.norm(np.array(a[0] if a.ndim == 3 else a), "inf").asnumpy()) == \
        pytest.approx(onp.linalg.norm(a[0] if a.ndim == 3 else a, onp.inf))
