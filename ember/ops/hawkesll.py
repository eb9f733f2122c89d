"""_contrib_hawkesll (MXNet's `mx.nd/sym.contrib.hawkesll`): log-likelihood of K independent
marked, self-exciting Hawkes processes with exponential decay, and its gradient.

Mark k has the conditional intensity  lda_k + alpha_k * beta_k * sum_{t_i < t, y_i = k} exp(-beta_k (t - t_i)).
Inputs per batch row i (N rows, T slots, K marks): lda (N, K), alpha (K,), beta (K,), state (N, K)
(the memory s_k(0) carried over from earlier events), lags (N, T) inter-arrival times, marks
(N, T) int32 process ids, valid_length (N,) points used in each row, max_time (N,) the end of the
observation window.  Outputs: the log-likelihood (N,) and the state at max_time (N, K).

The gradient reaches lda, alpha and beta only (the other inputs are data; the incoming state is a
constant, as in MXNet 1.9.1) and only from the log-likelihood output: MXNet ignores the gradient
of the returned state, and so does ember.
"""
from __future__ import annotations

import numpy as np

from ..base import DTypeError, IndexRangeError, ShapeError
from ._common import ograds_or_zeros
from .registry import OpDef, register

_NAME = "_contrib_hawkesll"
_BWD = "_contrib_backward_hawkesll"
_INPUTS = ["lda", "alpha", "beta", "state", "lags", "marks", "valid_length", "max_time"]
_MARKS = 5  # position of `marks`, the one integer input


def _dims(in_shapes):
    """(N, T, K) after checking every input's rank and size against lags (N, T) and lda (N, K)."""
    want_ndim = (2, 1, 1, 2, 2, 2, 1, 1)
    for name, s, nd in zip(_INPUTS, in_shapes, want_ndim):
        if len(s) != nd:
            raise ShapeError(f"{_NAME}: {name} must be {nd}-D, got shape {tuple(s)}")
    n, t = in_shapes[4]
    k = in_shapes[0][1]
    expect = [(n, k), (k,), (k,), (n, k), (n, t), (n, t), (n,), (n,)]
    for name, s, e in zip(_INPUTS, in_shapes, expect):
        if tuple(s) != e:
            raise ShapeError(f"{_NAME}: {name} must have shape {e} (N={n} rows, T={t} slots, K={k} marks "
                             f"from lags and lda), got {tuple(s)}")
    return n, t, k


def _infer_shape(attrs, in_shapes):
    if any(s is None or None in s for s in in_shapes):
        return in_shapes, [None, None]  # every size is cross-checked, so wait until all are known
    n, _, k = _dims(in_shapes)
    return in_shapes, [(n,), (n, k)]


def _infer_type(attrs, in_dtypes):
    # Everything but marks follows lda's float type; marks are int32 (MXNet's type check).
    known = [d for i, d in enumerate(in_dtypes) if d is not None and i != _MARKS]
    if not known:
        return in_dtypes, [None, None]
    dt = np.dtype(in_dtypes[0] if in_dtypes[0] is not None else known[0])
    out = []
    for i, (name, d) in enumerate(zip(_INPUTS, in_dtypes)):
        want = np.dtype(np.int32) if i == _MARKS else dt
        if d is not None and np.dtype(d) != want:
            raise DTypeError(f"{_NAME}: {name} must be {want.name}, got {np.dtype(d).name}")
        out.append(want)
    return out, [dt, dt]


def _host(a, dtype=np.float64):
    """A host float64 copy: the recursion runs event by event, so it runs in numpy, at full precision."""
    a = a.get() if hasattr(a, "get") else np.asarray(a)
    return a.astype(dtype)


def _read(inputs):
    """Host copies of the inputs, after checking that the marks of the valid points lie in [0, K)."""
    mu, alpha, beta, state, lags = (_host(x) for x in inputs[:5])
    marks = _host(inputs[5], np.int64)
    valid, max_time = _host(inputs[6]), _host(inputs[7])
    k = mu.shape[1]
    active = np.arange(marks.shape[1])[None, :] < valid[:, None]
    bad = active & ((marks < 0) | (marks >= k))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise IndexRangeError(f"{_NAME}: marks[{i}, {j}] = {marks[i, j]} is not a process id in [0, {k})")
    return mu, alpha, beta, state, lags, marks, valid, max_time


def _events(lags, marks, valid):
    """Per slot j: (rows, marks, time) of the rows whose slot j is a valid point, in time order."""
    n, t = lags.shape
    now = np.zeros(n)
    for j in range(t):
        rows = np.flatnonzero(j < valid)  # float valid_length, compared as MXNet does
        if rows.size == 0:
            return
        now[rows] += lags[rows, j]
        yield rows, marks[rows, j], now[rows]


def _forward(ctx, attrs, inputs, outputs, aux):
    mu, alpha, beta, state, lags, marks, valid, max_time = _read(inputs)
    ll = np.zeros(mu.shape[0])
    last = np.zeros_like(mu)  # time of the previous point of each mark (0 before any)
    for rows, c, now in _events(lags, marks, valid):
        d = now - last[rows, c]
        ed = np.exp(-beta[c] * d)
        s = state[rows, c]
        intensity = mu[rows, c] + alpha[c] * beta[c] * s * ed
        compensator = mu[rows, c] * d + alpha[c] * s * (1 - ed)
        ll[rows] += np.log(intensity) - compensator
        state[rows, c] = 1 + s * ed
        last[rows, c] = now
    # the compensator from each mark's last point to the end of the window, then decay the state there
    d = max_time[:, None] - last
    ed = np.exp(-beta[None, :] * d)
    ll -= (mu * d + alpha[None, :] * state * (1 - ed)).sum(axis=1)
    xp = ctx.xp
    outputs[0][...] = xp.asarray(ll.astype(outputs[0].dtype))
    outputs[1][...] = xp.asarray((state * ed).astype(outputs[1].dtype))


def _backward(ctx, attrs, inputs, outputs, aux):
    og = _host(inputs[0])
    mu, alpha, beta, state, lags, marks, valid, max_time = _read(inputs[1:])
    g_mu, g_alpha, g_beta = np.zeros_like(mu), np.zeros_like(mu), np.zeros_like(mu)
    ds = np.zeros_like(mu)  # d state / d beta, carried along the recursion
    last = np.zeros_like(mu)
    for rows, c, now in _events(lags, marks, valid):
        d = now - last[rows, c]
        b, a = beta[c], alpha[c]
        ed = np.exp(-b * d)
        s, dsi = state[rows, c], ds[rows, c]
        intensity = mu[rows, c] + a * b * s * ed
        g_mu[rows, c] += 1 / intensity - d
        g_alpha[rows, c] += b * s * ed / intensity - s * (1 - ed)
        g_beta[rows, c] += (a * ed * (s * (1 - b * d) + b * dsi) / intensity
                            - a * (dsi * (1 - ed) + s * d * ed))
        ds[rows, c] = ed * (dsi - d * s)
        state[rows, c] = 1 + s * ed
        last[rows, c] = now
    d = max_time[:, None] - last
    ed = np.exp(-beta[None, :] * d)
    g_mu -= d
    g_alpha -= state * (1 - ed)
    g_beta -= alpha[None, :] * (ds * (1 - ed) + state * d * ed)
    scale = og[:, None]
    xp = ctx.xp
    grads = [g_mu * scale, (g_alpha * scale).sum(axis=0), (g_beta * scale).sum(axis=0)]
    for out, g in zip(outputs[:3], grads):
        out[...] = xp.asarray(g.astype(out.dtype))
    for out in outputs[3:]:
        out[...] = 0  # data inputs and the incoming state get no gradient (MXNet 1.9.1)


def _backward_shape(attrs, in_shapes):
    return in_shapes, list(in_shapes[1:])


def _backward_type(attrs, in_dtypes):
    return in_dtypes, list(in_dtypes[1:])


def _gradient(F, attrs, inputs, outputs, out_grads):
    og = ograds_or_zeros(F, out_grads, outputs, 1)[0]  # only the returned state may have been used
    res = getattr(F, _BWD)(og, *inputs)
    return [res[i] for i in range(len(_INPUTS))]


register(OpDef(
    name=_BWD, inputs=["ograd"] + _INPUTS, outputs=[f"{n}_grad" for n in _INPUTS],
    infer_shape=_backward_shape, infer_type=_backward_type, kernels={"any": _backward},
    doc="Gradient of _contrib_hawkesll with respect to lda, alpha and beta (zeros for the other inputs)."))

register(OpDef(
    name=_NAME, inputs=_INPUTS, outputs=["output", "out_state"],
    infer_shape=_infer_shape, infer_type=_infer_type, kernels={"any": _forward}, gradient=_gradient,
    doc="Log-likelihood (N,) of marked Hawkes processes with exponential decay on the window (0, max_time], "
        "and the process state (N, K) at max_time."))
