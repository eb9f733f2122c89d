"""`mx.init` / `mx.initializer`: parameter initializers with MXNet's name-based dispatch.

An initializer is called as `init(InitDesc(name, attrs), arr)` and fills the
NDArray `arr` in place.  The parameter's name picks the rule: '*weight' gets the
initializer's own distribution, '*bias' and '*beta' zeros, '*gamma' ones,
moving/running means zeros and variances ones, and a variable's '__init__'
attribute (an initializer name or its `dumps()` JSON) overrides all of it.
Random draws come from ember's RNG (mx.nd.random), so mx.random.seed makes
them reproducible.
"""
from __future__ import annotations

import json
import logging
import re
from typing import Callable, Dict, Optional, Sequence, Union

import numpy as np

from . import ndarray as nd
from .base import EmberError
from .imperative.ndarray import NDArray


class InitializerError(EmberError, ValueError):
    """An initializer was named wrongly or cannot handle a parameter."""


class InitDesc(str):
    """A parameter name carrying its symbol attributes and the global initializer."""

    def __new__(cls, name: str, attrs: Optional[dict] = None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


_REGISTRY: Dict[str, type] = {}


def register(klass: type) -> type:
    """Class decorator: make an Initializer subclass creatable by its lower-cased name."""
    if not isinstance(klass, type) or not issubclass(klass, Initializer):
        raise TypeError(f"only Initializer subclasses can be registered, got {klass!r}")
    _REGISTRY[klass.__name__.lower()] = klass
    for alias in getattr(klass, "_aliases", ()):
        _REGISTRY[alias] = klass
    return klass


def create(init: Union[str, "Initializer"], /, **kwargs) -> "Initializer":
    """An initializer from an instance, a registered name, or the JSON `dumps()` writes.

    `init` is positional-only: an initializer may itself take an `init` keyword (FusedRNN)."""
    if isinstance(init, Initializer):
        if kwargs:
            raise TypeError("create: keyword arguments are only allowed with an initializer name")
        return init
    if not isinstance(init, str):
        raise TypeError(f"create: expected an Initializer or a name, got {type(init).__name__}")
    if init.startswith("["):
        try:
            name, stored = json.loads(init)
        except (ValueError, TypeError) as e:
            raise InitializerError(f"create: cannot parse initializer description {init!r}: {e}") from None
        return create(name, **dict(stored, **kwargs))
    klass = _REGISTRY.get(init.lower())
    if klass is None:
        raise InitializerError(f"cannot find initializer '{init}'; registered: {sorted(_REGISTRY)}")
    return klass(**kwargs)


# suffix -> method, checked in order (MXNet's dispatch, plus the BN statistics that
# MXNet handles through its BatchNorm variables' __init__ attribute)
_SUFFIX_RULES = (
    ("weight", "_init_weight"), ("bias", "_init_bias"), ("gamma", "_init_gamma"), ("beta", "_init_beta"),
    ("moving_mean", "_init_zero"), ("running_mean", "_init_zero"), ("moving_var", "_init_one"),
    ("running_var", "_init_one"), ("moving_inv_var", "_init_zero"), ("moving_avg", "_init_zero"),
    ("min", "_init_zero"), ("max", "_init_one"),
)


class Initializer:
    """Base class: dispatches on the parameter name; subclasses define `_init_weight`."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func: Optional[Callable] = None

    def set_verbosity(self, verbose: bool = False, print_func: Optional[Callable] = None) -> "Initializer":
        """Log a statistic of every initialized array (default: its RMS value)."""
        self._verbose = verbose
        self._print_func = print_func or (lambda x: str(float(np.sqrt(np.mean(x.asnumpy() ** 2)))))
        return self

    def dumps(self) -> str:
        """JSON `[name, kwargs]` that `create` turns back into this initializer."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, desc, arr: NDArray) -> None:
        if not isinstance(arr, NDArray):
            raise TypeError(f"initializer: arr must be an NDArray, got {type(arr).__name__}")
        if not isinstance(desc, InitDesc):
            if not isinstance(desc, str):
                raise TypeError(f"initializer: name must be a string or InitDesc, got {type(desc).__name__}")
            desc = InitDesc(desc)
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._log(desc, init, arr)
            return
        for suffix, method in _SUFFIX_RULES:
            if desc.endswith(suffix):
                getattr(self, method)(desc, arr)
                self._log(desc, suffix, arr)
                return
        self._init_default(desc, arr)

    def _log(self, desc, rule, arr) -> None:
        if self._verbose and self._print_func:
            logging.info("Initialized %s as %s: %s", desc, rule, self._print_func(arr))

    def _init_zero(self, _, arr: NDArray) -> None:
        arr[:] = 0.0

    def _init_one(self, _, arr: NDArray) -> None:
        arr[:] = 1.0

    # biases and shifts start at 0, scales at 1
    _init_bias = _init_beta = _init_zero
    _init_gamma = _init_one

    def _init_weight(self, name, arr: NDArray) -> None:
        raise NotImplementedError(f"{type(self).__name__} must define _init_weight")

    def _init_default(self, name, _) -> None:
        raise InitializerError(
            f"unknown initialization pattern for '{name}': default initialization covers names ending in "
            "weight, bias, gamma, beta and moving/running mean/var; set one with "
            "mx.sym.Variable(name, init=mx.init.*)")

    def __eq__(self, other):
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({args})"


@register
class Zero(Initializer):
    """Weights set to 0."""
    _aliases = ("zeros",)

    def __init__(self):
        super().__init__()

    _init_weight = Initializer._init_zero


@register
class One(Initializer):
    """Weights set to 1."""
    _aliases = ("ones",)

    def __init__(self):
        super().__init__()

    _init_weight = Initializer._init_one


@register
class Constant(Initializer):
    """Weights set to `value` (a scalar, or an array broadcast to the weight)."""

    def __init__(self, value):
        super().__init__(value=value)
        self.value = value

    def _init_weight(self, _, arr):
        value = self.value
        if isinstance(value, NDArray):
            value = value.asnumpy()
        arr[:] = value if np.isscalar(value) else np.broadcast_to(np.asarray(value, dtype=arr.dtype), arr.shape)

    def dumps(self) -> str:
        # an array value becomes a nested list in the config itself (as MXNet does), so `_kwargs`
        # is JSON-serializable after dumps() and create() rebuilds the same initializer from it
        value = self._kwargs["value"]
        if isinstance(value, NDArray):
            value = value.asnumpy()
        if isinstance(value, (np.ndarray, np.generic)):
            self._kwargs["value"] = value.tolist()
        return json.dumps([type(self).__name__.lower(), self._kwargs])


@register
class Uniform(Initializer):
    """Weights drawn from U(-scale, scale)."""

    def __init__(self, scale: float = 0.07):
        super().__init__(scale=scale)
        self.scale = scale

    def _init_weight(self, _, arr):
        nd.random.uniform(-self.scale, self.scale, shape=arr.shape, dtype=np.dtype(arr.dtype).name, ctx=arr.context, out=arr)


@register
class Normal(Initializer):
    """Weights drawn from N(0, sigma^2)."""

    def __init__(self, sigma: float = 0.01):
        super().__init__(sigma=sigma)
        self.sigma = sigma

    def _init_weight(self, _, arr):
        nd.random.normal(0, self.sigma, shape=arr.shape, dtype=np.dtype(arr.dtype).name, ctx=arr.context, out=arr)


_FACTOR_TYPES = ("avg", "in", "out")
_RND_TYPES = ("uniform", "gaussian")


@register
class Xavier(Initializer):
    """Glorot initialization: scale = sqrt(magnitude / factor).

    factor is fan_in, fan_out or their average (factor_type 'in'/'out'/'avg'),
    with fan_in = shape[1]*prod(shape[2:]) and fan_out = shape[0]*prod(shape[2:]);
    draws from U(-scale, scale) ('uniform') or N(0, scale^2) ('gaussian').
    """

    def __init__(self, rnd_type: str = "uniform", factor_type: str = "avg", magnitude: float = 3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in _RND_TYPES:
            raise ValueError(f"Xavier: rnd_type must be one of {list(_RND_TYPES)}, got {rnd_type!r}")
        if factor_type not in _FACTOR_TYPES:
            raise ValueError(f"Xavier: factor_type must be one of {list(_FACTOR_TYPES)}, got {factor_type!r}")
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise InitializerError(f"Xavier initializer cannot be applied to vector {name}: it needs at least 2-D, "
                                   f"got shape {shape}")
        hw_scale = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw_scale, shape[0] * hw_scale
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = float(np.sqrt(self.magnitude / factor))
        if self.rnd_type == "uniform":
            nd.random.uniform(-scale, scale, shape=shape, dtype=np.dtype(arr.dtype).name, ctx=arr.context, out=arr)
        else:
            nd.random.normal(0, scale, shape=shape, dtype=np.dtype(arr.dtype).name, ctx=arr.context, out=arr)


@register
class MSRAPrelu(Xavier):
    """He/MSRA initialization for PReLU nets: gaussian Xavier with magnitude 2 / (1 + slope^2)."""

    def __init__(self, factor_type: str = "avg", slope: float = 0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Bilinear(Initializer):
    """Weights of a bilinear-interpolation upsampling kernel (for Deconvolution), per (out, in)
    channel pair: w[y, x] = (1 - |x / f - c|) (1 - |y / f - c|) with f = ceil(width / 2),
    c = (2f - 1 - f mod 2) / (2f)."""

    def __init__(self):
        super().__init__()

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) != 4:
            raise InitializerError(f"Bilinear initializer needs a 4-D (out, in, height, width) weight, "
                                   f"got shape {shape} for {name}")
        f = np.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        wx = 1 - np.abs(np.arange(shape[3]) / f - c)
        wy = 1 - np.abs(np.arange(shape[2]) / f - c)
        arr[:] = np.broadcast_to(np.outer(wy, wx).astype(np.float32), shape)


class Mixed:
    """Use the first initializer whose regex pattern matches the parameter name."""

    def __init__(self, patterns: Sequence[str], initializers: Sequence[Initializer]):
        if len(patterns) != len(initializers):
            raise ValueError(f"Mixed: {len(patterns)} patterns but {len(initializers)} initializers")
        self.map = [(re.compile(p), create(i) if isinstance(i, str) else i) for p, i in zip(patterns, initializers)]

    def __call__(self, name, arr: NDArray) -> None:
        for prog, init in self.map:
            if prog.match(name):
                init(name, arr)
                return
        raise InitializerError(f"parameter name {name} did not match any pattern; add a '.*' pattern "
                               "at the end with a default initializer")


class Load:
    """Initialize from saved parameters (a dict or an mx.nd.save file), else `default_init`."""

    def __init__(self, param, default_init: Optional[Initializer] = None, verbose: bool = False):
        if isinstance(param, str):
            param = nd.load(param)
        if not isinstance(param, dict):
            raise TypeError(f"Load: param must be a dict of name -> NDArray or a file name, got {type(param).__name__}")
        self.param = {(k[4:] if k.startswith(("arg:", "aux:")) else k): v for k, v in param.items()}
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr: NDArray) -> None:
        if name in self.param:
            src = self.param[name]
            if tuple(arr.shape) != tuple(src.shape):
                raise InitializerError(f"parameter {name} cannot be loaded: shape mismatch, target {arr.shape} "
                                       f"vs loaded {src.shape}")
            arr[:] = src
            if self.verbose:
                logging.info("Initialized %s by loading", name)
        elif self.default_init is not None:
            self.default_init(name, arr)
        else:
            raise InitializerError(f"cannot initialize {name}: not in the loaded parameters and no default_init")


def __getattr__(name: str):
    """`mx.init.LSTMBias` / `mx.init.FusedRNN` live with the RNN code (ember/rnn/initializers.py), which
    imports this module; they are looked up there on first use."""
    if name in ("LSTMBias", "FusedRNN"):
        from .rnn import initializers
        return getattr(initializers, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
