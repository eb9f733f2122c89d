"""Copies, fills and device transfers of NDArrays: engine ops through `invoke.execute` (small CPU
ones run in the caller when the engine lets them start now)."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from .. import backend
from ..base import ShapeError
from ..context import Context
from . import storage
from .invoke import FreshVars, execute
from .ndarray import NDArray


def push_assign(dst_data, dst_ctx: Context, dst_chunk, src_data, src_chunk, name: str = "copy",
                fresh: bool = False) -> None:
    """Push `dst_data[...] = src_data` (broadcasting, casting, across devices).

    `dst_chunk` / `src_chunk` (None: a source outside the engine) guard the two storages; their
    vars are looked up only if the engine needs them.  `fresh`: `dst_chunk` was made for this
    copy, so no other op can reach it yet: it needs a var only if the copy must wait."""
    def deps():
        read = () if src_chunk is None or src_chunk is dst_chunk else (src_chunk.var,)
        return (read, (), FreshVars((dst_chunk,))) if fresh else (read, (dst_chunk.var,), ())
    if dst_ctx.device_type == "cpu" and type(src_data) is np.ndarray:
        # host to host: numpy's copy itself is the op (as `dst[...] = src`: broadcasting, any cast)
        execute(np.copyto, (dst_data, src_data, "unsafe"), name, dst_data.size, deps, dst_ctx)
        return
    table = backend.of(dst_ctx)
    asarray = table.asarray

    def assign():
        dst_data[...] = asarray(src_data)  # a host <-> device transfer when the devices differ
    execute(table.run_on(assign, dst_ctx.device_id), (), name, dst_data.size, deps, dst_ctx)


def copy_to_new(src: NDArray, ctx: Context, dtype) -> NDArray:
    """A new array on `ctx` with `src`'s values converted to `dtype`."""
    src._chunk.check()
    data, chunk = storage.alloc(src._data.shape, dtype, ctx)
    push_assign(data, ctx, chunk, src._data, src._chunk, "copyto", fresh=True)
    return NDArray(data, chunk)


def stack_settled(arrays: Sequence[NDArray]) -> Optional[NDArray]:
    """`nd.stack(*arrays)` made at once in this thread, or None where it must go through the op.

    It can when every array is a plain dense CPU NDArray outside autograd, of one shape and dtype,
    whose chunk has no engine var: no op was ever pushed on such storage (a var is made for the
    first push), so nothing can be pending on it, and reading it now needs no engine op, no var
    per input and no release op per input afterwards (a DataLoader's per-sample results)."""
    first = arrays[0] if arrays else None
    if type(first) is not NDArray:
        return None
    shape, dtype, ctx = first._data.shape, first._data.dtype, first._chunk.ctx
    if ctx.device_type != "cpu":
        return None
    datas = []
    for x in arrays:
        if type(x) is not NDArray or x._ag is not None:
            return None
        c, d = x._chunk, x._data
        if c._var is not None or c.freed or (c.ctx is not ctx and c.ctx != ctx) or d.shape != shape \
                or d.dtype != dtype:
            return None
        datas.append(d)
    data, chunk = storage.alloc((len(arrays),) + shape, dtype, ctx)
    if shape:  # joined along the first axis: numpy's stack, less a new axis made on every array
        np.concatenate(datas, out=data.reshape((len(arrays) * shape[0],) + shape[1:]))
    else:
        np.stack(datas, out=data)
    return NDArray(data, chunk)


def copy_into(src: NDArray, dst: NDArray) -> None:
    """Write `src`'s values into `dst` (same shape; dtype converted; any devices)."""
    src._chunk.check()
    dst._chunk.check()
    if src._data.shape != dst._data.shape:
        raise ShapeError(f"copyto: shape mismatch, source {src.shape} vs target {dst.shape}")
    if src._chunk is dst._chunk:
        # same storage: read through a snapshot so overlapping views stay correct
        src = copy_to_new(src, src.context, src._data.dtype)
    push_assign(dst._data, dst.context, dst._chunk, src._data, src._chunk, "copyto")


def push_fill(data, ctx: Context, var, value, name: str = "fill") -> None:
    """Push `data[...] = value` for a scalar value."""
    def fill():
        data.fill(value)
    execute(backend.of(ctx).run_on(fill, ctx.device_id), (), name, data.size, lambda: ((), (var,), ()), ctx)


def _device_copy_gradient(F, attrs, inputs, outputs, out_grads):
    return [out_grads[0].as_in_context(inputs[0].context)]


_DEVICE_COPY = None


def record_device_copy(src: NDArray, dst: NDArray) -> None:
    """Tape a copy to another device so gradients flow back to the source device."""
    global _DEVICE_COPY
    from ..ops.registry import OpDef
    from . import autograd_state
    if _DEVICE_COPY is None:
        # not a registry op: a transfer has no kernel of its own, only this gradient
        _DEVICE_COPY = OpDef("_copyto", inputs=["data"], gradient=_device_copy_gradient)
    node = autograd_state.Node(_DEVICE_COPY, {}, [src], [(dst._data, dst._chunk)],
                               autograd_state.is_training())
    dst._ag = autograd_state.Entry(node, 0)
