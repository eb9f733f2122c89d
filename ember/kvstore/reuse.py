"""A cache for work prepared from a call's arrays, kept only for arrays that come back.

Training pushes the same gradient arrays every step, so the store keeps what it prepared for them
(pointers, plans, op bodies) and reuses it while the very same objects come again.  Holding that
work means holding the arrays; code that makes fresh arrays every step would then keep one extra
set alive.  So an entry is kept only from the second call with the same objects: the first call
leaves weak references, and arrays used once are never held.
"""
from __future__ import annotations

import weakref
from typing import Any, Dict, Hashable, Optional, Sequence, Tuple


def _no_object():
    return None


def _weak(obj):
    return _no_object if obj is None else weakref.ref(obj)


class SeenTwice:
    """key -> prepared work for a tuple of objects (compared by identity; None allowed)."""

    def __init__(self, limit: int):
        self._limit = limit
        self._kept: Dict[Hashable, Tuple[Tuple[Any, ...], Any]] = {}
        self._seen: Dict[Hashable, Tuple[Any, ...]] = {}

    def get(self, key: Hashable, objs: Sequence[Any]) -> Optional[Any]:
        """The work kept for `key` if it was prepared for these very objects, else None."""
        hit = self._kept.get(key)
        if hit is None or len(hit[0]) != len(objs):
            return None
        for a, b in zip(hit[0], objs):
            if a is not b:
                return None
        return hit[1]

    def offer(self, key: Hashable, objs: Sequence[Any], work: Any) -> None:
        """Work just prepared for `objs`: kept if the previous offer for `key` had the same objects."""
        seen = self._seen.get(key)
        if seen is not None and len(seen) == len(objs) and all(r() is o for r, o in zip(seen, objs)):
            if key not in self._kept and len(self._kept) >= self._limit:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = (tuple(objs), work)
            return
        self._kept.pop(key, None)  # other arrays now: let the old ones go
        try:
            refs = tuple(_weak(o) for o in objs)
        except TypeError:  # an object without weak references: never kept
            self._seen.pop(key, None)
            return
        if key not in self._seen and len(self._seen) >= self._limit:
            self._seen.pop(next(iter(self._seen)))
        self._seen[key] = refs

    def clear(self) -> None:
        self._kept.clear()
        self._seen.clear()

    def __len__(self) -> int:
        return len(self._kept)
