"""`mx.np.random`: numpy-style samplers (`size=None` gives a 0-d array) over the registry's random
operators, drawing from the same generators as `mx.nd.random` (seeded by `mx.random.seed`)."""
from __future__ import annotations

from typing import Optional

import numpy as _np

from ..imperative.invoke import invoke as _invoke
from .multiarray import _as_np, ndarray, reshape

__all__ = ["uniform", "normal", "randint", "seed"]


def _sample(op: str, attrs: dict, size, dtype, ctx) -> ndarray:
    shape = () if size is None else ((int(size),) if isinstance(size, (int, _np.integer)) else tuple(size))
    attrs = dict(attrs, shape=shape if shape else (1,), dtype=_np.dtype(dtype).name)
    out = _as_np(_invoke(op, [], attrs, ctx=ctx))
    return reshape(out, shape) if not shape else out


def uniform(low: float = 0.0, high: float = 1.0, size=None, dtype=None, ctx=None) -> ndarray:
    """Samples from U[low, high) (float32 by default)."""
    return _sample("_random_uniform", {"low": float(low), "high": float(high)}, size, dtype or _np.float32, ctx)


def normal(loc: float = 0.0, scale: float = 1.0, size=None, dtype=None, ctx=None) -> ndarray:
    """Samples from N(loc, scale**2) (float32 by default)."""
    if scale < 0:
        raise ValueError(f"normal: scale must be non-negative, got {scale}")
    return _sample("_random_normal", {"loc": float(loc), "scale": float(scale)}, size, dtype or _np.float32, ctx)


def randint(low: int, high: Optional[int] = None, size=None, dtype=None, ctx=None) -> ndarray:
    """Integers from [low, high) ([0, low) when high is None; int64 by default)."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"randint: low >= high ({low} >= {high})")
    return _sample("_random_randint", {"low": int(low), "high": int(high)}, size, dtype or _np.int64, ctx)


def seed(seed: int, ctx="all") -> None:  # noqa: A002 - numpy's parameter name
    """Seed the generators (as mx.random.seed)."""
    from .. import random as _random
    _random.seed(seed, ctx=ctx)
