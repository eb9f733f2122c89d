"""Bench: one graph pass on and off, in one process (the machine's fast and slow states hit both alike).

Builds the model of a bench script twice through `runpy` (by default bench/gluon_lstm.py's hybridized
LSTM language model), the first with the environment variable `--env` set to 1 and the second to 0
(a pass reads it when a graph is compiled, at the first call), then times the two `step()`s in
alternating blocks.  Prints one JSON line: ms per step of each block and the paired differences.

    python3 bench/pass_ab.py --env EMBER_RNN_PARAMS_APART --rounds 8
"""
import argparse
import json
import os
import runpy
import statistics
import sys
import time

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--env", default="EMBER_RNN_PARAMS_APART", help="the pass's switch (1 = on, 0 = off)")
p.add_argument("--script", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "gluon_lstm.py"),
               help="a bench script defining step() at module level (run with --iters 1 --reps 1)")
p.add_argument("--rounds", type=int, default=8)
p.add_argument("--steps", type=int, default=5, help="steps per timed block")
args = p.parse_args()

sys.argv = [args.script, "--impl", "mxnet", "--mx-module", "ember", "--reps", "1", "--iters", "1", "--warmup", "1"]
steps = {}
for label, value in (("on", "1"), ("off", "0")):
    os.environ[args.env] = value
    model = runpy.run_path(args.script, run_name="bench")
    steps[label] = model["step"]
    for _ in range(2):
        model["step"]()
import ember  # noqa: E402  (imported by the script: the same module)

ember.nd.waitall()
times = {label: [] for label in steps}
for _ in range(args.rounds):
    for label, step in steps.items():
        ember.nd.waitall()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            step()
        ember.nd.waitall()
        times[label].append((time.perf_counter() - t0) / args.steps * 1e3)
diffs = [off - on for on, off in zip(times["on"], times["off"])]
print(json.dumps({"bench": "pass_ab", "env": args.env, "script": os.path.basename(args.script),
                  "ms_per_step": {k: [round(v, 2) for v in vs] for k, vs in times.items()},
                  "median_ms_per_step": {k: round(statistics.median(vs), 2) for k, vs in times.items()},
                  "saved_ms_per_step_paired_median": round(statistics.median(diffs), 2)}))
