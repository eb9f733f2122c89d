"""Cost of one alloc+release pair through ember.memory (tiny and medium blocks, both managers).

Run: python bench/memory_alloc.py [--n N]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember as mx
from ember import memory


def time_pairs(nbytes: int, n: int, ctx) -> tuple:
    """(wall, cpu) mean seconds per alloc+release of `nbytes` via the module API, best of 5 runs.

    The CPU time of this thread is also reported because the shared dev box is often
    overloaded, which inflates wall time with time spent descheduled.
    """
    alloc, release = memory.alloc, memory.release
    release(alloc(nbytes, ctx))  # warm the cache
    best_wall = best_cpu = float("inf")
    for _ in range(5):
        start, start_cpu = time.perf_counter(), time.thread_time()
        for _ in range(n):
            release(alloc(nbytes, ctx))
        best_wall = min(best_wall, (time.perf_counter() - start) / n)
        best_cpu = min(best_cpu, (time.thread_time() - start_cpu) / n)
    return best_wall, best_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200_000, help="pairs per timing run")
    args = parser.parse_args()
    ctx = mx.cpu()
    start, start_cpu = time.perf_counter(), time.thread_time()
    for _ in range(args.n):
        np.empty(64, np.uint8)
    wall, cpu = (time.perf_counter() - start) / args.n, (time.thread_time() - start_cpu) / args.n
    print(f"reference np.empty(64)                    : {wall * 1e6:7.3f} us wall {cpu * 1e6:7.3f} us cpu")
    for name in ("pooled", "plain"):
        memory.set_manager(name)
        for nbytes in (64, 4096, 4 << 20):
            n = args.n if nbytes < (1 << 20) else max(args.n // 100, 100)
            wall, cpu = time_pairs(nbytes, n, ctx)
            print(f"{name:6s} alloc+release {nbytes:>9d} B          : {wall * 1e6:7.3f} us wall {cpu * 1e6:7.3f} us cpu")
    memory.set_manager("pooled")


if __name__ == "__main__":
    main()
