"""Reserved vs requested bytes of the pooled manager under a random large-block workload.

Compares split/merge of large blocks (default) with per-class free lists (split_large=False).
Blocks are never written, so the host commits almost none of the reserved memory.
Run: python bench/memory_fragmentation.py [--steps 4000]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember as mx
from ember.memory import PooledManager

MiB = 1 << 20


def run(split_large: bool, steps: int) -> dict:
    mgr = PooledManager(mx.cpu(), split_large=split_large)
    rng = np.random.default_rng(0)
    live, peak_reserved, peak_in_use = [], 0, 0
    start = time.perf_counter()
    for _ in range(steps):
        if live and (len(live) > 24 or rng.random() < 0.5):
            mgr.release(live.pop(int(rng.integers(len(live)))))
        else:
            live.append(mgr.alloc(int(rng.integers(MiB + 1, 12 * MiB))))
        s = mgr.stats()
        peak_reserved = max(peak_reserved, s["bytes_reserved"])
        peak_in_use = max(peak_in_use, s["bytes_in_use"])
    elapsed = time.perf_counter() - start
    s = mgr.stats()
    return dict(peak_reserved=peak_reserved, peak_in_use=peak_in_use, hits=s["cache_hits"],
                misses=s["cache_misses"], us_per_step=elapsed / steps * 1e6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=4000)
    args = parser.parse_args()
    for split in (True, False):
        r = run(split, args.steps)
        print(f"split_large={split!s:5}: peak reserved {r['peak_reserved'] / MiB:7.0f} MiB for peak in use "
              f"{r['peak_in_use'] / MiB:5.0f} MiB (x{r['peak_reserved'] / r['peak_in_use']:.2f}); "
              f"hits {r['hits']}, system allocs {r['misses']}; {r['us_per_step']:.1f} us/step incl. stats()")


if __name__ == "__main__":
    main()
