"""Samples/s of the demo network (examples/train_digits.py's LeNet, batch 64 per worker) trained
data-parallel through a kvstore.  Run under the launcher:

    python -m ember.kvstore.launch -n 1 python bench/kvstore_train.py [--kv dist_sync --steps 40]
    python -m ember.kvstore.launch -n 2 python bench/kvstore_train.py
    python bench/kvstore_train.py --kv local          (no MPI: the single-process baseline)

Each worker runs forward/backward on its own batch, then Module's update pushes every gradient
and pulls every weight through the store (the SGD update runs on the store).  Rank 0 prints one
JSON line: per-worker and aggregate samples/s (aggregate = all workers' samples / slowest worker's time).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))

import numpy as np  # noqa: E402

import ember as mx  # noqa: E402
from train_digits import lenet  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kv", default="dist_sync")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=40)
    args = p.parse_args()
    kv = mx.kv.create(args.kv)
    B = args.batch_size
    mod = mx.mod.Module(lenet(), context=mx.cpu())
    mod.bind(data_shapes=[("data", (B, 1, 8, 8))], label_shapes=[("softmax_label", (B,))])
    mod.init_params(mx.init.Xavier(magnitude=2.0))
    mod.init_optimizer(kvstore=kv, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    rs = np.random.RandomState(kv.rank)
    batch = mx.io.DataBatch([mx.nd.array(rs.rand(B, 1, 8, 8))], [mx.nd.array(rs.randint(0, 10, B))])
    for _ in range(5):  # warm-up
        mod.forward_backward(batch)
        mod.update()
    mx.nd.waitall()
    kv.barrier()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(args.steps):
        mod.forward_backward(batch)
        mod.update()
    mx.nd.waitall()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    mine = np.array([wall, cpu], dtype=np.float64)
    if "dist" in kv.type:
        from ember.kvstore import mpienv
        every = np.empty((kv.num_workers, 2))
        mpienv.get().worker_comm().Allgather(mine, every)
    else:
        every = mine[None]
    if kv.rank == 0:
        slowest = every[:, 0].max()
        print(json.dumps({
            "bench": "kvstore_train", "kv": kv.type, "workers": kv.num_workers, "batch_per_worker": B,
            "steps": args.steps, "samples_per_s_per_worker": [round(args.steps * B / w, 1) for w in every[:, 0]],
            "samples_per_s_aggregate": round(kv.num_workers * args.steps * B / slowest, 1),
            "cpu_s_per_wall_s": [round(c / w, 2) for w, c in every]}), flush=True)


if __name__ == "__main__":
    main()
