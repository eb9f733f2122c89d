"""Peak CPU memory of an imperative forward whose kernels run on an engine worker, with and without
the run-ahead bound by bytes (ember.engine.set_run_ahead_bytes).

An op's outputs are allocated when it is pushed; with the BLAS on one thread (OMP_NUM_THREADS=1)
large ops are pushed to a worker instead of run in their caller, and the pushing thread can allocate
every intermediate result of a network before the first kernel ended.  Each bound runs in its own
process (OMP_NUM_THREADS=1), one warm-up forward, then `--reps` timed ones; it reports the peak bytes
in use of the timed ones (ember.memory.stats) and the fastest forward time.

    python3 bench/run_ahead_memory.py [--batch 16] [--bounds 0,268435456] [--reps 3]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def run_one(bound: int, batch: int, reps: int) -> dict:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import ember as mx
    mx.engine.set_run_ahead_bytes(bound)
    net = mx.gluon.model_zoo.vision.resnet50_v1()
    net.initialize()
    x = mx.nd.ones((batch, 3, 224, 224))
    net(x).wait_to_read()
    mx.memory.reset_peak_stats()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        net(x).wait_to_read()
        times.append(time.perf_counter() - start)
    return {"bench": "run_ahead_memory", "bound_bytes": bound, "batch": batch,
            "peak_mb": mx.memory.stats()["peak_bytes_in_use"] / 2 ** 20, "forward_s": min(times)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--bounds", default="0,268435456", help="bytes, comma-separated (0 = no bound)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process: this bound
    args = p.parse_args()
    if args.one is not None:
        print(json.dumps(run_one(args.one, args.batch, args.reps)))
        return
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for bound in (int(b) for b in args.bounds.split(",")):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", str(bound), "--batch",
                              str(args.batch), "--reps", str(args.reps)], env=env, capture_output=True, text=True)
        line = out.stdout.strip() if out.returncode == 0 else \
            json.dumps({"bound_bytes": bound, "error": out.stderr[-400:]})
        print(line, flush=True)


if __name__ == "__main__":
    main()
