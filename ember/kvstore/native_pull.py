"""Pulls of host keys as native copy ops (native/host_copy.c).

A pull is one memcpy per output once the store's last write is done.  Pushed as a Python op it
costs a hand-off to a worker, the GIL and a Python call per key, on the critical path of every
step that pulls after pushing (Module's push-then-pull).  The native op runs in the thread that
finishes the store's write instead: on dist_sync the collective queue's C thread, right after the
allreduce, with no Python at all.

The op only holds raw pointers, so the arrays it copies between are kept here until every copy
issued so far has run (counted in C); past KEEP_LIMIT kept copies, pulls go back to Python ops,
which hold their own arrays, so a program that never lets its pulls finish cannot grow this list."""
from __future__ import annotations

import threading
from typing import Any, List, Sequence

import numpy as np

from ..engine import Var, native
from ..base import EngineError
from . import arrays

KEEP_LIMIT = 1 << 14

_lock = threading.RLock()  # reentrant: a copy that runs at push may start ops that pull
_kept: List[tuple] = []
_issued = 0


def pull(src: Any, src_var: Var, outs: Sequence[Any], priority: int, name: str) -> list:
    """Copy the host array `src` (written through `src_var`) into every NDArray of `outs` that is a
    C-contiguous host array of its dtype (not `src` itself), each as a native engine op; return
    the outputs left for the caller to copy (GPU, strided, converting, or over the keep limit)."""
    global _issued
    if not arrays.plain_host(src):
        return list(outs)
    native.flush_bulk()  # the store's last write may still sit in this thread's bulk group
    rest = []
    with _lock:
        if _kept and native.host_copies_done() == _issued:
            _kept.clear()
        for o in outs:
            dst = o._data
            if (not arrays.plain_host(dst) or dst.dtype != src.dtype or not dst.flags.writeable
                    or dst.size != src.size or o._chunk.var is src_var or len(_kept) >= KEEP_LIMIT
                    or np.may_share_memory(dst, src)):
                rest.append(o)
                continue
            _issued += 1
            _kept.append((src, dst))
            rc = None
            try:
                rc = native.push_host_copy(src, dst, src_var, o._chunk.var, priority, name)
            finally:
                if rc != 0:  # nothing was pushed (or a bad variable raised): the copy is not kept
                    _issued -= 1
                    _kept.pop()
            if rc != 0:
                raise EngineError(f"push of '{name}' rejected by the engine (code {rc})")
    return rest
