"""`mx.sym.np`: the numpy functions for blocks traced under NumPy array semantics (`F.np` with F = mx.sym).

The `mx.np` function library works on np symbols as it does on arrays (see np_symbol.py), so every
function here is that library's, except the ones that make an array from nothing or from another's
shape and device: those build nodes (`_zeros`, `_full`, `_arange`, ...) instead of arrays.
"""
from __future__ import annotations

from typing import Optional

import numpy as _np

from .np_symbol import _Symbol, apply
from .symbol import Symbol

_F32 = _np.dtype(_np.float32)


def _dtype(dtype) -> str:
    return (_F32 if dtype is None else _np.dtype(dtype)).name


def _shape(shape) -> tuple:
    return (int(shape),) if isinstance(shape, (int, _np.integer)) else tuple(int(d) for d in shape)


def zeros(shape, dtype=None, order: str = "C", ctx=None) -> _Symbol:
    """A node of zeros of `shape` (float32 by default)."""
    return apply("_zeros", (), {"shape": _shape(shape), "dtype": _dtype(dtype)})


def ones(shape, dtype=None, order: str = "C", ctx=None) -> _Symbol:
    """A node of ones of `shape` (float32 by default)."""
    return apply("_ones", (), {"shape": _shape(shape), "dtype": _dtype(dtype)})


def full(shape, fill_value, dtype=None, order: str = "C", ctx=None, out=None) -> _Symbol:
    """A node of `shape` filled with `fill_value`: a scalar, or a symbol broadcast to `shape` (its
    dtype kept unless `dtype` is given, as numpy)."""
    if isinstance(fill_value, Symbol):
        value = _ns.asarray(fill_value)
        if dtype is not None:
            value = value.astype(dtype)
        return _ns.broadcast_to(value, _shape(shape))
    if dtype is None and isinstance(fill_value, (bool, _np.bool_)):
        dtype = _np.bool_  # numpy: a bool fill makes a bool array
    return apply("_full", (), {"shape": _shape(shape), "value": float(fill_value), "dtype": _dtype(dtype)})


empty = zeros  # a graph has no uninitialised memory to hand out


def arange(start, stop=None, step=1, dtype=None, ctx=None) -> _Symbol:  # noqa: D401
    """Evenly spaced values in [start, stop) (float32 by default)."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if step == 0:
        raise ValueError("arange: step must not be zero")
    return apply("_arange", (), {"start": float(start), "stop": float(stop), "step": float(step),
                                 "dtype": _dtype(dtype)})


def eye(N: int, M: Optional[int] = None, k: int = 0, dtype=None, ctx=None) -> _Symbol:
    """An N x M node with ones on the k-th diagonal."""
    if M is not None and int(M) == 0 or int(N) == 0:  # the operator's M=0 means "M = N"
        return zeros((int(N), 0 if M is None else int(M)), dtype)
    return apply("_eye", (), {"N": int(N), "M": int(M or N), "k": int(k), "dtype": _dtype(dtype)})


def identity(n: int, dtype=None, ctx=None) -> _Symbol:
    return eye(n, dtype=dtype)


def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None, axis: int = 0,
             ctx=None) -> _Symbol:
    """`num` evenly spaced values from start to stop."""
    if retstep or axis != 0:
        raise NotImplementedError("linspace on symbols: retstep and axis are not supported")
    return apply("_linspace", (), {"start": float(start), "stop": float(stop), "num": int(num),
                                   "endpoint": bool(endpoint), "dtype": _dtype(dtype)})


def _like(a, value, dtype):
    a = _ns.asarray(a)
    return full(a.shape, value, a.dtype if dtype is None else dtype)


def zeros_like(a, dtype=None, order: str = "C", ctx=None, out=None) -> _Symbol:
    return _like(a, 0, dtype)


def ones_like(a, dtype=None, order: str = "C", ctx=None, out=None) -> _Symbol:
    return _like(a, 1, dtype)


def full_like(a, fill_value, dtype=None, order: str = "C", ctx=None, out=None) -> _Symbol:
    return _like(a, fill_value, dtype)


def empty_like(prototype, dtype=None, order: str = "C", subok: bool = False, shape=None) -> _Symbol:
    return _like(prototype, 0, dtype) if shape is None else zeros(shape, dtype or _ns.asarray(prototype).dtype)


from .. import numpy as _ns  # noqa: E402  (the function library; it imports this package's np_symbol)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        fn = getattr(_ns, name)
    except AttributeError:
        raise AttributeError(f"mx.sym.np has no function '{name}'") from None
    return getattr(fn, "_symbol_form", fn)  # a creation function's node-building form (functions_more.py)
