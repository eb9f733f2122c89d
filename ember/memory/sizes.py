"""Validation of requested sizes (kept off the managers' fast path)."""
from __future__ import annotations

import operator

from .errors import MemoryManagerError


def check_nbytes(nbytes) -> int:
    """`nbytes` as a non-negative int, or TypeError / MemoryManagerError naming the problem."""
    if isinstance(nbytes, bool):
        raise TypeError(f"nbytes must be an integer, not {type(nbytes).__name__}")
    try:
        nbytes = operator.index(nbytes)
    except TypeError:
        raise TypeError(f"nbytes must be an integer, not {type(nbytes).__name__}") from None
    if nbytes < 0:
        raise MemoryManagerError(f"nbytes must be >= 0, got {nbytes}")
    return nbytes
