"""Bench: the cost of `gluon.Trainer('sgd').step` itself over many small parameters (the per-parameter
overhead a ResNet's 60-odd weights, biases and BatchNorm scales pay every step), ember against MXNet 1.9.1.

Each timed iteration is `autograd.record()` of sum(p * x) over the parameters, `backward()` and then
`trainer.step(1)`; the same loop without the step is timed too, and the step's cost is the difference
(MXNet skips the update of a parameter whose gradient is stale, so the step has to follow a backward).
Median over --reps repetitions of --iters iterations.  Prints one JSON line.

    python3 bench/trainer_step.py --mx-module ember --params 62
    ~/.cache/ember-anchors/mxnet/bin/python bench/trainer_step.py --mx-module mxnet --params 62
"""
import argparse
import importlib
import json
import os
import statistics
import sys
import time

p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("--mx-module", default="ember", help="import name of the MXNet-compatible package")
p.add_argument("--params", type=int, default=62, help="number of parameters")
p.add_argument("--size", type=int, default=64, help="elements per parameter")
p.add_argument("--iters", type=int, default=200)
p.add_argument("--reps", type=int, default=5)
args = p.parse_args()
if args.mx_module == "ember":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
mx = importlib.import_module(args.mx_module)
gluon, autograd = mx.gluon, mx.autograd

params = gluon.ParameterDict("bench_")
weights = [params.get(f"w{i}", shape=(args.size,)) for i in range(args.params)]
params.initialize(mx.init.One())
trainer = gluon.Trainer(params, "sgd", {"learning_rate": 1e-3})
x = mx.nd.ones((args.size,))


def backward():
    with autograd.record():
        loss = mx.nd.add_n(*[(w.data() * x).sum() for w in weights])
    loss.backward()


def timed(with_step: bool) -> float:
    mx.nd.waitall()
    t0 = time.perf_counter()
    for _ in range(args.iters):
        backward()
        if with_step:
            trainer.step(1)
    mx.nd.waitall()
    return (time.perf_counter() - t0) / args.iters


for warm in (False, True):
    timed(warm)
both, alone = [], []
for _ in range(args.reps):  # interleaved, so a change of machine state hits both alike
    both.append(timed(True))
    alone.append(timed(False))
step_us = (statistics.median(both) - statistics.median(alone)) * 1e6
print(json.dumps({"bench": "trainer_step", "module": args.mx_module, "version": mx.__version__,
                  "params": args.params, "size": args.size,
                  "results": {"step_us": round(step_us, 1), "step_us_per_param": round(step_us / args.params, 2),
                              "backward_and_step_us": round(statistics.median(both) * 1e6, 1),
                              "backward_us": round(statistics.median(alone) * 1e6, 1)}}))
