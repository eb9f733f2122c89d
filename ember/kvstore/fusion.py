"""Tensor fusion (as in Horovod): small keys are packed into one buffer per allreduce, large
buffers are reduced in chunks.  Plans depend only on the keys, shapes and dtypes of one call,
so every worker computes the same plan and the collectives match."""
from __future__ import annotations

import functools
import math
import zlib
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np


@dataclass
class Bucket:
    """Entries reduced together; `fused` buckets are packed into one flat buffer."""

    dtype: np.dtype
    items: List[Tuple[Any, Any]] = field(default_factory=list)  # (entry, values)
    offsets: List[int] = field(default_factory=list)
    size: int = 0  # elements
    fused: bool = True

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def add(self, entry, values) -> None:
        self.offsets.append(self.size)
        self.items.append((entry, values))
        self.size += math.prod(entry.shape)

    def signature(self) -> Tuple:
        return tuple((e.key, e.shape) for e, _ in self.items) + (self.dtype.str,)


def plan(items: Sequence[Tuple[Any, Any]], threshold: int, key_limit: Optional[int] = None) -> List[Bucket]:
    """Split (entry, values) pairs into buckets: entries under `threshold` bytes (and under
    `key_limit` bytes, when given) share buckets of at most `threshold` bytes (one open bucket per
    dtype); larger ones go alone, unfused, and so does a small one that ends up alone in its bucket."""
    buckets: List[Bucket] = []
    open_by_dtype = {}
    for entry, values in items:
        dtype = entry.dtype
        nbytes = math.prod(entry.shape) * dtype.itemsize
        if goes_alone(nbytes, threshold, key_limit):
            alone = Bucket(dtype, fused=False)
            alone.add(entry, values)
            buckets.append(alone)
            continue
        bucket = open_by_dtype.get(dtype)
        if bucket is None or bucket.nbytes + nbytes > threshold:
            bucket = Bucket(dtype)
            open_by_dtype[dtype] = bucket
            buckets.append(bucket)
        bucket.add(entry, values)
    for bucket in buckets:
        # Packing one key gains nothing and costs a copy in (and, for pushpull, one out): a lone
        # small key is reduced like a large one (per-key pushpull calls, as Gluon's Trainer makes,
        # are the common case).  It also skips the layout fingerprint, as large keys do.
        if len(bucket.items) == 1:
            bucket.fused = False
    return buckets


def goes_alone(nbytes: int, threshold: int, key_limit: Optional[int] = None) -> bool:
    """Whether a key of `nbytes` is reduced alone, never fused, whatever else is in its call."""
    return threshold <= 0 or nbytes >= threshold or (key_limit is not None and nbytes >= key_limit)


def chunks(flat: np.ndarray, chunk_bytes: int) -> List[np.ndarray]:
    """Views of a flat buffer, each at most `chunk_bytes` long (at least one element)."""
    step = max(1, chunk_bytes // max(1, flat.dtype.itemsize))
    return [flat[i:i + step] for i in range(0, flat.size, step)] or [flat]


@functools.lru_cache(maxsize=4096)
def fingerprint(signature: Tuple, dtype: np.dtype) -> float:
    """A small integer naming a bucket's layout, summed across workers to detect mismatched pushes.

    Kept below 2**16 so `num_workers * fingerprint` stays exact in float32.  None for dtypes
    that cannot hold it exactly (float16, 8-bit ints)."""
    if dtype.kind not in "fiu" or dtype.itemsize < 4:
        return None
    return float(zlib.crc32(repr(signature).encode()) % 65521 + 1)
