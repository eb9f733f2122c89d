"""`mx.npx`: MXNet's numpy-extension namespace: the switches (`set_np`, `reset_np`, `is_np_array`,
`is_np_shape`) and the neural-network operators under their npx names (`npx.relu`,
`npx.softmax`, `npx.fully_connected`, ...), which are the registry's operators returning
`mx.np.ndarray`s (np symbols when given symbols: this module is `F.npx` both in a hybrid_forward run
on arrays and traced).  `set_np()` turns on NumPy shape and array semantics (see ember.util and
docs/numpy.md).
"""
from __future__ import annotations

import numpy as _np

from ..base import MXNetError
from ..context import cpu, current_context, gpu, num_gpus  # noqa: F401
from ..imperative.creation import waitall  # noqa: F401
from ..util import is_np_array, is_np_shape, reset_np, set_np, use_np, use_np_array, use_np_shape  # noqa: F401
from .multiarray import _as_np, _call, ndarray
from . import extension_random as random  # noqa: E402,F401  (npx.random)

# npx name -> registry operator (MXNet registers these as _npx_<name> aliases of the same kernels)
OPERATORS = {
    "relu": "relu", "sigmoid": "sigmoid", "softmax": "softmax", "log_softmax": "log_softmax",
    "activation": "Activation", "leaky_relu": "LeakyReLU", "batch_norm": "BatchNorm", "layer_norm": "LayerNorm",
    "convolution": "Convolution", "deconvolution": "Deconvolution", "fully_connected": "FullyConnected",
    "pooling": "Pooling", "dropout": "Dropout", "embedding": "Embedding", "one_hot": "one_hot", "pick": "pick",
    "topk": "topk", "batch_dot": "batch_dot", "batch_flatten": "Flatten", "reshape_like": "reshape_like",
    "broadcast_like": "broadcast_like", "sequence_mask": "SequenceMask", "erf": "erf", "erfinv": "erfinv",
    "gamma": "gamma", "gammaln": "gammaln", "smooth_l1": "smooth_l1", "gather_nd": "gather_nd", "rnn": "RNN",
    "arange_like": "_contrib_arange_like",
}


def nonzero(x):
    """The (N, max(x.ndim, 1)) int64 indices of x's non-zero elements, one row each in C order (MXNet's
    npx.nonzero: numpy's transpose(nonzero(x))); hybridized, the block runs op by op."""
    from .functions_nonzero import nonzero_rows
    return nonzero_rows(x)


def constraint_check(input, msg="Constraint violated."):  # noqa: A002 - MXNet's parameter name
    """A 0-d bool True when every element of `input` is true, else ValueError(msg) (when waited on)."""
    return _as_np(_call("_npx_constraint_check", (input,), {"msg": str(msg)}))


def _operator(npx_name: str, op: str):
    def fn(*args, **kwargs):
        return _as_np(_call(op, args, kwargs))
    fn.__name__ = npx_name
    fn.__doc__ = f"npx.{npx_name}: the registry operator `{op}`, returning mx.np.ndarray."
    return fn


for _name, _op in OPERATORS.items():
    globals()[_name] = _operator(_name, _op)


def reshape(a, newshape, reverse: bool = False, order: str = "C"):
    """npx.reshape: numpy's reshape with MXNet's special values (-1 infer, -2 copy, -3 drop a size-1
    dimension, -4 copy the rest, -5 merge two, -6 split one; `reverse` applies them from the right): the
    registry's `_npx_reshape` (ember/ops/np_products.py), which infers its own shapes."""
    if order != "C":
        raise MXNetError(f"npx.reshape: order={order!r} is not supported, only 'C'")
    spec = (int(newshape),) if isinstance(newshape, (int, _np.integer)) else tuple(int(d) for d in newshape)
    return _as_np(_call("_npx_reshape", (a,), {"newshape": spec, "reverse": bool(reverse)}))


def slice(a, begin, end, step=None):  # noqa: A001 - MXNet's name
    """npx.slice: a[begin[0]:end[0]:step[0], ...] over the leading len(begin) axes (None entries take
    the whole axis): the registry's `slice` operator (differentiable, hybridizable)."""
    def spec(v):
        return () if v is None else tuple(None if d is None else int(d) for d in v)
    b, e, s = spec(begin), spec(end), spec(step)
    if len(b) != len(e) or (s and len(s) != len(b)):
        raise MXNetError(f"npx.slice: begin {b}, end {e} and step {s} must have one length")
    return _as_np(_call("slice", (a,), {"begin": b, "end": e, "step": s}))


def _require_np_semantics(what: str) -> None:
    """npx.save/npx.load work only under NumPy shape and array semantics, as MXNet's: the file records
    0-d and zero-size shapes that legacy mode would read as unknown."""
    if not (is_np_shape() and is_np_array()):
        raise ValueError(f"npx.{what}: mx.np.ndarray files can only be {what}d under NumPy semantics; call "
                         "npx.set_np() (or decorate the code with use_np) first")


def save(file: str, arr) -> None:
    """Write an mx.np.ndarray, a list of them or a dict of str -> mx.np.ndarray to `file` (MXNet's
    NDArray file format with NumPy shapes: `npx.load` and `mx.nd.load` read it back)."""
    from ..imperative import serialization
    _require_np_semantics("save")
    if isinstance(arr, ndarray):
        arr = [arr]
    if isinstance(arr, dict):
        if not all(isinstance(k, str) and isinstance(v, ndarray) for k, v in arr.items()):
            raise TypeError("npx.save: a dict must map str keys to mx.np.ndarray values")
    elif isinstance(arr, list):
        if not all(isinstance(v, ndarray) for v in arr):
            raise TypeError("npx.save: a list must hold only mx.np.ndarray values")
    else:
        raise ValueError("npx.save: data must be an mx.np.ndarray, a list of them or a dict of str -> "
                         f"mx.np.ndarray, not {type(arr).__name__}")
    serialization.save(file, arr, np_shape=True)


def load(file: str):
    """The arrays `save` (or `mx.nd.save` under NumPy shape semantics) wrote to `file`: a list of
    mx.np.ndarray, or a dict of str -> mx.np.ndarray when they were saved with names."""
    from ..imperative import serialization
    _require_np_semantics("load")
    if not isinstance(file, str):
        raise TypeError(f"npx.load: file must be a str, not {type(file).__name__}")
    loaded = serialization.load(file)
    if isinstance(loaded, dict):
        return {k: _as_np(v) for k, v in loaded.items()}
    return [_as_np(v) for v in loaded]
