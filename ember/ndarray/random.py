"""`mx.nd.random`: sampling functions (registry ops drawing from the device's RNG resource)."""
from __future__ import annotations

from ..imperative.invoke import call
from ..imperative.ndarray import NDArray


def _sample(dist: str, params: dict, shape, dtype, ctx, out, kwargs):
    """Draw with `_random_<dist>` (scalar parameters) or per element with `_sample_<dist>` (NDArrays)."""
    op = f"_random_{dist}"
    if any(isinstance(v, NDArray) for v in params.values()):
        # per-element parameters: MXNet's _sample_* ops
        arrays = list(params.values())
        if not all(isinstance(v, NDArray) for v in arrays):
            raise TypeError(f"{op}: parameters must be all scalars or all NDArrays")
        attrs = dict(kwargs)
        if shape is not None:
            attrs["shape"] = shape
        if dtype is not None:
            attrs["dtype"] = dtype
        return call(f"_sample_{dist}", tuple(arrays), dict(attrs, out=out))
    attrs = dict(params, **kwargs)
    # MXNet 1.x draws one value, shape (1,), when no shape is given
    attrs["shape"] = (1,) if shape is None else shape
    if dtype is not None:
        attrs["dtype"] = dtype
    if ctx is not None:
        attrs["ctx"] = ctx
    return call(op, (), dict(attrs, out=out))


def uniform(low=0.0, high=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from U[low, high)."""
    return _sample("uniform", {"low": low, "high": high}, shape, dtype, ctx, out, kwargs)


def normal(loc=0.0, scale=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from N(loc, scale**2)."""
    return _sample("normal", {"loc": loc, "scale": scale}, shape, dtype, ctx, out, kwargs)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs) -> NDArray:
    """Integers drawn uniformly from [low, high)."""
    return _sample("randint", {"low": low, "high": high}, shape, dtype, ctx, out, kwargs)


def exponential(scale=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from the exponential distribution with mean `scale` (rate 1/scale)."""
    lam = 1.0 / scale if isinstance(scale, NDArray) else 1.0 / float(scale)
    return _sample("exponential", {"lam": lam}, shape, dtype, ctx, out, kwargs)


def gamma(alpha=1.0, beta=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from Gamma(alpha, scale beta)."""
    return _sample("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, ctx, out, kwargs)


def poisson(lam=1.0, shape=None, dtype=None, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from Poisson(lam)."""
    return _sample("poisson", {"lam": lam}, shape, dtype, ctx, out, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs) -> NDArray:
    """Samples from NB(k, p): failures before k successes of probability p."""
    return _sample("negative_binomial", {"k": k, "p": p}, shape, dtype, ctx, out, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None,
                                  **kwargs) -> NDArray:
    """Samples from the gamma-Poisson mixture with mean mu and dispersion alpha."""
    return _sample("generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape, dtype, ctx, out, kwargs)


def randn(*shape, loc=0.0, scale=1.0, dtype=None, ctx=None, out=None, **kwargs) -> NDArray:
    """Normal samples of the shape given positionally: `randn(2, 3)`."""
    return normal(loc, scale, shape=shape or None, dtype=dtype, ctx=ctx, out=out, **kwargs)


def multinomial(data: NDArray, shape=None, get_prob: bool = False, out=None, dtype="int32", **kwargs):
    """Indices drawn from the categorical distributions in the last axis of `data`.

    With `get_prob=True` also returns the log-probabilities of the drawn samples (MXNet 1.x).
    """
    if not isinstance(data, NDArray):
        raise TypeError(f"multinomial: data must be an NDArray of probabilities, got {type(data).__name__}")
    attrs = dict(kwargs, get_prob=get_prob, dtype=dtype)
    if shape is not None:
        attrs["shape"] = shape
    return call("_sample_multinomial", (data,), dict(attrs, out=out))


def shuffle(data: NDArray, out=None, **kwargs) -> NDArray:
    """A copy of `data` with its first axis randomly permuted."""
    if not isinstance(data, NDArray):
        raise TypeError(f"shuffle: data must be an NDArray, got {type(data).__name__}")
    return call("_shuffle", (data,), dict(kwargs, out=out))


# The other `_random_*` / `_sample_*` registry ops under MXNet's short names (normal_like, pdf_normal, ...).
from ._prefixed import resolver as _resolver  # noqa: E402

__getattr__, __dir__ = _resolver("random", ("_random_", "_sample_"), globals())
