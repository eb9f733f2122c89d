"""Where the time of one engine push goes, layer by layer (µs per op, medians).

    python bench/engine_breakdown.py [--n 200000]

- c_push_inline:        ember_claim + run + ember_complete of an empty native op, all in C (the engine alone)
- cffi_call:            one trivial call through cffi (GIL released and re-taken around it)
- raw_cffi_push:        one ember_push call from Python with a prebuilt var array (native op, to a worker)
- python_push_inline:   engine.push of an empty Python op that runs inline (Python wrapper + 2 C calls)
- python_push_worker:   the same op run on a worker thread: adds the GIL hand-over pusher -> worker -> pusher
"""
import argparse
import statistics
import timeit

import ember.engine as engine
from ember.engine import core
from ember.engine._native import ffi, lib

from _util import emit

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--n", type=int, default=200_000)
p.add_argument("--reps", type=int, default=5)
args = p.parse_args()
n = args.n
E = core.native_engine()
v = engine.Var()
arr = ffi.new("ember_var*[1]")
arr[0] = v._h
attrs = core.op_attrs(0, 0, 0, 0, "noop")
noop_c = lib.ember_noop


def per_op(stmt):
    times = timeit.repeat(stmt, number=n, repeat=args.reps, globals=globals())
    return round(statistics.median(times) / n * 1e6, 3)


def noop():
    return None


def py_inline():
    for _ in range(n // 10):
        engine.push(noop, write=[v], inline=True)
    engine.wait_all()


def py_worker():
    for _ in range(n // 10):
        engine.push(noop, write=[v])
    engine.wait_all()


res = {
    "c_push_inline": round(min(lib.ember_bench_native(E, n, 16, 0, 1) for _ in range(args.reps)) / 1000, 3),
    "cffi_call": per_op("lib.ember_now_ns()"),
    "raw_cffi_push": per_op("lib.ember_push(E, noop_c, ffi.NULL, arr, 0, 1, attrs)"),
    "python_push_inline": round(statistics.median(timeit.repeat(py_inline, number=1, repeat=args.reps)) / (n // 10) * 1e6, 3),
    "python_push_worker": round(statistics.median(timeit.repeat(py_worker, number=1, repeat=args.reps)) / (n // 10) * 1e6, 3),
}
res["gil_handover_cost"] = round(res["python_push_worker"] - res["python_push_inline"], 3)
res["python_layer_cost"] = round(res["python_push_inline"] - 2 * res["raw_cffi_push"], 3)
emit("engine_breakdown", n=n, results=res)
