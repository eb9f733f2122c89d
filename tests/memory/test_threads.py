"""Concurrent allocs and releases from several threads keep blocks exclusive and counters exact."""
import threading

import numpy as np

from ember import memory


def test_many_threads_alloc_and_release():
    threads, per_thread, rounds = 6, 40, 30
    errors = []
    barrier = threading.Barrier(threads)

    def worker(tid):
        try:
            rng = np.random.default_rng(tid)
            barrier.wait()
            for _ in range(rounds):
                blocks = [memory.alloc(int(n)) for n in rng.integers(1, 3000, per_thread)]
                for block in blocks:
                    block.data[:block.nbytes] = tid
                for block in blocks:
                    # another thread writing into a block we own would show up here
                    if not (block.data[:block.nbytes] == tid).all():
                        errors.append(f"block shared between threads (thread {tid})")
                    memory.release(block)
        except Exception as e:  # surfaced below: a failure in a thread must fail the test
            errors.append(repr(e))

    pool = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert errors == []
    s = memory.stats()
    total = threads * per_thread * rounds
    assert s["num_allocs"] == s["num_frees"] == total
    assert s["cache_hits"] + s["cache_misses"] == total
    assert s["bytes_in_use"] == 0 and s["live_blocks"] == 0
    assert s["bytes_reserved"] == s["bytes_cached"]


def test_releases_from_other_threads():
    # the engine's worker threads release blocks that the main thread allocated
    blocks = [memory.alloc(1000) for _ in range(200)]
    halves = [blocks[:100], blocks[100:]]
    workers = [threading.Thread(target=lambda part=part: [memory.release(b) for b in part]) for part in halves]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    s = memory.stats()
    assert s["num_frees"] == 200 and s["cached_blocks"] == 200 and s["bytes_in_use"] == 0
