"""The plain manager: exact sizes, no cache, every allocation goes to the system."""
import numpy as np
import pytest

import ember as mx
from ember import memory
from ember.memory import MemoryManagerError, OutOfMemoryError, PlainManager


def test_exact_sizes_and_no_reuse():
    memory.set_manager("plain")
    a = memory.alloc(100, mx.cpu())
    assert a.nbytes == a.size == 100 and a.data.size == 100 and a.data.dtype == np.uint8
    memory.release(a)
    assert a.data is None  # the bytes went back to the system
    b = memory.alloc(100, mx.cpu())
    assert b is not a
    s = memory.stats()
    assert s["manager"] == "plain"
    assert (s["num_allocs"], s["num_frees"], s["cache_hits"], s["cache_misses"]) == (2, 1, 0, 2)
    assert s["bytes_in_use"] == s["bytes_reserved"] == 100 and s["internal_fragmentation_bytes"] == 0
    memory.release(b)
    assert memory.stats()["bytes_reserved"] == 0


def test_double_release_is_refused():
    memory.set_manager("plain")
    block = memory.alloc(8)
    memory.release(block)
    with pytest.raises(MemoryManagerError, match="released twice"):
        memory.release(block)


def test_failure_raises_out_of_memory_after_one_retry():
    calls = []

    def full(size):
        calls.append(size)
        raise MemoryError("host full")

    mgr = PlainManager(mx.cpu(), raw_alloc=full)
    with pytest.raises(OutOfMemoryError, match="cannot allocate 64 bytes"):
        mgr.alloc(64)
    assert calls == [64, 64]
