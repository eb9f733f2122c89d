"""Array storage: a chunk ties one memory block to the engine var that guards it.

Views (slices, reshapes) of an NDArray share its chunk, hence its var, so the
engine orders overlapping reads and writes.  When the last NDArray on a chunk
goes away, the block goes back to the memory manager only after every op still
pending on the var has run: the release is itself an engine op writing the var.
"""
from __future__ import annotations

from functools import partial
from math import prod as _prod
from typing import Tuple

import numpy as np

from .. import engine
from ..engine import core as _core
from ..engine import native as _native
from ..engine.core import _collected_vars
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


# Releases asked for during a cyclic GC pass.  The pass may have started in any thread at any
# allocation, also inside a memory manager's lock or in a thread whose pushes run at once in that
# thread (a custom operator's code, every thread under NaiveEngine): releasing there would deadlock
# on that lock.  So they wait here until the next allocation, release or wait outside a GC pass
# (engine.core.settle_after_gc, which deletes the vars the pass collected after them).
_after_gc: list = []


def _release_deferred() -> None:
    while _after_gc:
        try:
            item = _after_gc.pop()
        except IndexError:  # another thread took the last one
            return
        _release_now(*item)


_core.after_gc_hooks.append(_release_deferred)
release_after_gc = _core.settle_after_gc


def _release_later(block, var, owns_var: bool) -> None:
    """Give `block` back and delete `var` (if owned) after every op pending on the var."""
    if _core.gc_running:
        _after_gc.append((block, var, owns_var))
        return
    if _after_gc or _collected_vars:
        release_after_gc()
    _release_now(block, var, owns_var)


def _release_now(block, var, owns_var: bool) -> None:
    # The release op writes the var, so it runs after every op already pushed on it.
    if var is not None and _core.bulk_threads and _core.defer_behind_bulks(
            var, partial(_release_now, block, var, owns_var)):
        return  # another thread's bulk group still holds ops on this storage: after they are pushed
    if block is not None:
        release = _memory_api().release
        if var is None:
            # No op was ever pushed on this storage through the engine (a var is made on first
            # use), and ops run under the engine's idle claim finished before returning: free it now.
            release(block)
            return
        engine.push(lambda: release(block), write=(var,), name="release_storage", inline=True)
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
            if self._var is None and block is not None and not _core.gc_running:
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
    if (_after_gc or _collected_vars) and not _core.gc_running:
        release_after_gc()
    memory = _memory or _memory_api()
    manager = memory._cpu_manager if ctx.device_type == "cpu" else None
    if manager is not None and getattr(manager, "_in_use", 0) > _run_ahead_mark[0]:
        _wait_for_pending(manager)
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


_run_ahead_mark = _core.run_ahead_mark


def _wait_for_pending(manager) -> None:
    """The run-ahead bound by bytes (engine.set_run_ahead_bytes): the CPU memory in use grew past
    the mark, so wait for the ops pending now (their ends release what they held), then set the
    mark that many bytes above what is still in use."""
    limit = _core.run_ahead_bytes[0]
    if not limit:
        _run_ahead_mark[0] = float("inf")
        return
    _native.run_ahead_drain()
    _native.run_ahead_drain()  # and the releases those ends pushed
    if (_after_gc or _collected_vars) and not _core.gc_running:
        release_after_gc()
    _run_ahead_mark[0] = getattr(manager, "_in_use", 0) + limit


def wrap(data, var, ctx: Context, owns_var: bool = False) -> Chunk:
    """A chunk over storage ember does not manage (planned blocks, DLPack, zero-copy numpy)."""
    return Chunk(var, None, ctx, owns_var=owns_var)
