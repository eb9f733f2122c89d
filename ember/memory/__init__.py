"""Pluggable storage managers: where every array's bytes come from (`ember.memory`).

    alloc(nbytes, ctx) -> Block       block.data: 1-D uint8 numpy (CuPy on GPU) of block.size >= nbytes bytes
    release(block)                    back to the manager that made it, whichever is current now
    set_manager('pooled'|'plain'|obj, ctx=None, **options)
    get_manager(ctx=None); stats(ctx=None) -> dict; reset_peak_stats(ctx=None); empty_cache(ctx=None)

One manager serves one device (all CPU contexts share host memory, hence one CPU
manager).  The default is 'pooled' (override with MXNet's environment variables
MXNET_CPU_MEM_POOL_TYPE / MXNET_GPU_MEM_POOL_TYPE: 'Unpooled' selects 'plain',
'Naive' or 'Round' select 'pooled').  A custom manager is any object with
`alloc(nbytes, ctx) -> Block`, `release(block)` and `stats() -> dict` (optionally
`empty_cache()` and `reset_peak_stats()`); see docs/memory.md.
"""
from __future__ import annotations

import os
import threading
from typing import Optional, Union

from .. import backend
from ..context import Context, current_context
from .block import Block
from .errors import MemoryManagerError, OutOfMemoryError
from .plain import PlainManager
from .pooled import PooledManager
from .size_classes import size_class

__all__ = ["alloc", "release", "set_manager", "get_manager", "stats", "reset_peak_stats",
           "empty_cache", "Block", "PlainManager", "PooledManager", "MemoryManagerError",
           "OutOfMemoryError", "size_class"]

MANAGERS = {"plain": PlainManager, "pooled": PooledManager}
_MXNET_POOL_TYPES = {"unpooled": "plain", "naive": "pooled", "round": "pooled"}
_PROTOCOL = ("alloc", "release", "stats")

_table_lock = threading.Lock()
_default_spec = None  # (manager name or custom object, options) set by set_manager(x) for every device
_managers = {}    # device key -> manager in charge now
_cpu_manager = None  # _managers['cpu'], kept in a global for the alloc fast path


def _spec_from_env(var: str) -> str:
    value = os.environ.get(var)
    if not value:
        return "pooled"
    name = _MXNET_POOL_TYPES.get(value.lower(), value.lower())
    if name not in MANAGERS:
        raise MemoryManagerError(f"{var}={value!r} is not a memory pool type; expected one of "
                                 "'Naive', 'Round', 'Unpooled' (or 'pooled', 'plain')")
    return name


def _as_context(ctx) -> Context:
    if ctx is None:
        return current_context()
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx must be an ember Context such as mx.cpu() or mx.gpu(0), not {type(ctx).__name__}")
    return ctx


def _manager_name(name: str) -> str:
    key = name.lower()
    key = _MXNET_POOL_TYPES.get(key, key)
    if key not in MANAGERS:
        raise MemoryManagerError(f"unknown memory manager {name!r}; expected one of {sorted(MANAGERS)} "
                                 "or an object with alloc/release/stats methods")
    return key


def _check_protocol(obj) -> None:
    missing = [m for m in _PROTOCOL if not callable(getattr(obj, m, None))]
    if missing:
        raise TypeError(f"a memory manager needs callable {', '.join(missing)} method(s); "
                        f"{type(obj).__name__} lacks them")


def _build(spec, ctx: Context, options: dict):
    return MANAGERS[spec](ctx, **options) if isinstance(spec, str) else spec


def _resolve(ctx: Context):
    """The manager for `ctx`, created from the device type's spec on first use."""
    global _cpu_manager
    key = backend.device_key(ctx)
    with _table_lock:
        mgr = _managers.get(key)
        if mgr is None:
            spec, options = _default_spec or (_spec_from_env(backend.of(ctx).pool_env), {})
            mgr = _build(spec, Context(ctx.device_type, ctx.device_id), options)
            _managers[key] = mgr
            if key == "cpu":
                _cpu_manager = mgr
        return mgr


def alloc(nbytes: int, ctx: Optional[Context] = None) -> Block:
    """Storage of at least `nbytes` bytes on `ctx` (default: the current context) from its manager."""
    try:
        on_cpu = ctx is None or ctx.device_type == "cpu"
    except AttributeError:
        on_cpu = _as_context(ctx)  # raises the TypeError naming the bad ctx
    if on_cpu:
        mgr = _cpu_manager
        if mgr is None:
            mgr = _resolve(_as_context(ctx))
    else:
        mgr = _managers.get(backend.device_key(ctx))
        if mgr is None:
            mgr = _resolve(ctx)
    block = mgr.alloc(nbytes, ctx)
    if block.manager is None:  # a custom manager may leave the stamp to us
        block.manager = mgr
    return block


def release(block: Block) -> None:
    """Return `block` to the manager that allocated it (even if another manager is current now)."""
    try:
        mgr = block.manager
    except AttributeError:
        raise TypeError(f"release() expects a Block from ember.memory.alloc, not {type(block).__name__}") from None
    if mgr is None:
        raise MemoryManagerError(f"{block!r} has no owning manager; it was not made by ember.memory.alloc")
    mgr.release(block)


def set_manager(name_or_obj: Union[str, object], ctx: Optional[Context] = None, **options):
    """Make 'pooled', 'plain' or a custom manager object serve `ctx` (every device if None).

    Blocks already handed out keep returning to the manager that made them.  `options`
    go to the built-in manager's constructor (e.g. `limit_bytes=` for 'pooled').
    Returns the manager now serving `ctx` (the current context if `ctx` is None).
    """
    global _cpu_manager, _default_spec
    if isinstance(name_or_obj, str):
        spec = _manager_name(name_or_obj)
    else:
        if options:
            raise TypeError("options are only accepted with a built-in manager name, not a manager object")
        _check_protocol(name_or_obj)
        spec = name_or_obj
    if ctx is None:
        with _table_lock:
            _default_spec = (spec, dict(options))
            _managers.clear()
            _cpu_manager = None
        return get_manager(None)
    ctx = _as_context(ctx)
    mgr = _build(spec, Context(ctx.device_type, ctx.device_id), options)
    with _table_lock:
        key = backend.device_key(ctx)
        _managers[key] = mgr
        if key == "cpu":
            _cpu_manager = mgr
    return mgr


def get_manager(ctx: Optional[Context] = None):
    """The manager serving `ctx` now (default: the current context)."""
    ctx = _as_context(ctx)
    mgr = _managers.get(backend.device_key(ctx))
    return mgr if mgr is not None else _resolve(ctx)


def stats(ctx: Optional[Context] = None) -> dict:
    """Counters of the manager serving `ctx`.

    bytes_in_use: bytes requested by live blocks; internal_fragmentation_bytes: bytes
    reserved for live blocks beyond what was requested (size-class rounding);
    bytes_reserved: everything held from the system (live blocks at their rounded
    size + cached free blocks); peak_bytes_in_use: max bytes_in_use since the last
    reset_peak_stats(); num_allocs / num_frees; cache_hits / cache_misses (allocations
    served from the cache / from the system).  Built-in managers add manager, device,
    bytes_cached, live_blocks, cached_blocks and oom_retries.
    """
    return get_manager(ctx).stats()


def reset_peak_stats(ctx: Optional[Context] = None) -> None:
    """Restart peak_bytes_in_use of `ctx`'s manager from its current bytes_in_use."""
    reset = getattr(get_manager(ctx), "reset_peak_stats", None)
    if reset is not None:
        reset()


def empty_cache(ctx: Optional[Context] = None) -> None:
    """Give the cached free blocks of `ctx`'s manager back to the system."""
    empty = getattr(get_manager(ctx), "empty_cache", None)
    if empty is not None:
        empty()
