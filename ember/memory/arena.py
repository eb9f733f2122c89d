"""Split/merge of large blocks (Flashlight CachingMemoryManager style) for the pooled manager.

Large requests are carved out of segments (buffers obtained from the system).  A free
block larger than a request is split, the remainder staying free; a released block is
merged with free neighbours of the same segment, so memory freed as many pieces can
serve one larger request without asking the system again.  Free blocks are kept sorted
by size for best-fit search.  Not thread-safe: the pooled manager calls it under its lock.
"""
from __future__ import annotations

import bisect
import itertools
from typing import List, Optional, Tuple

from .block import Block

MIN_SPLIT_REMAINDER = 1 << 20  # a smaller remainder stays inside the block (as in Flashlight)
SEGMENT_BYTES = 16 << 20       # requests up to half of this share segments of this size


def segment_size_for(size: int) -> int:
    """System bytes to request for a block of `size`: shared 16 MiB segments for mid sizes."""
    return SEGMENT_BYTES if size <= SEGMENT_BYTES // 2 else size


class Segment:
    """One buffer from the system; its blocks tile it without gaps."""

    __slots__ = ("buffer", "size")

    def __init__(self, buffer, size: int):
        self.buffer = buffer
        self.size = size


class ArenaBlock(Block):
    """A block inside a segment: `offset` into it, address-order neighbours `prev`/`next`."""

    __slots__ = ("segment", "offset", "prev", "next", "key")

    def __init__(self, segment: Segment, offset: int, size: int, ctx, manager):
        super().__init__(None, 0, size, ctx, manager)
        self.live = False
        self.segment = segment
        self.offset = offset
        self.prev: Optional[ArenaBlock] = None
        self.next: Optional[ArenaBlock] = None
        self.key: Optional[Tuple[int, int]] = None  # (size, seq) while in the free index


class Arena:
    """Best-fit free index over the segments of one manager."""

    def __init__(self, ctx, manager):
        self.ctx = ctx
        self.manager = manager
        self._free_keys: List[Tuple[int, int]] = []  # sorted (size, seq)
        self._free_blocks = {}                         # seq -> block
        self._seq = itertools.count()
        self.segments = 0

    # -- free index -------------------------------------------------------------------------
    def _insert(self, block: ArenaBlock) -> None:
        key = (block.size, next(self._seq))
        block.key = key
        bisect.insort(self._free_keys, key)
        self._free_blocks[key[1]] = block

    def _remove(self, block: ArenaBlock) -> None:
        key = block.key
        i = bisect.bisect_left(self._free_keys, key)
        del self._free_keys[i]
        del self._free_blocks[key[1]]
        block.key = None

    @property
    def cached_bytes(self) -> int:
        return sum(size for size, _ in self._free_keys)

    @property
    def cached_blocks(self) -> int:
        return len(self._free_keys)

    # -- allocation -------------------------------------------------------------------------
    def take(self, size: int) -> Optional[ArenaBlock]:
        """The best-fitting free block, split down to `size` when the rest is worth keeping."""
        i = bisect.bisect_left(self._free_keys, (size, -1))
        if i == len(self._free_keys):
            return None
        block = self._free_blocks[self._free_keys[i][1]]
        self._remove(block)
        self._split(block, size)
        return self._hand_out(block)

    def add_segment(self, buffer, segment_bytes: int, size: int) -> ArenaBlock:
        """Adopt a fresh system buffer and carve a `size` block from its start."""
        segment = Segment(buffer, segment_bytes)
        self.segments += 1
        block = ArenaBlock(segment, 0, segment_bytes, self.ctx, self.manager)
        self._split(block, size)
        return self._hand_out(block)

    def _split(self, block: ArenaBlock, size: int) -> None:
        rest = block.size - size
        if rest < MIN_SPLIT_REMAINDER:
            return
        tail = ArenaBlock(block.segment, block.offset + size, rest, self.ctx, self.manager)
        tail.prev, tail.next = block, block.next
        if block.next is not None:
            block.next.prev = tail
        block.next = tail
        block.size = size
        self._insert(tail)

    @staticmethod
    def _hand_out(block: ArenaBlock) -> ArenaBlock:
        block.data = block.segment.buffer[block.offset:block.offset + block.size]
        return block

    # -- release ----------------------------------------------------------------------------
    def give_back(self, block: ArenaBlock) -> None:
        """Mark `block` free, merged with its free neighbours."""
        block.data = None
        nxt = block.next
        if nxt is not None and nxt.key is not None:
            self._remove(nxt)
            block.size += nxt.size
            block.next = nxt.next
            if nxt.next is not None:
                nxt.next.prev = block
        prev = block.prev
        if prev is not None and prev.key is not None:
            self._remove(prev)
            prev.size += block.size
            prev.next = block.next
            if block.next is not None:
                block.next.prev = prev
            block = prev
        self._insert(block)

    def drop_free_segments(self) -> int:
        """Forget segments that are entirely free; returns the bytes given back to the system."""
        dropped = 0
        for size, seq in list(self._free_keys):
            block = self._free_blocks[seq]
            if block.prev is None and block.next is None:  # spans its whole segment
                self._remove(block)
                block.segment.buffer = None
                self.segments -= 1
                dropped += size
        return dropped
