"""Record every op pushed to the engine: name, queue, priority, variables (with sizes), timings.

    with ember.engine.lab.record("step.jsonl") as rec:
        ... imperative code, executor forward/backward, kvstore ops ...
    trace = rec.trace          # also written to step.jsonl (and step.jsonl.chrome.json)

While recording, the engine's Python push path reports each op here (one global check in
ember/engine/core.py when not recording) and the op's function is wrapped to stamp its start and
end in the thread that runs it.  Ops that ember would run without the engine (tiny ops on an idle
engine) are pushed instead, so that every op is seen: the recorder turns the engine's profiling
flag on, which disables the idle shortcut, and holds a count in `core.bulk_threads`, which sends
the imperative fast path through `engine.push`.  Recording therefore changes the schedule a
little (every op is registered in its variables' queues); timings are of the op bodies.
Not seen: ops pushed from C (the kvstore's native allreduces and pulls) and variable deletions;
C kernels pushed with push_native are recorded without timings.
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from time import perf_counter_ns
from typing import Iterator, List, Optional

import numpy as np

from .. import core
from .._native import lib
from .trace_format import Trace

# op record fields (a list per op, filled in as the op is pushed and run)
_NAME, _QUEUE, _PRIO, _PROP, _READS, _WRITES, _PUSH, _START, _END, _RUN_THREAD, _PUSH_THREAD = range(11)


class _TimedDone:
    """An async op's completion callback that stamps the op's end before completing it."""

    __slots__ = ("_done", "_rec")

    def __init__(self, done, rec):
        self._done = done
        self._rec = rec

    def __call__(self, exc: Optional[BaseException] = None) -> None:
        self._rec[_END] = perf_counter_ns()
        self._done(exc)

    def __getattr__(self, item):  # input_failed and anything else the op asks of its callback
        return getattr(self._done, item)


class Recorder:
    """Collects the ops pushed between start() and stop(); `trace` holds the result after stop()."""

    def __init__(self):
        self._ops: List[list] = []
        self._var_ids: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
        self._var_nbytes: List[int] = []
        self._var_names: List[Optional[str]] = []
        # re-entrant: a garbage collection inside on_push's locked part can free an array, whose
        # storage release is pushed (and so recorded) by the same thread
        self._lock = threading.RLock()
        self._profiling_was_on = False
        self._t0 = 0
        self.trace: Optional[Trace] = None

    # -- lifetime ------------------------------------------------------------------------------
    def start(self) -> "Recorder":
        if core.recorder is not None:
            raise RuntimeError("ember.engine.lab: a recording is already running (recordings do not nest)")
        from ... import profiler  # late: ember.profiler imports the engine
        self._profiling_was_on = profiler.state() == "run"
        core.flush_bulk()
        core.wait_all_quiet()  # start from an idle engine: every recorded op's dependencies are recorded too
        with core._bulk_count_lock:
            core.bulk_threads += 1
        if not self._profiling_was_on:
            lib.ember_profile_set(core.native_engine(), 1)  # no idle-inline shortcut while on
        self._t0 = perf_counter_ns()  # the trace's time origin: ops pushed later are timed from here
        core.recorder = self
        return self

    def stop(self) -> Trace:
        if core.recorder is not self:
            raise RuntimeError("ember.engine.lab: this recorder is not running")
        try:
            core.flush_bulk()
            core.wait_all_quiet()  # ops pushed while recording finish, so their times are known
        finally:
            core.recorder = None
            with core._bulk_count_lock:
                core.bulk_threads -= 1
            if not self._profiling_was_on:
                e = core.native_engine()
                lib.ember_profile_set(e, 0)
                buf = core.ffi.new("ember_prof_record[1024]")
                while lib.ember_profile_fetch(e, buf, 1024):  # the engine's own records: not wanted
                    pass
        self.trace = self._build()
        return self.trace

    # -- the hook called by core._push_now / core.push_native -----------------------------------
    def on_push(self, fn, read, write, priority, device, name, prop):
        read, write = tuple(read), tuple(write)
        if prop == "native":
            queue = core._queue_for(device, "normal")
        else:
            queue = core._CPU_QUEUE if device is None and prop == "normal" else core._queue_for(device, prop)
        rec = [name or "op", queue, int(priority), prop, None, None, perf_counter_ns(), None, None, None,
               threading.get_ident()]
        with self._lock:
            # as the engine sees them: duplicates once, a variable both read and written is a write
            writes = tuple(dict.fromkeys(self._var_id(v) for v in write))
            rec[_READS] = tuple(v for v in dict.fromkeys(self._var_id(v) for v in read) if v not in writes)
            rec[_WRITES] = writes
            self._ops.append(rec)
        if fn is None:
            return fn, read, write
        if prop == "async":
            def timed_async(done, fn=fn, rec=rec):
                rec[_RUN_THREAD] = threading.get_ident()
                rec[_START] = perf_counter_ns()
                fn(_TimedDone(done, rec))
            return timed_async, read, write

        def timed(fn=fn, rec=rec):
            rec[_RUN_THREAD] = threading.get_ident()
            rec[_START] = perf_counter_ns()
            try:
                fn()
            finally:
                rec[_END] = perf_counter_ns()
        return timed, read, write

    def _var_id(self, v) -> int:
        vid = self._var_ids.get(v)
        if vid is None:
            vid = self._var_ids[v] = len(self._var_nbytes)
            self._var_nbytes.append(int(getattr(v, "nbytes", 0) or 0))
            self._var_names.append(getattr(v, "name", None))
        return vid

    # -- result --------------------------------------------------------------------------------
    def _build(self) -> Trace:
        ops = self._ops
        t0 = self._t0

        def rel(t):
            return np.nan if t is None else float(t - t0)

        workers: dict = {}
        worker = []
        for r in ops:
            th = r[_RUN_THREAD]
            if th is None:
                worker.append(-2)  # never ran (skipped after an input failed) or a C kernel
            elif th == r[_PUSH_THREAD]:
                worker.append(-1)  # ran in the pushing thread
            else:
                worker.append(workers.setdefault(th, len(workers)))
        queues = sorted({r[_QUEUE] for r in ops})
        meta = {"cpu_workers": core.CPU_WORKERS, "policy": core.get_policy(), "engine_type": core.engine_type(),
                "worker_threads": len(workers)}
        return Trace(names=[r[_NAME] for r in ops], queue=[r[_QUEUE] for r in ops],
                     priority=[r[_PRIO] for r in ops], reads=[r[_READS] for r in ops],
                     writes=[r[_WRITES] for r in ops], var_nbytes=self._var_nbytes, var_names=self._var_names,
                     prop=[r[_PROP] for r in ops], push_ns=[rel(r[_PUSH]) for r in ops],
                     start_ns=[rel(r[_START]) for r in ops], end_ns=[rel(r[_END]) for r in ops],
                     worker=worker, in_caller=[w == -1 for w in worker],
                     queue_names={q: core.queue_name(q) for q in queues}, meta=meta)


@contextlib.contextmanager
def record(path: Optional[str] = None, chrome: Optional[str] = None) -> Iterator[Recorder]:
    """Record the ops pushed inside the block; on exit the trace is `recorder.trace`, and is written
    to `path` (JSON lines, docs/policy_lab.md) with a Chrome trace beside it (`chrome`, default
    path + '.chrome.json') when a path is given."""
    rec = Recorder().start()
    try:
        yield rec
    finally:
        trace = rec.stop()
        if path is not None:
            trace.save(path)
            trace.save_chrome(chrome if chrome is not None else str(path) + ".chrome.json")
        elif chrome is not None:
            trace.save_chrome(chrome)
