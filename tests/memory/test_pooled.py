"""The pooled (caching) manager: reuse per size class, counters, empty_cache, the OOM retry path."""
import numpy as np
import pytest

import ember as mx
from ember import memory
from ember.memory import MemoryManagerError, OutOfMemoryError, PooledManager


def test_block_fields_and_writable_storage():
    block = memory.alloc(1000, mx.cpu())
    assert block.nbytes == 1000 and block.size == 1024 and block.live
    assert isinstance(block.data, np.ndarray) and block.data.dtype == np.uint8 and block.data.ndim == 1
    assert block.data.size == block.size
    assert block.data.__array_interface__["data"][0] % 64 == 0
    view = block.data[:1000].view(np.float32)
    view[:] = np.arange(250, dtype=np.float32)
    np.testing.assert_array_equal(block.data[:1000].view(np.float32), np.arange(250, dtype=np.float32))
    memory.release(block)
    assert not block.live


def test_same_size_class_is_reused_and_counted():
    first = memory.alloc(700, mx.cpu())
    memory.release(first)
    second = memory.alloc(1024, mx.cpu())  # 700 and 1024 share the 1024-byte class
    assert second is first and second.nbytes == 1024
    third = memory.alloc(1025, mx.cpu())   # next class: a fresh block
    assert third is not first and third.size == 1536
    s = memory.stats(mx.cpu())
    assert (s["num_allocs"], s["num_frees"], s["cache_hits"], s["cache_misses"]) == (3, 1, 1, 2)
    assert s["bytes_in_use"] == 1024 + 1025
    assert s["bytes_reserved"] == 1024 + 1536
    assert s["internal_fragmentation_bytes"] == 1536 - 1025
    assert s["live_blocks"] == 2 and s["cached_blocks"] == 0


def test_stats_track_a_sequence_against_a_model():
    rng = np.random.default_rng(0)
    live, cached = [], {}
    model = dict(in_use=0, peak=0, allocs=0, frees=0, hits=0, reserved=0)
    for _ in range(300):
        if live and rng.random() < 0.45:
            block = live.pop(int(rng.integers(len(live))))
            memory.release(block)
            cached[block.size] = cached.get(block.size, 0) + 1
            model["frees"] += 1
            model["in_use"] -= block.nbytes
        else:
            nbytes = int(rng.integers(0, 5000))
            block = memory.alloc(nbytes, mx.cpu())
            live.append(block)
            model["allocs"] += 1
            if cached.get(block.size):
                cached[block.size] -= 1
                model["hits"] += 1
            else:
                model["reserved"] += block.size
            model["in_use"] += nbytes
            model["peak"] = max(model["peak"], model["in_use"])
    s = memory.stats()
    assert s["bytes_in_use"] == model["in_use"] == sum(b.nbytes for b in live)
    assert s["peak_bytes_in_use"] == model["peak"]
    assert (s["num_allocs"], s["num_frees"], s["cache_hits"]) == (model["allocs"], model["frees"], model["hits"])
    assert s["cache_misses"] == model["allocs"] - model["hits"]
    assert s["bytes_reserved"] == model["reserved"]
    assert s["bytes_cached"] == sum(size * n for size, n in cached.items())
    assert s["internal_fragmentation_bytes"] == sum(b.size - b.nbytes for b in live)


def test_live_blocks_never_share_storage():
    blocks = [memory.alloc(n, mx.cpu()) for n in (10, 10, 600, 600, 10)]
    memory.release(blocks.pop(1))
    blocks += [memory.alloc(20, mx.cpu()), memory.alloc(30, mx.cpu())]
    for i, block in enumerate(blocks):
        block.data[:] = i
    for i, block in enumerate(blocks):
        assert (block.data == i).all()


def test_peak_and_reset_peak_stats():
    a = memory.alloc(4000)
    b = memory.alloc(6000)
    memory.release(a)
    assert memory.stats()["peak_bytes_in_use"] == 10000
    memory.reset_peak_stats()
    assert memory.stats()["peak_bytes_in_use"] == 6000
    memory.release(b)
    assert memory.stats()["peak_bytes_in_use"] == 6000


def test_empty_cache_drops_only_free_blocks():
    keep = memory.alloc(2048)
    for n in (100, 3000, 70000):
        memory.release(memory.alloc(n))
    s = memory.stats()
    assert s["bytes_cached"] == 512 + 3072 + 70144 and s["bytes_reserved"] == 2048 + s["bytes_cached"]
    memory.empty_cache()
    s = memory.stats()
    assert s["bytes_cached"] == 0 and s["cached_blocks"] == 0 and s["bytes_reserved"] == 2048
    again = memory.alloc(100)
    assert memory.stats()["cache_misses"] == 5  # the cached 512-byte block is gone
    memory.release(again)
    memory.release(keep)


def test_large_sizes_use_coarse_classes():
    block = memory.alloc((1 << 20) + 1)
    assert block.size == (1 << 20) + (1 << 17) and block.data.size == block.size
    memory.release(block)
    assert memory.alloc((1 << 20) + (1 << 17)) is block


def test_zero_bytes_gets_a_minimal_block():
    block = memory.alloc(0)
    assert block.nbytes == 0 and block.size == 512
    memory.release(block)


def test_double_release_is_refused():
    block = memory.alloc(64)
    memory.release(block)
    with pytest.raises(MemoryManagerError, match="released twice"):
        memory.release(block)
    assert memory.stats()["cached_blocks"] == 1  # not queued twice


def test_release_to_wrong_manager_is_refused():
    other = PooledManager(mx.cpu())
    block = other.alloc(64)
    with pytest.raises(MemoryManagerError, match="not allocated by this"):
        memory.get_manager().release(block)
    memory.release(block)  # goes to `other`, its owner
    assert other.stats()["num_frees"] == 1


def test_limit_bytes_triggers_release_and_retry():
    mgr = memory.set_manager("pooled", mx.cpu(), limit_bytes=4096)
    cached = [memory.alloc(1024) for _ in range(3)]
    for block in cached:
        memory.release(block)  # 3072 bytes cached, limit 4096
    big = memory.alloc(2048)   # needs the cache dropped first
    s = mgr.stats()
    assert s["oom_retries"] == 1 and s["bytes_cached"] == 0 and s["bytes_reserved"] == 2048
    with pytest.raises(OutOfMemoryError, match="cannot allocate 3072 bytes"):
        memory.alloc(3000)
    assert mgr.stats()["bytes_reserved"] == 2048 and mgr.stats()["bytes_in_use"] == 2048
    memory.release(big)


def test_system_allocation_failure_retries_after_emptying_cache():
    calls = []

    def flaky_system(size):
        calls.append(size)
        if len(calls) == 3:  # the device is "full" once; freeing the cache makes room
            raise MemoryError("device full")
        return np.empty(size, np.uint8)

    mgr = PooledManager(mx.cpu(), raw_alloc=flaky_system)
    mgr.release(mgr.alloc(512))
    mgr.release(mgr.alloc(1024))
    block = mgr.alloc(4096)
    assert calls == [512, 1024, 4096, 4096]
    s = mgr.stats()
    assert s["oom_retries"] == 1 and s["cached_blocks"] == 0 and block.size == 4096


def test_persistent_failure_raises_out_of_memory():
    def full(size):
        raise MemoryError("device full")

    mgr = PooledManager(mx.cpu(), raw_alloc=full)
    with pytest.raises(OutOfMemoryError, match="cannot allocate 512 bytes on cpu"):
        mgr.alloc(10)
    assert isinstance(OutOfMemoryError("x"), MemoryError)
    s = mgr.stats()
    assert s["num_allocs"] == 0 and s["bytes_reserved"] == 0 and s["bytes_in_use"] == 0
