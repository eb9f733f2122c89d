"""dist_sync aggregate throughput against raw mpi4py Allreduce on the same buffers.

Run under the launcher (one JSON line from rank 0):
    python -m ember.kvstore.launch -n 2 python bench/kvstore_dist.py [--keys 64 --size 65536 --rounds 20]
Modes, each on the same K float32 buffers of SIZE elements:
    raw               comm.Allreduce(IN_PLACE, buf) per buffer (blocking, the MPI baseline)
    raw_one_buffer    one Allreduce of all K*SIZE floats (what perfect fusion costs in MPI)
    raw_mpi4py_push_pull_semantics   push+pull written on mpi4py by hand: copy the K values into
                      one buffer, Allreduce it, copy the K results out (the copies the API implies)
    fused_<T>         kvstore with EMBER_KVSTORE_FUSION_THRESHOLD=T bytes (T=0: one allreduce per key)
                      push: kv.push(keys, vals) + waitall;  push_pull: push then kv.pull into K outputs
GB/s = K * SIZE * 4 bytes reduced per round / seconds per round (per worker); vs_raw = raw time / time.
Timings are the minimum over --reps repetitions (the machine is shared: minima are the least noisy).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import ember as mx  # noqa: E402
from ember.kvstore import mpienv  # noqa: E402


def timed(fn, rounds, reps):
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(rounds):
            fn()
        times.append((time.perf_counter() - t0) / rounds)
    return min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--keys", type=int, default=64)
    p.add_argument("--size", type=int, default=65536, help="float32 elements per key")
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--thresholds", default="0,1048576,4194304,67108864",
                   help="comma-separated fusion thresholds (bytes) to measure")
    args = p.parse_args()
    K, N = args.keys, args.size
    env = mpienv.get()
    MPI, world = env.MPI, env.world
    rank = world.Get_rank()
    nbytes = K * N * 4
    results = {}

    bufs = [np.full(N, rank + 1.0, dtype=np.float32) for _ in range(K)]

    def raw():
        for b in bufs:
            world.Allreduce(MPI.IN_PLACE, b, op=MPI.SUM)
    world.Barrier()
    results["raw_mpi4py_allreduce"] = timed(raw, args.rounds, args.reps)

    # The same semantics as push+pull written directly on mpi4py: copy the values into one store
    # buffer, allreduce it, copy the result out to the outputs (what the kvstore API implies).
    store = np.empty(K * N, dtype=np.float32)
    outs_np = [np.empty(N, dtype=np.float32) for _ in range(K)]

    def raw_store_semantics():
        for i, b in enumerate(bufs):
            store[i * N:(i + 1) * N] = b
        world.Allreduce(MPI.IN_PLACE, store, op=MPI.SUM)
        for i, o in enumerate(outs_np):
            o[...] = store[i * N:(i + 1) * N]
    world.Barrier()
    results["raw_mpi4py_push_pull_semantics"] = timed(raw_store_semantics, args.rounds, args.reps)

    big = np.ones(K * N, dtype=np.float32)
    world.Barrier()
    results["raw_one_buffer"] = timed(lambda: world.Allreduce(MPI.IN_PLACE, big, op=MPI.SUM), args.rounds, args.reps)

    for threshold in args.thresholds.split(","):
        os.environ["EMBER_KVSTORE_FUSION_THRESHOLD"] = threshold
        kv = mx.kv.create("dist_sync")
        keys = list(range(K))
        kv.init(keys, [mx.nd.zeros((N,)) for _ in keys])
        vals = [mx.nd.array(np.full(N, rank + 1.0, dtype=np.float32)) for _ in keys]
        outs = [mx.nd.zeros((N,)) for _ in keys]

        def push():
            kv.push(keys, vals)
            mx.nd.waitall()

        def push_pull():
            kv.push(keys, vals)
            kv.pull(keys, out=outs)
            mx.nd.waitall()
        kv.barrier()
        results[f"fused_{threshold}_push"] = timed(push, args.rounds, args.reps)
        kv.barrier()
        results[f"fused_{threshold}_push_pull"] = timed(push_pull, args.rounds, args.reps)
        expected = sum(range(1, env.num_workers + 1))
        got = float(outs[-1].asnumpy()[0])
        if got != expected:
            raise SystemExit(f"wrong sum with threshold {threshold}: {got} != {expected}")

    if rank == 0:
        raw_t = results["raw_mpi4py_allreduce"]
        out = {"bench": "kvstore_dist_sync", "workers": env.num_workers, "keys": K, "floats_per_key": N,
               "MB_per_round": round(nbytes / 1e6, 2)}
        for mode, t in results.items():
            out[mode] = {"ms_per_round": round(t * 1e3, 3), "GB_per_s": round(nbytes / t / 1e9, 3),
                         "vs_raw": round(raw_t / t, 3)}
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
