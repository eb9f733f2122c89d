"""`mx.np.random`: numpy-style samplers (`size=None` gives a 0-d array) over the registry's random
operators, drawing from the same generators as `mx.nd.random` (seeded by `mx.random.seed`)."""
from __future__ import annotations

from typing import Optional

import numpy as _np

from ..imperative.invoke import invoke as _invoke
from .multiarray import _as_np, _call, _deliver, array, ndarray, reshape

__all__ = ["uniform", "normal", "randint", "choice", "multinomial", "rand", "randn", "seed", "gamma", "beta",
           "chisquare", "exponential", "rayleigh", "weibull", "pareto", "power", "lognormal", "logistic", "gumbel",
           "laplace", "multivariate_normal", "shuffle"]


def _size(size):
    if size is None:
        return None
    return (int(size),) if isinstance(size, (int, _np.integer)) else tuple(int(d) for d in size)


def _is_scalar(v) -> bool:
    return isinstance(v, (int, float, _np.number, bool)) or (isinstance(v, _np.ndarray) and v.ndim == 0)


def _draw(op: str, params, size, dtype, ctx, out=None, _trace: bool = False, checks=()):
    """Registry sampler `op` (ember/ops/np_random.py) with `params` ((name, value) pairs): a scalar becomes
    the op's attribute, an array (or symbol) one of its inputs.  `checks`: (name, test, message) for
    scalar parameters, refused with ValueError here (array ones are checked by the op when it runs)."""
    from ..symbolic.symbol import Symbol
    inputs, attrs = [], {}
    for name, value in params:
        if _is_scalar(value):
            value = float(value)
            for pname, test, message in checks:
                if pname == name and not test(value):
                    raise ValueError(f"{op[5:]}: {message}")
            attrs[name] = value
        else:
            if isinstance(value, (_np.ndarray, list, tuple)):
                value = array(value)
            inputs.append(value)
            attrs[name] = None
    attrs.update(size=_size(size), dtype="None" if dtype is None else _np.dtype(dtype).name)
    if not inputs and _trace:
        from ..symbolic import np_symbol
        return np_symbol.apply(op, (), attrs)
    if any(isinstance(x, Symbol) for x in inputs):
        return _as_np(_call(op, inputs, attrs))
    return _deliver(_invoke(op, inputs, attrs, ctx=ctx) if not inputs else _call(op, inputs, attrs), out)


_GT0 = lambda v: v > 0  # noqa: E731
_SCALE_GE0 = [("scale", lambda v: v >= 0, "scale must be non-negative")]  # `_draw`'s check of a scale


def uniform(low=0.0, high=1.0, size=None, dtype=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples from U[low, high) (float32 by default); low/high scalars or arrays (differentiable)."""
    return _draw("_npi_uniform", [("low", low), ("high", high)], size, dtype, ctx, out, _trace)


def normal(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples from N(loc, scale**2) (float32 by default); reparameterized: differentiable in loc and scale."""
    return _draw("_npi_normal", [("loc", loc), ("scale", scale)], size, dtype, ctx, out, _trace, _SCALE_GE0)


def lognormal(mean=0.0, sigma=1.0, size=None, dtype=None, ctx=None, out=None, _trace=False) -> ndarray:
    """exp of N(mean, sigma**2) samples."""
    from .functions import exp
    if _is_scalar(sigma) and float(sigma) < 0:
        raise ValueError("lognormal: sigma must be non-negative")
    return _deliver(exp(normal(mean, sigma, size=size, dtype=dtype, ctx=ctx, _trace=_trace)), out)


def logistic(loc=0.0, scale=1.0, size=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples from the logistic distribution (differentiable in loc and scale)."""
    return _draw("_npi_logistic", [("loc", loc), ("scale", scale)], size, None, ctx, out, _trace, _SCALE_GE0)


def gumbel(loc=0.0, scale=1.0, size=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples from the Gumbel distribution (differentiable in loc and scale)."""
    return _draw("_npi_gumbel", [("loc", loc), ("scale", scale)], size, None, ctx, out, _trace, _SCALE_GE0)


def laplace(loc=0.0, scale=1.0, size=None, dtype=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples from the Laplace distribution (differentiable in loc and scale)."""
    return _draw("_npi_laplace", [("loc", loc), ("scale", scale)], size, dtype, ctx, out, _trace, _SCALE_GE0)


def exponential(scale=1.0, size=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples from the exponential distribution with mean `scale` (differentiable in scale)."""
    return _draw("_npi_exponential", [("scale", scale)], size, None, ctx, out, _trace, _SCALE_GE0)


def rayleigh(scale=1.0, size=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples from the Rayleigh distribution (differentiable in scale)."""
    return _draw("_npi_rayleigh", [("scale", scale)], size, None, ctx, out, _trace, _SCALE_GE0)


def weibull(a, size=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples from the Weibull distribution with shape `a` > 0 (differentiable in a)."""
    return _draw("_npi_weibull", [("a", a)], size, None, ctx, out, _trace, [("a", _GT0, "a must be > 0")])


def pareto(a, size=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples from numpy's Pareto II (Lomax) distribution with shape `a` > 0 (differentiable in a)."""
    return _draw("_npi_pareto", [("a", a)], size, None, ctx, out, _trace, [("a", _GT0, "a must be > 0")])


def power(a, size=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples in [0, 1] from the power distribution with exponent `a` - 1, a > 0 (differentiable in a)."""
    return _draw("_npi_power", [("a", a)], size, None, ctx, out, _trace, [("a", _GT0, "a must be > 0")])


def gamma(shape=1.0, scale=1.0, size=None, dtype=None, ctx=None, out=None, _trace=False) -> ndarray:
    """Samples from Gamma(shape, scale), both > 0 (differentiable in both: implicit reparameterization)."""
    return _draw("_npi_gamma", [("shape", shape), ("scale", scale)], size, dtype, ctx, out, _trace,
                 [("shape", _GT0, "shape must be > 0"), ("scale", _GT0, "scale must be > 0")])


def beta(a, b, size=None, dtype=None, ctx=None, _trace=False) -> ndarray:
    """Samples from Beta(a, b): X / (X + Y) with X ~ Gamma(a, 1), Y ~ Gamma(b, 1)."""
    if dtype is not None and _np.dtype(dtype) not in (_np.float16, _np.float32, _np.float64):
        raise ValueError(f"beta: dtype must be a float type, got {dtype}")
    x = gamma(a, 1.0, size=size, dtype=_np.float64, ctx=ctx, _trace=_trace)
    y = gamma(b, 1.0, size=size, dtype=_np.float64, ctx=ctx, _trace=_trace)
    return (x / (x + y)).astype(dtype or _np.float32)


def chisquare(df, size=None, dtype=None, ctx=None, _trace=False) -> ndarray:
    """Samples from the chi-square distribution with `df` degrees of freedom: Gamma(df / 2, 2)."""
    half = float(df) / 2 if _is_scalar(df) else df / 2
    if _is_scalar(df) and float(df) <= 0:
        raise ValueError("chisquare: df must be > 0")
    return gamma(half, 2.0, size=size, dtype=dtype, ctx=ctx, _trace=_trace)


def multivariate_normal(mean, cov, size=None, check_valid=None, tol=None, _trace=False) -> ndarray:
    """Samples from N(mean, cov): mean + L z with L the Cholesky factor of cov (batched: mean's leading axes
    and cov's broadcast), of shape size + broadcast(mean.shape[:-1], cov.shape[:-2]) + (k,)."""
    from . import linalg
    from .functions import asarray, matmul, squeeze, expand_dims
    from ..symbolic.symbol import Symbol
    if check_valid is not None or tol is not None:
        raise NotImplementedError("multivariate_normal: check_valid and tol are not supported (as MXNet)")
    traced = _trace or isinstance(mean, Symbol) or isinstance(cov, Symbol)
    if not traced:
        mean, cov = asarray(mean), asarray(cov)
    if len(mean.shape) < 1 or len(cov.shape) < 2 or cov.shape[-1] != cov.shape[-2] or cov.shape[-1] != mean.shape[-1]:
        raise ValueError(f"multivariate_normal: mean of shape {mean.shape} and cov of shape {cov.shape} do not match "
                         "(mean (..., k), cov (..., k, k))")
    batch = tuple(_np.broadcast_shapes(tuple(mean.shape[:-1]), tuple(cov.shape[:-2])))
    k = mean.shape[-1]
    dtype = mean.dtype
    work = _np.float64 if dtype == _np.float64 else _np.float32
    shape = (_size(size) or ()) + batch + (k,)
    z = normal(0.0, 1.0, size=shape, dtype=work, _trace=traced)
    chol = linalg.cholesky(cov.astype(work))
    res = mean.astype(work) + squeeze(matmul(chol, expand_dims(z, -1)), axis=-1)
    return res.astype(dtype)


def shuffle(x) -> None:
    """Permute x along its first axis in place."""
    _invoke("_shuffle", [x], {}, out=x)


def randint(low: int, high: Optional[int] = None, size=None, dtype=None, ctx=None) -> ndarray:
    """Integers from [low, high) ([0, low) when high is None; int64 by default)."""
    if high is None:
        low, high = 0, low
    if high <= low:
        raise ValueError(f"randint: low >= high ({low} >= {high})")
    shape = _size(size) or ()
    attrs = {"low": int(low), "high": int(high), "shape": shape or (1,), "dtype": _np.dtype(dtype or _np.int64).name}
    res = _as_np(_invoke("_random_randint", [], attrs, ctx=ctx))
    return reshape(res, shape) if not shape else res


def choice(a, size=None, replace: bool = True, p=None, ctx=None, _trace: bool = False) -> ndarray:
    """Samples from `a` (an int n: range(n); or a 1-D array), uniformly or with probabilities `p`;
    without replacement they are distinct.  An int `a` gives int64 indices, as numpy.  On symbols (a traced
    block) it builds the same operators as graph nodes."""
    from .functions import asarray
    from ..symbolic.symbol import Symbol
    traced = _trace or isinstance(a, Symbol) or isinstance(p, Symbol)

    def op(name, inputs, attrs):
        if traced:
            from ..symbolic import np_symbol
            return np_symbol.apply(name, tuple(inputs), attrs)
        return _as_np(_invoke(name, list(inputs), attrs, ctx=ctx))

    population = None
    if isinstance(a, (int, _np.integer)):
        n = int(a)
    else:
        population = a if isinstance(a, Symbol) else asarray(a)
        if population.ndim != 1:
            raise ValueError("choice: a must be 1-dimensional or an integer")
        n = population.shape[0]
    if n <= 0:
        raise ValueError("choice: a must be greater than 0 unless no samples are taken")
    shape = _size(size) or ()
    count = int(_np.prod(shape)) if shape else 1
    if not replace and count > n:
        raise ValueError("choice: cannot take a larger sample than population when replace=False")
    if p is not None:
        probs = p.astype(_np.float32) if isinstance(p, Symbol) else asarray(p, dtype=_np.float32)
        if probs.shape != (n,):
            raise ValueError(f"choice: p must have shape ({n},), got {probs.shape}")
        if replace:
            drawn = op("_sample_multinomial", [op("reshape", [probs], {"shape": (1, n)})],
                       {"shape": (count,), "dtype": "int32"})
            flat = op("Cast", [op("reshape", [drawn], {"shape": (count,)})], {"dtype": "int64"})
        else:  # Gumbel top-k: distinct draws, each weighted by p
            u = op("_npi_uniform", [], {"low": 1e-20, "high": 1.0, "size": (n,), "dtype": "float32"})
            keys = op("elemwise_sub", [op("log", [probs], {}), op("log", [op("negative", [op("log", [u], {})], {})], {})],
                      {})
            flat = op("topk", [keys], {"k": count, "ret_typ": "indices", "dtype": "int64", "axis": 0})
    elif replace:
        flat = op("_random_randint", [], {"low": 0, "high": n, "shape": (count,), "dtype": "int64"})
    else:
        flat = op("_shuffle", [op("_arange", [], {"start": 0, "stop": n, "dtype": "int64"})], {})
        flat = op("slice_axis", [flat], {"axis": 0, "begin": 0, "end": count})
    picked = flat if population is None else op("take", [population, flat], {"axis": 0})
    picked = op("_np_reshape", [picked], {"newshape": shape})
    return picked


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


class _SymbolForms:
    """mx.sym.np.random (F.np.random while a block is traced): the samplers build graph nodes even when
    every parameter is a scalar (`x + F.np.random.normal(size=(2,))`)."""

    def __getattr__(self, name):
        fn = globals().get(name)
        if fn is None or name.startswith("_"):
            raise AttributeError(f"mx.sym.np.random has no function '{name}'")
        try:
            import inspect
            takes = "_trace" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            takes = False
        if not takes:
            return fn

        def traced(*args, **kwargs):
            return fn(*args, _trace=True, **kwargs)
        traced.__name__, traced.__doc__ = name, fn.__doc__
        return traced


_symbol_form = _SymbolForms()
