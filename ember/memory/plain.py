"""The 'plain' manager: every alloc asks the system, every release gives the bytes back."""
from __future__ import annotations

import threading

from .. import backend
from .block import Block
from .errors import MemoryManagerError, OutOfMemoryError
from .sizes import check_nbytes


class PlainManager:
    """Allocates exactly `nbytes` per block and frees on release (no cache).

    Useful to find use-after-release bugs and as a baseline; `cache_misses` counts
    every allocation since each one goes to the system.
    """

    name = "plain"

    def __init__(self, ctx, raw_alloc=None):
        self.ctx = ctx
        default_alloc, self._release_system_cache = backend.of(ctx).allocator(ctx.device_id)
        self._raw_alloc = raw_alloc or default_alloc
        self._lock = threading.Lock()
        self._in_use = 0
        self._peak = 0
        self._allocs = 0
        self._frees = 0
        self._oom_retries = 0

    def alloc(self, nbytes: int, ctx=None) -> Block:
        """A fresh block of exactly `nbytes` bytes."""
        if type(nbytes) is not int or nbytes < 0:
            nbytes = check_nbytes(nbytes)
        try:
            data = self._raw_alloc(nbytes)
        except MemoryError:
            # the system may hold freed memory in its own cache (CuPy's pool): let it go, retry once
            self._release_system_cache()
            try:
                data = self._raw_alloc(nbytes)
            except MemoryError as e:
                raise OutOfMemoryError(f"cannot allocate {nbytes} bytes on {self.ctx}") from e
            with self._lock:
                self._oom_retries += 1
        block = Block(data, nbytes, nbytes, self.ctx, self)
        with self._lock:
            self._allocs += 1
            self._in_use += nbytes
            if self._in_use > self._peak:
                self._peak = self._in_use
        return block

    def release(self, block: Block) -> None:
        """Forget `block`; its bytes go back to the system once nothing references them."""
        with self._lock:
            if block.manager is not self:
                raise MemoryManagerError(f"{block!r} was not allocated by this {self.name} manager")
            if not block.live:
                raise MemoryManagerError(f"{block!r} was released twice")
            block.live = False
            self._frees += 1
            self._in_use -= block.nbytes
        block.data = None  # drop our reference so the system can reclaim it

    def empty_cache(self) -> None:
        """Nothing cached here; asks the system allocator below (CuPy) to drop its cache."""
        self._release_system_cache()

    def reset_peak_stats(self) -> None:
        """Restart `peak_bytes_in_use` from the current `bytes_in_use`."""
        with self._lock:
            self._peak = self._in_use

    def stats(self) -> dict:
        """Counters (see `ember.memory.stats`)."""
        with self._lock:
            return {
                "manager": self.name, "device": str(self.ctx),
                "bytes_in_use": self._in_use, "bytes_reserved": self._in_use,
                "bytes_cached": 0, "peak_bytes_in_use": self._peak,
                "num_allocs": self._allocs, "num_frees": self._frees,
                "live_blocks": self._allocs - self._frees, "cached_blocks": 0,
                "cache_hits": 0, "cache_misses": self._allocs,
                "internal_fragmentation_bytes": 0, "oom_retries": self._oom_retries,
            }

    def __repr__(self) -> str:
        return f"<PlainManager on {self.ctx}>"
