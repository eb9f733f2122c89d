"""`mx.profiler`: per-op timing from the engine and the user's own ranges, as Chrome trace JSON
and aggregate statistics (MXNet 1.9.1's API).

    mx.profiler.set_config(filename='trace.json', aggregate_stats=True)
    mx.profiler.set_state('run')
    ... work ...
    mx.profiler.set_state('stop')
    mx.profiler.dump()        # open the file in chrome://tracing or ui.perfetto.dev
    print(mx.profiler.dumps())                    # per category and name: count, total/min/max/avg ms
    mx.profiler.dumps(format='json', sort_by='avg', ascending=True)

The C engine stamps each op's start and end (CLOCK_MONOTONIC), worker, queue and thread while
profiling is on; when it is off the cost is one relaxed atomic load per op.  Records are moved
out of the engine at every `dump`/`dumps`.  Engine ops are the category "operator"; the ops a
custom operator's Python code runs, and that code itself (`<op_type>::pure_python`), are
"Custom Operator", named `<op_type>::<op>` as in MXNet.  `Domain`, `Task`, `Frame`, `Event`,
`Counter` and `Marker` record the user's ranges, values and instants (category: the domain's
name, "event" for an Event) while the profiler runs and is not paused.  With
`profile_memory=True` each collection samples the CPU memory manager's bytes in use (category
"Device Storage", reported in kB under "Memory").
"""
from __future__ import annotations

import json
import os
import threading
from bisect import bisect_left
from collections import defaultdict
from time import monotonic_ns
from typing import List, Optional

from .engine import core as _core
from .engine._native import ffi, lib

_lock = threading.Lock()
_config = {"filename": "profile.json", "aggregate_stats": True, "profile_memory": False}
_state = {"running": False, "paused": False}
_records: List[tuple] = []   # engine ops: (name, queue, worker, start_ns, end_ns, thread)
_user: List[tuple] = []      # ("X", category, name, start_ns, end_ns, thread) ranges,
#                              ("C", category, name, ts_ns, value) counter values,
#                              ("i", category, name, ts_ns, scope) instants
_custom: List[tuple] = []    # (op name, start_ns, end_ns, thread): a custom operator's Python code
_agg_from = {"records": 0, "user": 0, "custom": 0}   # dumps(reset=True) starts the statistics here

OPERATOR, CUSTOM_OPERATOR, MEMORY = "operator", "Custom Operator", "Device Storage"
_SORT_KEYS = {"total": "Total", "avg": "Avg", "min": "Min", "max": "Max", "count": "Count"}


def set_config(filename: str = "profile.json", profile_all: bool = True, aggregate_stats: bool = True,
               **kwargs) -> None:
    """Where `dump()` writes the trace, and whether memory is sampled (`profile_memory`).  MXNet's
    other options (profile_symbolic, profile_imperative, profile_api, continuous_dump, dump_period,
    profile_process) are accepted: every engine op is recorded."""
    known = {"profile_symbolic", "profile_imperative", "profile_memory", "profile_api",
             "continuous_dump", "dump_period", "profile_process"}
    unknown = set(kwargs) - known
    if unknown:
        raise ValueError(f"profiler.set_config: unknown option(s) {sorted(unknown)}")
    if not isinstance(filename, (str, os.PathLike)):
        raise TypeError("profiler.set_config: filename must be a path")
    _config.update(filename=os.fspath(filename), aggregate_stats=aggregate_stats,
                   profile_memory=bool(kwargs.get("profile_memory", False)))


def set_state(state: str = "stop", profile_process: str = "worker") -> None:
    """'run' starts recording engine ops and the user's profiling objects, 'stop' stops."""
    if state not in ("run", "stop"):
        raise ValueError(f"profiler.set_state: state must be 'run' or 'stop', got {state!r}")
    running = state == "run"
    if not running:
        _core.wait_all_quiet()  # ops pushed while running are recorded when they finish
    lib.ember_profile_set(_core.native_engine(), 1 if running else 0)
    _state.update(running=running, paused=False)
    _collect()


def state() -> str:
    return "run" if _state["running"] else "stop"


def pause(profile_process: str = "worker") -> None:
    """Stop recording until `resume()` (the state stays 'run')."""
    _state["paused"] = True
    lib.ember_profile_set(_core.native_engine(), 0)


def resume(profile_process: str = "worker") -> None:
    """Record again after `pause()`."""
    _state["paused"] = False
    if _state["running"]:
        lib.ember_profile_set(_core.native_engine(), 1)


def recording() -> bool:
    """Whether the profiler records now (running and not paused)."""
    return _state["running"] and not _state["paused"]


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
                _records.append((name, r.queue, r.worker, r.start_ns, r.end_ns, r.thread))
    if _config["profile_memory"] and recording():
        from . import memory
        _add_user(("C", MEMORY, "Memory: cpu(0)", monotonic_ns(), memory.stats()["bytes_in_use"]))


def _add_user(record: tuple) -> None:
    with _lock:
        _user.append(record)


def record_custom(name: str, start_ns: int, end_ns: int) -> None:
    """Note that a custom operator's Python code ran as `name` in this thread (ember.ops.custom):
    the engine ops it ran there inside that time become `<name's op type>::<op>`."""
    with _lock:
        _custom.append((name, start_ns, end_ns, threading.get_ident()))


# -- what was recorded, by category ----------------------------------------------------------

def _ranges(records, user, custom):
    """(category, name, start_ns, end_ns, thread, engine record or None) of every recorded range."""
    by_thread = defaultdict(list)   # thread -> [(start, index)] of its engine records, sorted
    for i, r in enumerate(records):
        by_thread[r[5]].append((r[3], i))
    for starts in by_thread.values():
        starts.sort()
    inside = {}  # engine records that a custom operator's code ran (in its thread, in its time) -> op type
    for cname, start, end, thread in custom:
        op_type = cname[len("_backward_"):] if cname.startswith("_backward_") else cname
        starts = by_thread.get(thread, ())
        for _s, i in starts[bisect_left(starts, (start, -1)):]:
            if records[i][3] > end:
                break
            if records[i][4] <= end:
                inside[i] = op_type
    out = []
    for i, r in enumerate(records):
        category, name = (CUSTOM_OPERATOR, f"{inside[i]}::{r[0]}") if i in inside else (OPERATOR, r[0])
        out.append((category, name, r[3], r[4], r[5], r))
    out.extend((CUSTOM_OPERATOR, f"{n}::pure_python", s, e, t, None) for n, s, e, t in custom)
    out.extend((u[1], u[2], u[3], u[4], u[5], None) for u in user if u[0] == "X")
    return out


def _statistics(sort_by: str, ascending: bool) -> dict:
    with _lock:
        records = _records[_agg_from["records"]:]
        user = _user[_agg_from["user"]:]
        custom = _custom[_agg_from["custom"]:]
    times = defaultdict(lambda: defaultdict(list))
    for category, name, start, end, _t, _r in _ranges(records, user, custom):
        times[category][name].append(max(end - start, 0) / 1e6)
    values = defaultdict(lambda: defaultdict(list))
    for rec in user:
        if rec[0] == "C":
            values[rec[1]][rec[2]].append(rec[4])
    key = _SORT_KEYS[sort_by]

    def table(groups, memory: bool):
        out = {}
        for category, items in groups.items():
            rows = {}
            for name, xs in items.items():
                scale = 1 / 1024 if memory else 1
                row = {"Count": len(xs)}
                if not memory:
                    row["Total"] = sum(xs)
                row.update(Min=min(xs) * scale, Max=max(xs) * scale, Avg=sum(xs) / len(xs) * scale)
                rows[name] = row
            order = sorted(rows, key=lambda n: rows[n].get(key, rows[n]["Avg"]), reverse=not ascending)
            out[category] = {n: rows[n] for n in order}
        return out

    for category, counters in values.items():   # a user's counters (values, not ms) sort with their domain
        if category != MEMORY:
            times[category].update(counters)
    return {"Time": table(times, False), "Memory": table({c: v for c, v in values.items() if c == MEMORY}, True),
            "Unit": {"Time": "ms", "Memory": "kB"}}


def dumps(reset: bool = False, format: str = "table", sort_by: str = "total", ascending: bool = False) -> str:
    """Aggregate statistics since the last reset: per category and name the count and the total,
    min, max and average time in ms (counters: values; memory: kB), as a table or JSON, each
    category's entries sorted by `sort_by` ('total', 'avg', 'min', 'max', 'count')."""
    assert format in ("table", "json"), f"Invalid value provided for format: {format}. Support: 'table', 'json'"
    assert sort_by in _SORT_KEYS, (f"Invalid value provided for sort_by: {sort_by}. "
                                   "Support: 'total', 'avg', 'min', 'max', 'count'")
    assert ascending in (False, True), f"Invalid value provided for ascending: {ascending}. Support: False, True"
    assert reset in (False, True), f"Invalid value provided for reset: {reset}. Support: False, True"
    _core.wait_all_quiet()
    _collect()
    stats = _statistics(sort_by, ascending)
    if reset:
        with _lock:
            _agg_from.update(records=len(_records), user=len(_user), custom=len(_custom))
    if format == "json":
        return json.dumps(stats, indent=4)
    lines = ["Profile Statistics:", "\tNote the difference in units for different entries."]
    for group in ("Time", "Memory"):
        memory = group == "Memory"
        unit = "kB" if memory else "ms"
        for category, rows in stats[group].items():
            lines += [category, "=================",
                      f"{'Name':<40}{'Count':>8}" + ("" if memory else f"{'Total(ms)':>12}")
                      + f"{'Min(' + unit + ')':>12}{'Max(' + unit + ')':>12}{'Avg(' + unit + ')':>12}"]
            for name, r in rows.items():
                lines.append(f"{name[:39]:<40}{r['Count']:>8}" + ("" if memory else f"{r['Total']:>12.4f}")
                             + f"{r['Min']:>12.4f}{r['Max']:>12.4f}{r['Avg']:>12.4f}")
            lines.append("")
    return "\n".join(lines)


def _trace_events(records, user, custom) -> list:
    """Chrome trace events: engine ops in one process per engine queue (a thread per worker,
    'caller' for ops run in their caller), the user's ranges, counters and markers in process 0."""
    events = []
    pids = {}
    t0 = min([r[3] for r in records] + [u[3] for u in user] + [c[1] for c in custom], default=0)
    for category, name, start, end, thread, rec in _ranges(records, user, custom):
        if rec is not None:
            pid, tid = pids.setdefault(rec[1], len(pids) + 1), (rec[2] if rec[2] >= 0 else "caller")
        else:
            pid, tid = 0, thread
        events.append({"name": name, "cat": category, "ph": "X", "pid": pid, "tid": tid,
                       "ts": (start - t0) / 1000.0, "dur": max(end - start, 0) / 1000.0})
    for rec in user:
        if rec[0] == "C":
            events.append({"name": rec[2], "cat": rec[1], "ph": "C", "pid": 0, "ts": (rec[3] - t0) / 1000.0,
                           "args": {rec[2]: rec[4]}})
        elif rec[0] == "i":
            events.append({"name": rec[2], "cat": rec[1], "ph": "i", "pid": 0, "tid": 0,
                           "ts": (rec[3] - t0) / 1000.0, "s": {"global": "g", "thread": "t"}.get(rec[4], "p")})
    for queue, pid in pids.items():
        events.append({"name": "process_name", "ph": "M", "pid": pid,
                       "args": {"name": f"ember engine: {_core.queue_name(queue)} queue"}})
    events.append({"name": "process_name", "ph": "M", "pid": 0, "args": {"name": "ember: profiling objects"}})
    return events


def dump(finished: bool = True, filename: Optional[str] = None, profile_process: str = "worker") -> str:
    """Write everything recorded so far as Chrome trace JSON (the whole trace each time: with
    finished=False the records are kept and later dumps add to them); returns the file name."""
    _core.wait_all_quiet()
    _collect()
    path = filename or _config["filename"]
    with _lock:
        records, user, custom = list(_records), list(_user), list(_custom)
        if finished:
            _records.clear()
            _user.clear()
            _custom.clear()
            _agg_from.update(records=0, user=0, custom=0)
    with open(path, "w") as f:
        json.dump({"traceEvents": _trace_events(records, user, custom), "displayTimeUnit": "ms"}, f)
    return path


def records() -> List[tuple]:
    """Raw engine records (name, queue, worker, start_ns, end_ns, thread) collected so far."""
    _collect()
    with _lock:
        return list(_records)


# -- the user's profiling objects (MXNet's Domain, Task, Frame, Event, Counter, Marker) --------

class Domain:
    """A category grouping profiling objects (tasks, frames, counters, markers)."""

    def __init__(self, name: str):
        if not isinstance(name, str):
            raise TypeError(f"profiler.Domain: name must be a string, got {name!r}")
        self.name = name

    def __str__(self) -> str:
        return self.name

    def new_task(self, name: str) -> "Task":
        return Task(self, name)

    def new_frame(self, name: str) -> "Frame":
        return Frame(self, name)

    def new_counter(self, name: str, value: Optional[int] = None) -> "Counter":
        return Counter(self, name, value)

    def new_marker(self, name: str) -> "Marker":
        return Marker(self, name)


class _Range:
    """A named time range recorded from start() to stop() in its category."""

    def __init__(self, category: str, name: str):
        self.name = name
        self._category = category
        self._start: Optional[int] = None

    def start(self) -> None:
        self._start = monotonic_ns()

    def stop(self) -> None:
        if self._start is None:
            raise RuntimeError(f"profiler: '{self.name}' stopped without being started")
        start, self._start = self._start, None
        if recording():
            _add_user(("X", self._category, self.name, start, monotonic_ns(), threading.get_ident()))

    def __str__(self) -> str:
        return self.name


class Task(_Range):
    """A named range of work in a domain: start() ... stop()."""

    def __init__(self, domain: Domain, name: str):
        super().__init__(domain.name, name)
        self.domain = domain


class Frame(_Range):
    """A named range in a domain, meant for a repeated unit such as one iteration."""

    def __init__(self, domain: Domain, name: str):
        super().__init__(domain.name, name)
        self.domain = domain


class Event(_Range):
    """A named range outside any domain (category 'event')."""

    def __init__(self, name: str):
        super().__init__("event", name)


class Counter:
    """A value tracked over time in a domain; each change is recorded while the profiler runs."""

    def __init__(self, domain: Domain, name: str, value: Optional[int] = None):
        self.name = name
        self.domain = domain
        self._value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value: int) -> None:
        self._value = int(value)
        if recording():
            _add_user(("C", self.domain.name, self.name, monotonic_ns(), self._value))

    def increment(self, delta: int = 1) -> None:
        self.set_value(self._value + int(delta))

    def decrement(self, delta: int = 1) -> None:
        self.set_value(self._value - int(delta))

    def __iadd__(self, delta: int) -> "Counter":
        self.increment(delta)
        return self

    def __isub__(self, delta: int) -> "Counter":
        self.decrement(delta)
        return self

    def __str__(self) -> str:
        return self.name


class Marker:
    """An instant in a domain: mark(scope) with scope 'global', 'process', 'thread', 'task' or 'marker'."""

    def __init__(self, domain: Domain, name: str):
        self.name = name
        self.domain = domain

    def mark(self, scope: str = "process") -> None:
        if scope not in ("global", "process", "thread", "task", "marker"):
            raise ValueError(f"profiler.Marker.mark: scope must be 'global', 'process', 'thread', 'task' or "
                             f"'marker', got {scope!r}")
        if recording():
            _add_user(("i", self.domain.name, self.name, monotonic_ns(), scope))
