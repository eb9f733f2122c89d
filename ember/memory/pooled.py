"""The 'pooled' manager: a caching allocator with size classes (MXNet's pooled storage manager).

Freed blocks are kept in a free list per size class (see `size_classes`) and handed
out again to the next request of the same class, so steady-state training loops stop
calling the system allocator.  When the system refuses an allocation (or the optional
`limit_bytes` would be exceeded) every cached block is dropped and the allocation is
retried once before `OutOfMemoryError` is raised.  Requests above 1 MiB are carved
from shared segments with split/merge (see `arena`) unless `split_large=False`.
"""
from __future__ import annotations

import threading
from typing import Callable, Dict, List, Optional

from .. import backend
from .arena import Arena, ArenaBlock, segment_size_for
from .block import Block
from .errors import MemoryManagerError, OutOfMemoryError
from .size_classes import size_class
from .sizes import check_nbytes

_SMALL_LIMIT = 1 << 20  # mirrors size_classes.SMALL_LIMIT; inlined below for the fast path


class PooledManager:
    """Caching manager: blocks are rounded to size classes and reused after release.

    `limit_bytes` caps the bytes reserved from the system (cached + live), like a
    device's capacity; `raw_alloc(size)` replaces the system allocator (tests use it
    to simulate a full device); `split_large=False` keeps large blocks in per-class
    free lists too instead of splitting and merging them.
    """

    name = "pooled"

    def __init__(self, ctx, limit_bytes: Optional[int] = None,
                 raw_alloc: Optional[Callable[[int], object]] = None, split_large: bool = True):
        self.ctx = ctx
        default_alloc, self._release_system_cache = backend.of(ctx).allocator(ctx.device_id)
        self._raw_alloc = raw_alloc or default_alloc
        if limit_bytes is not None:
            limit_bytes = check_nbytes(limit_bytes)
        self.limit_bytes = limit_bytes
        self._lock = threading.Lock()
        self._acquire = self._lock.acquire
        self._unlock = self._lock.release
        self._free: Dict[int, List[Block]] = {}
        # Only what the hit/release fast paths must update is counted there; cached
        # bytes and live reserved bytes are derived from the free lists in stats().
        self._in_use = 0          # requested bytes of live blocks
        self._reserved = 0        # bytes of class blocks and segments obtained from the system
        self._pending = 0         # bytes being allocated from the system right now
        self._peak = 0
        self._frees = 0
        self._hits = 0
        self._misses = 0
        self._oom_retries = 0
        self._arena = Arena(ctx, self) if split_large else None

    def alloc(self, nbytes: int, ctx=None) -> Block:
        """A block of at least `nbytes` bytes, from the cache when one of its class is free."""
        if type(nbytes) is not int or nbytes < 0:
            nbytes = check_nbytes(nbytes)
        if nbytes <= _SMALL_LIMIT:
            size = ((nbytes + 511) & -512) or 512
        elif self._arena is not None:
            return self._alloc_large(nbytes)
        else:
            size = size_class(nbytes)
        # acquire()/release() instead of `with`: half the cost on this hot path
        self._acquire()
        try:
            free = self._free.get(size)
            if free:
                block = free.pop()
                self._hits += 1
                in_use = self._in_use = self._in_use + nbytes
                if in_use > self._peak:
                    self._peak = in_use
                block.nbytes = nbytes
                block.live = True
                return block
        finally:
            self._unlock()
        return self._alloc_fresh(nbytes, size)

    def _alloc_fresh(self, nbytes: int, size: int) -> Block:
        data, got = self._reserve_and_allocate(size, size)
        block = Block(data, nbytes, size, self.ctx, self)
        with self._lock:
            self._pending -= got
            self._misses += 1
            self._reserved += got
            self._take_live(block, nbytes)
        return block

    def _alloc_large(self, nbytes: int) -> Block:
        size = size_class(nbytes)
        with self._lock:
            block = self._arena.take(size)
            if block is not None:
                self._hits += 1
                self._take_live(block, nbytes)
                return block
        # a new segment, shared with later mid-size requests; only `size` if memory is short
        buffer, got = self._reserve_and_allocate(segment_size_for(size), size)
        with self._lock:
            self._pending -= got
            self._misses += 1
            self._reserved += got
            block = self._arena.add_segment(buffer, got, size)
            self._take_live(block, nbytes)
        return block

    def _take_live(self, block: Block, nbytes: int) -> None:
        in_use = self._in_use = self._in_use + nbytes
        if in_use > self._peak:
            self._peak = in_use
        block.nbytes = nbytes
        block.live = True

    def _reserve_and_allocate(self, size: int, retry_size: int):
        """(buffer, its size): `size` bytes, or after emptying the cache `retry_size` bytes."""
        try:
            return self._try_allocate(size), size
        except MemoryError:
            pass
        if retry_size != size:  # a shared segment did not fit: try just the block first
            try:
                return self._try_allocate(retry_size), retry_size
            except MemoryError:
                pass
        # Out of memory: give every cached block back and retry once.
        with self._lock:
            self._oom_retries += 1
        self.empty_cache()
        size = retry_size
        try:
            return self._try_allocate(size), size
        except MemoryError as e:
            with self._lock:
                cached = self._cached_bytes()
                live = self._reserved - cached
            limit = f", limit_bytes={self.limit_bytes}" if self.limit_bytes is not None else ""
            raise OutOfMemoryError(
                f"cannot allocate {size} bytes on {self.ctx} after releasing the cache "
                f"({live} bytes in live blocks, {cached} cached{limit})") from e

    def _try_allocate(self, size: int):
        # `_pending` counts bytes being allocated right now, so concurrent misses
        # cannot together overshoot limit_bytes; the caller moves them to _reserved.
        with self._lock:
            if self.limit_bytes is not None:
                reserved = self._reserved + self._pending
                if reserved + size > self.limit_bytes:
                    raise MemoryError(f"limit_bytes={self.limit_bytes} reached")
            self._pending += size
        try:
            return self._raw_alloc(size)
        except BaseException:
            with self._lock:
                self._pending -= size
            raise

    def release(self, block: Block) -> None:
        """Put `block` back in its size class's free list (large blocks: back into their segment)."""
        self._acquire()
        try:
            if block.manager is not self or not block.live:
                raise MemoryManagerError(
                    f"{block!r} was released twice" if block.manager is self
                    else f"{block!r} was not allocated by this {self.name} manager")
            block.live = False
            if block.__class__ is ArenaBlock:
                self._arena.give_back(block)
            else:
                free = self._free.get(block.size)
                if free is None:
                    self._free[block.size] = [block]
                else:
                    free.append(block)
            self._frees += 1
            self._in_use -= block.nbytes
        finally:
            self._unlock()

    def empty_cache(self) -> None:
        """Give every cached (free) block back to the system; live blocks are untouched."""
        with self._lock:
            dropped = self._free
            self._free = {}
            self._reserved -= sum(size * len(blocks) for size, blocks in dropped.items())
            if self._arena is not None:
                self._reserved -= self._arena.drop_free_segments()
        for blocks in dropped.values():
            for block in blocks:
                block.data = None
        dropped.clear()
        self._release_system_cache()

    def reset_peak_stats(self) -> None:
        """Restart `peak_bytes_in_use` from the current `bytes_in_use`."""
        with self._lock:
            self._peak = self._in_use

    def _cached_bytes(self) -> int:
        arena = self._arena.cached_bytes if self._arena is not None else 0
        return arena + sum(size * len(blocks) for size, blocks in self._free.items())

    def stats(self) -> dict:
        """Counters (see `ember.memory.stats`)."""
        with self._lock:
            cached = self._cached_bytes()
            cached_blocks = sum(len(blocks) for blocks in self._free.values())
            segments = 0
            if self._arena is not None:
                cached_blocks += self._arena.cached_blocks
                segments = self._arena.segments
            allocs = self._hits + self._misses
            live_reserved = self._reserved - cached
            return {
                "manager": self.name, "device": str(self.ctx),
                "bytes_in_use": self._in_use, "bytes_reserved": self._reserved,
                "bytes_cached": cached, "peak_bytes_in_use": self._peak,
                "num_allocs": allocs, "num_frees": self._frees,
                "live_blocks": allocs - self._frees, "cached_blocks": cached_blocks,
                "cache_hits": self._hits, "cache_misses": self._misses,
                "internal_fragmentation_bytes": live_reserved - self._in_use,
                "oom_retries": self._oom_retries, "segments": segments,
            }

    def __repr__(self) -> str:
        return f"<PooledManager on {self.ctx}>"
