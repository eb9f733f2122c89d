"""Symbolic executor dispatch: forward µs per node over a chain of tiny element-wise ops.

A symbol of `--nodes` element-wise ops in a row (scalar multiply, scalar add, relu, tanh, in turn)
on one (16, 16) float32 input, bound once (`simple_bind`, no gradients); each repetition runs
`--iters` forwards then waits for the output, and µs per node = time / (iters * nodes).  The
figure is what the executor costs per node (its kernels are tiny), for ember and MXNet 1.9.1
through the same MXNet-API code.  Anchor-style (same flags and one JSON line as
../shared/anchors/bench/*.py), so it runs from this directory or through compare.sh:

    python bench/executor_chain.py --impl mxnet --mx-module ember
    /root/.cache/ember-anchors/mxnet/bin/python bench/executor_chain.py --impl mxnet --mx-module mxnet
    cp bench/executor_chain.py ../shared/anchors/bench/ && IMPLS="ember mxnet" \\
        ../shared/anchors/compare.sh executor_chain 3 -- --nodes 1000
"""
import argparse
import importlib
import json
import os
import platform
import statistics
import sys
import time

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--impl", choices=("mxnet",), default="mxnet")
p.add_argument("--mx-module", default="mxnet", help="import name of the MXNet-compatible package")
p.add_argument("--reps", type=int, default=5, help="repetitions; the median is reported")
p.add_argument("--nodes", type=int, default=1000)
p.add_argument("--iters", type=int, default=20, help="forwards per repetition")
args = p.parse_args()

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if args.mx_module == "ember" and os.path.exists(os.path.join(_ROOT, "ember", "__init__.py")):
    sys.path.insert(0, _ROOT)  # this checkout's ember, wherever the script is run from
mx = importlib.import_module(args.mx_module)
import numpy as np  # noqa: E402


def chain(n):
    x = mx.sym.var("data")
    for i in range(n):
        k = i % 4
        if k == 0:
            x = x * 0.999
        elif k == 1:
            x = x + 0.001
        elif k == 2:
            x = mx.sym.relu(x)
        else:
            x = mx.sym.tanh(x)
    return x


shape = (16, 16)
t0 = time.perf_counter()
exe = chain(args.nodes).simple_bind(mx.cpu(), grad_req="null", data=shape)
bind_s = time.perf_counter() - t0
x = np.random.RandomState(0).uniform(0.5, 1.0, shape).astype(np.float32)
exe.arg_dict["data"][:] = x
want = x.astype(np.float64)
for i in range(args.nodes):
    want = [lambda v: v * 0.999, lambda v: v + 0.001, lambda v: np.maximum(v, 0), np.tanh][i % 4](want)
out = exe.forward(is_train=False)[0].asnumpy()  # warm-up, and the values are right
np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-5)

samples = []
for _ in range(args.reps):
    mx.nd.waitall()
    t = time.perf_counter()
    for _ in range(args.iters):
        exe.forward(is_train=False)
    exe.outputs[0].wait_to_read()
    samples.append((time.perf_counter() - t) / (args.iters * args.nodes) * 1e6)

record = {"bench": "executor_chain", "impl": args.impl, "module": args.mx_module,
          "version": getattr(mx, "__version__", "?"), "python": platform.python_version(), "ncpu": os.cpu_count(),
          "nodes": args.nodes, "iters": args.iters,
          "results": {"forward_us_per_node": round(statistics.median(samples), 3),
                      "forward_us_per_node_all": [round(s, 3) for s in samples],
                      "bind_ms": round(bind_s * 1e3, 1)}}
print(json.dumps(record))
