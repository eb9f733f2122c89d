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

Second case, `comm_first` on makespan: a data-parallel backward of LAYERS layers on the CPU queue
(bwd_k chain, each followed by an independent wgrad_k; numpy work of about the same length), then
per layer a short CPU op "kvstore_push[k]:pack" (as the dist kvstore packs a gradient) and a
transfer "net[k]" on the copy queue (a sleep: the wire, no CPU).  Pushed in that order, `priority`
runs every pack after the whole backward, so the transfers queue up at the end; `comm_first` packs
each gradient as soon as it exists and the transfers overlap the backward.  Measured: the step's
makespan (gate released -> wait_all), medians; predicted: a recorded priority run replayed.

    python bench/policy_gain.py [--branches 16] [--size-mib 8] [--repeats 7] [--workers 1 2]
    python bench/policy_gain.py --case comm [--layers 8] [--transfer-ms 8]
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
for p in POLICIES:  # warm-up: the pool holds the blocks afterwards (no first-touch page faults)
    run(p)
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


CHILD_COMM = r"""
import json, statistics, sys, threading, time
import numpy as np
import ember.engine as e
from ember.engine import lab

LAYERS, REPEATS, WORKERS = (int(a) for a in sys.argv[1:4])
TRANSFER_S = float(sys.argv[4])
POLICIES = ["priority", "comm_first"]
A = np.random.RandomState(0).rand(160, 160)

def busy():  # about a few ms of BLAS work (one thread)
    x = A
    for _ in range(4):
        x = x @ A
        x /= np.abs(x).max()
    return float(x[0, 0])

def run(policy):
    e.set_policy(policy)
    e.wait_all()
    gate, started = threading.Event(), threading.Semaphore(0)
    def hold():
        started.release()
        gate.wait(30)
    for _ in range(WORKERS):
        e.push(hold, write=[e.Var()], name="gate")
    for _ in range(WORKERS):
        started.acquire(timeout=30)
    act = [e.Var(f"act{k}") for k in range(LAYERS)]
    grad = [e.Var(f"grad{k}") for k in range(LAYERS)]
    packed = [e.Var(f"packed{k}") for k in range(LAYERS)]
    sent = [e.Var(f"sent{k}") for k in range(LAYERS)]
    for k in range(LAYERS):
        e.push(busy, read=[act[k - 1]] if k else [], write=[act[k]], name=f"bwd{k}")
        e.push(busy, read=[act[k]], write=[grad[k]], name=f"wgrad{k}")
    for k in range(LAYERS):
        e.push(lambda: None, read=[act[k]], write=[packed[k]], name=f"kvstore_push[{k}]:pack")
        e.push(lambda: time.sleep(TRANSFER_S), read=[packed[k]], write=[sent[k]], name=f"net[{k}]", prop="copy")
    t0 = time.perf_counter()
    gate.set()
    e.wait_all()
    return time.perf_counter() - t0

for p in POLICIES:
    run(p)
rec = lab.Recorder()
rec.start()
run("priority")
rec.stop()
tr = rec.trace
cost = np.nan_to_num(tr.durations_s(), nan=0.0)
cost[[i for i, n in enumerate(tr.names) if n == "gate"]] = 0.0
wl = lab.Workload.from_trace(tr, cost_s=cost)
nq = {q: (WORKERS if q == 0 else 1) for q in set(wl.queue.tolist())}
pred = {p: lab.simulate(wl, workers=nq, policy=p).makespan_s for p in POLICIES}
spans = {p: [] for p in POLICIES}
for r in range(REPEATS):
    for p in (POLICIES if r % 2 == 0 else POLICIES[::-1]):
        spans[p].append(run(p))
e.set_policy("priority")
med = {p: statistics.median(v) for p, v in spans.items()}
print(json.dumps({"workers": WORKERS, "copy_workers": 1,
                  "measured_makespan_s": med, "measured_all_s": spans, "predicted_makespan_s": pred,
                  "speedup_measured": med["priority"] / med["comm_first"],
                  "speedup_predicted": pred["priority"] / pred["comm_first"]}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--branches", type=int, default=16)
    ap.add_argument("--size-mib", type=float, default=8.0)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--case", choices=("memory", "comm", "all"), default="all")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--transfer-ms", type=float, default=8.0)
    args = ap.parse_args()
    if args.case in ("comm", "all"):
        comm = []
        for w in args.workers:
            env = dict(os.environ, EMBER_CPU_WORKER_NTHREADS=str(w), OPENBLAS_NUM_THREADS="1",
                       OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", EMBER_COPY_NTHREADS="1")
            r = subprocess.run([sys.executable, "-c", CHILD_COMM, str(args.layers), str(args.repeats), str(w),
                                str(args.transfer_ms / 1e3)], capture_output=True, text=True, env=env, timeout=900)
            if r.returncode != 0:
                raise SystemExit(f"comm case, workers={w} failed:\n{r.stderr}")
            comm.append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(json.dumps({"bench": "policy_gain", "policy": "comm_first", "baseline": "priority",
                          "layers": args.layers, "transfer_ms": args.transfer_ms, "repeats": args.repeats,
                          "cases": comm, "loadavg": os.getloadavg()}, indent=1))
    if args.case == "comm":
        return
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
