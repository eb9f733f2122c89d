"""The lab's trace: ops with their variables, edges and timings; saved as versioned JSON lines.

File layout (docs/policy_lab.md, "Trace format"), one JSON object per line:

    {"format": "ember-lab-trace", "version": 1, "clock": "ns", "meta": {...}}        header, first line
    {"var": 0, "name": "...", "nbytes": 4096}                                        one per variable
    {"op": 0, "name": "...", "queue": 0, "queue_name": "cpu", "priority": 0, "prop": "normal",
     "reads": [0], "writes": [1], "deps": [[src_op, var, "raw"|"war"|"waw"], ...],
     "push_ns": 0, "start_ns": 1200, "end_ns": 5400, "worker": 0, "in_caller": false}   one per op

Times are nanoseconds from the start of the recording (null when the op never ran or was a C kernel).
`worker` is -1 for ops run by the pushing thread, else a small index per worker thread.
A path ending in ".gz" is gzip-compressed.
"""
from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

FORMAT = "ember-lab-trace"
VERSION = 1

Edge = Tuple[int, int, int, str]  # (src op, dst op, var, kind)


def derive_edges(reads: Sequence[Sequence[int]], writes: Sequence[Sequence[int]]) -> List[Edge]:
    """The engine's dependency edges for ops given in push order (MXNet's rules, per variable).

    A read depends on the last earlier write (raw); a write on every read since that write (war),
    or on the write itself when nothing read it since (waw).  A variable both read and written by
    one op counts as written; duplicates count once.  Edges to ops outside the list are dropped.
    """
    last_write: Dict[int, int] = {}
    readers: Dict[int, List[int]] = {}
    edges: List[Edge] = []
    for op, (r, w) in enumerate(zip(reads, writes)):
        wset = set(w)
        for v in dict.fromkeys(r):
            if v in wset:
                continue
            src = last_write.get(v)
            if src is not None:
                edges.append((src, op, v, "raw"))
            readers.setdefault(v, []).append(op)
        for v in dict.fromkeys(w):
            rs = readers.pop(v, None)
            if rs:
                edges.extend((src, op, v, "war") for src in rs if src != op)
            else:
                src = last_write.get(v)
                if src is not None:
                    edges.append((src, op, v, "waw"))
            last_write[v] = op
    return edges


def engine_dependants(reads: Sequence[Sequence[int]], writes: Sequence[Sequence[int]]) -> List[int]:
    """What the engine's `dependants` counter (the critical_path key) holds for each op once every op
    has been pushed and none has run: per variable, an access appended behind an op's still-queued
    block counts one for that op (the block's owner, count_dependant in native/engine.c).  So a
    chain of readers of one variable counts one each for the previous reader, not all for the
    writer, and a read that could start at push (no earlier write) is not queued behind anyone.
    Variable deletions (a write the engine appends too) are not in a trace and are not counted."""
    counts = [0] * len(reads)
    last: Dict[int, int] = {}
    written: set = set()
    for op, (r, w) in enumerate(zip(reads, writes)):
        wset = set(w)
        for v in dict.fromkeys(r):
            if v in wset or v not in written:
                continue
            prev = last.get(v)
            if prev is not None:
                counts[prev] += 1
            last[v] = op
        for v in dict.fromkeys(w):
            prev = last.get(v)
            if prev is not None:
                counts[prev] += 1
            last[v] = op
            written.add(v)
    return counts


@dataclass
class Trace:
    """A recorded (or generated) workload: ops in push order and the variables they access."""

    names: List[str]
    queue: np.ndarray                 # int, per op
    priority: np.ndarray              # int, per op
    reads: List[Tuple[int, ...]]      # variable indices, per op
    writes: List[Tuple[int, ...]]
    var_nbytes: np.ndarray            # int64, per variable
    var_names: List[Optional[str]] = field(default_factory=list)
    prop: List[str] = field(default_factory=list)
    push_ns: Optional[np.ndarray] = None   # float64 per op (nan: unknown)
    start_ns: Optional[np.ndarray] = None
    end_ns: Optional[np.ndarray] = None
    worker: Optional[np.ndarray] = None    # int per op, -1: ran in the pushing thread
    in_caller: Optional[np.ndarray] = None  # bool per op
    queue_names: Dict[int, str] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    _edges: Optional[List[Edge]] = field(default=None, repr=False)

    def __post_init__(self):
        n = len(self.names)
        self.queue = np.asarray(self.queue, dtype=np.int64)
        self.priority = np.asarray(self.priority, dtype=np.int64)
        self.var_nbytes = np.asarray(self.var_nbytes, dtype=np.int64)
        if not self.var_names:
            self.var_names = [None] * len(self.var_nbytes)
        if not self.prop:
            self.prop = ["normal"] * n
        nan = np.full(n, np.nan)
        self.push_ns = nan.copy() if self.push_ns is None else np.asarray(self.push_ns, dtype=np.float64)
        self.start_ns = nan.copy() if self.start_ns is None else np.asarray(self.start_ns, dtype=np.float64)
        self.end_ns = nan.copy() if self.end_ns is None else np.asarray(self.end_ns, dtype=np.float64)
        self.worker = np.full(n, -2, np.int64) if self.worker is None else np.asarray(self.worker, dtype=np.int64)
        self.in_caller = (np.zeros(n, bool) if self.in_caller is None
                          else np.asarray(self.in_caller, dtype=bool))
        for what in ("queue", "priority", "push_ns", "start_ns", "end_ns", "worker", "in_caller"):
            if len(getattr(self, what)) != n:
                raise ValueError(f"Trace: {what} has {len(getattr(self, what))} entries for {n} ops")
        if len(self.reads) != n or len(self.writes) != n or len(self.prop) != n:
            raise ValueError(f"Trace: reads/writes/prop need one entry per op ({n})")
        nvars = len(self.var_nbytes)
        for acc in (self.reads, self.writes):
            for vs in acc:
                for v in vs:
                    if not 0 <= v < nvars:
                        raise ValueError(f"Trace: variable index {v} out of range (0..{nvars - 1})")

    def __len__(self) -> int:
        return len(self.names)

    @property
    def edges(self) -> List[Edge]:
        """Dependency edges (src, dst, var, kind) as the engine derives them (computed once)."""
        if self._edges is None:
            self._edges = derive_edges(self.reads, self.writes)
        return self._edges

    def durations_s(self) -> np.ndarray:
        """Measured run time of each op in seconds (nan where the op was not timed)."""
        return (self.end_ns - self.start_ns) / 1e9

    # -- files ---------------------------------------------------------------------------------
    def save(self, path: str) -> str:
        """Write the trace as JSON lines (gzip when `path` ends in .gz); returns the path."""
        path = os.fspath(path)
        deps: List[List[list]] = [[] for _ in range(len(self))]
        for src, dst, v, kind in self.edges:
            deps[dst].append([src, v, kind])
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "wt") as f:
            f.write(json.dumps({"format": FORMAT, "version": VERSION, "clock": "ns", "meta": self.meta,
                                "queue_names": {str(k): v for k, v in self.queue_names.items()}}) + "\n")
            for i, nb in enumerate(self.var_nbytes.tolist()):
                f.write(json.dumps({"var": i, "name": self.var_names[i], "nbytes": nb}) + "\n")
            for i in range(len(self)):
                q = int(self.queue[i])
                f.write(json.dumps({
                    "op": i, "name": self.names[i], "queue": q, "queue_name": self.queue_names.get(q, str(q)),
                    "priority": int(self.priority[i]), "prop": self.prop[i],
                    "reads": list(self.reads[i]), "writes": list(self.writes[i]), "deps": deps[i],
                    "push_ns": _num(self.push_ns[i]), "start_ns": _num(self.start_ns[i]),
                    "end_ns": _num(self.end_ns[i]), "worker": int(self.worker[i]),
                    "in_caller": bool(self.in_caller[i])}) + "\n")
        return path

    def save_chrome(self, path: str) -> str:
        """Write the timed ops as Chrome trace JSON (chrome://tracing, ui.perfetto.dev)."""
        events = []
        for i in range(len(self)):
            if np.isnan(self.start_ns[i]) or np.isnan(self.end_ns[i]):
                continue
            q = int(self.queue[i])
            w = int(self.worker[i])
            events.append({"name": self.names[i], "cat": self.queue_names.get(q, str(q)), "ph": "X",
                           "pid": q, "tid": "caller" if w < 0 else w, "ts": self.start_ns[i] / 1e3,
                           "dur": max(self.end_ns[i] - self.start_ns[i], 0.0) / 1e3,
                           "args": {"op": i, "reads": list(self.reads[i]), "writes": list(self.writes[i])}})
        for q in sorted(set(self.queue.tolist())):
            events.append({"name": "process_name", "ph": "M", "pid": q,
                           "args": {"name": f"ember engine: {self.queue_names.get(q, str(q))} queue"}})
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)
        return path


def _num(x: float):
    return None if np.isnan(x) else float(x)


def _nan(x) -> float:
    return np.nan if x is None else float(x)


def load(path: str) -> Trace:
    """Read a trace written by Trace.save (any version this code knows; ValueError otherwise)."""
    path = os.fspath(path)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        first = f.readline()
        try:
            header = json.loads(first)
        except json.JSONDecodeError:
            raise ValueError(f"{path}: not an ember lab trace (first line is not JSON)") from None
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise ValueError(f"{path}: not an ember lab trace (format {header.get('format')!r})"
                             if isinstance(header, dict) else f"{path}: not an ember lab trace")
        if header.get("version") != VERSION:
            raise ValueError(f"{path}: trace format version {header.get('version')} is not supported "
                             f"(this ember reads version {VERSION})")
        var_nbytes, var_names, ops = [], [], []
        for lineno, line in enumerate(f, start=2):
            if not line.strip():
                continue
            rec = json.loads(line)
            if "var" in rec:
                if rec["var"] != len(var_nbytes):
                    raise ValueError(f"{path}:{lineno}: variables must be numbered 0, 1, ... in order")
                var_nbytes.append(int(rec["nbytes"]))
                var_names.append(rec.get("name"))
            elif "op" in rec:
                if rec["op"] != len(ops):
                    raise ValueError(f"{path}:{lineno}: ops must be numbered 0, 1, ... in push order")
                ops.append(rec)
            else:
                raise ValueError(f"{path}:{lineno}: a line must be a variable or an op")
    trace = Trace(
        names=[o["name"] for o in ops], queue=[o["queue"] for o in ops], priority=[o["priority"] for o in ops],
        reads=[tuple(o["reads"]) for o in ops], writes=[tuple(o["writes"]) for o in ops],
        var_nbytes=var_nbytes, var_names=var_names, prop=[o.get("prop", "normal") for o in ops],
        push_ns=[_nan(o.get("push_ns")) for o in ops], start_ns=[_nan(o.get("start_ns")) for o in ops],
        end_ns=[_nan(o.get("end_ns")) for o in ops], worker=[o.get("worker", -2) for o in ops],
        in_caller=[bool(o.get("in_caller", False)) for o in ops],
        queue_names={int(k): v for k, v in header.get("queue_names", {}).items()}, meta=header.get("meta", {}))
    stored = sorted((s, i, v, k) for i, o in enumerate(ops) for s, v, k in o.get("deps", []))
    if stored != sorted(trace.edges):
        raise ValueError(f"{path}: the stored dependency edges differ from those the reads/writes imply")
    return trace
