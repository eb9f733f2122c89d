"""Validate the scheduling-policy lab's simulator against the real engine on this machine.

For a ResNet-18 training step (batch 8 of 3x64x64) and an unrolled 32-step LSTM training step
(bench/memplan.py's nets, bulk execution off: one engine op per graph node), with 1 and 2 CPU
workers (one child process each: the worker count is fixed when the engine starts), it

1. records one step with ember.engine.lab.record (default policy),
2. times `--reps` unrecorded steps under each built-in policy (interleaved, the order rotating),
3. replays the recording in the simulator with the same worker count and each policy (op costs:
   recorded run times; release: recorded push times; ops the recording ran in the pushing thread
   run there again), and also from the other worker count's recording (cross prediction),

and prints one JSON line per (net, workers, policy): measured median, simulated makespan and
the relative error, plus the simulated peak bytes next to the executor's planned bytes.
BLAS is pinned to one thread so that one op uses one core.  Each op's replayed cost is its
recorded run time plus the engine's cost per op seen in the recordings (`gap_us`: the mean time
between when an op could have started on its worker and when it did, lab.start_gaps_s); the cost
of an empty op through the engine at that worker count is shown beside it (`empty_op_us`).
Two models: `simulated_s` lets op bodies on different workers overlap freely;
`simulated_gil_s` makes every op body hold Python's GIL (gil=1.0), so bodies never overlap.

The frontend's pace: recording slows the pushing thread down (every push is noted), so the
recorded push times are scaled by `frontend_pace` = (unrecorded time from forward() to backward()
returning) / (the same while recording) before they serve as release times (`error`);
`error_recorded_pace` is the replay with the recorded push times as they are.  `error_gated_costs`
takes each op's run time from a recording whose ops were all pushed while the workers were held
by a gate op (no frontend competing for the GIL while an op runs).  The executors pass no memory
hints and push no kvstore ops, so memory_aware and comm_first order these graphs as priority does.

    python bench/lab_validate.py                 # both nets, 1 and 2 workers, 10 reps
    python bench/lab_validate.py --nets lstm32 --reps 20
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
POLICIES = ("priority", "fifo", "lifo", "critical_path", "memory_aware", "comm_first")


def _args():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nets", default="resnet18,lstm32")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--record-steps", type=int, default=3,
                    help="recorded steps; the replay uses each op's median time and push offset over them")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--out", default="", help=argparse.SUPPRESS)
    return ap.parse_args()


ARGS = _args()
if ARGS.child:
    for _k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_k] = "1"
    os.environ["EMBER_CPU_WORKER_NTHREADS"] = str(ARGS.child)
    os.environ["EMBER_EXEC_BULK_EXEC_MAX_NODE"] = "1"
    os.environ["MXNET_EXEC_BULK_EXEC_TRAIN"] = "0"

import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

BATCH = {"resnet18": 8, "lstm32": 8}


def bind(mx, net):
    from memplan import build, label_shape  # same net definitions as the memory benchmark
    sym, shapes = build(mx, net, BATCH[net])
    if net == "resnet18":
        shapes = {"data": (BATCH[net], 3, 64, 64)}
    inputs = ("data", "softmax_label", "h0", "c0")
    req = {n: ("null" if n in inputs else "write") for n in sym.list_arguments()}
    exe = sym.simple_bind(mx.cpu(), grad_req=req, softmax_label=label_shape(net, BATCH[net]), **shapes)
    rng = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        if name == "softmax_label":
            arr[:] = rng.randint(0, 10, arr.shape)
        else:
            arr[:] = rng.normal(0, 0.05, arr.shape).astype(np.float32)
    for name, arr in exe.aux_dict.items():
        arr[:] = 1.0 if name.endswith("_var") else 0.0
    mx.nd.waitall()
    return exe


def _noop():
    pass


def _gated_record(engine, lab, exe, path):
    """Record a step whose ops are all pushed while every worker is held by a gate op: each op's
    run time is then measured without the pushing thread competing for the GIL (the frontend,
    slowed down by the recording, would otherwise inflate the bodies of Python ops)."""
    import threading
    gate, started = threading.Event(), threading.Semaphore(0)

    def hold():
        started.release()
        gate.wait(60)
    with lab.record(path):
        for _ in range(ARGS.child):
            engine.push(hold, write=[engine.Var()], name="lab_gate")
        for _ in range(ARGS.child):
            started.acquire(timeout=60)
        exe.forward(is_train=True)
        exe.backward()
        gate.set()


def child():
    import ember as mx
    from ember import engine
    from ember.engine import lab

    push_spans = []  # unrecorded steps: how long the frontend took to push the step (backward() returned)

    def step(exe):
        engine.wait_all()
        t0 = time.perf_counter()
        exe.forward(is_train=True)
        exe.backward()
        push_spans.append(time.perf_counter() - t0)
        engine.wait_all()
        return time.perf_counter() - t0

    def dispatch_cost(n=3000):
        """Engine cost per op on a worker: n empty Python ops (independent, as graph nodes often are)
        take total_s with all workers busy, so each op holds a worker workers * total_s / n."""
        out_vars = [engine.Var() for _ in range(n)]
        engine.wait_all()
        t0 = time.perf_counter()
        for v in out_vars:
            engine.push(_noop, write=[v], name="empty")
        engine.wait_all()
        return ARGS.child * (time.perf_counter() - t0) / n

    out = {"dispatch_s": statistics.median(dispatch_cost() for _ in range(5))}
    for net in ARGS.nets.split(","):
        exe = bind(mx, net)
        engine.set_policy("priority")
        for _ in range(ARGS.warmup):
            step(exe)
        push_spans.clear()
        paths, gated = [], []
        rec_push_spans = []  # recorded steps: the same span (recording slows the frontend down)
        times = {p: [] for p in POLICIES}
        for p in POLICIES:
            engine.set_policy(p)
            for _ in range(ARGS.warmup):
                step(exe)
        # recorded steps are spread over the timed rounds, so that machine noise hits both alike
        every = max(1, ARGS.reps // max(1, ARGS.record_steps))
        for r in range(ARGS.reps):
            for p in POLICIES[r % len(POLICIES):] + POLICIES[:r % len(POLICIES)]:
                engine.set_policy(p)
                times[p].append(step(exe))
            if r % every == 0 and len(paths) < ARGS.record_steps:
                engine.set_policy("priority")
                paths.append(os.path.join(ARGS.out, f"{net}_w{ARGS.child}_{len(paths)}.jsonl"))
                with lab.record(paths[-1]) as rec:
                    t0 = time.perf_counter()
                    exe.forward(is_train=True)
                    exe.backward()
                    rec_push_spans.append(time.perf_counter() - t0)
                gated.append(paths[-1].replace(".jsonl", "_gated.jsonl"))
                _gated_record(engine, lab, exe, gated[-1])
        engine.set_policy("priority")
        out[net] = {"traces": paths, "gated_traces": gated, "ops": len(rec.trace), "planned_bytes": exe.memory_stats()["planned_bytes"],
                    "plan_lower_bound_bytes": exe.memory_stats()["lower_bound_bytes"],
                    "median_s": {p: statistics.median(t) for p, t in times.items()},
                    "push_span_s": statistics.median(push_spans),
                    "recorded_push_span_s": statistics.median(rec_push_spans),
                    "q1_s": {p: float(np.percentile(t, 25)) for p, t in times.items()},
                    "q3_s": {p: float(np.percentile(t, 75)) for p, t in times.items()}}
    print(json.dumps(out), flush=True)


def median_workload(paths, release_scale=1.0, gated=()):
    """The recordings' workload with each op's median run time and push offset (same graph, same
    push order in every recording); push offsets times release_scale (the frontend's pace).
    With gated recordings (_gated_record), the run times come from those instead."""
    from ember.engine import lab
    traces = [lab.load(p) for p in paths]
    first = traces[0]
    for t in traces[1:]:
        if t.names != first.names:
            raise RuntimeError("recorded steps pushed different ops")
    cost = np.nanmedian([np.nan_to_num(t.durations_s(), nan=0.0) for t in traces], axis=0)
    if gated:
        gts = [lab.load(p) for p in gated]
        ng = sum(1 for nm in gts[0].names if nm == "lab_gate")
        if any(t.names[ng:] != first.names for t in gts):
            raise RuntimeError("gated recordings pushed different ops")
        cost = np.nanmedian([np.nan_to_num(t.durations_s()[ng:], nan=0.0) for t in gts], axis=0)
    first.push_ns = np.median([t.push_ns for t in traces], axis=0)
    wl = lab.Workload.from_trace(first, cost_s=cost, release=True, caller=True, release_scale=release_scale)
    wl.gap_s = float(np.mean(np.concatenate([lab.start_gaps_s(t) for t in traces])))
    wl.var_names, wl.reads_of, wl.writes_of = first.var_names, first.reads, first.writes  # for planned_peak
    return wl


def planned_peak(wl, sim) -> int:
    """Peak live bytes of the executor's planned blocks alone (variables 'exec:block...'), with the
    blocks of the graph's outputs held to the end of the step, as the planner holds them (they are
    handed to the user); every other block is live from its first write to its last access."""
    names = [str(wl.var_names[v]) for v in wl.buf_var]
    keep = np.array([n.startswith("exec:block") for n in names], bool)
    if not keep.any():
        return 0
    out_vars = {v for v, n in enumerate(wl.var_names) if str(n).startswith("exec:output:")}
    held = {v for r, w in zip(wl.reads_of, wl.writes_of) if out_vars & set(w) for v in w}
    ptr = wl.buf_acc_ptr
    alloc_t = np.where(wl.buf_alloc_op >= 0, sim.start_s[np.maximum(wl.buf_alloc_op, 0)], 0.0)
    free_t = np.maximum.reduceat(sim.end_s[wl.buf_acc_idx], ptr[:-1])
    free_t[[b for b, v in enumerate(wl.buf_var) if v in held]] = np.inf
    t = np.concatenate([alloc_t[keep], free_t[keep]])
    d = np.concatenate([wl.buf_nbytes[keep], -wl.buf_nbytes[keep]])
    order = np.lexsort((d, t))
    return int(np.cumsum(d[order]).max())


def parent():
    from ember.engine import lab
    workers = [int(w) for w in ARGS.workers.split(",")]
    tmp = tempfile.mkdtemp(prefix="lab_validate_")
    runs = {}
    for w in workers:
        cmd = [sys.executable, os.path.abspath(__file__), "--child", str(w), "--out", tmp, "--nets", ARGS.nets,
               "--reps", str(ARGS.reps), "--warmup", str(ARGS.warmup), "--record-steps", str(ARGS.record_steps)]
        res = subprocess.run(cmd, capture_output=True, text=True, check=True)
        runs[w] = json.loads(res.stdout.strip().splitlines()[-1])
    load = os.getloadavg()
    for net in ARGS.nets.split(","):
        # the frontend's pace: unrecorded / recorded time to push one step's ops
        pace = {w: runs[w][net]["push_span_s"] / runs[w][net]["recorded_push_span_s"] for w in workers}
        wls = {w: median_workload(runs[w][net]["traces"], pace[w]) for w in workers}
        raw = {w: median_workload(runs[w][net]["traces"]) for w in workers}
        gtd = {w: median_workload(runs[w][net]["traces"], pace[w], runs[w][net]["gated_traces"]) for w in workers}
        for w in workers:  # the engine's cost per op at this worker count: the recordings' mean start gap
            for m in (wls, raw, gtd):
                m[w].cost_s = m[w].cost_s + m[w].gap_s * ~m[w].in_caller
        for w in workers:
            for p in POLICIES:
                measured = runs[w][net]["median_s"][p]
                sim = lab.simulate(wls[w], workers=w, policy=p)
                sim_gil = lab.simulate(wls[w], workers=w, policy=p, gil=1.0)
                row = {"bench": "lab_validate", "net": net, "workers": w, "policy": p, "ops": runs[w][net]["ops"],
                       "measured_median_s": round(measured, 5),
                       "measured_iqr_s": [round(runs[w][net]["q1_s"][p], 5), round(runs[w][net]["q3_s"][p], 5)],
                       "simulated_s": round(sim.makespan_s, 5),
                       "error": round(sim.makespan_s / measured - 1, 4),
                       "error_recorded_pace": round(lab.simulate(raw[w], workers=w, policy=p).makespan_s
                                                    / measured - 1, 4),
                       "error_gated_costs": round(lab.simulate(gtd[w], workers=w, policy=p).makespan_s
                                                  / measured - 1, 4),
                       "frontend_pace": round(pace[w], 3),
                       "simulated_gil_s": round(sim_gil.makespan_s, 5),
                       "error_gil": round(sim_gil.makespan_s / measured - 1, 4),
                       "lower_bound_s": round(sim.lower_bound_s, 5),
                       "sim_peak_bytes": sim.peak_bytes,
                       "sim_peak_planned_blocks_bytes": planned_peak(wls[w], sim),
                       "planned_bytes": runs[w][net]["planned_bytes"],
                       "plan_lower_bound_bytes": runs[w][net]["plan_lower_bound_bytes"]}
                for other in workers:
                    if other != w:
                        cross = lab.simulate(wls[other], workers=w, policy=p)
                        row[f"from_w{other}_recording_error"] = round(cross.makespan_s / measured - 1, 4)
                row["gap_us"] = round(wls[w].gap_s * 1e6, 2)
                row["empty_op_us"] = round(runs[w]["dispatch_s"] * 1e6, 2)
                row["loadavg"] = [round(x, 2) for x in load]
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    child() if ARGS.child else parent()
