"""Products through the installed native sgemm (ember.engine.native.sgemm_f32), and matmul_into's choice
of it: every float32 2-D product goes there while the sgemm is a sequential one split over the CPU team
(oneMKL's, when the `mkl` package is installed), else numpy's matmul keeps it.  Without MKL the split is
turned on here over numpy's own sgemm, with BLAS held to one thread."""
import contextlib

import numpy as np
import pytest

from ember.engine import native
from ember.engine._native import lib
from ember.ops import _nn_util

pytestmark = pytest.mark.skipif(not native.gemm_ready(), reason="no sgemm installed here")


@contextlib.contextmanager
def _split_on():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    was = lib.ember_gemm_splits()
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        lib.ember_gemm_split_on_team(1)
        try:
            yield
        finally:
            lib.ember_gemm_split_on_team(was)


def _operand(rng, shape, transposed):
    """A float32 array of `shape`: C-contiguous, or the transposed view of one."""
    if transposed:
        return rng.standard_normal(shape[::-1]).astype(np.float32).T
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("m, k, n", [(128, 784, 512), (1000, 64, 33), (7, 5, 3)])
def test_sgemm_f32_equals_numpy(m, k, n, ta, tb):
    rng = np.random.RandomState(m + k + n)
    a, b = _operand(rng, (m, k), ta), _operand(rng, (k, n), tb)
    want = a.astype(np.float64) @ b.astype(np.float64)
    for beta in (0.0, 1.0):
        c = rng.standard_normal((m, n)).astype(np.float32)
        start = c.copy()
        assert native.sgemm_f32(a.T if ta else a, b.T if tb else b, c, ta, tb, beta)
        np.testing.assert_allclose(c, want + beta * start, rtol=1e-4, atol=1e-3 * np.sqrt(k))


def test_sgemm_f32_refuses_what_does_not_fit():
    """False and c untouched: shapes that do not chain, an empty product, c overlapping an input, other
    dtypes, non-contiguous or non-2-D buffers."""
    rng = np.random.RandomState(0)
    a, b = rng.rand(4, 3).astype(np.float32), rng.rand(3, 5).astype(np.float32)
    c = np.full((4, 5), 7.0, np.float32)
    assert not native.sgemm_f32(a, rng.rand(4, 5).astype(np.float32), c, False, False, 0.0)  # k differs
    assert not native.sgemm_f32(a, b, np.full((5, 4), 7.0, np.float32), False, False, 0.0)  # c's shape
    assert not native.sgemm_f32(a[:, :0], b[:0], c, False, False, 0.0)  # k = 0
    assert not native.sgemm_f32(a.astype(np.float64), b, c, False, False, 0.0)
    assert not native.sgemm_f32(a, b, c.T.copy().T, False, False, 0.0)  # c not C-contiguous
    assert not native.sgemm_f32(a.reshape(-1), b, c, False, False, 0.0)
    big = rng.rand(8, 8).astype(np.float32)
    assert not native.sgemm_f32(big[:4, :3], big[:3, :5], big[4:8, :5], False, False, 0.0)  # c shares a's buffer
    np.testing.assert_array_equal(c, 7.0)


def test_matmul_into_takes_the_split_sgemm_for_float32(monkeypatch):
    """With the split on, FullyConnected's products (x W^T, dy^T x, dy W) go through sgemm_f32, with
    numpy's results; float64 and batched products stay with numpy."""
    calls = []
    real = _nn_util.sgemm_f32
    monkeypatch.setattr(_nn_util, "sgemm_f32", lambda *a: calls.append(a[3:5]) or real(*a))
    rng = np.random.RandomState(1)
    x, w, dy = (rng.standard_normal(s).astype(np.float32) for s in ((64, 100), (48, 100), (64, 48)))
    with _split_on():
        for a, b, shape in ((x, w.T, (64, 48)), (dy.T, x, (48, 100)), (dy, w, (64, 100))):
            out = np.empty(shape, np.float32)
            _nn_util.matmul_into(np, a, b, out)
            np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)
        assert calls == [(False, True), (True, False), (False, False)]
        out64 = np.empty((64, 48))
        _nn_util.matmul_into(np, x.astype(np.float64), w.T.astype(np.float64), out64)
        batched = np.empty((2, 64, 48), np.float32)
        _nn_util.matmul_into(np, np.stack([x, x]), w.T, batched)
    assert len(calls) == 3
    np.testing.assert_allclose(batched[1], x @ w.T, rtol=1e-4, atol=1e-4)


def test_matmul_into_keeps_numpy_without_the_split(monkeypatch):
    """An unsplit sgemm (numpy's OpenBLAS) leaves products to numpy's matmul: its bits."""
    was = lib.ember_gemm_splits()
    lib.ember_gemm_split_on_team(0)
    try:
        monkeypatch.setattr(_nn_util, "sgemm_f32", lambda *a: pytest.fail("sgemm_f32 called"))
        rng = np.random.RandomState(2)
        a, b = rng.rand(30, 20).astype(np.float32), rng.rand(20, 10).astype(np.float32)
        out = np.empty((30, 10), np.float32)
        _nn_util.matmul_into(np, a, b, out)
        np.testing.assert_array_equal(out, a @ b)
    finally:
        lib.ember_gemm_split_on_team(was)


@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("m, k, n", [(128, 784, 512), (512, 64, 40), (7, 5, 3)])
def test_sgemm_f32_adds_a_bias_with_the_bits_of_a_separate_add(m, k, n, split):
    """With a bias each part of the product adds it to its own block: the same bits as the product
    followed by numpy's `+= bias`, whether the product is split (by rows or by columns) or not."""
    rng = np.random.RandomState(m + n)
    a, w, bias = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (n, k), (n,)))
    with _split_on() if split else contextlib.nullcontext():
        want = np.empty((m, n), np.float32)
        assert native.sgemm_f32(a, w, want, False, True, 0.0)
        want += bias
        got = np.empty((m, n), np.float32)
        assert native.sgemm_f32(a, w, got, False, True, 0.0, bias)
    np.testing.assert_array_equal(got, want)


def test_sgemm_f32_refuses_a_bias_that_does_not_fit():
    rng = np.random.RandomState(3)
    a, b = rng.rand(4, 3).astype(np.float32), rng.rand(3, 5).astype(np.float32)
    c = np.full((4, 5), 7.0, np.float32)
    assert not native.sgemm_f32(a, b, c, False, False, 0.0, np.ones(4, np.float32))  # not c's columns
    assert not native.sgemm_f32(a, b, c, False, False, 0.0, np.ones(5))  # float64
    assert not native.sgemm_f32(a, b, c, False, False, 0.0, np.ones(10, np.float32)[::2])  # strided
    assert not native.sgemm_f32(a, b, c, False, False, 0.0, c[0])  # inside c
    np.testing.assert_array_equal(c, 7.0)


@pytest.mark.parametrize("split", [False, True])
def test_matmul_into_adds_the_bias_on_either_path(split):
    rng = np.random.RandomState(4)
    x, w, bias = (rng.standard_normal(s).astype(np.float32) for s in ((64, 100), (48, 100), (48,)))
    was = lib.ember_gemm_splits()
    with _split_on() if split else contextlib.nullcontext():
        if not split:
            lib.ember_gemm_split_on_team(0)
        try:
            out = np.empty((64, 48), np.float32)
            _nn_util.matmul_into(np, x, w.T, out, bias)
        finally:
            lib.ember_gemm_split_on_team(was)
    np.testing.assert_allclose(out, x @ w.T + bias, rtol=1e-4, atol=1e-4)
