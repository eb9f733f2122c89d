"""Throughput of the .params writer and reader (ember.imperative.serialization) on numpy arrays.

Run: python bench/memory_params.py [--mib 64] [--arrays 32]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from ember.imperative import serialization


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=64, help="total MiB of float32 values")
    parser.add_argument("--arrays", type=int, default=32, help="number of arrays in the file")
    args = parser.parse_args()
    per_array = args.mib * (1 << 20) // 4 // args.arrays
    rng = np.random.default_rng(0)
    data = {f"arg:layer{i}_weight": rng.standard_normal(per_array, dtype=np.float32) for i in range(args.arrays)}
    total = sum(a.nbytes for a in data.values())
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.params")
        start = time.perf_counter()
        serialization.save_numpy(path, data)
        t_save = time.perf_counter() - start
        start = time.perf_counter()
        back = serialization.load_numpy(path)
        t_load = time.perf_counter() - start
        start = time.perf_counter()
        serialization.loads(serialization.dumps(data))
        t_mem = time.perf_counter() - start
    assert all(np.array_equal(back[k], v) for k, v in data.items())
    mib = total / (1 << 20)
    print(f"{args.arrays} arrays, {mib:.0f} MiB float32")
    print(f"save_numpy (file)   : {t_save:6.3f} s  {mib / t_save:8.0f} MiB/s")
    print(f"load_numpy (file)   : {t_load:6.3f} s  {mib / t_load:8.0f} MiB/s")
    print(f"dumps+loads (memory): {t_mem:6.3f} s  {mib / t_mem:8.0f} MiB/s")


if __name__ == "__main__":
    main()
