"""reuse.SeenTwice: prepared work is kept only for objects that come back, never holding one-off arrays."""
from __future__ import annotations

import gc
import weakref

import numpy as np

from ember.kvstore.reuse import SeenTwice


def test_work_is_kept_from_the_second_offer_with_the_same_objects():
    cache = SeenTwice(limit=8)
    a, b = np.zeros(3), np.zeros(3)
    assert cache.get("k", (a, None)) is None
    cache.offer("k", (a, None), "work-1")
    assert cache.get("k", (a, None)) is None and len(cache) == 0  # seen once: nothing held
    cache.offer("k", (a, None), "work-2")
    assert cache.get("k", (a, None)) == "work-2"
    assert cache.get("k", (b, None)) is None  # other objects
    assert cache.get("k", (a, b)) is None
    cache.offer("k", (b, None), "work-3")  # other arrays: the kept work for a is dropped
    assert cache.get("k", (a, None)) is None and len(cache) == 0


def test_objects_offered_once_are_not_kept_alive():
    cache = SeenTwice(limit=8)
    arr = np.zeros(1000)
    ref = weakref.ref(arr)
    cache.offer("k", (arr,), ("work holding", arr))  # the work refers to the array too
    del arr
    gc.collect()
    assert ref() is None
    fresh = np.zeros(1000)
    cache.offer("k", (fresh,), "work")  # the dead reference does not match a new array
    assert cache.get("k", (fresh,)) is None


def test_limit_and_objects_without_weak_references():
    cache = SeenTwice(limit=2)
    arrays = [np.zeros(1) for _ in range(3)]
    for i, arr in enumerate(arrays):
        cache.offer(i, (arr,), i)
        cache.offer(i, (arr,), i)
    assert len(cache) == 2 and cache.get(0, (arrays[0],)) is None and cache.get(2, (arrays[2],)) == 2
    cache.offer("n", (7,), "w")  # ints have no weak references: never kept
    cache.offer("n", (7,), "w")
    assert cache.get("n", (7,)) is None
    cache.clear()
    assert len(cache) == 0
