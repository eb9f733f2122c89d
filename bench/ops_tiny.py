"""Per-call overhead of tensor-op kernels on tiny arrays (the registry kernel alone, no engine).

    python bench/ops_tiny.py [--number N] [--size S]

Prints one JSON line per op: nanoseconds per kernel call on float32 arrays of S elements
(default 1), the bare numpy call doing the same work, and the difference (kernel overhead).
Best of 5 repeats of N calls, because the machine is shared.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import timeit

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from ember import ops  # noqa: E402
from ember.ops import OpContext  # noqa: E402

# op, attrs, number of inputs, the bare numpy equivalent (a, b, o)
CASES = [
    ("broadcast_add", {}, 2, lambda a, b, o: np.add(a, b, out=o)),
    ("elemwise_add", {}, 2, lambda a, b, o: np.add(a, b, out=o)),
    ("broadcast_mul", {}, 2, lambda a, b, o: np.multiply(a, b, out=o)),
    ("broadcast_greater", {}, 2, lambda a, b, o: np.greater(a, b, out=o)),
    ("_plus_scalar", {"scalar": 1.5}, 1, lambda a, b, o: np.add(a, 1.5, out=o)),
    ("_mul_scalar", {"scalar": 1.5}, 1, lambda a, b, o: np.multiply(a, 1.5, out=o)),
    ("negative", {}, 1, lambda a, b, o: np.negative(a, out=o)),
    ("exp", {}, 1, lambda a, b, o: np.exp(a, out=o)),
    ("relu", {}, 1, lambda a, b, o: np.maximum(a, 0, out=o)),
    ("sum", {}, 1, lambda a, b, o: o.__setitem__(Ellipsis, a.sum())),
    ("Reshape", {"shape": (-1,)}, 1, lambda a, b, o: o.__setitem__(Ellipsis, a.reshape(-1))),
    ("sgd_update", {"lr": 0.1}, 2, lambda a, b, o: o.__setitem__(Ellipsis, a - 0.1 * b)),
]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--number", type=int, default=20000)
    p.add_argument("--size", type=int, default=1)
    args = p.parse_args()
    ctx = OpContext(np)
    a = np.full(args.size, 0.5, np.float32)
    b = np.full(args.size, 2.0, np.float32)
    for name, attrs, n_in, bare in CASES:
        op = ops.get(name)
        parsed = op.parse_attrs(attrs)
        _, out_shapes, _ = op.shapes(parsed, [a.shape] * n_in)
        o = np.empty(out_shapes[0], np.float32)
        kernel = op.kernel("cpu")
        ins = [a, b][:n_in]
        t_op = min(timeit.repeat(lambda: kernel(ctx, parsed, ins, [o], []), number=args.number, repeat=5))
        t_np = min(timeit.repeat(lambda: bare(a, b, o), number=args.number, repeat=5))
        ns_op, ns_np = t_op / args.number * 1e9, t_np / args.number * 1e9
        print(json.dumps({"bench": "ops_tiny", "op": name, "size": args.size, "kernel_ns": round(ns_op),
                          "numpy_ns": round(ns_np), "overhead_ns": round(ns_op - ns_np)}))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
