"""Replay speed of the lab's simulator: a 1,000,000-op synthetic DAG on 64 simulated workers.

Generators: layered (1000 layers x 1000 ops, fan-in 2), fork-join, transformer blocks with
backward, GPipe pipeline.  Prints one JSON line per DAG: ops, edges, generation and replay
seconds, simulated ops per second, makespan vs lower bound, peak bytes.

    python bench/lab_scale.py                  # the 1M-op layered DAG and the smaller kinds
    python bench/lab_scale.py --ops 1000000 --workers 64 --policy critical_path
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from ember.engine import lab  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--policy", default="priority")
    args = ap.parse_args()
    width = 1000
    makers = {
        "layered": lambda: lab.synthetic.layered(max(1, args.ops // width), width, fan_in=2),
        "fork_join": lambda: lab.synthetic.fork_join(max(1, args.ops // 1001), 1000),
        "transformer": lambda: lab.synthetic.transformer(24, heads=16),
        "pipeline": lambda: lab.synthetic.pipeline(8, 64),
    }
    for kind, make in makers.items():
        t0 = time.perf_counter()
        wl = make()
        t1 = time.perf_counter()
        res = lab.simulate(wl, workers=args.workers if kind != "pipeline" else 1, policy=args.policy)
        t2 = time.perf_counter()
        print(json.dumps({"bench": "lab_scale", "dag": kind, "ops": len(wl), "edges": int(len(wl.succ_idx)),
                          "workers": args.workers if kind != "pipeline" else 1, "policy": args.policy,
                          "generate_s": round(t1 - t0, 3), "replay_s": round(t2 - t1, 3),
                          "ops_per_s": round(len(wl) / (t2 - t1)), "makespan_s": res.makespan_s,
                          "lower_bound_s": res.lower_bound_s, "peak_bytes": res.peak_bytes,
                          "loadavg": [round(x, 2) for x in os.getloadavg()]}), flush=True)


if __name__ == "__main__":
    main()
