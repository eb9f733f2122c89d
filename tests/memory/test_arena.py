"""Split/merge of large blocks inside the pooled manager (ember/memory/arena.py)."""
import threading

import numpy as np
import pytest

import ember as mx
from ember.memory import OutOfMemoryError, PooledManager, size_class
from ember.memory.arena import SEGMENT_BYTES

MiB = 1 << 20


def address(block):
    return block.data.__array_interface__["data"][0]


@pytest.fixture
def mgr():
    return PooledManager(mx.cpu())


def test_mid_size_blocks_share_a_segment(mgr):
    a = mgr.alloc(2 * MiB)
    s = mgr.stats()
    assert s["segments"] == 1 and s["bytes_reserved"] == SEGMENT_BYTES
    assert s["bytes_cached"] == SEGMENT_BYTES - 2 * MiB and s["cached_blocks"] == 1
    b = mgr.alloc(3 * MiB)
    assert mgr.stats()["cache_hits"] == 1 and mgr.stats()["segments"] == 1
    assert address(b) == address(a) + 2 * MiB  # carved right after `a`
    assert a.data.size == 2 * MiB and b.data.size == 3 * MiB
    a.data[-1], b.data[0] = 1, 2
    assert a.data[-1] == 1 and b.data[0] == 2


def test_released_neighbours_merge_and_serve_a_larger_request(mgr):
    blocks = [mgr.alloc(2 * MiB) for _ in range(4)]
    start = address(blocks[1])
    mgr.release(blocks[1])
    mgr.release(blocks[2])  # merges with blocks[1]'s free space
    s = mgr.stats()
    assert s["cached_blocks"] == 2 and s["bytes_cached"] == SEGMENT_BYTES - 4 * MiB
    four = mgr.alloc(4 * MiB)
    assert address(four) == start and four.size == 4 * MiB
    assert mgr.stats()["segments"] == 1 and mgr.stats()["cache_misses"] == 1


def test_fully_free_segments_are_dropped_by_empty_cache(mgr):
    first = [mgr.alloc(3 * MiB) for _ in range(3)]
    big = mgr.alloc(10 * MiB)  # above half a segment: a segment of its own
    assert mgr.stats()["segments"] == 2 and big.size == 10 * MiB
    for block in reversed(first):
        mgr.release(block)
    mgr.empty_cache()  # the shared segment is entirely free again: given back
    s = mgr.stats()
    assert s["segments"] == 1 and s["bytes_reserved"] == 10 * MiB and s["bytes_cached"] == 0
    mgr.release(big)
    mgr.empty_cache()
    assert mgr.stats()["bytes_reserved"] == 0 and mgr.stats()["segments"] == 0


def test_partly_used_segment_survives_empty_cache(mgr):
    keep = mgr.alloc(2 * MiB)
    mgr.release(mgr.alloc(2 * MiB))
    mgr.empty_cache()
    s = mgr.stats()
    assert s["segments"] == 1 and s["bytes_reserved"] == SEGMENT_BYTES
    mgr.release(keep)


def test_small_remainder_stays_in_the_block(mgr):
    a = mgr.alloc(size_class(3 * MiB // 2))   # 1.5 MiB
    b = mgr.alloc(14 * MiB)                   # 14.5 MiB remain: 0.5 MiB is too little to split off
    assert b.size == SEGMENT_BYTES - a.size and mgr.stats()["cached_blocks"] == 0
    assert mgr.stats()["internal_fragmentation_bytes"] == b.size - 14 * MiB


def test_limit_flushes_free_segments_before_failing():
    mgr = PooledManager(mx.cpu(), limit_bytes=20 * MiB)
    mgr.release(mgr.alloc(2 * MiB))   # one free 16 MiB segment cached
    big = mgr.alloc(18 * MiB)         # needs the cached segment given back first
    s = mgr.stats()
    assert s["oom_retries"] == 1 and s["segments"] == 1 and s["bytes_reserved"] == 18 * MiB
    with pytest.raises(OutOfMemoryError):
        mgr.alloc(4 * MiB)
    mgr.release(big)
    assert mgr.alloc(4 * MiB).size == 4 * MiB  # carved from the freed 18 MiB segment


def test_mid_size_request_falls_back_to_exact_size_under_a_limit():
    mgr = PooledManager(mx.cpu(), limit_bytes=6 * MiB)
    block = mgr.alloc(5 * MiB)  # a 16 MiB segment would exceed the limit: exact size instead
    assert block.size == 5 * MiB and mgr.stats()["bytes_reserved"] == 5 * MiB
    assert mgr.stats()["oom_retries"] == 0


def test_split_large_off_uses_class_free_lists():
    mgr = PooledManager(mx.cpu(), split_large=False)
    a = mgr.alloc(2 * MiB)
    assert mgr.stats()["segments"] == 0 and mgr.stats()["bytes_reserved"] == 2 * MiB
    mgr.release(a)
    assert mgr.alloc(2 * MiB) is a


def test_random_sequence_keeps_blocks_disjoint_and_stats_exact(mgr):
    rng = np.random.default_rng(7)
    live = []
    for _ in range(400):
        if live and rng.random() < 0.5:
            mgr.release(live.pop(int(rng.integers(len(live)))))
        else:
            live.append(mgr.alloc(int(rng.integers(MiB + 1, 12 * MiB))))
        spans = sorted((address(b), address(b) + b.size) for b in live)
        assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:])), "live blocks overlap"
        s = mgr.stats()
        assert s["bytes_in_use"] == sum(b.nbytes for b in live)
        assert s["internal_fragmentation_bytes"] == sum(b.size - b.nbytes for b in live)
        assert s["bytes_reserved"] == s["bytes_cached"] + sum(b.size for b in live)
    for block in live:
        mgr.release(block)
    mgr.empty_cache()
    assert mgr.stats()["bytes_reserved"] == 0 and mgr.stats()["segments"] == 0


def test_threads_splitting_and_merging():
    mgr = PooledManager(mx.cpu())
    errors = []

    def worker(tid):
        rng = np.random.default_rng(tid)
        try:
            for _ in range(40):
                blocks = [mgr.alloc(int(n)) for n in rng.integers(MiB + 1, 6 * MiB, 3)]
                for b in blocks:
                    b.data[0] = b.data[b.nbytes - 1] = tid
                for b in blocks:
                    if b.data[0] != tid or b.data[b.nbytes - 1] != tid:
                        errors.append(f"thread {tid}: block overwritten by another thread")
                    mgr.release(b)
        except Exception as e:  # reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    s = mgr.stats()
    assert s["num_allocs"] == s["num_frees"] == 4 * 40 * 3 and s["bytes_in_use"] == 0
    assert s["bytes_reserved"] == s["bytes_cached"]
