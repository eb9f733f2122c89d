"""`mx.profiler`: per-op timing from the engine, written as Chrome trace JSON.

    mx.profiler.set_config(filename='trace.json')
    mx.profiler.set_state('run')
    ... work ...
    mx.profiler.set_state('stop')
    mx.profiler.dump()        # open the file in chrome://tracing or ui.perfetto.dev

The C engine stamps each op's start and end (CLOCK_MONOTONIC), worker and
queue while profiling is on; when it is off the cost is one relaxed atomic load
per op.  Records are moved out of the engine at every `dump`/`dumps`.
"""
from __future__ import annotations

import json
import os
import threading
from collections import defaultdict
from typing import List, Optional

from .engine import core as _core
from .engine._native import ffi, lib

_lock = threading.Lock()
_config = {"filename": "profile.json", "aggregate_stats": True}
_state = {"running": False}
_records: List[tuple] = []


def set_config(filename: str = "profile.json", profile_all: bool = True, aggregate_stats: bool = True,
               **kwargs) -> None:
    """Where `dump()` writes the trace.  MXNet's other options (profile_symbolic, profile_imperative,
    profile_memory, profile_api, continuous_dump) are accepted; every engine op is recorded."""
    known = {"profile_symbolic", "profile_imperative", "profile_memory", "profile_api",
             "continuous_dump", "dump_period", "profile_process"}
    unknown = set(kwargs) - known
    if unknown:
        raise ValueError(f"profiler.set_config: unknown option(s) {sorted(unknown)}")
    if not isinstance(filename, (str, os.PathLike)):
        raise TypeError("profiler.set_config: filename must be a path")
    _config.update(filename=os.fspath(filename), aggregate_stats=aggregate_stats)


def set_state(state: str = "stop") -> None:
    """'run' starts recording engine ops, 'stop' stops."""
    if state not in ("run", "stop"):
        raise ValueError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    running = state == "run"
    if not running:
        _core.wait_all_quiet()  # ops pushed while running are recorded when they finish
    lib.ember_profile_set(_core.native_engine(), 1 if running else 0)
    _state["running"] = running
    if not running:
        _collect()


def state() -> str:
    return "run" if _state["running"] else "stop"


def pause() -> None:
    lib.ember_profile_set(_core.native_engine(), 0)


def resume() -> None:
    if _state["running"]:
        lib.ember_profile_set(_core.native_engine(), 1)


def _collect() -> None:
    buf = ffi.new("ember_prof_record[4096]")
    with _lock:
        while True:
            n = lib.ember_profile_fetch(_core.native_engine(), buf, 4096)
            if n == 0:
                break
            for i in range(n):
                r = buf[i]
                name = ffi.string(r.name).decode(errors="replace") if r.name != ffi.NULL else "op"
                _records.append((name, r.queue, r.worker, r.start_ns, r.end_ns))


def _trace_events(records) -> list:
    events = []
    pids = {}
    t0 = min((r[3] for r in records), default=0)
    for name, queue, worker, start, end in records:
        pid = pids.setdefault(queue, len(pids))
        events.append({"name": name, "cat": _core.queue_name(queue), "ph": "X", "pid": pid,
                       "tid": worker if worker >= 0 else "caller",
                       "ts": (start - t0) / 1000.0, "dur": max(end - start, 0) / 1000.0})
    for queue, pid in pids.items():
        events.append({"name": "process_name", "ph": "M", "pid": pid,
                       "args": {"name": f"ember engine: {_core.queue_name(queue)} queue"}})
    return events


def dump(finished: bool = True, filename: Optional[str] = None) -> str:
    """Write the ops recorded so far as Chrome trace JSON; returns the file name."""
    _core.wait_all_quiet()
    _collect()
    path = filename or _config["filename"]
    with _lock:
        records = list(_records)
        if finished:
            _records.clear()
    with open(path, "w") as f:
        json.dump({"traceEvents": _trace_events(records), "displayTimeUnit": "ms"}, f)
    return path


def dumps(reset: bool = False) -> str:
    """An aggregate table: per op name, count and total/mean/min/max time in ms."""
    _core.wait_all_quiet()
    _collect()
    agg = defaultdict(list)
    with _lock:
        for name, _q, _w, start, end in _records:
            agg[name].append((end - start) / 1e6)
        if reset:
            _records.clear()
    lines = [f"{'Name':<40}{'Count':>8}{'Total(ms)':>12}{'Avg(ms)':>10}{'Min(ms)':>10}{'Max(ms)':>10}"]
    for name, ts in sorted(agg.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"{name[:39]:<40}{len(ts):>8}{sum(ts):>12.3f}{sum(ts) / len(ts):>10.4f}"
                     f"{min(ts):>10.4f}{max(ts):>10.4f}")
    return "\n".join(lines)


def records() -> List[tuple]:
    """Raw records (name, queue, worker, start_ns, end_ns) collected so far (for tests and tools)."""
    _collect()
    with _lock:
        return list(_records)
