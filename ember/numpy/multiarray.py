"""`mx.np.ndarray` and numpy-style creation: the core of MXNet 1.9's numpy interface.

`ndarray` is a view type over the same storage and engine var as `mx.nd.NDArray` (converting
either way with `as_np_ndarray()` / `as_nd_ndarray()` copies nothing).  What it changes, as MXNet's
`mx.np.ndarray` does: creation defaults (float32, Python lists included; numpy arrays keep their
dtype), `repr` (`array(...)`, dtype shown unless float32), comparisons give bool arrays, reshape
takes numpy's shape rules (only -1 is special), and results of its operators and methods are
`ndarray`s again.  The numpy function library (`np.sum`, `np.dot`, ...) beyond creation and
reshape is not part of this core.
"""
from __future__ import annotations

import builtins
from typing import Optional

import numpy as _np

from ..imperative import autograd_state
from ..imperative import creation as _creation
from ..imperative.invoke import call as _nd_call
from ..imperative.ndarray import NDArray
from ..ops.shape import numpy_reshape_target
from ..symbolic import np_symbol as _np_symbol
from ..symbolic.symbol import Symbol as _Symbol

__all__ = ["ndarray", "array", "zeros", "ones", "empty", "full", "arange", "zeros_like", "ones_like",
           "full_like", "empty_like", "reshape"]

_F32 = _np.dtype(_np.float32)

# numpy's function / ufunc name -> the mx.np implementation numpy dispatches to when handed an
# mx.np.ndarray (filled by ember.numpy_dispatch_protocol); anything else falls back to numpy itself
_NUMPY_ARRAY_FUNCTION_DICT: dict = {}
_NUMPY_ARRAY_UFUNC_DICT: dict = {}


def _call(op, args, kwargs):
    """Registry op `op` in mx.nd's calling convention: on arrays, or building a node when an operand is
    a symbol (a block traced under NumPy array semantics: the function library serves both)."""
    for a in args:
        if isinstance(a, _Symbol):
            return _np_symbol.apply(op, args, kwargs)
    if kwargs:
        for v in kwargs.values():
            if isinstance(v, _Symbol):
                return _np_symbol.apply(op, args, kwargs)
    return _nd_call(op, args, kwargs)


def _as_np(result):
    """An NDArray result as an `ndarray` view (same storage, var and autograd entry); a Symbol as an
    np symbol (`mx.sym.np._Symbol`)."""
    if type(result) is NDArray:
        view = ndarray(result._data, result._chunk)
        view._ag = result._ag
        return view
    if isinstance(result, (list, tuple)):
        return type(result)(_as_np(r) for r in result)
    if isinstance(result, _Symbol):
        return _np_symbol.as_np(result)
    return result


def _deliver(result, out):
    """`result` as an mx.np result, or copied into `out` (numpy's `out=`), which is returned."""
    if out is None:
        return _as_np(result)
    result.copyto(out)
    return out


class ndarray(NDArray):  # noqa: N801 - MXNet's (and numpy's) class name
    """An array with numpy semantics (MXNet's `mx.np.ndarray`); shares its type's machinery with NDArray."""

    __slots__ = ()

    def __array_function__(self, func, types, args, kwargs):
        """numpy's `func` on mx.np arrays (NEP 18): the registered mx.np function, else numpy's own on
        host copies with array results back as mx.np.ndarrays (refused while autograd records)."""
        mine = _NUMPY_ARRAY_FUNCTION_DICT.get(func)
        if mine is not None:
            if not builtins.all(issubclass(t, ndarray) for t in types):
                return NotImplemented
            return mine(*args, **kwargs)
        return _numpy_fallback(getattr(func, "__name__", str(func)), func, args, kwargs)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy's ufunc called on mx.np arrays (NEP 13): the mx.np function of the same name, else
        numpy's on host copies (as `__array_function__`); only plain calls, not reduce/accumulate."""
        if method != "__call__":
            return NotImplemented
        if "out" in kwargs:  # numpy hands `out` over as a tuple
            out = kwargs["out"]
            if len(out) != 1:
                raise ValueError("The `out` parameter must have exactly one ndarray")
            kwargs["out"] = out[0]
        mine = _NUMPY_ARRAY_UFUNC_DICT.get(ufunc.__name__)
        if mine is not None:
            return mine(*inputs, **kwargs)
        out = _numpy_fallback(ufunc.__name__, ufunc, inputs, kwargs)
        # numpy gives a scalar for 0-d operands; mx.np's elementwise results are always arrays
        return array(out, dtype=out.dtype) if isinstance(out, _np.generic) else out

    def as_nd_ndarray(self) -> NDArray:
        """The same array as a legacy `mx.nd.NDArray` (no copy)."""
        view = NDArray(self._data, self._chunk)
        view._ag = self._ag
        return view

    def as_np_ndarray(self) -> "ndarray":
        return self

    @property
    def grad(self) -> Optional["ndarray"]:
        """The gradient buffer (attach_grad) as an mx.np.ndarray view of the same storage; None for a
        variable attached with grad_req='null' (MXNet's mx.np.ndarray has no buffer then)."""
        if getattr(self._ag, "grad_req", None) == "null":
            return None
        g = NDArray.grad.fget(self)
        return None if g is None else _as_np(g)

    @property
    def dtype(self) -> _np.dtype:
        """The element type as a numpy.dtype (MXNet's mx.np.ndarray; NDArray gives the scalar type)."""
        return self._data.dtype

    def __repr__(self) -> str:
        values = self.asnumpy()
        if values.size == 0:
            body = f"array([], shape={values.shape}"
        else:
            body = "array(" + _np.array2string(values, separator=", ", prefix="array(")
        dtype = values.dtype
        suffix = "" if dtype == _F32 or dtype == _np.bool_ else f", dtype={dtype.name}"
        ctx = self.context
        if ctx.device_type != "cpu":
            suffix += f", ctx={ctx}"
        return body + suffix + ")"

    def __str__(self) -> str:
        text = str(self.asnumpy())
        ctx = self.context
        return text if ctx.device_type == "cpu" else f"{text} @{ctx}"

    def __format__(self, spec: str) -> str:
        """A 0-d array formats as its scalar (`'{:.3g}'.format(np.array(np.pi))`); a format spec on an
        array with dimensions is a TypeError, as numpy's arrays and MXNet's mx.np.ndarray have it."""
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string {spec!r} passed to mx.np.ndarray of shape {self.shape}: "
                            "only a 0-d array takes a format spec")
        return format(str(self), spec)

    def copy(self, order: str = "C") -> "ndarray":
        """A copy of the array on the same device; only C order (row-major) storage is supported."""
        _check_order(order)
        return _as_np(NDArray.copy(self))

    def reshape(self, *shape, **kwargs) -> "ndarray":
        """A view with shape `shape` under numpy's rules (one -1 may be inferred; 0 is a zero size)."""
        order = kwargs.pop("order", "C")
        if kwargs:
            raise TypeError(f"reshape: unexpected keyword arguments {sorted(kwargs)}")
        if order != "C":
            raise NotImplementedError(f"reshape: order={order!r} is not supported, only 'C'")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return reshape(self, tuple(shape))

    @property
    def T(self) -> "ndarray":
        return self.transpose()

    def transpose(self, *axes) -> "ndarray":
        if self.ndim < 2 and not axes:
            return self
        return _as_np(NDArray.transpose(self, *axes))

    def tolist(self):
        return self.asnumpy().tolist()

    def _scalar(self, convert, what: str):
        if self.size != 1:
            raise TypeError(f"only size-1 arrays can be converted to Python {what}s, got shape {self.shape}")
        return convert(self.asnumpy().reshape(()).item())

    def __float__(self) -> float:
        return self._scalar(float, "float")

    def __int__(self) -> int:
        return self._scalar(int, "int")

    def __index__(self) -> int:
        if self.dtype.kind not in "iub":
            raise TypeError("only integer scalar arrays can be converted to a scalar index")
        return self._scalar(int, "int")

    def item(self, *args):
        return self.asnumpy().item(*args)


def _to_host(value, ctxs: list):
    """mx.np arrays in `value` (nested lists and tuples too) as numpy arrays; their devices go to `ctxs`."""
    if isinstance(value, NDArray):
        ctxs.append(value.context)
        return value.asnumpy()
    if isinstance(value, (list, tuple)):
        return type(value)(_to_host(v, ctxs) for v in value)
    return value


def _from_host(value, ctx):
    """numpy arrays (and numpy bools) in `value` as mx.np.ndarrays on `ctx`; other values unchanged."""
    if isinstance(value, _np.ndarray):  # (not ascontiguousarray: it makes a 0-d result 1-d)
        host = value if value.flags.c_contiguous else value.copy(order="C")
        return array(host, dtype=value.dtype, ctx=ctx)
    if isinstance(value, _np.bool_):
        return array(value, dtype=_np.bool_, ctx=ctx)
    if isinstance(value, (list, tuple)):
        items = (_from_host(v, ctx) for v in value)
        return type(value)._make(items) if hasattr(value, "_fields") else type(value)(items)  # (qr's QRResult)
    return value


def _numpy_fallback(name: str, func, args, kwargs):
    """numpy's `func` on host copies of the mx.np arrays in args/kwargs, array results as mx.np arrays
    on the inputs' device (MXNet's fallback for numpy functions mx.np does not implement)."""
    if autograd_state.is_recording():
        raise ValueError(f"Falling back to NumPy operator {name} with autograd active is not supported: "
                         "move it out of the autograd.record() scope")
    ctxs: list = []
    host_args = _to_host(tuple(args), ctxs)
    host_kwargs = {k: _to_host(v, ctxs) for k, v in kwargs.items()}
    if builtins.any(c != ctxs[0] for c in ctxs):
        raise ValueError(f"{name}: input arrays are on different devices {sorted(set(map(str, ctxs)))}")
    return _from_host(func(*host_args, **host_kwargs), ctxs[0] if ctxs else None)


def _wrap_method(name: str):
    base = getattr(NDArray, name)

    def method(self, *args, **kwargs):
        return _as_np(base(self, *args, **kwargs))
    method.__name__ = name
    method.__doc__ = f"As NDArray.{name}, returning an mx.np.ndarray."
    return method


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__neg__", "__abs__",
              "__getitem__", "copyto", "as_in_context", "astype", "detach", "sum", "mean", "max",
              "min", "prod", "exp", "log", "sqrt", "square", "abs", "flatten", "expand_dims", "squeeze",
              "broadcast_to", "clip", "tile", "repeat", "flip", "argmax", "argmin", "take", "split"):
    setattr(ndarray, _name, _wrap_method(_name))
ndarray.as_in_ctx = ndarray.as_in_context


def _wrap_comparison(name: str):
    base = getattr(NDArray, name)

    def compare(self, other):
        return _as_np(base(self, other).astype(_np.bool_))  # numpy semantics: bool results
    compare.__name__ = name
    return compare


for _name in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    setattr(ndarray, _name, _wrap_comparison(_name))
ndarray.__hash__ = NDArray.__hash__


# ------------------------------------------------------------------ numpy's reshape rules

def reshape(a: NDArray, newshape, order: str = "C", out: Optional[NDArray] = None) -> ndarray:
    """`a` with shape `newshape` (numpy's rules: one -1 inferred, 0 a zero-size dimension);
    with `out`, the values are written there (MXNet's signature has it)."""
    if out is not None:
        result = reshape(a, newshape, order)
        if tuple(out.shape) != tuple(result.shape):
            raise ValueError(f"reshape: out has shape {tuple(out.shape)}, the result {tuple(result.shape)}")
        return _deliver(result, out)
    if order != "C":
        raise NotImplementedError(f"reshape: order={order!r} is not supported, only 'C'")
    if isinstance(a, _Symbol):
        a = _np_symbol.as_np(a)
        known = a._known_shape()
        if known is not None:
            target = numpy_reshape_target(int(_np.prod(known)), known, newshape)
        else:  # a deferred dimension: a -1 is left to the op's shape inference
            target = (int(newshape),) if isinstance(newshape, (int, _np.integer)) else tuple(newshape)
        return _call("_np_reshape", (a,), {"newshape": target})
    target = numpy_reshape_target(a.size, a.shape, newshape)
    a._chunk.check()
    if autograd_state.needs_record(a) or not a._data.flags.c_contiguous:
        return _as_np(_call("_np_reshape", (a,), {"newshape": target}))
    return ndarray(a._data.reshape(target), a._chunk)


# ------------------------------------------------------------------ creation

def _dtype(dtype, default=_F32) -> _np.dtype:
    return _creation._dtype(dtype, default)


def array(object, dtype=None, ctx=None) -> ndarray:  # noqa: A002 - numpy's parameter name
    """A new array copied from `object`: float32 unless `dtype` says otherwise or `object` is a
    numpy array / ndarray (whose dtype is kept); bools become 1.0/0.0 like MXNet's default."""
    if isinstance(object, NDArray) and not isinstance(object, ndarray):
        raise ValueError("If you're trying to create a mxnet.numpy.ndarray from mx.nd.NDArray, "
                         "please use the zero-copy as_np_ndarray function.")
    if dtype is None and isinstance(object, (ndarray, _np.ndarray)):
        dtype = object.dtype
    return _as_np(_creation.array(object, ctx=ctx, dtype=_dtype(dtype)))


def zeros(shape, dtype=None, order: str = "C", ctx=None) -> ndarray:
    """An array of zeros (float32 by default)."""
    _check_order(order)
    return _as_np(_creation.zeros(shape, ctx=ctx, dtype=_dtype(dtype)))


def ones(shape, dtype=None, order: str = "C", ctx=None) -> ndarray:
    """An array of ones (float32 by default)."""
    _check_order(order)
    return _as_np(_creation.ones(shape, ctx=ctx, dtype=_dtype(dtype)))


def empty(shape, dtype=None, order: str = "C", ctx=None) -> ndarray:
    """An uninitialised array (float32 by default)."""
    _check_order(order)
    return _as_np(_creation.empty(shape, ctx=ctx, dtype=_dtype(dtype)))


def full(shape, fill_value, dtype=None, order: str = "C", ctx=None, out: Optional[NDArray] = None) -> ndarray:
    """An array filled with `fill_value` (a scalar, or an array broadcast to `shape`)."""
    _check_order(order)
    if isinstance(fill_value, NDArray):
        target = _dtype(dtype, fill_value._data.dtype)
        shape = tuple(_creation._shape(shape))
        if fill_value.ndim > len(shape):
            raise ValueError(f"full: fill_value of shape {fill_value.shape} cannot broadcast to {shape}")
        # numpy broadcasting aligns trailing dimensions: lift the value to the target's rank first
        from .functions import broadcast_to  # numpy's rules (a 0 in `shape` is a zero size)
        result = broadcast_to(fill_value.astype(target, copy=False), shape)
        if tuple(result.shape) == tuple(fill_value.shape):
            result = result.copy()  # a new array, never a view of fill_value
        return _deliver(result, out)
    if dtype is None and isinstance(fill_value, (bool, _np.bool_)):
        dtype = _np.bool_  # numpy: a bool fill makes a bool array (MXNet too)
    return _as_np(_creation.full(shape, fill_value, ctx=ctx, dtype=_dtype(dtype), out=out))


def arange(start, stop=None, step=1, dtype=None, ctx=None) -> ndarray:
    """Evenly spaced values in [start, stop) (float32 by default, as MXNet)."""
    if stop is None:
        start, stop = 0, start
    if step is None:
        step = 1
    if step == 0:
        raise ValueError("arange: step must not be zero")
    target = _dtype(dtype)
    values = _np.arange(start, stop, step, dtype=target if target.kind in "iu" else _np.float64)
    return array(values.astype(target), dtype=target, ctx=ctx)


def _like(a: NDArray, dtype):
    return a.shape, _dtype(dtype, a._data.dtype), a.context


def zeros_like(a: NDArray, dtype=None, order: str = "C", ctx=None, out=None) -> ndarray:
    shape, dtype, actx = _like(a, dtype)
    return full(shape, 0, dtype, order, ctx or actx, out)


def ones_like(a: NDArray, dtype=None, order: str = "C", ctx=None, out=None) -> ndarray:
    shape, dtype, actx = _like(a, dtype)
    return full(shape, 1, dtype, order, ctx or actx, out)


def full_like(a: NDArray, fill_value, dtype=None, order: str = "C", ctx=None, out=None) -> ndarray:
    shape, dtype, actx = _like(a, dtype)
    return full(shape, fill_value, dtype, order, ctx or actx, out)


def empty_like(prototype: NDArray, dtype=None, order: str = "C", subok: bool = False, shape=None) -> ndarray:
    _, dtype, ctx = _like(prototype, dtype)
    return empty(prototype.shape if shape is None else shape, dtype, order, ctx)


def _check_order(order: str) -> None:
    if order != "C":
        raise NotImplementedError(f"order={order!r} is not supported, only 'C'")
