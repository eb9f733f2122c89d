"""Size-class rounding of the pooled manager.

Small requests (up to `SMALL_LIMIT` = 1 MiB) round up to a multiple of 512 bytes
(0 bytes gets a 512-byte block), as in Flashlight's CachingMemoryManager: at most
511 bytes are wasted per block and there are only 2048 small classes.  Larger
requests round up to one of 8 classes per power of two (jemalloc style), which
wastes less than 12.5% while keeping the number of classes small enough for
cached blocks to be reused by arrays of similar, not identical, size.
"""
from __future__ import annotations

SMALL_STEP = 512
SMALL_LIMIT = 1 << 20
CLASSES_PER_DOUBLING_LOG2 = 3  # 8 classes between 2**k and 2**(k+1)


def size_class(nbytes: int) -> int:
    """Bytes the pooled manager reserves for a request of `nbytes`."""
    if nbytes <= SMALL_LIMIT:
        return ((nbytes + SMALL_STEP - 1) & -SMALL_STEP) or SMALL_STEP
    shift = (nbytes - 1).bit_length() - 1 - CLASSES_PER_DOUBLING_LOG2
    step = 1 << shift
    return (nbytes + step - 1) & -step
