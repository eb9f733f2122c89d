"""_contrib_hawkesll: log-likelihood against a direct evaluation, gradients by finite differences,
shape/type inference and argument errors."""
import numpy as np
import pytest

import ember as mx
from ember import nd
from ember.base import MXNetError


def _direct_ll(mu, alpha, beta, state0, lags, marks, valid, max_time):
    """Sum over events of log(intensity) minus the integrated intensity, mark by mark, the slow way."""
    n, k = mu.shape
    out = np.zeros(n)
    for i in range(n):
        times = np.cumsum(lags[i, :int(valid[i])])
        ids = marks[i, :int(valid[i])]
        for m in range(k):
            tm = times[ids == m]
            s0 = state0[i, m]

            def excite(t):  # intensity above the background, from the carried state and earlier points
                past = tm[tm < t]
                return alpha[m] * beta[m] * (s0 * np.exp(-beta[m] * t) + np.exp(-beta[m] * (t - past)).sum())

            ll = sum(np.log(mu[i, m] + excite(t)) for t in tm)
            T = max_time[i]
            integral = mu[i, m] * T + alpha[m] * s0 * (1 - np.exp(-beta[m] * T))
            integral += alpha[m] * (1 - np.exp(-beta[m] * (T - tm))).sum()
            out[i] += ll - integral
    return out


def _case(rng, n=3, k=2, t=5):
    mu = rng.uniform(0.5, 2.0, (n, k))
    alpha = rng.uniform(0.1, 0.8, k)
    beta = rng.uniform(0.5, 2.0, k)
    state = rng.uniform(0.0, 1.0, (n, k))
    lags = rng.uniform(0.1, 1.0, (n, t))
    marks = rng.randint(0, k, (n, t)).astype(np.int32)
    valid = np.array([t, t - 2, 1][:n], dtype=np.float64)
    max_time = lags.sum(axis=1) + 0.5
    return mu, alpha, beta, state, lags, marks, valid, max_time


def _call(args, dtype=np.float64):
    arrs = [nd.array(a, dtype=np.int32 if i == 5 else dtype) for i, a in enumerate(args)]
    return nd.contrib.hawkesll(*arrs)


def test_loglikelihood_matches_direct_evaluation():
    args = _case(np.random.RandomState(0))
    ll, state = _call(args)
    np.testing.assert_allclose(ll.asnumpy(), _direct_ll(*args), rtol=1e-10)
    # the returned state is the decayed memory at max_time: s0 e^{-b T} + sum over points e^{-b (T - t_i)}
    mu, alpha, beta, s0, lags, marks, valid, max_time = args
    want = s0 * np.exp(-beta * max_time[:, None])
    for i in range(len(valid)):
        times = np.cumsum(lags[i, :int(valid[i])])
        for t, m in zip(times, marks[i, :int(valid[i])]):
            want[i, m] += np.exp(-beta[m] * (max_time[i] - t))
    np.testing.assert_allclose(state.asnumpy(), want, rtol=1e-10)


def test_gradients_match_finite_differences():
    args = list(_case(np.random.RandomState(1)))
    mu, alpha, beta = (nd.array(a, dtype=np.float64) for a in args[:3])
    rest = [nd.array(a, dtype=np.int32 if i == 2 else np.float64) for i, a in enumerate(args[3:])]
    w = np.array([1.0, -2.0, 0.5])  # a non-uniform head gradient checks the per-row scaling
    for x in (mu, alpha, beta):
        x.attach_grad()
    with mx.autograd.record():
        ll, _ = nd.contrib.hawkesll(mu, alpha, beta, *rest)
    ll.backward(nd.array(w, dtype=np.float64))
    eps = 1e-6
    for pos, x in enumerate((mu, alpha, beta)):
        base = args[pos]
        num = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            hi, lo = [list(args), list(args)]
            hi[pos], lo[pos] = base.copy(), base.copy()
            hi[pos][idx] += eps
            lo[pos][idx] -= eps
            num[idx] = (w @ _direct_ll(*hi) - w @ _direct_ll(*lo)) / (2 * eps)
        np.testing.assert_allclose(x.grad.asnumpy(), num, rtol=1e-5, atol=1e-7)


def test_float32_and_symbolic_inference():
    args = _case(np.random.RandomState(2))
    ll, state = _call(args, np.float32)
    assert ll.dtype == np.float32 and state.dtype == np.float32
    np.testing.assert_allclose(ll.asnumpy(), _direct_ll(*args), rtol=1e-5)
    names = ["lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time"]
    sym = mx.sym.contrib.hawkesll(*[mx.sym.var(n) for n in names])
    shapes = {n: a.shape for n, a in zip(names, args)}
    _, out_shapes, _ = sym.infer_shape(**shapes)
    assert out_shapes == [(3,), (3, 2)]
    _, out_types, _ = sym.infer_type(lda=np.float32)
    assert out_types == [np.float32, np.float32]


def test_bad_arguments_raise():
    args = list(_case(np.random.RandomState(3)))
    wrong_alpha = list(args)
    wrong_alpha[1] = np.ones(3)
    with pytest.raises(MXNetError, match="alpha must have shape"):
        _call(wrong_alpha)
    flat_lda = list(args)
    flat_lda[0] = args[0][:, 0]
    with pytest.raises(MXNetError, match="lda must be 2-D"):
        _call(flat_lda)
    bad_mark = list(args)
    bad_mark[5] = args[5].copy()
    bad_mark[5][0, 0] = 7
    with pytest.raises(MXNetError, match="not a process id"):
        _call(bad_mark)[0].asnumpy()  # a value error surfaces when the (asynchronous) kernel is waited on
    arrs = [nd.array(a) for a in args]  # marks as float32: MXNet requires int32
    with pytest.raises(MXNetError, match="marks must be int32"):
        nd.contrib.hawkesll(*arrs)
