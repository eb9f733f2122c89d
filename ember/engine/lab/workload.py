"""What the simulator replays: per-op costs, queues, priorities, a successor list, and buffers.

A `Workload` is built from a recorded `Trace` (costs measured or from a `CostModel`) or directly
from edge arrays (the synthetic generators), so a million-op DAG never needs Python objects per op.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from .trace_format import Trace, engine_dependants


@dataclass
class CostModel:
    """Per-op cost when no measurement is used (seconds):

    compute op:        dispatch_s + max(flops / flops_per_s[queue], bytes / bytes_per_s[queue])
    communication op:  dispatch_s + latency_s + bytes / bandwidth_Bps

    `bytes` of an op is the sum of the sizes of the variables it reads and writes; `flops` per op
    is given by the caller (a sequence, or a function of (name, bytes)); missing: 0.  An op is a
    communication op when `is_comm(name, prop)` says so (default: async ops and names starting
    with 'kvstore' or 'allreduce').  Rates are per queue index; `default_*` covers the rest.
    """

    flops_per_s: Dict[int, float] = field(default_factory=dict)
    bytes_per_s: Dict[int, float] = field(default_factory=dict)
    default_flops_per_s: float = 50e9
    default_bytes_per_s: float = 10e9
    dispatch_s: float = 5e-6
    latency_s: float = 20e-6
    bandwidth_Bps: float = 10e9
    flops: Optional[object] = None
    is_comm: Optional[object] = None

    def costs(self, names: Sequence[str], queue: np.ndarray, nbytes: np.ndarray,
              prop: Optional[Sequence[str]] = None) -> np.ndarray:
        n = len(names)
        if self.flops is None:
            flops = np.zeros(n)
        elif callable(self.flops):
            flops = np.array([float(self.flops(names[i], int(nbytes[i]))) for i in range(n)])
        else:
            flops = np.asarray(self.flops, dtype=np.float64)
            if len(flops) != n:
                raise ValueError(f"CostModel: flops has {len(flops)} entries for {n} ops")
        fr = np.array([self.flops_per_s.get(int(q), self.default_flops_per_s) for q in queue])
        br = np.array([self.bytes_per_s.get(int(q), self.default_bytes_per_s) for q in queue])
        if np.any(fr <= 0) or np.any(br <= 0) or self.bandwidth_Bps <= 0:
            raise ValueError("CostModel: rates and bandwidth must be positive")
        cost = self.dispatch_s + np.maximum(flops / fr, nbytes / br)
        is_comm = self.is_comm or _default_is_comm
        props = prop if prop is not None else ["normal"] * n
        comm = np.array([bool(is_comm(names[i], props[i])) for i in range(n)], dtype=bool)
        cost[comm] = self.dispatch_s + self.latency_s + nbytes[comm] / self.bandwidth_Bps
        return cost


def _default_is_comm(name: str, prop: str) -> bool:
    return prop == "async" or name.startswith(("kvstore", "allreduce"))


def csr(n: int, src: np.ndarray, dst: np.ndarray):
    """(indptr, indices) of the distinct dst of each src (sorted), for n nodes."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if len(src):
        if src.min() < 0 or dst.min() < 0 or src.max() >= n or dst.max() >= n:
            raise ValueError("edge endpoints must be op indices in 0..n-1")
        pair = np.sort(src * n + dst)  # (np.unique's hash path is several times slower at 1M edges)
        pair = pair[np.concatenate(([True], pair[1:] != pair[:-1]))]
        src, dst = pair // n, pair % n
    counts = np.bincount(src, minlength=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr, dst


@dataclass
class Workload:
    """Ops in push order (index = push sequence) with their successors and the buffers they use.

    Buffer b has buf_nbytes[b] bytes; it is allocated when op buf_alloc_op[b] starts (-1: it exists
    from time 0) and freed when the last of its accessors (buf_acc_idx[buf_acc_ptr[b]:buf_acc_ptr[b+1]])
    ends.  release_s[i]: op i cannot start earlier (its push time), 0 when not modelled.
    in_caller[i]: the op runs in the pushing thread, on no worker (as recorded).
    """

    cost_s: np.ndarray
    queue: np.ndarray
    priority: np.ndarray
    succ_ptr: np.ndarray
    succ_idx: np.ndarray
    names: Optional[List[str]] = None
    release_s: Optional[np.ndarray] = None
    in_caller: Optional[np.ndarray] = None
    buf_nbytes: Optional[np.ndarray] = None
    buf_alloc_op: Optional[np.ndarray] = None
    buf_acc_ptr: Optional[np.ndarray] = None
    buf_acc_idx: Optional[np.ndarray] = None
    buf_var: Optional[np.ndarray] = None   # the trace variable of each buffer (from_trace)
    engine_dependants: Optional[np.ndarray] = None  # the engine's own count per op (from_trace)
    mem_bytes: Optional[np.ndarray] = None  # per-op hint for memory_aware (net bytes freed); None: derived

    def __post_init__(self):
        n = len(self.cost_s)
        self.cost_s = np.asarray(self.cost_s, dtype=np.float64)
        if np.any(~np.isfinite(self.cost_s)) or np.any(self.cost_s < 0):
            raise ValueError("Workload: op costs must be finite and >= 0")
        self.queue = np.asarray(self.queue, dtype=np.int64)
        self.priority = np.asarray(self.priority, dtype=np.int64)
        if len(self.queue) != n or len(self.priority) != n or len(self.succ_ptr) != n + 1:
            raise ValueError("Workload: queue, priority and succ_ptr must match the number of ops")
        if len(self.succ_idx) and np.any(self.succ_idx <= np.repeat(np.arange(n), np.diff(self.succ_ptr))):
            raise ValueError("Workload: every edge must go from an earlier-pushed op to a later one")
        if self.buf_nbytes is None:
            self.buf_nbytes = np.zeros(0, np.int64)
            self.buf_alloc_op = np.zeros(0, np.int64)
            self.buf_acc_ptr = np.zeros(1, np.int64)
            self.buf_acc_idx = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return len(self.cost_s)

    @property
    def mem_hints(self) -> np.ndarray:
        """The memory-aware policy's per-op hint (net bytes the op frees when it ends): `mem_bytes`
        when given, else `memory_hints(self)` (derived from the buffers, as a pusher would)."""
        if self.mem_bytes is None:
            self.mem_bytes = memory_hints(self)
        return self.mem_bytes

    @property
    def dependants(self) -> np.ndarray:
        """What the critical_path policy counts per op: the engine's own count when the workload
        comes from a trace (trace_format.engine_dependants), else the direct successors."""
        if self.engine_dependants is not None:
            return self.engine_dependants
        return np.diff(self.succ_ptr)

    def name(self, i: int) -> str:
        return self.names[i] if self.names is not None else f"op{i}"

    @classmethod
    def from_edges(cls, cost_s, src, dst, queue=None, priority=None, out_nbytes=None, names=None,
                   release_s=None, mem_bytes=None) -> "Workload":
        """A workload from edge arrays (src pushed before dst).  With out_nbytes, op i writes one
        buffer of out_nbytes[i] bytes, allocated when it starts and freed when its last successor ends.
        mem_bytes: the memory-aware hints per op (default: derived by memory_hints)."""
        cost_s = np.asarray(cost_s, dtype=np.float64)
        n = len(cost_s)
        ptr, idx = csr(n, src, dst)
        kw = {}
        if out_nbytes is not None:
            deg = np.diff(ptr)
            acc_ptr = np.zeros(n + 1, np.int64)
            np.cumsum(deg + 1, out=acc_ptr[1:])
            acc_idx = np.empty(acc_ptr[-1], np.int64)
            acc_idx[acc_ptr[:-1]] = np.arange(n)
            mask = np.ones(acc_ptr[-1], bool)
            mask[acc_ptr[:-1]] = False
            acc_idx[mask] = idx
            kw = dict(buf_nbytes=np.asarray(out_nbytes, np.int64), buf_alloc_op=np.arange(n, dtype=np.int64),
                      buf_acc_ptr=acc_ptr, buf_acc_idx=acc_idx)
        return cls(cost_s=cost_s, queue=np.zeros(n, np.int64) if queue is None else queue,
                   priority=np.zeros(n, np.int64) if priority is None else priority,
                   succ_ptr=ptr, succ_idx=idx, names=names, release_s=release_s,
                   mem_bytes=None if mem_bytes is None else np.asarray(mem_bytes, np.int64), **kw)

    @classmethod
    def from_trace(cls, trace: Trace, cost_model: Optional[CostModel] = None, cost_s=None,
                   dispatch_s: float = 0.0, release: bool = False, caller: bool = False,
                   release_scale: float = 1.0) -> "Workload":
        """The workload of a recorded trace.

        Costs: `cost_s` if given, else the cost model's, else the measured run times (0 where an op
        was not timed) plus `dispatch_s` each.  release=True: an op may not start before its
        recorded push time, times `release_scale` (the frontend's pace: recording slows the
        pushing thread down, so a replay of an unrecorded run scales the push times by the
        unrecorded / recorded time the frontend took to push the same ops).  caller=True: ops the
        recording ran in the pushing thread run there again (on no worker).  Every variable of
        known size is a buffer (see the class doc).
        """
        n = len(trace)
        nb = trace.var_nbytes
        if cost_s is not None:
            cost = np.asarray(cost_s, dtype=np.float64)
        elif cost_model is not None:
            op_bytes = np.array([int(nb[list(set(r) | set(w))].sum()) if (r or w) else 0
                                 for r, w in zip(trace.reads, trace.writes)], dtype=np.float64)
            cost = cost_model.costs(trace.names, trace.queue, op_bytes, trace.prop)
        else:
            cost = np.nan_to_num(trace.durations_s(), nan=0.0) + dispatch_s
        edges = trace.edges
        src = np.array([e[0] for e in edges], np.int64)
        dst = np.array([e[1] for e in edges], np.int64)
        ptr, idx = csr(n, src, dst)
        # buffers: variables of known size, their accessors in push order
        acc: Dict[int, List[int]] = {}
        first_is_write: Dict[int, bool] = {}
        for i, (r, w) in enumerate(zip(trace.reads, trace.writes)):
            for v in set(r) | set(w):
                if nb[v] <= 0:
                    continue
                first_is_write.setdefault(v, v in w)  # whether its first access writes it
                acc.setdefault(v, []).append(i)
        vs = sorted(acc)
        acc_ptr = np.zeros(len(vs) + 1, np.int64)
        np.cumsum([len(acc[v]) for v in vs], out=acc_ptr[1:])
        acc_idx = np.array([i for v in vs for i in acc[v]], np.int64)
        alloc = np.array([acc[v][0] if first_is_write[v] else -1 for v in vs], np.int64)
        release_s = None
        if release:
            if not release_scale > 0:
                raise ValueError(f"from_trace: release_scale must be > 0, got {release_scale!r}")
            release_s = np.maximum(np.nan_to_num(trace.push_ns, nan=0.0), 0.0) / 1e9 * release_scale
        return cls(cost_s=cost, queue=trace.queue.copy(), priority=trace.priority.copy(), succ_ptr=ptr,
                   succ_idx=idx, names=list(trace.names), release_s=release_s,
                   in_caller=trace.in_caller.copy() if caller else None,
                   buf_nbytes=nb[vs] if vs else np.zeros(0, np.int64), buf_alloc_op=alloc,
                   buf_acc_ptr=acc_ptr, buf_acc_idx=acc_idx, buf_var=np.array(vs, np.int64),
                   engine_dependants=np.array(engine_dependants(trace.reads, trace.writes), np.int64))


def memory_hints(wl: Workload) -> np.ndarray:
    """Per-op net bytes freed, from the buffers: the op that allocates a buffer counts -nbytes,
    the last op (in push order) to access it +nbytes: what a pusher that knows each variable's size
    and its last use would pass as `engine.push(..., mem_bytes=)` for the memory-aware policy."""
    n = len(wl)
    hint = np.zeros(n, np.int64)
    nb = np.asarray(wl.buf_nbytes, np.int64)
    if len(nb) == 0:
        return hint
    alloc = np.asarray(wl.buf_alloc_op, np.int64)
    has = alloc >= 0
    np.add.at(hint, alloc[has], -nb[has])
    acc_ptr = np.asarray(wl.buf_acc_ptr, np.int64)
    nacc = np.diff(acc_ptr)
    used = nacc > 0
    last = np.maximum.reduceat(np.asarray(wl.buf_acc_idx, np.int64), acc_ptr[:-1][used]) if used.any() else []
    np.add.at(hint, np.asarray(last, np.int64), nb[used])
    return hint


def start_gaps_s(trace: Trace) -> np.ndarray:
    """For each timed op run on a worker thread (after the first on that thread), how long it
    started after it could have: after its thread finished the previous op, its inputs were
    written and it was pushed.  Their mean is the engine's own cost per op in that recording
    (hand-offs, the GIL, queue operations), a measured `dispatch_s` for from_trace."""
    ready = np.nan_to_num(trace.push_ns, nan=0.0).copy()
    for src, dst, _, _ in trace.edges:
        e = trace.end_ns[src]
        if not np.isnan(e) and e > ready[dst]:
            ready[dst] = e
    gaps = []
    timed = ~np.isnan(trace.start_ns) & ~np.isnan(trace.end_ns)
    for w in sorted(set(trace.worker[timed & (trace.worker >= 0)].tolist())):
        idx = np.flatnonzero(timed & (trace.worker == w))
        idx = idx[np.argsort(trace.start_ns[idx], kind="stable")]
        prev_end = trace.end_ns[idx[:-1]]
        nxt = idx[1:]
        gaps.append(trace.start_ns[nxt] - np.maximum(prev_end, ready[nxt]))
    return np.maximum(np.concatenate(gaps), 0.0) / 1e9 if gaps else np.zeros(0)
