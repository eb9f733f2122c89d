"""`mx.sym.random`'s Python helpers (MXNet's symbol/random.py): each distribution draws with `_random_<d>`
when its parameters are numbers and per element with `_sample_<d>` when they are Symbols."""
from __future__ import annotations

from numbers import Number

from .symbol import Symbol, make_op_function

__all__ = ["uniform", "normal", "randn", "poisson", "exponential", "gamma", "negative_binomial",
           "generalized_negative_binomial", "multinomial", "shuffle", "randint"]


def _draw(dist: str, params: dict, shape, dtype, kwargs, sampler: bool = True) -> Symbol:
    values = list(params.values())
    if shape is not None:
        kwargs["shape"] = shape
    if dtype is not None:
        kwargs["dtype"] = dtype
    if sampler and isinstance(values[0], Symbol):
        if not all(isinstance(v, Symbol) for v in values):
            raise TypeError(f"random.{dist}: distribution parameters must all be Symbols or all numbers, "
                            f"got {[type(v).__name__ for v in values]}")
        return make_op_function(f"_sample_{dist}")(*values, **kwargs)
    if not all(isinstance(v, Number) for v in values):
        raise TypeError(f"random.{dist}: distribution parameters must be "
                        f"{'Symbols or ' if sampler else ''}numbers, got {[type(v).__name__ for v in values]}")
    return make_op_function(f"_random_{dist}")(**params, **kwargs)


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Uniform samples on [low, high)."""
    return _draw("uniform", {"low": low, "high": high}, shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Normal samples of mean `loc` and standard deviation `scale`."""
    return _draw("normal", {"loc": loc, "scale": scale}, shape, dtype, kwargs)


def randn(*shape, **kwargs) -> Symbol:
    """Normal samples of the shape given positionally (loc, scale, dtype by keyword)."""
    loc, scale = kwargs.pop("loc", 0), kwargs.pop("scale", 1)
    dtype = kwargs.pop("dtype", None)
    # MXNet composes a `data` keyword into _random_normal, which has no inputs, and ignores it
    kwargs.pop("data", None)
    return _draw("normal", {"loc": loc, "scale": scale}, shape or None, dtype, kwargs)


def poisson(lam=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Poisson samples of rate `lam`."""
    return _draw("poisson", {"lam": lam}, shape, dtype, kwargs)


def exponential(scale=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Exponential samples of scale 1/lambda (MXNet passes lam = 1/scale)."""
    return _draw("exponential", {"lam": 1.0 / scale}, shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Gamma samples of shape `alpha` and scale `beta`."""
    return _draw("gamma", {"alpha": alpha, "beta": beta}, shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Negative binomial samples (k failures, success probability p)."""
    return _draw("negative_binomial", {"k": k, "p": p}, shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs) -> Symbol:
    """Generalized negative binomial samples of mean `mu` and dispersion `alpha`."""
    return _draw("generalized_negative_binomial", {"mu": mu, "alpha": alpha}, shape, dtype, kwargs)


def multinomial(data: Symbol, shape=None, get_prob: bool = True, dtype="int32", **kwargs) -> Symbol:
    """Indices drawn from the categorical distributions in the last axis of `data`."""
    if shape is not None:
        kwargs["shape"] = shape
    return make_op_function("_sample_multinomial")(data, get_prob=get_prob, dtype=dtype, **kwargs)


def shuffle(data: Symbol, **kwargs) -> Symbol:
    """`data` with its first axis randomly permuted."""
    return make_op_function("_shuffle")(data, **kwargs)


def randint(low, high, shape=None, dtype=None, **kwargs) -> Symbol:
    """Integers drawn uniformly from [low, high)."""
    return _draw("randint", {"low": low, "high": high}, shape, dtype, kwargs, sampler=False)
