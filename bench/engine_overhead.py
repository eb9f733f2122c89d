"""Push-and-run cost per op of the engine: empty native ops pushed from C and from Python, empty
Python ops run on a worker (a chain, and issue 12's figures: 100k pushed round-robin over 64
variables then wait_all, 100k on one variable) and run inline, next to MXNet 1.9.1's cost per tiny
NDArray op (same run).

    python bench/engine_overhead.py [--n 200000] [--reps 5] [--no-anchor]
"""
import argparse

import ember.engine as engine
from ember.engine._native import lib

from _util import best_of, emit, run_anchor

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--n", type=int, default=200_000)
p.add_argument("--reps", type=int, default=5)
p.add_argument("--no-anchor", action="store_true")
args = p.parse_args()
N = args.n
E = engine.core.native_engine()


def native_from_c(chain, in_caller):
    return min(lib.ember_bench_native(E, N, 64, chain, in_caller) for _ in range(args.reps)) / 1000.0


def python_ops(inline, n, nvars=1):
    """Empty Python ops pushed round-robin over `nvars` variables (1: a chain), then wait_all."""
    vs = [engine.Var() for _ in range(nvars)]
    noop = lambda: None  # noqa: E731

    def run():
        for i in range(n):
            engine.push(noop, write=[vs[i % nvars]], inline=inline)
        engine.wait_all()
    return best_of(run, args.reps) / n * 1e6


def native_from_python(n):
    v = engine.Var()
    fn = lib.ember_noop

    def run():
        for _ in range(n):
            engine.push_native(fn, write=[v])
        engine.wait_all()
    return best_of(run, args.reps) / n * 1e6


results = {
    "native_op_pushed_from_C_on_worker_us": round(native_from_c(0, 0), 4),
    "native_op_claimed_in_C_us": round(native_from_c(0, 1), 4),
    "native_op_chain_pushed_from_C_on_worker_us": round(native_from_c(1, 0), 4),
    "native_op_pushed_from_python_us": round(native_from_python(N // 4), 3),
    "python_op_on_worker_us": round(python_ops(False, N // 4), 3),
    "python_op_100k_over_64_vars_us": round(python_ops(False, 100_000, 64), 3),
    "python_op_100k_chain_us": round(python_ops(False, 100_000, 1), 3),
    "python_op_inline_us": round(python_ops(True, N // 4), 3),
}
if not args.no_anchor:
    mx = run_anchor("dispatch", "mxnet", ["--n", "20000", "--reps", "3"])
    if mx and "results" in mx:
        results["mxnet_tiny_ndarray_op_us"] = mx["results"].get("add_1_us_per_op")
        results["mxnet_tiny_iadd_op_us"] = mx["results"].get("iadd_1_us_per_op")
emit("engine_overhead", n=N, results=results)
