"""linalg extracttrian/maketrian/gelqf/syevd and gemm/gemm2 with axis: numpy references, finite differences."""
import numpy as np
import pytest

import ember as mx
from ember.base import OperatorError, ShapeError

from ._gradcheck import check_grad, grads, run

RNG = np.random.default_rng(0)


def test_extracttrian_order_and_maketrian_inverse():
    a = np.arange(1, 17, dtype=np.float64).reshape(4, 4)
    np.testing.assert_array_equal(run("linalg_extracttrian", [a]), a[np.tril_indices(4)])
    np.testing.assert_array_equal(run("linalg_extracttrian", [a], {"lower": False}), a.T[np.tril_indices(4)])
    np.testing.assert_array_equal(run("linalg_extracttrian", [a], {"offset": 1}), [2, 3, 7, 4, 8, 12])
    np.testing.assert_array_equal(run("linalg_extracttrian", [a], {"offset": -1}), [5, 9, 10, 13, 14, 15])
    for attrs in ({}, {"lower": False}, {"offset": 2}, {"offset": -1, "lower": False}):
        packed = run("linalg_extracttrian", [a], attrs)
        back = run("linalg_maketrian", [packed], attrs)
        np.testing.assert_array_equal(run("linalg_extracttrian", [back], attrs), packed)
        assert back.shape == (4, 4)
    check_grad("linalg_extracttrian", [RNG.standard_normal((2, 3, 3))], {"offset": -1})
    check_grad("linalg_maketrian", [RNG.standard_normal((2, 6))], {"lower": False})
    with pytest.raises(ShapeError):
        mx.sym.linalg.maketrian(mx.sym.var("a")).infer_shape(a=(5,))
    assert mx.sym.linalg.extracttrian(mx.sym.var("a"), offset=1).infer_shape(a=(3, 5, 5))[1] == [(3, 10)]


def test_gelqf_factorises_and_gradient():
    a = RNG.standard_normal((2, 3, 5))
    q, l = run("linalg_gelqf", [a])
    np.testing.assert_allclose(l @ q, a, atol=1e-12)
    np.testing.assert_allclose(q @ q.swapaxes(-1, -2), np.broadcast_to(np.eye(3), (2, 3, 3)), atol=1e-12)
    assert np.allclose(np.triu(l, 1), 0)
    check_grad("linalg_gelqf", [a], rtol=1e-5, atol=1e-6)
    with pytest.raises(ShapeError):
        mx.sym.linalg.gelqf(mx.sym.var("a")).infer_shape(a=(5, 3))


def test_syevd_decomposes_and_symmetric_gradient():
    x = RNG.standard_normal((4, 4))
    a = (x + x.T) / 2
    u, lam = run("linalg_syevd", [a])
    np.testing.assert_allclose(u.T @ np.diag(lam) @ u, a, atol=1e-12)
    assert np.all(np.diff(lam) > 0)
    assert np.all(u[np.arange(4), np.abs(u).argmax(axis=1)] > 0)
    w_u, w_l = RNG.standard_normal((4, 4)), RNG.standard_normal(4)
    g = grads("linalg_syevd", [a], {}, [w_u, w_l])[0]
    np.testing.assert_allclose(g, g.T, atol=1e-12)

    def f(m):
        uu, ll = run("linalg_syevd", [m])
        return (uu * w_u).sum() + (ll * w_l).sum()
    eps = 1e-6
    for i in range(4):
        for j in range(i, 4):
            e = np.zeros((4, 4))
            e[i, j] = e[j, i] = eps
            num = (f(a + e) - f(a - e)) / (2 * eps)
            want = g[i, j] + (g[j, i] if i != j else 0.0)
            np.testing.assert_allclose(want, num, rtol=1e-5, atol=1e-6)


def test_gemm_with_row_axis_matches_moved_axes():
    a = RNG.standard_normal((2, 3, 4, 5))
    b = RNG.standard_normal((2, 5, 4, 6))
    c = RNG.standard_normal((2, 3, 4, 6))
    out = run("linalg_gemm", [a, b, c], {"axis": 1, "alpha": 0.5, "beta": 2.0})
    want = np.moveaxis(0.5 * np.moveaxis(a, 1, -2) @ np.moveaxis(b, 1, -2), -2, 1) + 2.0 * c
    np.testing.assert_allclose(out, want, rtol=1e-12)
    check_grad("linalg_gemm", [a[:, :2, :2, :3], b[:, :3, :2, :2], c[:, :2, :2, :2]], {"axis": -3})
    check_grad("linalg_gemm2", [RNG.standard_normal((3, 2, 4)), RNG.standard_normal((3, 2, 5))],
               {"axis": 0, "transpose_a": True})
    s = mx.sym.linalg.gemm2(mx.sym.var("a"), mx.sym.var("b"), axis=0)
    assert s.infer_shape(a=(3, 2, 4), b=(4, 2, 5))[1] == [(3, 2, 5)]
    with pytest.raises(OperatorError):
        s2 = mx.sym.linalg.gemm2(mx.sym.var("a"), mx.sym.var("b"), axis=-1)
        s2.infer_shape(a=(3, 4), b=(4, 5))
