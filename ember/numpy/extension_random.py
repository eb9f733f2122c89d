"""`mx.npx.random`: MXNet's numpy-extension samplers: `seed`, `bernoulli`, and the sample_n forms
`uniform_n` / `normal_n` (`batch_shape` + the parameters' broadcast shape), on the registry's
`_npi_bernoulli` / `_npi_uniform_n` / `_npi_normal_n` (ember/ops/np_random.py)."""
from __future__ import annotations

import numpy as _np

from .random import _SCALE_GE0, _draw, _is_scalar, seed  # noqa: F401  (npx.random.seed is mx.np.random's)

__all__ = ["seed", "bernoulli", "uniform_n", "normal_n"]


def uniform_n(low=0.0, high=1.0, batch_shape=None, dtype=None, ctx=None):
    """U[low, high) samples of shape batch_shape + broadcast(low.shape, high.shape) (differentiable)."""
    return _draw("_npi_uniform_n", [("low", low), ("high", high)], batch_shape, dtype, ctx)


def normal_n(loc=0.0, scale=1.0, batch_shape=None, dtype=None, ctx=None):
    """N(loc, scale**2) samples of shape batch_shape + broadcast(loc.shape, scale.shape) (differentiable)."""
    return _draw("_npi_normal_n", [("loc", loc), ("scale", scale)], batch_shape, dtype, ctx, checks=_SCALE_GE0)


def bernoulli(prob=None, logit=None, size=None, dtype=None, ctx=None, out=None):
    """0/1 samples, 1 with probability `prob` (or sigmoid(`logit`)); exactly one of them is given, a scalar
    or an array (values of prob outside [0, 1] raise ValueError)."""
    from .multiarray import _as_np, _call, array
    from ..imperative.invoke import invoke
    from ..symbolic.symbol import Symbol
    if (prob is None) == (logit is None):
        raise ValueError("bernoulli: either prob or logit must be specified, but not both")
    is_logit = prob is None
    value = logit if is_logit else prob
    attrs = {"prob": None, "logit": None, "is_logit": is_logit, "size": None if size is None else
             ((int(size),) if isinstance(size, (int, _np.integer)) else tuple(size)),
             "dtype": _np.dtype(dtype or _np.float32).name}
    if _is_scalar(value):
        if not is_logit and not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"bernoulli: prob must be in [0, 1], got {value}")
        attrs["logit" if is_logit else "prob"] = float(value)
        res = _as_np(invoke("_npi_bernoulli", [], attrs, ctx=ctx))
    else:
        if isinstance(value, (_np.ndarray, list, tuple)):
            value = array(value)
        res = _as_np(_call("_npi_bernoulli", [value], attrs))
    if out is not None and not isinstance(res, Symbol):
        res.copyto(out)
        return out
    return res
