"""Planning time for large graphs: every executor pass on a 10,000- and 100,000-node graph.

The graph is a random residual-style DAG of elementwise operators (each node reads the
previous node and sometimes one of the last 50), with a few width changes so tensor sizes
differ.  Timed: each pass of ember.symbolic.PASSES on a fresh GraphState (symbol
construction is not timed), wall and CPU time (the CPU time is the figure to trust on a
shared machine).  Goal: under 1 s at 10,000 nodes.

    python bench/plan_time.py                   # 10k and 100k, inference and training
    python bench/plan_time.py --nodes 10000 --mode infer
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ember as mx  # noqa: E402
from ember.symbolic.passes import PASSES, GraphState, compile_graph, mirror_enabled  # noqa: E402


def build(n_nodes: int, seed: int = 0):
    r = np.random.RandomState(seed)
    x = mx.sym.var("x")
    recent = [x]
    h = x
    ops = ("tanh", "sigmoid", "relu", "exp")
    for i in range(n_nodes):
        k = r.randint(10)
        if k < 3 and len(recent) > 1:
            other = recent[-1 - r.randint(min(50, len(recent) - 1))]
            h = h + other
        elif k < 5:
            h = h * 0.5
        else:
            h = getattr(mx.sym, ops[r.randint(len(ops))])(h)
        recent.append(h)
    return mx.sym.MakeLoss(mx.sym.sum(h)), {"x": (64, 256)}


def time_passes(sym, shapes, train: bool):
    names = sym.list_arguments()
    g = GraphState(heads=list(sym._outputs), grad_req={n: ("write" if train else "null") for n in names},
                   known_shapes=shapes, known_dtypes={}, mirror=mirror_enabled())
    per = {}

    def timed(p):
        def run(state):
            t, c = time.perf_counter(), time.process_time()
            state = p(state)
            per[p.__name__] = {"wall": round(time.perf_counter() - t, 3), "cpu": round(time.process_time() - c, 3)}
            return state
        return run
    c0 = time.process_time()
    t0 = time.perf_counter()
    # through compile_graph, as executors do (it pauses the cyclic GC around the passes)
    g = compile_graph(g, [timed(p) for p in PASSES])
    total = time.perf_counter() - t0
    per["cpu_s_total"] = round(time.process_time() - c0, 3)
    return total, per, g


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, nargs="*", default=[10000, 100000])
    ap.add_argument("--mode", choices=("infer", "train", "both"), default="both")
    ap.add_argument("--reps", type=int, default=3, help="binds per case, each on a freshly built symbol")
    args = ap.parse_args()
    modes = ("infer", "train") if args.mode == "both" else (args.mode,)
    for n in args.nodes:
        for mode in modes:
            runs = []
            for _ in range(args.reps):
                sym, shapes = build(n)  # fresh nodes: nothing parsed or cached from an earlier run
                total, per, g = time_passes(sym, shapes, mode == "train")
                runs.append((per["cpu_s_total"], total, per))
                del sym
            cpu = sorted(r[0] for r in runs)
            wall = sorted(r[1] for r in runs)
            per = min(runs, key=lambda r: r[0])[2]
            p = g.plan
            print(json.dumps({"ops_built": n, "graph_nodes": len(g.nodes), "mode": mode, "reps": args.reps,
                              "cpu_s_median": cpu[len(cpu) // 2], "cpu_s_min": cpu[0],
                              "wall_s_median": round(wall[len(wall) // 2], 3), "wall_s_min": round(wall[0], 3),
                              "per_pass_s_of_min": per, "planned_MB": round(p.total_bytes / 2 ** 20, 2),
                              "lower_bound_MB": round(p.lower_bound / 2 ** 20, 2),
                              "naive_MB": round(p.naive_bytes / 2 ** 20, 2), "algorithm": p.placement.algorithm}),
                  flush=True)


if __name__ == "__main__":
    main()
