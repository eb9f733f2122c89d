"""Makespan of one ResNet-18 training step under each engine scheduling policy.

ResNet-18 (v1, built with mx.sym as in bench/memplan.py), batch 8 of 3x64x64, bound with
simple_bind; one step = forward(is_train=True) + backward(), timed from the first push to
wait_all.  Bulk execution is off (one engine op per graph node) so the policy really
orders nodes; 2 CPU workers; BLAS pinned to one thread so that each op uses one core
and parallelism comes only from the engine running independent nodes at once.
Policies (and the NaiveEngine, the serial reference) are interleaved within every
repetition (the order rotates) so machine noise hits them alike; the figure is the
median per policy.  For context it also reports the step's total work and critical
path from per-node kernel times measured one node at a time: over data dependencies
only, and over the engine's dependencies (storage the plan reuses orders nodes too);
no policy can beat max(critical path, work / workers).

    python bench/policy_makespan.py                     # 2 workers, 15 reps
    python bench/policy_makespan.py --reps 25 --workers 2 --batch 8
    python bench/policy_makespan.py --plan naive        # no storage reuse: no false dependencies

Environment set here before numpy is imported (unless already set):
OPENBLAS_NUM_THREADS=1 (and OMP/MKL), EMBER_CPU_WORKER_NTHREADS=<workers>,
EMBER_EXEC_BULK_EXEC_MAX_NODE=1.
"""
import argparse
import os
import sys


def _args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=15, help="timed steps per policy")
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps per policy first")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--size", type=int, default=64, help="image height and width")
    ap.add_argument("--policies", default="priority,fifo,lifo,critical_path")
    ap.add_argument("--plan", default="best", choices=("best", "naive"),
                    help="memory plan; 'naive' gives every tensor its own bytes, so no reuse orders nodes")
    return ap.parse_args()


ARGS = _args()
# Before numpy (and the engine) load: these are read once at import.
for _k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_k] = "1"
os.environ["EMBER_CPU_WORKER_NTHREADS"] = str(ARGS.workers)
os.environ["EMBER_EXEC_BULK_EXEC_MAX_NODE"] = "1"

import json  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import ember as mx  # noqa: E402
from ember import engine  # noqa: E402
from memplan import build  # noqa: E402  (same ResNet-18 definition as the memory benchmark)


def bind_resnet18(batch: int, size: int, plan: str):
    sym, _ = build(mx, "resnet18", batch)
    inputs = ("data", "softmax_label")
    req = {n: ("null" if n in inputs else "write") for n in sym.list_arguments()}
    exe = sym.simple_bind(mx.cpu(), grad_req=req, data=(batch, 3, size, size), softmax_label=(batch,))
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        if name == "softmax_label":
            arr[:] = rng.randint(0, 1000, arr.shape)
        elif name.endswith("_gamma"):
            arr[:] = 1.0
        elif name.endswith(("_beta", "_bias")):
            arr[:] = 0.0
        else:
            fan_in = int(np.prod(arr.shape[1:])) if len(arr.shape) > 1 else 1
            arr[:] = rng.normal(0, (2.0 / fan_in) ** 0.5, arr.shape).astype(np.float32)
    for name, arr in exe.aux_dict.items():
        arr[:] = 1.0 if name.endswith("_var") else 0.0
    if plan != "best":
        from ember.symbolic.executor import Executor
        exe = Executor(sym, mx.cpu(), exe.arg_arrays, exe.grad_arrays, req, exe.aux_arrays, plan_method=plan)
    mx.nd.waitall()
    return exe


def step(exe) -> float:
    engine.wait_all()
    t0 = time.perf_counter()
    exe.forward(is_train=True)
    exe.backward()
    engine.wait_all()
    return time.perf_counter() - t0


def node_times(exe, reps: int = 3) -> list:
    """Median time of each op node's kernel, run alone on this thread in execution order."""
    engine.wait_all()
    runners = [r for r in exe._runners if r is not None]
    times = [[] for _ in runners]
    for _ in range(reps):
        for i, r in enumerate(runners):
            t0 = time.perf_counter()
            r[0](True, None)
            times[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def critical_paths(exe, durations: list) -> dict:
    """Total work and longest paths of the step's DAG weighted by `durations`:
    data dependencies only, and as the engine sees it (every shared engine var orders its
    readers and writers: storage reuse of the memory plan adds edges)."""
    runners = [r for r in exe._runners if r is not None]
    nodes = [n for n in exe._graph.nodes if n.op is not None]
    producer = {}
    finish_data = {}
    for i, n in enumerate(nodes):
        start = max((finish_data[producer[(id(c), j)]] for c, j in n.inputs if (id(c), j) in producer), default=0.0)
        finish_data[i] = start + durations[i]
        for k in range(n.num_outputs()):
            producer[(id(n), k)] = i
    last_write, reads_since = {}, {}
    finish = {}
    for i, r in enumerate(runners):
        reads = [id(v) for v in r[1]] + [id(a.var) for a in r[3]]
        writes = [id(v) for v in r[2]] + [id(a.var) for a in r[4]]
        deps = [last_write[v] for v in reads + writes if v in last_write]
        deps += [j for v in writes for j in reads_since.get(v, ())]
        finish[i] = max((finish[j] for j in deps), default=0.0) + durations[i]
        for v in reads:
            reads_since.setdefault(v, []).append(i)
        for v in writes:
            last_write[v] = i
            reads_since[v] = []
    work = sum(durations)
    return {"work_s": round(work, 4), "critical_path_data_s": round(max(finish_data.values()), 4),
            "critical_path_engine_s": round(max(finish.values()), 4)}


def main():
    policies = [p for p in ARGS.policies.split(",") if p]
    exe = bind_resnet18(ARGS.batch, ARGS.size, ARGS.plan)
    n_ops = sum(1 for n in exe._graph.nodes if n.op is not None)
    step(exe)
    cp = critical_paths(exe, node_times(exe))
    # "naive_engine": every node run in push order on the calling thread (the serial reference)
    modes = policies + ["naive_engine"]

    def use(mode):
        if mode == "naive_engine":
            engine.set_engine_type("NaiveEngine")
        else:
            engine.set_engine_type("ThreadedEngine")
            engine.set_policy(mode)
    for m in modes:
        use(m)
        for _ in range(ARGS.warmup):
            step(exe)
    times = {m: [] for m in modes}
    for r in range(ARGS.reps):
        for m in modes[r % len(modes):] + modes[:r % len(modes)]:
            use(m)
            times[m].append(step(exe))
    use("priority")
    lower = max(cp["critical_path_engine_s"], cp["work_s"] / ARGS.workers)
    res = {"bench": "policy_makespan", "net": "resnet18_v1", "batch": ARGS.batch,
           "image": [3, ARGS.size, ARGS.size], "workers": ARGS.workers, "bulk": 1, "graph_ops": n_ops,
           "plan": ARGS.plan, "planned_MB": round(exe.memory_stats()["planned_bytes"] / 2 ** 20, 1),
           "reps": ARGS.reps, "blas_threads": os.environ["OPENBLAS_NUM_THREADS"], **cp,
           "makespan_lower_bound_s": round(lower, 4),
           "modes": {m: {"median_s": round(statistics.median(t), 4),
                         "q1_s": round(float(np.percentile(t, 25)), 4),
                         "q3_s": round(float(np.percentile(t, 75)), 4),
                         "min_s": round(min(t), 4)} for m, t in times.items()}}
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
