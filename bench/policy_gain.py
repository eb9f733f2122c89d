"""The memory-aware policy's live gain over `priority` on peak memory, next to the simulator's prediction.

Workload (an engine-level experiment, as MXNet's delayed allocation runs it): BRANCHES independent
branches; A_i allocates a SIZE-byte temporary from ember.memory when it runs and fills it, B_i reads
it and releases it.  All A's are pushed first, then all B's (a layer-by-layer frontend), with the
hints a pusher that knows the sizes passes: A_i mem_bytes=-SIZE, B_i +SIZE.  A gate op holds the
workers while everything is pushed, so the schedule is the policy's.

Measured: peak bytes_in_use of the CPU memory manager above the baseline, and the makespan (gate
released -> wait_all returned), REPEATS runs per policy interleaved, medians.  Predicted: one run
recorded under `priority` with ember.engine.lab, replayed with its measured op costs under each
policy (peak bytes from the recorded variable sizes and lifetimes, hints derived from them).
Each worker count runs in its own process (EMBER_CPU_WORKER_NTHREADS).

    python bench/policy_gain.py [--branches 16] [--size-mib 8] [--repeats 7] [--workers 1 2]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, threading, time
import numpy as np
import ember.engine as e
from ember import memory
from ember.engine import lab

BR, SIZE, REPEATS, WORKERS = (int(a) for a in sys.argv[1:5])
POLICIES = ["priority", "memory_aware"]

def run(policy, recorder=None):
    e.set_policy(policy)
    e.wait_all()
    blocks = {}
    temps = [e.Var(f"t{i}", nbytes=SIZE) for i in range(BR)]
    outs = [e.Var(f"o{i}") for i in range(BR)]
    sums = [0] * BR
    gate, started = threading.Event(), threading.Event()
    def hold():
        started.set()
        gate.wait(30)
    for _ in range(WORKERS):  # every worker held until all is pushed
        e.push(hold, write=[e.Var()], name="gate")
    started.wait(30)
    def make(i):
        b = memory.alloc(SIZE)
        b.data.fill(i & 0xFF)
        blocks[i] = b
    def use(i):
        b = blocks.pop(i)
        sums[i] = int(b.data[::16].sum())
        memory.release(b)
    for i in range(BR):
        e.push(lambda i=i: make(i), write=[temps[i]], name=f"A{i}", mem_bytes=-SIZE)
    for i in range(BR):
        e.push(lambda i=i: use(i), read=[temps[i]], write=[outs[i]], name=f"B{i}", mem_bytes=SIZE)
    time.sleep(0.05)  # the gates started; let every worker reach its gate
    base = memory.stats()["bytes_in_use"]
    memory.reset_peak_stats()
    t0 = time.perf_counter()
    gate.set()
    e.wait_all()
    span = time.perf_counter() - t0
    peak = memory.stats()["peak_bytes_in_use"] - base
    assert sums == [(i & 0xFF) * (SIZE // 16) for i in range(BR)]
    return peak, span

# prediction: one recorded priority run, replayed under each policy with its measured costs
rec = lab.Recorder()
rec.start()
run("priority")
rec.stop()
tr = rec.trace
cost = np.nan_to_num(tr.durations_s(), nan=0.0)
cost[[i for i, n in enumerate(tr.names) if n == "gate"]] = 0.0  # the gates only hold workers
wl = lab.Workload.from_trace(tr, cost_s=cost)
pred = {p: lab.simulate(wl, workers=WORKERS, policy=p) for p in POLICIES}

meas = {p: {"peak": [], "span": []} for p in POLICIES}
for _ in range(REPEATS):
    for p in POLICIES:  # interleaved
        peak, span = run(p)
        meas[p]["peak"].append(peak)
        meas[p]["span"].append(span)
e.set_policy("priority")
out = {"workers": WORKERS}
for p in POLICIES:
    out[p] = {"measured_peak_bytes": statistics.median(meas[p]["peak"]),
              "measured_makespan_s": statistics.median(meas[p]["span"]),
              "measured_peak_all": meas[p]["peak"],
              "predicted_peak_bytes": pred[p].peak_bytes, "predicted_makespan_s": pred[p].makespan_s}
m, q = out["memory_aware"], out["priority"]
out["peak_gain_measured"] = q["measured_peak_bytes"] / m["measured_peak_bytes"]
out["peak_gain_predicted"] = q["predicted_peak_bytes"] / m["predicted_peak_bytes"]
out["makespan_ratio_measured"] = m["measured_makespan_s"] / q["measured_makespan_s"]
out["makespan_ratio_predicted"] = m["predicted_makespan_s"] / q["predicted_makespan_s"]
print(json.dumps(out))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--branches", type=int, default=16)
    ap.add_argument("--size-mib", type=float, default=8.0)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()
    size = int(args.size_mib * (1 << 20)) // 16 * 16
    cases = []
    for w in args.workers:
        env = dict(os.environ, EMBER_CPU_WORKER_NTHREADS=str(w))
        r = subprocess.run([sys.executable, "-c", CHILD, str(args.branches), str(size), str(args.repeats), str(w)],
                           capture_output=True, text=True, env=env, timeout=900)
        if r.returncode != 0:
            raise SystemExit(f"workers={w} failed:\n{r.stderr}")
        cases.append(json.loads(r.stdout.strip().splitlines()[-1]))
    print(json.dumps({"bench": "policy_gain", "policy": "memory_aware", "baseline": "priority",
                      "branches": args.branches, "temp_bytes": size, "repeats": args.repeats,
                      "cases": cases, "loadavg": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
