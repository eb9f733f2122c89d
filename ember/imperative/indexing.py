"""NDArray indexing: basic keys give views (when contiguous) or copies, advanced keys gather/scatter ops.

Index arrays given as NDArrays are read inside the engine op (an out-of-range
value raises IndexError at the next read); index arrays given as numpy arrays
or lists are checked at the call.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import backend, engine
from ..base import ContextError, EmberError
from . import autograd_state, storage
from .copying import copy_to_new, push_assign, push_fill
from .ndarray import NDArray, _is_scalar

_BASIC = (int, np.integer, slice, type(Ellipsis), type(None))
# numpy's integer scalar types: the indices samplers hand out (np.random.permutation, np.arange)
_NUMPY_INTS = frozenset(np.dtype(c).type for c in "bhilqpBHILQP")


def _as_tuple(key) -> tuple:
    return key if isinstance(key, tuple) else (key,)


def _is_basic(key: tuple) -> bool:
    for k in key:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, _BASIC):
            return False
    return True


def _basic_view(data, key: tuple):
    """numpy's view for a basic key; always an array (never a numpy scalar)."""
    if not any(k is Ellipsis for k in key):
        key = key + (Ellipsis,)
    return data[key]


def stand_in(shape) -> np.ndarray:
    """A zero-stride stand-in of `shape`: numpy computes result shapes and bounds on it for free."""
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.bool_), shape=shape, strides=(0,) * len(shape))


def _resolve_index(k, name: str):
    """An advanced-index component as (numpy array known now | NDArray read later | basic)."""
    if isinstance(k, NDArray):
        k._chunk.check()
        if k._data.dtype == np.bool_:
            return k.asnumpy()  # a mask's result shape depends on its values: read it now
        return k
    if isinstance(k, (list, tuple, range, np.ndarray)):  # a tuple or range inside the key is a sequence, as in numpy
        arr = np.asarray(k)
        if arr.dtype == np.bool_:
            return arr
        if arr.size == 0:
            return arr.astype(np.intp)
        if arr.dtype.kind == "f":
            if not np.all(arr == np.floor(arr)):
                raise IndexError(f"{name}: index array has non-integer values")
            return arr.astype(np.intp)
        if arr.dtype.kind not in "iu":
            raise IndexError(f"{name}: index array of dtype {arr.dtype} is not supported")
        return arr
    if isinstance(k, (bool, np.bool_)):
        return np.asarray(k)
    if isinstance(k, _BASIC):
        return k
    raise IndexError(f"{name}: unsupported index of type {type(k).__name__}")


def _advanced(arr: NDArray, key: tuple, name: str):
    """(resolved key, result shape, NDArray index parts) for an advanced key."""
    parts = [_resolve_index(k, name) for k in key]
    dummy_key = tuple(np.zeros(p.shape, np.intp) if isinstance(p, NDArray) else p for p in parts)
    shape = stand_in(arr._data.shape)[dummy_key].shape
    nd_parts = [p for p in parts if isinstance(p, NDArray)]
    for p in nd_parts:
        if p.context != arr.context:
            raise ContextError(f"{name}: index array is on {p.context} but the array is on {arr.context}")
    return parts, shape, nd_parts


def _runtime_key(parts, xp):
    return tuple(xp.asarray(p._data).astype(np.int64) if isinstance(p, NDArray)
                 else (xp.asarray(p) if isinstance(p, np.ndarray) and xp is not np else p)
                 for p in parts)


def getitem(arr: NDArray, key) -> NDArray:
    """arr[key] (MXNet 1.x: an integer index on a 1-D array gives shape (1,))."""
    arr._chunk.check()
    if (type(key) is int or type(key) in _NUMPY_INTS) and type(arr) is NDArray and arr._ag is None \
            and arr._data.ndim > 1 and arr._data.flags.c_contiguous:
        # one row of a batch (a dataset's sample): numpy's row view, sharing storage and var with arr
        return NDArray(arr._data[key], arr._chunk)
    key = _as_tuple(key)
    if _is_basic(key):
        if autograd_state.needs_record(arr):
            return _basic_recorded(arr, key)
        view = _basic_view(arr._data, key)
        if view.ndim == 0:
            view = view.reshape((1,))
        if view.flags.c_contiguous:
            return NDArray(view, arr._chunk)  # shares storage and var with arr
        data, chunk = storage.alloc(view.shape, view.dtype, arr.context)
        push_assign(data, arr.context, chunk, view, arr._chunk, "slice", fresh=True)
        return NDArray(data, chunk)
    if autograd_state.needs_record(arr):
        return _advanced_recorded(arr, key)
    parts, shape, nd_parts = _advanced(arr, key, "getitem")
    ctx = arr.context
    data, chunk = storage.alloc(shape, arr._data.dtype, ctx)
    src = arr._data
    table = backend.of(ctx)
    xp = table.xp

    def gather():
        data[...] = src[_runtime_key(parts, xp)]
    read = [arr._chunk.var] + [p._chunk.var for p in nd_parts if p._chunk is not arr._chunk]
    engine.push(table.run_on(gather, ctx.device_id), read=read, write=(chunk.var,), device=ctx,
                name="advanced_indexing")
    return NDArray(data, chunk)


def _basic_recorded(arr: NDArray, key: tuple) -> NDArray:
    # While recording, slicing goes through registry ops so gradients flow.
    from .invoke import call
    shape = arr._data.shape
    result_shape = _basic_view(stand_in(shape), key).shape or (1,)
    expanded = []
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    for k in key:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - n_real))
        elif k is not None:
            expanded.append(k)
    expanded.extend([slice(None)] * (len(shape) - len(expanded)))
    begin, end, step = [], [], []
    for dim, k in zip(shape, expanded):
        if isinstance(k, slice):
            b, e, s = k.indices(dim)
            begin.append(b)
            end.append(None if (s < 0 and e < 0) else e)
            step.append(s)
        else:
            i = int(k)
            if not -dim <= i < dim:
                raise IndexError(f"index {i} is out of bounds for axis with size {dim}")
            i %= dim
            begin.append(i)
            end.append(i + 1)
            step.append(1)
    out = call("slice", (arr,), {"begin": tuple(begin), "end": tuple(end), "step": tuple(step)})
    if out.shape != result_shape:  # Reshape reads a 0 as "copy this dimension"; _np_reshape as a 0 size
        out = call("_np_reshape" if 0 in result_shape else "Reshape", (out,), {"newshape" if 0 in result_shape
                                                                                 else "shape": result_shape})
    return out


def _advanced_recorded(arr: NDArray, key: tuple) -> NDArray:
    from .creation import array
    from .invoke import call
    if len(key) == 1 and not isinstance(key[0], (bool, np.bool_)):
        idx = key[0]
        resolved = idx.asnumpy() if isinstance(idx, NDArray) else _resolve_index(idx, "getitem")
        if resolved.dtype == np.bool_:
            resolved = np.nonzero(resolved)[0]
        elif resolved.dtype.kind == "f":  # a legacy float32 index array holds integers (MXNet's take)
            resolved = resolved.astype(np.int64)
        stand_in(arr._data.shape)[resolved]  # bounds check now (IndexError), as the unrecorded path
        # negative indices count from the end as numpy's; take's default (clip) mode would read -1 as 0
        resolved = np.mod(resolved.astype(np.int64), max(arr._data.shape[0], 1))
        return call("take", (arr, array(resolved, ctx=arr.context, dtype=np.int64)), {"axis": 0})
    # Any other key: the flat positions it selects, then one differentiable take
    np_key = tuple(k.asnumpy() if isinstance(k, NDArray) else k for k in key)
    return gather_positions(arr, key_positions(arr.shape, np_key))


def key_positions(shape: tuple, np_key) -> np.ndarray:
    """The flat positions numpy's `x[np_key]` selects in an array of `shape`, shaped as that result
    (index arrays in `np_key` already read to numpy).  numpy indexes a grid of positions, so shapes,
    broadcasting of advanced indices and IndexErrors are numpy's own; the grid costs one int64 per
    element, paid only by keys the other paths do not take (recorded mixed keys, booleans inside
    tuples)."""
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[np_key]


def gather_positions(arr: NDArray, positions: np.ndarray) -> NDArray:
    """`arr`'s elements at the flat `positions` (from key_positions), shaped as them: one take from
    the flattened array, whose gradient scatters back."""
    from .creation import array
    from .invoke import call
    flat = call("Reshape", (arr,), {"shape": (-1,)})
    idx = array(np.ascontiguousarray(positions), ctx=arr.context, dtype=np.int64)
    return call("take", (flat, idx), {"axis": 0})


def setitem(arr: NDArray, key, value) -> None:
    """arr[key] = value (scalar, NDArray, numpy array or list; broadcast to the selection)."""
    arr._chunk.check()
    if autograd_state.needs_record(arr):
        raise EmberError("in-place assignment to an array that is in an autograd graph while recording "
                         "is not supported; assign outside autograd.record()")
    key = _as_tuple(key)
    if type(value) is not NDArray and getattr(value, "stype", "default") != "default":
        value = value.tostype("default")  # a sparse value is written as its dense values (MXNet's cast_storage)
    if isinstance(value, NDArray) and autograd_state.needs_record(value):
        # as MXNet: a recorded value may replace the whole array (a recorded copy, so gradients flow
        # to the value); writing it into part of an array would be an untracked in-place update
        if not _selects_whole(arr, key):
            raise EmberError("Inplace operations (+=, -=, x[:]=, etc) are not supported when recording with "
                             "autograd: the value is in the autograd graph and the key selects part of the "
                             "array; assign outside autograd.record() or build the array with concat/where")
        _record_whole_assign(arr, value, _basic_view(stand_in(arr._data.shape), key).shape)
        return
    ctx = arr.context
    if _is_basic(key):
        target = _basic_view(arr._data, key)
        tshape = target.shape
        if _is_scalar(value):
            push_fill(target, ctx, arr._chunk.var, value, "setitem")
            return
        src_data, src_chunk, keep = _value_source(arr, value, tshape)
        push_assign(target, ctx, arr._chunk, src_data, src_chunk, "setitem")
        del keep  # the source array must outlive the push that reads it
        return
    parts, tshape, nd_parts = _advanced(arr, key, "setitem")
    if _is_scalar(value):
        src_data, src_chunk, keep = value, None, None
    else:
        src_data, src_chunk, keep = _value_source(arr, value, tshape)
    dst = arr._data
    table = backend.of(ctx)
    xp = table.xp

    def scatter():
        v = src_data
        if xp is not np and isinstance(v, np.ndarray):
            v = xp.asarray(v)
        dst[_runtime_key(parts, xp)] = v
    read = [p._chunk.var for p in nd_parts if p._chunk is not arr._chunk]
    if src_chunk is not None and src_chunk is not arr._chunk:
        read.append(src_chunk.var)
    engine.push(table.run_on(scatter, ctx.device_id), read=read, write=(arr._chunk.var,), device=ctx,
                name="advanced_setitem")
    del keep


def _selects_whole(arr: NDArray, key: tuple) -> bool:
    """Whether a basic key selects every element of `arr` in order (x[:], x[...], x[None])."""
    if not _is_basic(key):
        return False
    if any(isinstance(k, slice) and k.step is not None and k.step < 0 for k in key):
        return False
    view = _basic_view(arr._data, key)
    if arr._data.size == 0:  # every view of an empty array is empty: compare shapes, 1-dims aside
        return [d for d in view.shape if d != 1] == [d for d in arr._data.shape if d != 1]
    return view.size == arr._data.size


def _record_whole_assign(arr: NDArray, value: NDArray, selection: tuple) -> None:
    """arr[key] = value for a key selecting all of arr in order, whose selection has shape `selection`
    (x[:, None] adds a 1-dim), as recorded ops (broadcast, reshape, cast, copy into arr)."""
    from .invoke import call
    _check_broadcast(value.shape, selection)
    v = value
    while v.ndim > len(selection) and v.shape[0] == 1:  # MXNet drops extra leading 1-dims of the value
        v = v.reshape(v.shape[1:])
    if v.ndim < len(selection):  # numpy's broadcasting: the missing leading dims are 1 (broadcast_to wants equal ranks)
        v = v.reshape((1,) * (len(selection) - v.ndim) + tuple(v.shape))
    if tuple(v.shape) != tuple(selection):
        v = call("broadcast_to", (v,), {"shape": tuple(selection)})
    if tuple(v.shape) != tuple(arr.shape):  # the same elements in the same order: a reshape
        v = call("_np_reshape", (v,), {"newshape": tuple(arr.shape)})
    if v._data.dtype != arr._data.dtype:
        v = call("Cast", (v,), {"dtype": np.dtype(arr._data.dtype).name})
    call("_copy", (v,), {"out": arr})


def _value_source(arr: NDArray, value, tshape):
    """(data, chunk or None, owner) of the value to assign, checked to broadcast to `tshape`.

    The caller keeps `owner` alive until its push: a source dropped earlier could have its
    storage released (and reused) before the assignment reads it.
    """
    if isinstance(value, NDArray):
        value._chunk.check()
        if value.context != arr.context:  # copied over first, as MXNet's x[:] = y does (copyto)
            value = value.as_in_context(arr.context)
        if value._chunk is arr._chunk:  # overlapping source: snapshot it first
            value = copy_to_new(value, value.context, value._data.dtype)
        _check_broadcast(value.shape, tshape)
        return value._data, value._chunk, value
    if isinstance(value, (np.ndarray, list, tuple, numbers.Number, np.generic)):
        values = np.array(value, dtype=arr._data.dtype)  # a copy: later changes by the caller don't leak in
        _check_broadcast(values.shape, tshape)
        return values, None, None
    raise TypeError(f"setitem: cannot assign a value of type {type(value).__name__}; "
                    "use a scalar, NDArray, numpy array or list")


def _check_broadcast(src_shape, tshape) -> None:
    try:
        ok = np.broadcast_shapes(src_shape, tshape) == tuple(tshape)
    except ValueError:
        ok = False
    if not ok:
        # MXNet accepts a value with extra leading 1-dims, or a selection of shape (1,) for a scalar-like value
        squeezed = tuple(src_shape)
        while len(squeezed) > len(tshape) and squeezed[0] == 1:
            squeezed = squeezed[1:]
        if squeezed != tuple(src_shape):
            return _check_broadcast(squeezed, tshape)
        raise ValueError(f"setitem: cannot assign a value of shape {tuple(src_shape)} to a selection "
                         f"of shape {tuple(tshape)}")
