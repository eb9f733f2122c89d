"""How much dist_sync communication hides behind computation (pushes are engine ops).

    python -m ember.kvstore.launch -n 2 python bench/kvstore_overlap.py [--layers 8 --n 512 --reps 5]

A fake backward pass: L layers, each producing an N x N float32 gradient with a chain of `--work`
matrix products (engine ops on mx.nd.dot), last layer first.  Timed per step (median over reps, modes interleaved):
    compute_only   the L gradient computations, no communication
    comm_only      push+pull of L ready gradients, no computation
    serial         compute everything, wait, then push+pull everything
    overlapped     push each gradient right after issuing its computation (priority -layer), as
                   Module does: its allreduce runs while later layers still compute
overlap = (serial - overlapped) / min(compute_only, comm_only): 1.0 means communication fully
hidden.  --compute matmul burns CPU (with 2 ranks on 2 cores, compute and MPI compete for the same
cores, which bounds the overlap); --compute sleep stands for a device computing while the CPU is
free (each layer's engine op sleeps --sleep-ms, then writes its gradient), which isolates what the
engine and the store can overlap.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import ember as mx  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--work", type=int, default=2, help="matrix products per layer gradient")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--compute", choices=("matmul", "sleep"), default="matmul")
    p.add_argument("--sleep-ms", type=float, default=5.0)
    args = p.parse_args()
    os.environ.setdefault("EMBER_KVSTORE_FUSION_THRESHOLD", "0")  # one allreduce per layer, as pushed
    kv = mx.kv.create("dist_sync")
    L, N = args.layers, args.n
    rs = np.random.RandomState(kv.rank)
    xs = [mx.nd.array(rs.rand(N, N).astype(np.float32) / N) for _ in range(L)]
    grads = [mx.nd.zeros((N, N)) for _ in range(L)]
    outs = [mx.nd.zeros((N, N)) for _ in range(L)]
    kv.init(list(range(L)), [mx.nd.zeros((N, N)) for _ in range(L)])

    def compute(layer):
        if args.compute == "sleep":
            def fake_device_kernel(g=grads[layer]):
                time.sleep(args.sleep_ms / 1e3)
                g._data[...] = 1.0
            mx.engine.push(fake_device_kernel, write=[grads[layer].var], name=f"layer{layer}_backward")
            return
        g = xs[layer]
        for _ in range(args.work):
            g = mx.nd.dot(g, xs[layer])
        g.copyto(grads[layer])

    def compute_only():
        for layer in reversed(range(L)):
            compute(layer)

    def comm_only():
        for layer in reversed(range(L)):
            kv.push(layer, grads[layer], priority=-layer)
        for layer in range(L):
            kv.pull(layer, out=outs[layer], priority=-layer)

    def serial():
        compute_only()
        mx.nd.waitall()
        comm_only()

    def overlapped():
        for layer in reversed(range(L)):
            compute(layer)
            kv.push(layer, grads[layer], priority=-layer)
        for layer in range(L):
            kv.pull(layer, out=outs[layer], priority=-layer)

    modes = (("compute_only", compute_only), ("comm_only", comm_only), ("serial", serial),
             ("overlapped", overlapped))
    for _, fn in modes:  # warm-up
        fn()
        mx.nd.waitall()
    samples = {name: [] for name, _ in modes}
    for _ in range(args.reps):  # modes interleaved, so load changes hit all of them alike
        for name, fn in modes:
            kv.barrier()
            t0 = time.perf_counter()
            fn()
            mx.nd.waitall()
            samples[name].append(time.perf_counter() - t0)
    timings = {name: float(np.median(v)) for name, v in samples.items()}
    hidden = (timings["serial"] - timings["overlapped"]) / min(timings["compute_only"], timings["comm_only"])
    if kv.rank == 0:
        print(json.dumps({"bench": "kvstore_overlap", "compute": args.compute, "workers": kv.num_workers, "layers": L,
                          "grad_MB": round(N * N * 4 / 1e6, 2),
                          **{f"{k}_ms": round(v * 1e3, 2) for k, v in timings.items()},
                          "overlap": round(hidden, 2)}), flush=True)


if __name__ == "__main__":
    main()
