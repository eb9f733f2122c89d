"""A discrete-event simulator of the engine: replay a workload under a policy and a machine size.

Model (docs/policy_lab.md, "Replay"): each queue has its own workers (`workers`: one count for every
queue, or {queue: count}).  An op is ready when all its predecessors have ended (and its release
time, if any, has come); its key is computed then, with the engine's policy rules, and each queue
starts its ready ops largest key first, ties in push order, whenever it has an idle worker.
Events at the same instant are all applied before ops are started, so the policy chooses among
everything ready at that instant.  Ops marked in_caller run at once on no worker.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from .. import policy as _policy
from .workload import Workload


@dataclass
class SimResult:
    """One replay: per-op start/end/worker, makespan, utilisation, memory curve and lower bounds."""

    makespan_s: float
    start_s: np.ndarray
    end_s: np.ndarray
    worker: np.ndarray                      # worker index within the op's queue (-1: in the caller)
    utilisation: Dict[Tuple[int, int], float]  # (queue, worker) -> busy time / makespan
    peak_bytes: int
    memory_t: np.ndarray                    # live bytes = memory_bytes[k] from memory_t[k] on
    memory_bytes: np.ndarray
    critical_path_s: float
    work_bound_s: float
    policy: str
    workers: Dict[int, int] = field(default_factory=dict)

    @property
    def lower_bound_s(self) -> float:
        """max(critical path, work / workers): no schedule on this machine can finish sooner."""
        return max(self.critical_path_s, self.work_bound_s)

    def to_dict(self) -> dict:
        """The summary as plain JSON-able values."""
        return {"makespan_s": self.makespan_s, "peak_bytes": int(self.peak_bytes),
                "lower_bound_s": self.lower_bound_s, "critical_path_s": self.critical_path_s,
                "work_bound_s": self.work_bound_s, "ops": int(len(self.start_s)), "policy": self.policy,
                "workers": {str(q): n for q, n in self.workers.items()},
                "utilisation": {f"{q}:{w}": u for (q, w), u in sorted(self.utilisation.items())}}


def _keys(wl: Workload, policy) -> Tuple[Optional[np.ndarray], Optional[object], str]:
    """(static key per op, or None; Python key function, or None; policy name)."""
    code, fn, name = _policy.resolve(policy)
    n = len(wl)
    if fn is not None:
        return None, fn, name
    if code == _policy.BUILTIN["memory_aware"]:
        m = np.clip(wl.mem_hints, -_policy.MEM_KEY_MAX, _policy.MEM_KEY_MAX)
        return m * 1024 + wl.priority, None, name
    if code == _policy.BUILTIN["comm_first"]:
        comm = np.array([_policy.is_comm(wl.name(i)) for i in range(n)], dtype=bool) if n else np.zeros(0, bool)
        return wl.priority + np.where(comm, _policy.COMM_BOOST, 0), None, name
    if code == _policy.BUILTIN["fifo"]:
        return np.zeros(n, np.int64), None, name
    if code == _policy.BUILTIN["lifo"]:
        return np.arange(n, dtype=np.int64), None, name
    if code == _policy.BUILTIN["critical_path"]:
        return wl.dependants * 1024 + wl.priority, None, name
    return wl.priority.copy(), None, name


def _python_key(fn, name, priority, seq, dependants, queue) -> int:
    # as the engine's callback: an exception falls back to the op's priority
    try:
        return int(fn(name, priority, seq, dependants, queue))
    except Exception:  # noqa: BLE001 - a broken experimental policy falls back to priority order
        return priority


def simulate(wl: Workload, workers: Union[int, Dict[int, int]] = 1, policy="priority",
             gil: float = 0.0) -> SimResult:
    """Replay `wl` with `workers` per queue under `policy` (a built-in name or a Python policy
    object / key function, exactly as given to ember.engine.set_policy).  `workers` is one count
    for every queue or {queue: count} (a "default" entry covers queues not named; else 1).

    gil: the fraction of each worker-run op's cost spent holding one process-wide lock (Python's
    GIL; numpy releases it inside large kernels), taken first, in the order workers ask for it.
    A worker that took an op waits for the lock before the op starts.  0 (default): no lock.
    """
    if not 0.0 <= gil <= 1.0:
        raise ValueError(f"simulate: gil must be a fraction in [0, 1], got {gil!r}")
    n = len(wl)
    queues = sorted(set(wl.queue.tolist()))
    if isinstance(workers, int):
        nworkers = {q: workers for q in queues}
    else:
        nworkers = {q: workers.get(q, workers.get("default", 1)) for q in queues}
    for q, k in nworkers.items():
        if not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"simulate: queue {q} needs at least one worker, got {k!r}")
    static, keyfn, pname = _keys(wl, policy)
    # memory_aware with a threshold: the engine keys an op when it becomes ready, with the memory
    # term only while live_hint (minus the hints of the ops ended so far) >= high_bytes
    high = _policy.memory_high(policy)
    gated = pname == "memory_aware" and high != _policy.NO_THRESHOLD
    if gated:
        hints = wl.mem_hints.tolist()
        pkey = (-wl.priority).tolist()
    live_hint = 0
    cost = wl.cost_s.tolist()
    qof = wl.queue.tolist()
    ptr = wl.succ_ptr.tolist()
    sidx = wl.succ_idx.tolist()
    indeg = np.bincount(wl.succ_idx, minlength=n).tolist() if n else []
    release = wl.release_s.tolist() if wl.release_s is not None else None
    caller = wl.in_caller.tolist() if wl.in_caller is not None else None
    skey = (-static).tolist() if static is not None else None
    if keyfn is not None:
        prio, deps = wl.priority.tolist(), wl.dependants.tolist()
    start = [0.0] * n
    end = [0.0] * n
    wid = [-1] * n
    ready: Dict[int, list] = {q: [] for q in queues}
    idle: Dict[int, list] = {q: list(range(nworkers[q])) for q in queues}  # free worker ids (heaps)
    events: list = []  # (time, kind, seq, op): kind 0 = op ended, 1 = op released
    push_ev = heapq.heappush
    pop = heapq.heappop

    def make_ready(i, t):
        if caller is not None and caller[i]:
            start[i] = t
            end[i] = t + cost[i]
            push_ev(events, (end[i], 0, i, i))
            return
        if gated and live_hint < high:
            k = pkey[i]
        else:
            k = skey[i] if skey is not None else -_python_key(keyfn, wl.name(i), prio[i], i, deps[i], qof[i])
        push_ev(ready[qof[i]], (k, i))
        dirty.add(qof[i])

    dirty: set = set()
    for i in range(n):
        if indeg[i] == 0:
            if release is not None and release[i] > 0.0:
                push_ev(events, (release[i], 1, i, i))
            else:
                make_ready(i, 0.0)
    now = 0.0
    done = 0
    gil_free = 0.0
    while True:
        for q in dirty:
            rq, iq = ready[q], idle[q]
            while rq and iq:
                _, i = pop(rq)
                w = pop(iq)
                t = now
                if gil:
                    if gil_free > t:
                        t = gil_free
                    gil_free = t + gil * cost[i]
                start[i] = t
                end[i] = e = t + cost[i]
                wid[i] = w
                push_ev(events, (e, 0, i, i))
        dirty.clear()
        if not events:
            break
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, _, i = pop(events)
            if kind == 1:
                make_ready(i, now)
                continue
            done += 1
            if gated:
                live_hint -= hints[i]
            if wid[i] >= 0:
                push_ev(idle[qof[i]], wid[i])
                dirty.add(qof[i])
            for j in sidx[ptr[i]:ptr[i + 1]]:
                indeg[j] -= 1
                if indeg[j] == 0:
                    if release is not None and release[j] > now:
                        push_ev(events, (release[j], 1, j, j))
                    else:
                        make_ready(j, now)
    if done != n:
        raise RuntimeError(f"simulate: only {done} of {n} ops ran (the workload has a cycle)")
    start_a, end_a, wid_a = np.array(start), np.array(end), np.array(wid, dtype=np.int64)
    makespan = float(end_a.max()) if n else 0.0
    util = {}
    for q in queues:
        on_q = (wl.queue == q) & (wid_a >= 0)
        busy = np.bincount(wid_a[on_q], weights=wl.cost_s[on_q], minlength=nworkers[q])
        for w in range(nworkers[q]):
            util[(q, w)] = float(busy[w] / makespan) if makespan > 0 else 0.0
    mem_t, mem_b = memory_curve(wl, start_a, end_a)
    cp = critical_path_s(wl)
    on_workers = np.ones(n, bool) if wl.in_caller is None else ~wl.in_caller
    work_bound = max((float(wl.cost_s[(wl.queue == q) & on_workers].sum()) / nworkers[q] for q in queues),
                     default=0.0)
    return SimResult(makespan_s=makespan, start_s=start_a, end_s=end_a, worker=wid_a, utilisation=util,
                     peak_bytes=int(mem_b.max()) if len(mem_b) else 0, memory_t=mem_t, memory_bytes=mem_b,
                     critical_path_s=cp, work_bound_s=work_bound, policy=pname, workers=nworkers)


def memory_curve(wl: Workload, start_s: np.ndarray, end_s: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(times, live bytes from each time on) for a schedule.  A buffer is live from its allocating
    op's start (time 0 if none) to its last accessor's end; at one instant frees come first."""
    nb = wl.buf_nbytes
    if len(nb) == 0:
        return np.zeros(1), np.zeros(1, np.int64)
    alloc_t = np.where(wl.buf_alloc_op >= 0, start_s[np.maximum(wl.buf_alloc_op, 0)], 0.0)
    free_t = np.maximum.reduceat(end_s[wl.buf_acc_idx], wl.buf_acc_ptr[:-1])
    t = np.concatenate([alloc_t, free_t])
    d = np.concatenate([nb, -nb])
    order = np.lexsort((d, t))  # by time, frees (negative) first
    live = np.cumsum(d[order])
    return t[order], live


def critical_path_s(wl: Workload) -> float:
    """Length of the heaviest chain of op costs (release times included, when the workload has them)."""
    n = len(wl)
    if n == 0:
        return 0.0
    earliest = np.zeros(n) if wl.release_s is None else wl.release_s.astype(np.float64).copy()
    # ops are in push order and every edge points forward: one sweep settles each op before its successors
    cost, ptr, idx = wl.cost_s.tolist(), wl.succ_ptr.tolist(), wl.succ_idx.tolist()
    est, fin = earliest.tolist(), [0.0] * n
    for i in range(n):
        f = est[i] + cost[i]
        fin[i] = f
        for j in idx[ptr[i]:ptr[i + 1]]:
            if est[j] < f:
                est[j] = f
    return float(max(fin))


def compare(wl: Workload, workers=(1, 2, 4, 8), policies=("priority", "fifo", "lifo", "critical_path"),
            gil: float = 0.0) -> List[dict]:
    """One row per (workers, policy): makespan, lower bound, peak bytes and the makespan's ratio to
    the lower bound (a list of dicts: a table for a notebook, e.g. pandas.DataFrame(rows))."""
    rows = []
    for w in workers:
        for p in policies:
            res = simulate(wl, workers=w, policy=p, gil=gil)
            rows.append({"workers": w, "policy": res.policy, "makespan_s": res.makespan_s,
                         "lower_bound_s": res.lower_bound_s, "peak_bytes": res.peak_bytes,
                         "vs_bound": res.makespan_s / res.lower_bound_s if res.lower_bound_s > 0 else 1.0})
    return rows
