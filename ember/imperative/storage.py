"""Array storage: a chunk ties one memory block to the engine var that guards it.

Views (slices, reshapes) of an NDArray share its chunk, hence its var, so the
engine orders overlapping reads and writes.  When the last NDArray on a chunk
goes away, the block goes back to the memory manager only after every op still
pending on the var has run: the release is itself an engine op writing the var.
"""
from __future__ import annotations

import gc
from functools import partial
from math import prod as _prod
from typing import Tuple

import numpy as np

from .. import engine
from ..engine import core as _core
from ..base import FreedArrayError
from ..context import Context

_memory = None


def _memory_api():
    """ember.memory's alloc/release (imported once, on first use)."""
    global _memory
    if _memory is None:
        from .. import memory
        _memory = memory
    return _memory


# True while a cyclic GC pass runs.  Only the collecting thread runs Python code then, except
# when a finalizer lets another thread in: that one also sees True and takes the slower, always
# safe path, so one global serves (cheaper than a thread-local on every array's release).
_gc_running = False


def _gc_phase(phase, info) -> None:
    global _gc_running
    _gc_running = phase == "start"


gc.callbacks.append(_gc_phase)


def _release_later(block, var, owns_var: bool) -> None:
    # The release op writes the var, so it runs after every op already pushed on it.  It may run
    # inline (in this thread) except inside a cyclic GC pass, which can start while this thread
    # holds a memory manager's lock (a GC triggered by an allocation there): releasing inline
    # would then deadlock on that lock, so the engine's workers do it.
    if var is not None and _core.bulk_threads and _core.defer_behind_bulks(
            var, partial(_release_later, block, var, owns_var)):
        return  # another thread's bulk group still holds ops on this storage: after they are pushed
    if block is not None:
        release = _memory_api().release
        in_gc = _gc_running
        if var is None:
            # No op was ever pushed on this storage through the engine (a var is made on first
            # use), and ops run under the engine's idle claim finished before returning: free it now.
            if not in_gc:
                release(block)
                return
            var = engine.Var()
            owns_var = True
        engine.push(lambda: release(block), write=(var,), name="release_storage", inline=not in_gc)
    if owns_var and var is not None:
        var.delete()


class Chunk:
    """The storage of one or more NDArrays: its engine var, memory block and device.

    The engine var is made on first use: an array whose ops all ran through
    the engine's idle claim (`engine.core.run_in_caller`: tiny ops on an idle engine) never needs one.
    A chunk without a block (storage numpy or another owner keeps alive: the tiny-op path's fresh
    outputs, wrapped buffers) needs nothing when it dies (its var, if made, deletes itself after
    pending ops); `ManagedChunk` gives its block back.
    """

    __slots__ = ("_var", "block", "ctx", "freed", "owns_var", "nbytes", "__weakref__")

    def __init__(self, var, block, ctx: Context, owns_var: bool = True, nbytes: int = 0):
        self._var = var
        self.block = block
        self.ctx = ctx
        self.freed = False
        self.owns_var = owns_var
        self.nbytes = nbytes  # of storage without a block (numpy's): the var's size for ember.engine.lab

    @property
    def var(self):
        v = self._var
        if v is None:
            v = self._var = engine.Var(nbytes=getattr(self.block, "nbytes", self.nbytes))
        return v

    def free(self) -> None:
        """Give the storage back now (after pending ops); later use raises FreedArrayError."""
        if self.freed:
            return
        self.freed = True
        block, self.block = self.block, None
        _release_later(block, self._var, self.owns_var)

    def check(self) -> None:
        if self.freed:
            raise FreedArrayError("this NDArray's storage was already freed; it can no longer be used")


class ManagedChunk(Chunk):
    """A chunk over a memory manager's block: the block goes back when the chunk dies (after pending ops)."""

    __slots__ = ()

    def __del__(self):
        if self.freed:
            return
        try:
            block = self.block
            if self._var is None and block is not None and not _gc_running:
                block.manager.release(block)  # never seen by the engine: nothing can be pending on it
                return
            _release_later(block, self._var, self.owns_var)
        except Exception:  # noqa: BLE001 - interpreter shutdown: engine/memory may be gone
            pass


_DTYPE = type(np.dtype(np.float32))  # dtype objects are instances of per-type subclasses


def alloc(shape: Tuple[int, ...], dtype, ctx: Context):
    """(data, chunk): a fresh array of `shape`/`dtype` on `ctx` from the memory manager."""
    if type(dtype) is not _DTYPE:
        dtype = np.dtype(dtype)
    nbytes = _prod(shape) * dtype.itemsize
    memory = _memory or _memory_api()
    manager = memory._cpu_manager if ctx.device_type == "cpu" else None
    block = manager.alloc(nbytes, ctx) if manager is not None else memory.alloc(nbytes, ctx)
    if block.manager is None:
        block.manager = manager
    view = block.view
    if view is not None and view[1] == shape and (view[0] is dtype or view[0] == dtype):
        data = view[2]  # a recycled block: its typed view from last time fits (no numpy calls)
    else:
        data = block.data[:nbytes].view(dtype).reshape(shape)
        block.view = (dtype, shape, data)
    return data, ManagedChunk(None, block, ctx)


def wrap(data, var, ctx: Context, owns_var: bool = False) -> Chunk:
    """A chunk over storage ember does not manage (planned blocks, DLPack, zero-copy numpy)."""
    return Chunk(var, None, ctx, owns_var=owns_var)
