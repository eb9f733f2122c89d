"""`mx.np` delete, insert, unravel_index and pad on the registry operators of ember/ops/np_more.py
(`_npi_delete`, `_npi_insert_scalar/_slice/_tensor`, `_npi_unravel_index_fallback`, `_npi_pad`): the same
code runs on arrays and on np symbols (F.np in a hybridized block), and autograd differentiates
delete, insert and pad.

An index array given to `delete` must be a concrete array (or list) even while a block is traced: its
values decide the output shape, so ember passes them to the operator as an attribute (MXNet sizes the
output at run time); a symbol there is a NotImplementedError.
"""
from __future__ import annotations

import numbers

import numpy as _np

from ..base import MXNetError
from ..symbolic.np_symbol import _Symbol as _NpSymbol
from .functions import asarray
from .multiarray import _as_np, _call, ndarray

__all__ = ["delete", "insert", "unravel_index", "pad"]


def _is_int(x) -> bool:
    return isinstance(x, (numbers.Integral, _np.integer)) and not isinstance(x, (bool, _np.bool_))


def _check_axis(axis):
    if axis is not None and not _is_int(axis):
        raise TypeError(f"'axis' must be an integer or None, got {type(axis).__name__}")
    return None if axis is None else int(axis)


def delete(arr, obj, axis=None):
    """numpy.delete: arr without the sub-arrays at `obj` (an int, a slice or integer positions; negative and
    too large positions in an array are ignored, as MXNet) along `axis` (the flattened array when None)."""
    if not isinstance(arr, (ndarray, _NpSymbol)):
        raise TypeError("'arr' can not support type {}".format(str(type(arr))))
    axis = _check_axis(axis)
    if isinstance(obj, slice):
        attrs = {"start": obj.start, "stop": obj.stop, "step": 1 if obj.step is None else obj.step}
    elif _is_int(obj):
        attrs = {"int_ind": int(obj)}
    elif isinstance(obj, _NpSymbol):
        raise NotImplementedError("delete: obj must be a concrete array (its values decide the output shape), "
                                  "not a symbol")
    elif isinstance(obj, (ndarray, list, tuple, _np.ndarray)):
        idx = _np.asarray(obj.asnumpy() if isinstance(obj, ndarray) else obj)
        if idx.dtype == _np.bool_:
            if idx.ndim != 1:
                raise MXNetError("delete: a boolean obj must be one dimensional")
            idx = _np.flatnonzero(idx)
        elif idx.size and idx.dtype.kind not in "iuf":
            raise IndexError("arrays used as indices must be of integer (or boolean) type")
        idx = idx.astype(_np.int64)
        attrs = {"indices": tuple(int(i) for i in idx.reshape(-1))}
    else:
        raise TypeError("'obj' can not support type {}".format(str(type(obj))))
    attrs["axis"] = axis
    return _as_np(_call("_npi_delete", (arr,), attrs))


def insert(arr, obj, values, axis=None):
    """numpy.insert: `values` (cast to arr's dtype) inserted before position(s) `obj` (an int, a slice or a
    1-D integer array) along `axis` (the flattened array when None)."""
    if not isinstance(arr, (ndarray, _NpSymbol)):
        raise TypeError("'arr' can not support type {}".format(str(type(arr))))
    axis = _check_axis(axis)
    if not isinstance(values, (ndarray, _NpSymbol)):
        if isinstance(arr, _NpSymbol):
            from ..symbolic import numpy_namespace as _sym_np
            values = _sym_np.full((), values, dtype=arr.dtype) if _np.ndim(values) == 0 else None
            if values is None:
                raise TypeError("insert: values must be a scalar or a symbol while tracing")
        else:
            values = asarray(_np.asarray(values), ctx=arr.context).astype(arr.dtype)
    if isinstance(obj, slice):
        return _as_np(_call("_npi_insert_slice", (arr, values), {"start": obj.start, "stop": obj.stop,
                                                                 "step": obj.step, "axis": axis}))
    if _is_int(obj):
        return _as_np(_call("_npi_insert_scalar", (arr, values), {"int_ind": int(obj), "axis": axis}))
    if isinstance(obj, (list, tuple, _np.ndarray)) or (isinstance(obj, ndarray) and isinstance(arr, _NpSymbol)):
        o = obj.asnumpy() if isinstance(obj, ndarray) else _np.asarray(obj)  # a constant while tracing
        if o.size and o.dtype.kind not in "iu":
            raise IndexError("arrays used as indices must be of integer type")
        obj = (_sym_full_index(o) if isinstance(arr, _NpSymbol) else asarray(o.astype(_np.int64), ctx=arr.context))
    if isinstance(obj, (ndarray, _NpSymbol)):
        if obj.dtype is not None and _np.dtype(obj.dtype).kind not in "iu":
            raise MXNetError("insert: index array obj must be of integer type")
        return _as_np(_call("_npi_insert_tensor", (arr, values, obj), {"axis": axis}))
    raise TypeError("'obj' can not support type {}".format(str(type(obj))))


def _sym_full_index(o):
    """A constant int64 index node with the entries of `o` (a block being traced)."""
    from ..symbolic import numpy_namespace as _sym_np
    o = o.astype(_np.int64).reshape(-1)
    parts = [_sym_np.full((1,), int(v), dtype=_np.int64) for v in o]
    if not parts:
        return _sym_np.zeros((0,), dtype=_np.int64)
    from .functions import concatenate
    return concatenate(parts, axis=0) if len(parts) > 1 else parts[0]


def unravel_index(indices, shape, order: str = "C"):
    """numpy.unravel_index: the coordinates of flat `indices` in an array of `shape`, as one int64 array of
    shape (len(shape),) + indices.shape (MXNet's form; row i holds the coordinates on axis i)."""
    if order != "C":
        raise NotImplementedError("unravel_index: only order='C' is supported")
    dims = (int(shape),) if _is_int(shape) else tuple(int(d) for d in shape)
    if not isinstance(indices, (ndarray, _NpSymbol)):
        indices = asarray(_np.asarray(indices, dtype=_np.int64))
    return _as_np(_call("_npi_unravel_index_fallback", (indices,), {"shape": dims}))


_PAD_KWARGS = {"constant": ("constant_values",), "edge": (), "reflect": ("reflect_type",),
               "symmetric": ("reflect_type",), "maximum": ("stat_length",), "minimum": ("stat_length",)}


def _pad_width(pad_width, nd: int) -> tuple:
    """pad_width as (before, after) per axis, flattened (numpy's broadcasting of an int or one pair)."""
    try:
        pw = _np.broadcast_to(_np.asarray(pad_width, dtype=_np.int64), (nd, 2))
    except ValueError:
        raise ValueError(f"pad: pad_width {pad_width!r} cannot be broadcast to ({nd}, 2)") from None
    if (pw < 0).any():
        raise ValueError("pad: index can't contain negative values")
    return tuple(int(v) for v in pw.reshape(-1))


def pad(x, pad_width, mode="constant", **kwargs):
    """numpy.pad in modes constant (constant_values a scalar), edge, reflect/symmetric (reflect_type
    'even'), maximum/minimum (whole-axis statistics)."""
    if not isinstance(mode, str):
        raise NotImplementedError("pad: a function as mode is not supported")
    if mode not in _PAD_KWARGS:
        raise ValueError(f"mode '{mode}' is not supported")
    for key in kwargs:
        if key not in _PAD_KWARGS[mode]:
            raise ValueError("%s keyword not in allowed keywords %s" % (key, list(_PAD_KWARGS[mode])))
    attrs = {"mode": mode, "pad_width": _pad_width(pad_width, x.ndim)}
    if mode == "constant":
        value = kwargs.get("constant_values", 0)
        if isinstance(value, tuple):
            raise TypeError("unsupported constant_values type: {'tuple'}.")
        attrs["constant_value"] = float(value)
    elif mode in ("reflect", "symmetric"):
        rt = kwargs.get("reflect_type", "even")
        if rt not in ("even", None):
            raise ValueError("unsupported reflect_type '{}'".format(rt))
    elif kwargs.get("stat_length") is not None:
        raise ValueError("unsupported stat_length '{}'".format(kwargs["stat_length"]))
    return _as_np(_call("_npi_pad", (x,), attrs))
