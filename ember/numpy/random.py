"""`mx.np.random`: numpy-style samplers (`size=None` gives a 0-d array) over the registry's random
operators, drawing from the same generators as `mx.nd.random` (seeded by `mx.random.seed`)."""
from __future__ import annotations

from typing import Optional

import numpy as _np

from ..imperative.invoke import invoke as _invoke
from .multiarray import _as_np, array, ndarray, reshape

__all__ = ["uniform", "normal", "randint", "choice", "multinomial", "rand", "randn", "seed"]


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


def choice(a, size=None, replace: bool = True, p=None, ctx=None) -> ndarray:
    """Samples from `a` (an int n: range(n); or a 1-D array), uniformly or with probabilities `p`;
    without replacement they are distinct.  An int `a` gives int64 indices, as numpy."""
    from .functions import asarray
    from .multiarray import arange
    population = None
    if isinstance(a, (int, _np.integer)):
        n = int(a)
    else:
        population = asarray(a)
        if population.ndim != 1:
            raise ValueError("choice: a must be 1-dimensional or an integer")
        n = population.shape[0]
    if n <= 0:
        raise ValueError("choice: a must be greater than 0 unless no samples are taken")
    shape = () if size is None else ((int(size),) if isinstance(size, (int, _np.integer)) else tuple(size))
    count = int(_np.prod(shape)) if shape else 1
    if not replace and count > n:
        raise ValueError("choice: cannot take a larger sample than population when replace=False")
    if p is not None:
        probs = asarray(p, dtype=_np.float32)
        if probs.shape != (n,):
            raise ValueError(f"choice: p must have shape ({n},), got {probs.shape}")
        if replace:
            drawn = _invoke("_sample_multinomial", [reshape(probs, (1, n))], {"shape": (count,), "dtype": "int32"})
            flat = _invoke("Cast", [reshape(drawn, (count,))], {"dtype": "int64"})
        else:  # Gumbel top-k: distinct draws, each weighted by p
            u = uniform(1e-20, 1.0, size=(n,), ctx=ctx)
            keys = _invoke("log", [probs], {}) - _invoke("log", [-_invoke("log", [u], {})], {})
            flat = _invoke("topk", [keys], {"k": count, "ret_typ": "indices", "dtype": "int64", "axis": 0})
    elif replace:
        flat = randint(0, n, size=(count,), ctx=ctx)
    else:
        flat = _invoke("_shuffle", [arange(n, dtype=_np.int64, ctx=ctx)], {})
        flat = _invoke("slice_axis", [flat], {"axis": 0, "begin": 0, "end": count})
    picked = flat if population is None else _invoke("take", [population, flat], {"axis": 0})
    return reshape(_as_np(picked), shape)


def rand(*size: int, **kwargs) -> ndarray:
    """U[0, 1) samples of shape `size` (a 0-d array when no size is given); kwargs as `uniform`'s."""
    return uniform(size=size or None, **kwargs)


def randn(*size: int, **kwargs) -> ndarray:
    """Standard normal samples of shape `size` (a 0-d array when no size is given); kwargs as `normal`'s."""
    return normal(size=size or None, **kwargs)


def multinomial(n: int, pvals, size=None) -> ndarray:
    """Counts of each outcome in `n` independent draws with probabilities `pvals` (a sequence or a 1-D
    mx.np.ndarray of length p), int64 of shape `size + (p,)` ((p,) when size is None).  As numpy, the
    last outcome takes the probability the others leave (1 - sum(pvals[:-1]))."""
    if isinstance(pvals, _np.ndarray):
        raise ValueError("multinomial: pvals as a numpy ndarray is not supported (as MXNet): pass a list, "
                         "a tuple or an mx.np.ndarray")
    if isinstance(pvals, ndarray):
        probs = pvals.asnumpy().astype(_np.float64)
    else:
        if any(isinstance(p, (list, tuple)) for p in pvals):
            raise ValueError("multinomial: object too deep for desired array (pvals must be 1-D)")
        probs = _np.asarray(pvals, dtype=_np.float64).reshape(-1)
    if probs.ndim != 1:
        raise ValueError(f"multinomial: pvals must be 1-D, got shape {probs.shape}")
    if int(n) < 0:
        raise ValueError(f"multinomial: n must be non-negative, got {n}")
    if (probs < 0).any() or probs[:-1].sum() > 1.0 + 1e-5:  # float32 pvals round
        raise ValueError("multinomial: pvals must be non-negative and sum(pvals[:-1]) <= 1")
    shape = () if size is None else ((int(size),) if isinstance(size, (int, _np.integer)) else tuple(size))
    k, experiments = probs.shape[0], int(_np.prod(shape)) if shape else 1
    if k == 0 or experiments == 0 or int(n) == 0:
        from .multiarray import zeros
        return zeros(shape + (k,), dtype=_np.int64)
    probs[-1] = max(0.0, 1.0 - probs[:-1].sum())
    p = array(probs.reshape(1, k), dtype=_np.float32)
    # experiments * n categorical draws from the shared generator, counted per outcome with one_hot
    draws = _invoke("_sample_multinomial", [p], {"shape": (experiments, int(n)), "dtype": "int32"})
    hot = _invoke("one_hot", [reshape(_as_np(draws), (experiments, int(n)))], {"depth": k})
    counts = _invoke("Cast", [_invoke("sum", [hot], {"axis": 1})], {"dtype": "int64"})
    return reshape(_as_np(counts), shape + (k,))


def seed(seed: int, ctx="all") -> None:  # noqa: A002 - numpy's parameter name
    """Seed the generators (as mx.random.seed)."""
    from .. import random as _random
    _random.seed(seed, ctx=ctx)
