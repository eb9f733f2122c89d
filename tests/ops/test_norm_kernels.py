"""BatchNorm's native per-channel passes (native/norm_kernels.h) on CPU: the batch statistics,
the gradient's sums and the affine passes agree with a float64 reference and with the numpy code
they replace (to float32 rounding; sums in float lanes and double are at least as accurate), for
channel axes first, middle and last, in place or not, global statistics, fix_gamma, float16 data;
numpy's code where arrays do not fit; entry points that refuse what they cannot take."""
import os
import sys

import numpy as np
import pytest

import ember as mx
from ember import autograd
from ember.engine import native
from ember.ops import nn_norm

sys.path.insert(0, os.path.dirname(__file__))
from _native_spies import spy_native  # noqa: E402


def _native(monkeypatch, on: bool) -> list:
    return spy_native(monkeypatch, nn_norm, ("channel_mean_var_f32", "channel_grad_sums_f32", "channel_affine_f32"), on)


def _train_step(x, gamma, beta, dy, on, monkeypatch, dtype="float32", **attrs):
    """BatchNorm forward and backward while recording: (y, dx, dgamma, dbeta, moving mean, moving var)."""
    taken = _native(monkeypatch, on)
    xa = mx.nd.array(x, dtype=dtype)
    g, b = mx.nd.array(gamma), mx.nd.array(beta)
    mm, mv = mx.nd.zeros(gamma.shape), mx.nd.ones(gamma.shape)
    for a in (xa, g, b):
        a.attach_grad()
    with autograd.record():
        y = mx.nd.BatchNorm(xa, g, b, mm, mv, **attrs)
    y.backward(mx.nd.array(dy, dtype=dtype))
    res = [a.asnumpy().astype(np.float64) for a in (y, xa.grad, g.grad, b.grad, mm, mv)]
    monkeypatch.undo()
    return res, taken


def _reference(x, gamma, beta, dy, axis, eps, fix_gamma, momentum):
    """BatchNorm's training step in float64."""
    red = tuple(a for a in range(x.ndim) if a != axis % x.ndim)
    shape = [1] * x.ndim
    shape[axis] = -1
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    g = np.ones_like(gamma, np.float64) if fix_gamma else gamma.astype(np.float64)
    mean, var = x.mean(axis=red), x.var(axis=red)
    invstd = 1 / np.sqrt(var + eps)
    xhat = (x - mean.reshape(shape)) * invstd.reshape(shape)
    y = xhat * g.reshape(shape) + beta.reshape(shape)
    m = x.size // x.shape[axis]
    dbeta, dg = dy.sum(axis=red), (dy * xhat).sum(axis=red)
    dx = (g * invstd / m).reshape(shape) * (m * dy - dbeta.reshape(shape) - xhat * dg.reshape(shape))
    return [y, dx, np.zeros_like(dg) if fix_gamma else dg, dbeta, (1 - momentum) * mean,
            momentum + (1 - momentum) * var]


CASES = [((4, 3, 5, 6), 1), ((8, 16, 2, 2), 1), ((6, 5), 1), ((2, 7, 9), -1), ((3, 4, 5), 2), ((2, 3, 4, 5, 2), 1),
         ((2, 6, 33), 1)]


@pytest.mark.parametrize("shape,axis", CASES)
@pytest.mark.parametrize("fix_gamma", [True, False])
def test_native_training_step_matches_float64_and_the_numpy_code(shape, axis, fix_gamma, monkeypatch):
    rs = np.random.RandomState(len(shape) * 7 + axis)
    c = shape[axis]
    x = (rs.standard_normal(shape) * 3 + 2).astype(np.float32)
    gamma, beta = rs.uniform(0.5, 2, c).astype(np.float32), rs.standard_normal(c).astype(np.float32)
    dy = rs.standard_normal(shape).astype(np.float32)
    attrs = dict(axis=axis, fix_gamma=fix_gamma, eps=1e-3, momentum=0.9)
    want = _reference(x, gamma, beta, dy, axis, 1e-3, fix_gamma, 0.9)
    numpy_res, _ = _train_step(x, gamma, beta, dy, False, monkeypatch, **attrs)
    got, taken = _train_step(x, gamma, beta, dy, True, monkeypatch, **attrs)
    assert taken == [True, True, True, True]  # statistics, forward pass, gradient sums, gradient pass
    for g, n, w in zip(got, numpy_res, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(g, n, rtol=2e-5, atol=2e-5)


def test_statistics_of_data_far_from_zero_are_as_accurate_as_numpys():
    rs = np.random.RandomState(3)
    x = (1000 + rs.standard_normal((64, 4, 32, 32)) * 0.01).astype(np.float32)
    mean, var = np.empty(4, np.float32), np.empty(4, np.float32)
    assert native.channel_mean_var_f32(x, 1, mean, var)
    x64 = x.astype(np.float64)
    want_mean, want_var = x64.mean(axis=(0, 2, 3)), x64.var(axis=(0, 2, 3))
    numpy_var = ((x - x.mean(axis=(0, 2, 3), keepdims=True)) ** 2).mean(axis=(0, 2, 3))
    np.testing.assert_allclose(mean, want_mean, rtol=1e-7)
    assert np.all(np.abs(var - want_var) <= np.abs(numpy_var - want_var) + 1e-6 * want_var)


def test_inference_global_stats_and_in_place(monkeypatch):
    rs = np.random.RandomState(4)
    x = rs.standard_normal((4, 3, 5, 5)).astype(np.float32)
    gamma, beta = rs.uniform(0.5, 2, 3).astype(np.float32), rs.standard_normal(3).astype(np.float32)
    mm, mv = rs.standard_normal(3).astype(np.float32), rs.uniform(0.5, 2, 3).astype(np.float32)
    want = (x - mm.reshape(1, 3, 1, 1)) / np.sqrt(mv.reshape(1, 3, 1, 1) + 1e-3) * gamma.reshape(1, 3, 1, 1) \
        + beta.reshape(1, 3, 1, 1)
    y = mx.nd.BatchNorm(mx.nd.array(x), mx.nd.array(gamma), mx.nd.array(beta), mx.nd.array(mm), mx.nd.array(mv),
                        fix_gamma=False)
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-5, atol=1e-5)
    # use_global_stats while training: dx = dy * gamma * invstd, no batch terms
    dy = rs.standard_normal(x.shape).astype(np.float32)
    for on in (True, False):
        _native(monkeypatch, on)
        xa = mx.nd.array(x)
        xa.attach_grad()
        with autograd.record():
            y = mx.nd.BatchNorm(xa, mx.nd.array(gamma), mx.nd.array(beta), mx.nd.array(mm), mx.nd.array(mv),
                                fix_gamma=False, use_global_stats=True)
        y.backward(mx.nd.array(dy))
        np.testing.assert_allclose(xa.grad.asnumpy(), dy * (gamma / np.sqrt(mv + 1e-3)).reshape(1, 3, 1, 1), rtol=1e-5)
        monkeypatch.undo()
    # the kernel's in-place form: out is x
    out = x.copy()
    m, s, b = (rs.standard_normal(3).astype(np.float32) for _ in range(3))
    assert native.channel_affine_f32(None, None, out, m, s, b, 1, out)
    np.testing.assert_allclose(out, (x - m.reshape(1, 3, 1, 1)) * s.reshape(1, 3, 1, 1) + b.reshape(1, 3, 1, 1),
                               rtol=1e-6, atol=1e-6)


def test_float16_data_uses_the_native_sums_on_its_float32_copy(monkeypatch):
    rs = np.random.RandomState(5)
    x = rs.standard_normal((4, 3, 6, 6)).astype(np.float16)
    gamma, beta = np.ones(3, np.float32), np.zeros(3, np.float32)
    dy = rs.standard_normal(x.shape).astype(np.float16)
    got, taken = _train_step(x, gamma, beta, dy, True, monkeypatch, dtype="float16", fix_gamma=False)
    assert taken == [True, True]  # the statistics and the gradient's sums; the float16 passes are numpy's
    want = _reference(x, gamma, beta, dy, 1, 1e-3, False, 0.9)
    for g, w in zip(got[:4], want[:4]):
        np.testing.assert_allclose(g, w, rtol=2e-2, atol=2e-2)


def test_entry_points_refuse_what_does_not_fit():
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    v3 = lambda: np.zeros(3, np.float32)  # noqa: E731
    mean, var = v3(), v3()
    for args in [(x.astype(np.float64), 1, mean, var), (x, 3, mean, var), (x, -1, mean, var),
                 (x, 1, np.zeros(4, np.float32), var), (x[:, :, ::2], 1, mean, var), (x, 1, mean, mean),
                 (x, 1, mean, np.zeros(3, np.int32))]:
        assert not native.channel_mean_var_f32(*args)
        assert (mean == 0).all() and (var == 0).all()
    assert native.channel_mean_var_f32(x, 1, mean, var)
    np.testing.assert_allclose(mean, x.mean(axis=(0, 2)))
    dy = np.ones_like(x)
    s1, s2 = v3(), v3()
    for args in [(dy[:1], x, mean, 1, s1, s2), (dy, x, mean, 1, s1, s1), (dy, x, np.zeros(2, np.float32), 1, s1, s2),
                 (dy, x, mean, 1, s1, x.reshape(-1)[:3])]:
        assert not native.channel_grad_sums_f32(*args)
    assert native.channel_grad_sums_f32(dy, x, mean, 1, s1, s2)
    np.testing.assert_allclose(s1, [8, 8, 8])
    np.testing.assert_allclose(s2, 0, atol=1e-5)
    out = np.full_like(x, 7)
    for args in [(dy, None, x, mean, s1, s2, 1, out), (None, s1, x, mean, s1, s2, 1, out),
                 (None, None, x, mean, None, s2, 1, out), (None, None, x, mean, s1, s2, 1, out[:1]),
                 (None, None, x, mean, s1, s2, 1, x.reshape(-1)[1:].reshape(1, 23)),
                 (None, None, x, mean, s1, out.reshape(-1)[:3], 1, out)]:
        assert not native.channel_affine_f32(*args)
    assert (out == 7).all()
    with pytest.raises(TypeError):
        native.channel_mean_var_f32(x, 1, mean)
