"""Local KVStore push+pull GB/s: 100 keys of 256x256 float32, 2 values per key, ember next to
MXNet 1.9.1 (and numpy's equivalent arithmetic) in one run, through the shared anchor script
../shared/anchors/bench/kvstore_local.py.

    python bench/kvstore_local.py [--reps 5] [--kv-type local|device]
"""
from __future__ import annotations

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from _util import emit, run_anchor  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--kv-type", default="local")
    args = p.parse_args()
    anchor_args = ["--reps", str(args.reps), "--kv-type", args.kv_type]
    env = {"PYTHONPATH": os.path.join(HERE, "..")}
    rows = {}
    for impl in ("ember", "mxnet", "numpy"):
        rec = run_anchor("kvstore_local", impl, anchor_args if impl != "numpy" else ["--reps", str(args.reps)],
                         env=env)
        if rec is None:
            rows[impl] = "unavailable"
        elif "results" not in rec:
            rows[impl] = rec
        else:
            res = rec["results"]
            rows[impl] = {"GB_per_s": res["GB_per_s_aggregated"], "ms_per_round": res["ms_per_round"],
                          "value_ok": res["value_check"] == res["expected"]}
    emit("kvstore_local", kv_type=args.kv_type, **rows)


if __name__ == "__main__":
    main()
