"""Creating NDArrays: from Python/numpy data, filled with a value, ranges, zero-copy numpy."""
from __future__ import annotations

from typing import Optional

import numpy as np

from .. import backend, engine
from ..base import EmberError
from ..context import Context, current_context
from . import storage
from .copying import push_fill
from .ndarray import NDArray

_F32 = np.dtype(np.float32)


def _ctx(ctx) -> Context:
    if ctx is None:
        return current_context()
    if isinstance(ctx, Context):
        return ctx
    from .invoke import _as_context
    return _as_context(ctx)


def _dtype(dtype, default=_F32) -> np.dtype:
    if dtype is None:
        return default
    from ..ops.registry import as_dtype
    return as_dtype(dtype)


def _shape(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(d) for d in shape)
    except TypeError:
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimension in shape {shape}")
    return shape


def _check_stype(stype) -> None:
    if stype not in (None, "default"):
        raise EmberError(f"storage type {stype!r} is not supported here: 'default' is, and 'csr' or "
                         "'row_sparse' for zeros and empty")


def empty(shape, ctx=None, dtype=None, stype=None) -> NDArray:
    """An uninitialised array (an empty sparse array for stype 'csr'/'row_sparse')."""
    if stype in ("csr", "row_sparse"):
        from .sparse_ndarray import sparse_zeros
        return sparse_zeros(stype, shape, ctx, dtype)
    _check_stype(stype)
    data, chunk = storage.alloc(_shape(shape), _dtype(dtype), _ctx(ctx))
    return NDArray(data, chunk)


def _check_known_shape(op: str, shape) -> None:
    """MXNet 1.x outside NumPy shape semantics reads () and 0-dims of a shape as 'unknown': its
    zeros/ones/full refuse them (mx.nd.array and empty still make such arrays)."""
    from ..util import is_np_shape
    shape = _shape(shape)
    if (len(shape) == 0 or 0 in shape) and not is_np_shape():
        from ..base import ShapeError
        raise ShapeError(f"{op}: shape {shape} has unknown dimensions: without NumPy shape semantics () and 0 "
                         "mean 'unknown', as in MXNet 1.x; use `with mx.np_shape():` (or mx.set_np_shape(True)) "
                         "for scalar and zero-size arrays")


def full(shape, val, ctx=None, dtype=None, out: Optional[NDArray] = None) -> NDArray:
    """An array filled with `val` (pushed as an engine op)."""
    return _filled(shape, val, ctx, dtype, out, "_full")


def _filled(shape, val, ctx, dtype, out: Optional[NDArray], op_name: str) -> NDArray:
    # op_name: MXNet's operator (_zeros, _ones, _full), the engine op's name (profiler, traces); without
    # its leading '_' the name in the unknown-shape error
    if out is None:
        _check_known_shape(op_name.lstrip("_"), shape)
        out = empty(shape, ctx, dtype)
    else:
        out._chunk.check()
    push_fill(out._data, out.context, out._chunk.var, val, op_name)
    return out


def zeros(shape, ctx=None, dtype=None, stype=None, **kwargs) -> NDArray:
    """An array of zeros (float32 unless `dtype` says otherwise; sparse for stype 'csr'/'row_sparse')."""
    if stype in ("csr", "row_sparse"):
        return empty(shape, ctx, dtype, stype)  # an empty sparse array stores no values: all zeros
    _check_stype(stype)
    return _filled(shape, 0, ctx, dtype, kwargs.get("out"), "_zeros")


def ones(shape, ctx=None, dtype=None, stype=None, **kwargs) -> NDArray:
    """An array of ones."""
    _check_stype(stype)
    return _filled(shape, 1, ctx, dtype, kwargs.get("out"), "_ones")


def zeros_like(data: NDArray, out: Optional[NDArray] = None, **kwargs) -> NDArray:
    if out is None and data.stype != "default":  # zeros of a sparse array keep its storage type
        from .sparse_ndarray import sparse_zeros
        return sparse_zeros(data.stype, data.shape, data.context, data.dtype)
    if out is not None and out.stype != "default":  # a sparse out= ends with no stored values
        from .sparse_ndarray import sparse_zeros
        from .sparse_ops import assign
        assign(out, sparse_zeros(out.stype, out.shape, out.context, out.dtype))
        return out
    return full(data.shape, 0, data.context, data._data.dtype, empty(data.shape, data.context, data._data.dtype)
                if out is None else out)


def ones_like(data: NDArray, out: Optional[NDArray] = None, **kwargs) -> NDArray:
    return full(data.shape, 1, data.context, data._data.dtype, empty(data.shape, data.context, data._data.dtype)
                if out is None else out)


def ones_now(like: NDArray) -> NDArray:
    """Ones of `like`'s shape and dtype, filled by this thread at once when they are a tiny dense
    host array (autograd's default head gradient): a fresh array no op can reach yet needs no
    engine op; otherwise `ones_like`."""
    from .invoke import runs_in_caller
    ctx = like.context
    if like.stype != "default" or not runs_in_caller(like.size, ctx):
        return ones_like(like)
    data = np.ones(like.shape, like._data.dtype)
    return NDArray(data, storage.Chunk(None, None, ctx, nbytes=data.nbytes))


def array(source_array, ctx=None, dtype=None) -> NDArray:
    """A new array holding a copy of `source_array` (NDArray, numpy array or nested lists).

    The dtype defaults to the source's for an NDArray and to float32 otherwise, as in MXNet.
    """
    if (isinstance(source_array, NDArray) and source_array.stype != "default") or _is_scipy_sparse(source_array):
        from ..ndarray.sparse import array as sparse_array  # MXNet: sparse sources give sparse arrays
        return sparse_array(source_array, ctx=ctx, dtype=dtype)
    if isinstance(source_array, NDArray):
        target = _dtype(dtype, source_array._data.dtype)
        from .copying import copy_to_new
        return copy_to_new(source_array, _ctx(ctx) if ctx is not None else source_array.context, target)
    ctx = _ctx(ctx)
    target = _dtype(dtype)
    source_array = backend.to_host(source_array)  # a device array's values
    try:
        values = np.asarray(source_array, dtype=target)
    except OverflowError:  # numpy 2 refuses Python ints out of range; MXNet 1.9.1 (numpy 1.x) wraps them
        values = np.asarray(source_array).astype(target)
    except (TypeError, ValueError) as e:
        raise TypeError(f"array: cannot convert {type(source_array).__name__} to an array of {target}: {e}") from None
    data, chunk = storage.alloc(values.shape, target, ctx)
    table = backend.of(ctx)
    with table.device(ctx.device_id):  # a fresh chunk has no pending ops, so filling it now is safe
        data[...] = table.asarray(values)
    return NDArray(data, chunk)


def _is_scipy_sparse(x) -> bool:
    return type(x).__module__.startswith("scipy.sparse")


def arange(start, stop=None, step=1.0, repeat: int = 1, infer_range=None, ctx=None,
           dtype=None) -> NDArray:
    """Evenly spaced values in [start, stop), each repeated `repeat` times (MXNet's arange)."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ValueError("arange: step must not be zero")
    if repeat < 1:
        raise ValueError(f"arange: repeat must be >= 1, got {repeat}")
    from .invoke import call  # the _arange operator computes the values (in the target dtype, as MXNet)
    attrs = {"start": start, "stop": stop, "step": step, "repeat": repeat, "dtype": _dtype(dtype)}
    if ctx is not None:
        attrs["ctx"] = ctx
    return call("_arange", (), attrs)


def _writeable_alias(arr: np.ndarray) -> np.ndarray:
    """A writeable array over `arr`'s (C-contiguous) bytes that keeps `arr` alive."""
    import ctypes
    buf = (ctypes.c_char * arr.nbytes).from_address(arr.ctypes.data)
    buf._owner = arr  # the alias's base is buf; buf holds the memory's owner
    return np.frombuffer(buf, dtype=arr.dtype).reshape(arr.shape)


def from_numpy(ndarray: np.ndarray, zero_copy: bool = True) -> NDArray:
    """An NDArray over a numpy array: sharing its memory (zero_copy; the numpy array becomes read-only)
    or copying it."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"from_numpy expects a numpy.ndarray, got {type(ndarray).__name__}")
    if not zero_copy:
        return array(ndarray, dtype=ndarray.dtype)
    if not ndarray.flags.c_contiguous:
        raise ValueError("from_numpy(zero_copy=True) needs a C-contiguous array; "
                         "use numpy.ascontiguousarray or zero_copy=False")
    # As MXNet, the NDArray becomes the memory's writer: the caller's array turns read-only and the
    # NDArray gets a writeable alias of the same bytes (numpy refuses writeable views of a read-only
    # array, and a second from_numpy of the same array must still give a writeable NDArray).
    if ndarray.flags.writeable:
        data = ndarray.view()  # keeps its writeable flag and the buffer chain (shared memory stays visible)
        ndarray.flags.writeable = False
    else:
        data = _writeable_alias(ndarray)
    var = engine.Var("from_numpy")
    return NDArray(data, storage.wrap(data, var, Context("cpu", 0), owns_var=True))


def waitall() -> None:
    """Wait for every pushed op; re-raise the first asynchronous error."""
    engine.wait_all()
    # storage that GC passes freed (one may have run in an op: a worker's) goes back now, so memory
    # statistics read after the wait see it
    while storage._after_gc or storage._collected_vars:
        storage.release_after_gc()
        engine.wait_all()
