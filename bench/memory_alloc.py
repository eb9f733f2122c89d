"""Cost of one alloc+release pair through ember.memory (tiny and medium blocks, both managers).

Run: python bench/memory_alloc.py [--n N]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember as mx
from ember import memory


def time_pairs(nbytes: int, n: int, ctx) -> float:
    """Mean seconds per alloc+release of `nbytes` through the module-level API (best of 5 runs)."""
    alloc, release = memory.alloc, memory.release
    release(alloc(nbytes, ctx))  # warm the cache
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            release(alloc(nbytes, ctx))
        best = min(best, (time.perf_counter() - start) / n)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=200_000, help="pairs per timing run")
    args = parser.parse_args()
    ctx = mx.cpu()
    start = time.perf_counter()
    for _ in range(args.n):
        np.empty(64, np.uint8)
    print(f"reference np.empty(64)                    : {(time.perf_counter() - start) / args.n * 1e6:7.3f} us")
    for name in ("pooled", "plain"):
        memory.set_manager(name)
        for nbytes in (64, 4096, 4 << 20):
            n = args.n if nbytes < (1 << 20) else max(args.n // 100, 100)
            t = time_pairs(nbytes, n, ctx)
            print(f"{name:6s} alloc+release {nbytes:>9d} B          : {t * 1e6:7.3f} us")
    memory.set_manager("pooled")


if __name__ == "__main__":
    main()
