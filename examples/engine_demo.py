"""Engine demo: a DAG of numpy work run serially and on ember's engine, with the speed-up and a trace.

The DAG is a small "multi-branch" pipeline: 4 independent branches of matrix work that meet in a
reduction, repeated for several rounds, with each round depending on the previous one.  BLAS is kept
to one thread per call so the parallelism shown is the engine's (its CPU workers run branches at once).

    python examples/engine_demo.py [--trace engine_demo_trace.json]
"""
import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import ember  # noqa: E402
import ember.engine as engine  # noqa: E402


def build(rounds, branches, n, rng):
    state = {"x": rng.random((n, n), dtype=np.float32) / n}
    weights = [rng.random((n, n), dtype=np.float32) / n for _ in range(branches)]
    return state, weights


def branch_step(x, w):
    return np.tanh(x @ w) @ w.T


def run_serial(state, weights, rounds):
    x = state["x"]
    for _ in range(rounds):
        parts = [branch_step(x, w) for w in weights]
        x = sum(parts) / len(parts)
    return x


def run_engine(state, weights, rounds):
    xs = {"x": state["x"]}
    x_var = engine.Var("x")
    parts = [None] * len(weights)
    part_vars = [engine.Var(f"branch{i}") for i in range(len(weights))]
    for r in range(rounds):
        for i, w in enumerate(weights):
            def step(i=i, w=w):
                parts[i] = branch_step(xs["x"], w)
            engine.push(step, read=[x_var], write=[part_vars[i]], name=f"branch{i}")

        def reduce():
            xs["x"] = sum(parts) / len(parts)
        engine.push(reduce, read=part_vars, write=[x_var], name="reduce")
    x_var.wait()
    return xs["x"]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--branches", type=int, default=4)
    p.add_argument("--size", type=int, default=384)
    p.add_argument("--trace", default="engine_demo_trace.json")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    state, weights = build(args.rounds, args.branches, args.size, rng)
    run_serial(state, weights, 1), run_engine(state, weights, 1)  # warm up

    t0 = time.perf_counter()
    ref = run_serial(state, weights, args.rounds)
    t_serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = run_engine(state, weights, args.rounds)
    t_engine = time.perf_counter() - t0
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-6)

    ember.profiler.set_config(filename=args.trace)
    ember.profiler.set_state("run")
    run_engine(state, weights, 2)
    ember.profiler.set_state("stop")
    ember.profiler.dump()
    print(f"DAG: {args.rounds} rounds x {args.branches} branches of {args.size}x{args.size} matmuls + reduce")
    print(f"serial numpy : {t_serial * 1e3:8.1f} ms")
    print(f"ember engine : {t_engine * 1e3:8.1f} ms  ({engine.stats()['queues']['cpu']['pushed']} ops on the cpu queue so far)")
    print(f"speed-up     : {t_serial / t_engine:8.2f}x on {os.cpu_count()} cores (results identical to serial)")
    print(f"Chrome trace of two rounds written to {os.path.abspath(args.trace)} (open in chrome://tracing or ui.perfetto.dev)")


if __name__ == "__main__":
    main()
