"""Parallel speed-up of 8 independent GIL-free workloads (numpy 512x512 matmuls) pushed to the engine,
against the same 8 matmuls as a dependent chain.  BLAS is pinned to one thread per call (as MXNet's
OMP_NUM_THREADS=1 setting) so the parallelism measured is the engine's, across its CPU workers.
`two_threads_ms` is the machine's own ceiling for it: the 8 matmuls split 4 / 4 by hand over two plain
Python threads, keeping their results as the engine's ops do.  The four workloads are timed in turn within each
repetition (medians), so a process's slow stretch (first touches of the results' memory, a slow core pair on a
shared VM) reaches all of them alike.

    python bench/engine_parallel.py [--reps 7]
"""
import argparse
import os
import statistics
import threading
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import ember.engine as engine  # noqa: E402

from _util import emit  # noqa: E402

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--reps", type=int, default=7)
p.add_argument("--size", type=int, default=512)
args = p.parse_args()
n = args.size
rng = np.random.default_rng(0)
A = rng.random((n, n), dtype=np.float32)
Bs = [rng.random((n, n), dtype=np.float32) / n for _ in range(8)]


def independent():
    outs = [None] * 8
    vs = [engine.Var() for _ in range(8)]
    for i in range(8):
        engine.push(lambda i=i: outs.__setitem__(i, A @ Bs[i]), write=[vs[i]], name="matmul")
    engine.wait_all()


def chain():
    box = [A]
    v = engine.Var()
    for i in range(8):
        engine.push(lambda i=i: box.__setitem__(0, box[0] @ Bs[i]), write=[v], name="matmul")
    engine.wait_all()


def two_threads():
    outs = [None] * 8

    def part(k):
        for i in range(k, 8, 2):
            outs[i] = A @ Bs[i]
    parts = [threading.Thread(target=part, args=(k,)) for k in (0, 1)]
    for t in parts:
        t.start()
    for t in parts:
        t.join()


def serial_numpy():
    for i in range(8):
        A @ Bs[i]


workloads = (independent, chain, serial_numpy, two_threads)
for fn in workloads:
    fn()
times = {fn: [] for fn in workloads}
for _ in range(args.reps):
    for fn in workloads:
        t0 = time.perf_counter()
        fn()
        times[fn].append(time.perf_counter() - t0)
t_ind, t_chain, t_np, t_threads = (statistics.median(times[fn]) for fn in workloads)
flops = 8 * 2 * n ** 3
emit("engine_parallel", results={
    "independent_ms": round(t_ind * 1e3, 2), "chain_ms": round(t_chain * 1e3, 2),
    "serial_numpy_ms": round(t_np * 1e3, 2), "speedup_chain_over_independent": round(t_chain / t_ind, 2),
    "two_threads_ms": round(t_threads * 1e3, 2), "speedup_chain_over_two_threads": round(t_chain / t_threads, 2),
    "independent_gflops": round(flops / t_ind / 1e9, 1), "workers": os.environ.get("EMBER_CPU_WORKER_NTHREADS",
                                                                                  os.cpu_count())})
