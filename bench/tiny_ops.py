"""Tiny-op cost (µs/op): `c = a + b`, `a += b` and a 20-op element-wise chain on (1,) and (16,16)
float32, for ember, MXNet 1.9.1, PyTorch and NumPy, interleaved in one run.

    python bench/tiny_ops.py --all [--rounds 3]       # driver: every implementation, one JSON line each + table
    python bench/tiny_ops.py --impl ember|mxnet|torch|numpy [--n 20000]   # one implementation
    python bench/tiny_ops.py --breakdown      # where ember's `c = a + b` time goes (16x16 float32)

The chain is y = ((((x*1.01 + 0.5) - 0.2) / 1.3) ...) with 20 element-wise ops (scalar and array
forms mixed), each a separate framework call.  Timings include the final sync (waitall).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from _util import MXNET_PY, TORCH_PY  # noqa: E402

SHAPES = [(1,), (16, 16)]


def chain(x, y):
    for _ in range(2):
        x = x * 1.01
        x = x + 0.5
        x = x - y
        x = x / 1.3
        x = x * y
        x = x + y
        x = x - 0.1
        x = x * 0.9
        x = x + 1.0
        x = x / y
    return x


def make(impl):
    if impl in ("ember", "mxnet"):
        mx = __import__("ember" if impl == "ember" else "mxnet")
        return (lambda s: (mx.nd.ones(s, dtype="float32"), mx.nd.ones(s, dtype="float32"))), mx.nd.waitall, \
            getattr(mx, "__version__", "?")
    if impl == "torch":
        import torch
        return (lambda s: (torch.ones(s, dtype=torch.float32), torch.ones(s, dtype=torch.float32))), \
            (lambda: None), torch.__version__
    import numpy as np
    return (lambda s: (np.ones(s, np.float32), np.ones(s, np.float32))), (lambda: None), np.__version__


def other_ops(impl):
    """A few more tiny calls beyond the arithmetic operators: {name: fn(a, b)} in each framework."""
    if impl in ("ember", "mxnet"):
        mx = __import__("ember" if impl == "ember" else "mxnet")
        return {"exp": lambda a, b: mx.nd.exp(a), "sum_axis": lambda a, b: mx.nd.sum(a, axis=-1),
                "relu": lambda a, b: mx.nd.relu(a), "dot": lambda a, b: mx.nd.dot(a, b)}
    if impl == "torch":
        import torch
        return {"exp": lambda a, b: torch.exp(a), "sum_axis": lambda a, b: a.sum(-1),
                "relu": lambda a, b: torch.relu(a), "dot": lambda a, b: a @ b if a.dim() > 1 else a.dot(b)}
    import numpy as np
    return {"exp": lambda a, b: np.exp(a), "sum_axis": lambda a, b: a.sum(-1),
            "relu": lambda a, b: np.maximum(a, 0), "dot": lambda a, b: np.dot(a, b)}


def measure(impl, n, reps):
    mk, sync, version = make(impl)
    res = {}
    for name, fn in other_ops(impl).items():  # (16,16) only, n // 4 calls: a secondary figure
        tag, m, times = "16x16", max(1, n // 4), []
        a, b = mk((16, 16))
        fn(a, b)
        sync()
        for _ in range(reps):
            t = time.perf_counter()
            for _ in range(m):
                fn(a, b)
            sync()
            times.append((time.perf_counter() - t) / m)
        res[f"{name}_{tag}_us_per_op"] = round(statistics.median(times) * 1e6, 3)
    for s in SHAPES:
        tag = "x".join(map(str, s))
        samples = {"add": [], "iadd": [], "chain20": []}
        for r in range(reps + 1):
            a, b = mk(s)
            sync()
            t = time.perf_counter()
            for _ in range(n):
                c = a + b  # noqa: F841
            sync()
            t_add = (time.perf_counter() - t) / n
            t = time.perf_counter()
            for _ in range(n):
                a += b
            sync()
            t_iadd = (time.perf_counter() - t) / n
            a, b = mk(s)
            t = time.perf_counter()
            for _ in range(n // 20):
                chain(a, b)
            sync()
            t_chain = (time.perf_counter() - t) / (n // 20 * 20)
            if r:  # the first round warms up
                samples["add"].append(t_add)
                samples["iadd"].append(t_iadd)
                samples["chain20"].append(t_chain)
        for k, v in samples.items():
            res[f"{k}_{tag}_us_per_op"] = round(statistics.median(v) * 1e6, 3)
    return {"bench": "tiny_ops", "impl": impl, "version": version, "n": n, "results": res}


def driver(rounds, n, reps):
    pythons = {"ember": sys.executable, "mxnet": MXNET_PY, "torch": TORCH_PY, "numpy": sys.executable}
    runs = {}
    for _ in range(rounds):
        for impl, py in pythons.items():
            if not os.path.exists(py):
                print(json.dumps({"skipped": impl, "why": f"no interpreter {py}"}))
                continue
            env = dict(os.environ, OMP_NUM_THREADS="1")
            r = subprocess.run([py, os.path.join(HERE, "tiny_ops.py"), "--impl", impl, "--n", str(n),
                                "--reps", str(reps)], capture_output=True, text=True, timeout=600, env=env)
            line = [x for x in r.stdout.splitlines() if x.startswith("{")]
            if not line:
                print(json.dumps({"failed": impl, "stderr": r.stderr[-1500:]}))
                continue
            print(line[-1])
            runs.setdefault(impl, []).append(json.loads(line[-1])["results"])
    keys = sorted(next(iter(runs.values()))[0]) if runs else []
    print(f"\n{'µs/op (median of rounds)':<28}" + "".join(f"{i:>10}" for i in runs) + f"{'ember/mxnet':>13}")
    for k in keys:
        med = {i: statistics.median(r[k] for r in rs) for i, rs in runs.items()}
        ratio = med["ember"] / med["mxnet"] if "ember" in med and "mxnet" in med else float("nan")
        print(f"{k.replace('_us_per_op', ''):<28}" + "".join(f"{med[i]:>10.2f}" for i in runs) + f"{ratio:>13.2f}")


def breakdown(n: int = 100000, reps: int = 7) -> dict:
    """ns per piece of one ember `c = a + b` on (16,16) float32, each piece timed alone in this process.

    The pieces are what the tiny-op path (ember/imperative/fastpath.py) does per call; `python
    layers` is the whole op minus the measured pieces (operator dispatch, plan lookup, checks).
    `busy engine` is the same op while an unrelated op is pending, so it is pushed instead of
    run under the idle claim (the engine hands it back to this thread when its inputs are ready).
    """
    import threading
    import timeit

    import numpy as np

    import ember as mx
    from ember import engine
    from ember.engine import core
    from ember.imperative.ndarray import NDArray

    a, b = mx.nd.ones((16, 16)), mx.nd.ones((16, 16))
    (a + b).wait_to_read()
    x, y = a._data, b._data

    def whole():
        a + b

    def ufunc():  # the ufunc makes the output (fastpath's `returns` plans)
        np.add(x, y)

    def ndarray_object():  # a fresh output has no chunk (NDArray._c None)
        NDArray(x, None)

    def claim():  # the idle claim, taken and released inline
        core.idle_claim()
        core.idle_release_ok()

    def per_op(fn):
        return min(timeit.repeat(fn, number=n, repeat=reps)) / n * 1e9

    res = {"whole_op": per_op(whole), "numpy_ufunc": per_op(ufunc), "ndarray_object": per_op(ndarray_object),
           "engine_idle_claim_release": per_op(claim)}
    res["python_layers"] = res["whole_op"] - sum(v for k, v in res.items() if k != "whole_op")
    gate, hold = threading.Event(), mx.nd.zeros((1,))
    engine.push(lambda done: threading.Thread(target=lambda: (gate.wait(), done())).start(),
                write=[hold.var], prop="async", name="hold_engine_busy")
    try:
        res["whole_op_busy_engine"] = per_op(whole)
    finally:
        gate.set()
        mx.nd.waitall()
    return {"bench": "tiny_ops_breakdown", "shape": [16, 16], "ns_per_op": {k: round(v) for k, v in res.items()}}


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--impl", choices=["ember", "mxnet", "torch", "numpy"])
    p.add_argument("--all", action="store_true")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--breakdown", action="store_true")
    args = p.parse_args()
    if args.breakdown:
        print(json.dumps(breakdown()))
    elif args.all:
        driver(args.rounds, args.n, args.reps)
    else:
        print(json.dumps(measure(args.impl or "ember", args.n, args.reps)))
