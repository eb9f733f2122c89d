"""Basic layers (MXNet 1.9.1's `gluon.nn.basic_layers`): containers, Dense, Dropout, the normalisation
layers, Embedding, Flatten and the Lambda wrappers.  Every computation is a registry operator
called through F (mx.nd imperatively, mx.sym when traced)."""
from __future__ import annotations

import warnings

import numpy as np

from ... import ndarray as nd
from ... import symbol as sym
from ..block import Block, HybridBlock
from ..utils import _indent
from .activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Embedding",
           "BatchNorm", "BatchNormReLU", "InstanceNorm", "LayerNorm", "GroupNorm",
           "Flatten", "Lambda", "HybridLambda"]


# -- containers ---------------------------------------------------------------------------------
class _Stack:
    """What Sequential and HybridSequential share: add, indexing, len and the listing repr."""

    def add(self, *blocks) -> None:
        """Append blocks to the stack, in order."""
        for block in blocks:
            self.register_child(block)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if not isinstance(layers, list):
            return layers
        # a slice: a new container of the same type and prefix holding those layers
        net = type(self)(prefix=self._prefix)
        with net.name_scope():
            net.add(*layers)
        return net

    def __len__(self) -> int:
        return len(self._children)

    def __repr__(self) -> str:
        mods = "\n".join(f"  ({key}): {_indent(repr(block), 2)}" for key, block in self._children.items())
        return f"{type(self).__name__}(\n{mods}\n)"


class Sequential(_Stack, Block):
    """Runs its children one after the other: `net.add(nn.Dense(10)); net(x)`."""

    def forward(self, x):
        for block in self._children.values():
            x = block(x)
        return x

    def hybridize(self, active: bool = True, **kwargs) -> None:
        """Hybridize the HybridBlock children (warns when all are: HybridSequential would run as one graph)."""
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of this Sequential layer '{self.prefix}' are HybridBlocks. Consider "
                          "using HybridSequential for the best performance.", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_Stack, HybridBlock):
    """Sequential for HybridBlocks; hybridized, the whole stack runs as one graph."""

    def hybrid_forward(self, F, x):
        for block in self._children.values():
            x = block(x)
        return x


# -- Dense ----------------------------------------------------------------------------------------
class Dense(HybridBlock):
    """A fully connected layer: `activation(dot(x, weight.T) + bias)`.

    weight has shape (units, in_units) (in_units inferred at the first call when 0); with
    flatten=True the input is flattened to 2-D first, otherwise the last axis is transformed.
    """

    def __init__(self, units: int, activation=None, use_bias: bool = True, flatten: bool = True,
                 dtype="float32", weight_initializer=None, bias_initializer="zeros", in_units: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units), init=weight_initializer,
                                          dtype=dtype, allow_deferred_init=True)
            self.bias = (self.params.get("bias", shape=(units,), init=bias_initializer, dtype=dtype,
                                         allow_deferred_init=True) if use_bias else None)
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        args = (x, weight) if bias is None else (x, weight, bias)
        out = F.FullyConnected(*args, no_bias=bias is None, num_hidden=self._units, flatten=self._flatten,
                               name="fwd")
        return self.act(out) if self.act is not None else out

    def __repr__(self) -> str:
        units, in_units = self.weight.shape
        return f"{type(self).__name__}({in_units if in_units else None} -> {units}, " \
               f"{self.act if self.act else 'linear'})"


# -- Dropout ------------------------------------------------------------------------------------
class Dropout(HybridBlock):
    """Zeroes a fraction `rate` of the inputs (scaling the rest by 1/(1-rate)) while training.

    Active only in training mode (`autograd.record()` / `train_mode()`); `axes` shares one mask
    along the given axes.
    """

    def __init__(self, rate: float, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd", cudnn_off=False)
        return F.identity(x)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p = {self._rate}, axes={self._axes})"


# -- normalisation --------------------------------------------------------------------------------
def _kwargs_repr(kwargs: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


def _scale_shift_params(block, shape, center: bool, scale: bool, gamma_init, beta_init,
                        frozen_when_off: bool = False) -> None:
    """A normalisation layer's `gamma` and `beta`, trained only when `scale` / `center` (MXNet's rule);
    `frozen_when_off` also makes them non-differentiable then (BatchNorm's parameters in MXNet)."""
    for name, on, init in (("gamma", scale, gamma_init), ("beta", center, beta_init)):
        extra = {"differentiable": on} if frozen_when_off else {}
        setattr(block, name, block.params.get(name, grad_req="write" if on else "null", shape=shape, init=init,
                                              allow_deferred_init=True, **extra))


class _BatchNorm(HybridBlock):
    """Batch normalisation with running statistics (the base of BatchNorm and BatchNormReLU).

    Training (under `autograd.record()`), it normalises with the batch statistics and updates
    running_mean/running_var (`running = momentum * running + (1 - momentum) * batch`); otherwise,
    or with use_global_stats, it normalises with the running statistics.  scale=False fixes gamma
    at 1, center=False leaves beta out of training (grad_req 'null').
    """

    fuse_relu = False  # BatchNormReLU: the fused BatchNorm + ReLU operator

    def __init__(self, axis: int = 1, momentum: float = 0.9, epsilon: float = 1e-5, center: bool = True,
                 scale: bool = True, use_global_stats: bool = False, beta_initializer="zeros",
                 gamma_initializer="ones", running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats}
        if in_channels != 0:
            self.in_channels = in_channels
        shape = (in_channels,)
        _scale_shift_params(self, shape, center, scale, gamma_initializer, beta_initializer, frozen_when_off=True)
        self.running_mean = self.params.get("running_mean", grad_req="null", shape=shape,
                                            init=running_mean_initializer, allow_deferred_init=True,
                                            differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null", shape=shape,
                                           init=running_variance_initializer, allow_deferred_init=True,
                                           differentiable=False)

    def cast(self, dtype) -> None:
        # float16 networks keep float32 batch-norm parameters, as MXNet does
        if np.dtype(dtype).name == "float16":
            dtype = "float32"
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        op = F.contrib.BatchNormWithReLU if self.fuse_relu else F.BatchNorm
        return op(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        channels = self.gamma.shape[0]
        return f"{type(self).__name__}({_kwargs_repr(self._kwargs)}, in_channels={channels if channels else None})"


class BatchNorm(_BatchNorm):
    """Batch normalisation (Ioffe and Szegedy, 2014) over every axis but `axis`."""


class BatchNormReLU(_BatchNorm):
    """Batch normalisation followed by ReLU, as one operator (`_contrib_BatchNormWithReLU`)."""

    fuse_relu = True


class InstanceNorm(HybridBlock):
    """Instance normalisation (Ulyanov et al., 2016): each sample's channel normalised over the
    remaining axes; `axis` is the channel axis (scale defaults to False, as in MXNet)."""

    def __init__(self, axis: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = False,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        _scale_shift_params(self, (in_channels,), center, scale, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        # the operator normalises with channels on axis 1: move the channel axis there and back
        moved = F.swapaxes(x, dim1=1, dim2=self._axis)
        return F.swapaxes(F.InstanceNorm(moved, gamma, beta, name="fwd", eps=self._epsilon),
                          dim1=1, dim2=self._axis)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_kwargs_repr(self._kwargs)}, in_channels={self.gamma.shape[0]})"


class LayerNorm(HybridBlock):
    """Layer normalisation (Ba et al., 2016) along `axis` (default: the last one)."""

    def __init__(self, axis: int = -1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
                 beta_initializer="zeros", gamma_initializer="ones", in_channels: int = 0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _scale_shift_params(self, (in_channels,), center, scale, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_kwargs_repr(self._kwargs)}, in_channels={self.gamma.shape[0]})"


class GroupNorm(HybridBlock):
    """Group normalisation (Wu and He, 2018): the channels of axis 1 split into num_groups groups,
    each normalised per sample; gamma and beta hold one value per group (MXNet 1.9.1)."""

    def __init__(self, num_groups: int = 1, epsilon: float = 1e-5, center: bool = True, scale: bool = True,
                 beta_initializer="zeros", gamma_initializer="ones", prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center, "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _scale_shift_params(self, (num_groups,), center, scale, gamma_initializer, beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups, eps=self._epsilon)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_kwargs_repr(self._kwargs)})"


# -- Embedding, Flatten ---------------------------------------------------------------------------
class Embedding(HybridBlock):
    """Maps integer indices to rows of a (input_dim, output_dim) weight: (d1, ..., dk) -> (d1, ..., dk, output_dim)."""

    def __init__(self, input_dim: int, output_dim: int, dtype="float32", weight_initializer=None,
                 sparse_grad: bool = False, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype, "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True,
                                      grad_stype="row_sparse" if sparse_grad else "default")

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{type(self).__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class Flatten(HybridBlock):
    """Flattens (N, x1, ..., xn) to (N, x1 * ... * xn)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.flatten(x)

    def __repr__(self) -> str:
        return type(self).__name__


# -- Lambda wrappers ----------------------------------------------------------------------------------
def _function_name(function) -> str:
    return getattr(function, "__name__", type(function).__name__)


class Lambda(Block):
    """Wraps an operator name of mx.nd (`Lambda('tanh')`) or a function of NDArrays as a Block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            assert hasattr(nd, function), f"Function name {function} is not found in ndarray."
            self._func_impl = getattr(nd, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise ValueError(f"Unrecognized function in lambda: {function} of type {type(function)}")

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({_function_name(self._func_impl)})"


class HybridLambda(HybridBlock):
    """Wraps an operator name present in mx.nd and mx.sym, or a function `f(F, x, *args)`, as a HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            assert hasattr(nd, function) and hasattr(sym, function), \
                f"Function name {function} is not found in symbol/ndarray."
            by_namespace = {nd: getattr(nd, function), sym: getattr(sym, function)}
            self._func = lambda F, *args: by_namespace[F](*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = _function_name(function)
        else:
            raise ValueError(f"Unrecognized function in lambda: {function} of type {type(function)}")

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._func_name})"
