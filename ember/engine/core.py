"""Python side of the native engine: variables, push, wait, bulk, engine type.

A Python op is pushed as the C trampoline `ember_py_trampoline` plus an integer
handle; the trampoline (a cffi callback) takes the GIL only while the Python
callable runs.  Native kernels are pushed as C function pointers and run
without the GIL.  Every call into C goes through cffi's out-of-line API mode,
which releases the GIL for the duration of the call, so a push never blocks
workers that need the GIL.

When the caller asks for it (`inline=True`) and an op's inputs are already
available at push, the C core hands the op back to the pusher, which runs it
at once: no thread hand-off, no GIL ping-pong.  That is the fast path for
tiny imperative ops; large ops go to the worker pools and run in parallel.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
from functools import partial
import itertools
import os
import threading
from time import perf_counter as _clock
from typing import Callable, Iterable, Optional, Sequence

from ..base import EngineError
from . import policy as _policy
from ._native import ffi, lib
from .errors import ErrorTable

PROPS = {"normal": lib.EMBER_PROP_NORMAL, "copy": lib.EMBER_PROP_COPY, "async": lib.EMBER_PROP_ASYNC}
ENGINE_TYPES = {
    "threadedengine": False, "threadedengineperdevice": False, "threadedenginepooled": False,
    "naiveengine": True, "threaded": False, "naive": True,
}
_CPU_QUEUE, _COPY_QUEUE = 0, 1


def _env_int(names: Sequence[str], default: int) -> int:
    for name in names:
        value = os.environ.get(name)
        if value:
            try:
                return max(1, int(value))
            except ValueError:
                raise EngineError(f"{name}={value!r} is not an integer") from None
    return default


def _engine_type_from_env() -> bool:
    name = os.environ.get("EMBER_ENGINE_TYPE") or os.environ.get("MXNET_ENGINE_TYPE") or "ThreadedEngine"
    key = name.lower().replace("async", "")
    if key not in ENGINE_TYPES:
        raise EngineError(f"unknown engine type {name!r}; use ThreadedEngine or NaiveEngine")
    return ENGINE_TYPES[key]


def _released_ids():
    buf = ffi.new("int[256]")
    while True:
        n = lib.ember_released_errors(_E, buf, 256)
        if n == 0:
            return
        yield from buf[0:n]


CPU_WORKERS = _env_int(("EMBER_CPU_WORKER_NTHREADS", "MXNET_CPU_WORKER_NTHREADS"), os.cpu_count() or 1)
_E = lib.ember_engine_create(1 if _engine_type_from_env() else 0, CPU_WORKERS, _env_int(("EMBER_COPY_NTHREADS",), 1))
_errors = ErrorTable(_released_ids, functools.partial(lib.ember_clear_error, _E))
_naive = [_engine_type_from_env()]  # NaiveEngine: op errors raise at the call that ran the op
_pyops: dict = {}
_op_ids = itertools.count(1)
_names: dict = {}
_gpu_queues: dict = {}
_queue_names = {_CPU_QUEUE: "cpu", _COPY_QUEUE: "copy"}
_tls = threading.local()
_NULL = ffi.NULL
_push = lib.ember_push
_inline_begin = lib.ember_inline_begin
_inline_end = lib.ember_inline_end
_complete = lib.ember_complete
_cast = ffi.cast
_trampoline = None  # set below, after the callback is defined
_RUN_IN_CALLER = lib.EMBER_RUN_IN_CALLER
_FLAG_CALLER = lib.EMBER_FLAG_CALLER
_FLAG_ON_ERROR = lib.EMBER_FLAG_ON_ERROR
_SKIPPED = lib.EMBER_SKIPPED
_PENDING = lib.EMBER_PENDING
_REQUEUE = lib.EMBER_REQUEUE


def op_name(name: Optional[str]):
    """A C string for an op name, interned for the life of the process (the profiler keeps pointers)."""
    c = _names.get(name)
    if c is None:
        c = ffi.new("char[]", (name or "op").encode())
        _names[name] = c
    return c


class Var:
    """An engine variable: stands for one resource (array storage, RNG state, memory block, workspace).

    Deleting it (`delete()` or garbage collection) is ordered after every op pending on it.
    """

    __slots__ = ("_h", "name", "nbytes", "__weakref__")

    def __init__(self, name: Optional[str] = None, nbytes: int = 0):
        self._h = lib.ember_var_new(_E)
        self.name = name
        self.nbytes = nbytes  # bytes of the resource it stands for (0: unknown); read by ember.engine.lab

    def wait(self) -> None:
        """Block until every pending write finishes; re-raise an error recorded on this variable."""
        wait(self)

    @property
    def error(self) -> Optional[BaseException]:
        """The error currently recorded on this variable (None if its last write succeeded)."""
        self._check()
        eid = lib.ember_var_error(self._h)
        return _errors.exception(eid) if eid and not _errors.is_consumed(eid) else None

    def _check(self):
        if self._h is None:
            raise EngineError(f"engine variable {self.name or ''} was already deleted")

    def delete(self) -> None:
        """Free the variable once every op pending on it has finished."""
        if bulk_threads:
            # This thread's open bulk group may hold ops on this variable that are not pushed
            # yet (a temporary array dying inside `with bulk():`): push them first.
            flush_bulk()
        h, self._h = self._h, None
        if h is not None:
            lib.ember_var_delete(_E, h)

    def __del__(self):
        try:
            self.delete()
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass

    def __repr__(self):
        return f"<engine.Var {self.name or hex(id(self))}>"


class _Done:
    """Completion callback handed to async ops: call it once, with an exception on failure."""

    __slots__ = ("_op", "_name", "_thread")

    def __init__(self, op, name):
        self._op = op
        self._name = name
        self._thread = threading.get_ident()

    def __call__(self, exc: Optional[BaseException] = None) -> None:
        op, self._op = self._op, None
        if op is None:
            raise EngineError(f"completion of async op '{self._name}' called twice")
        eid = _errors.register(exc, self._name) if exc is not None else 0
        lib.ember_complete(op, eid)
        if eid and _naive[0] and threading.get_ident() == self._thread:
            _tls.naive_failed = eid  # raised by the push that ran it, if it completed there

    @property
    def input_failed(self) -> bool:
        """Whether the op runs although an input failed or the engine cancelled it (only ops
        pushed with on_error=True run then); it ends with that error whatever done() is given."""
        return self._op is not None and bool(lib.ember_op_input_failed(self._op))


def _run(fn, prop, name, op):
    """Run a Python op body; returns 0, an error id, or EMBER_PENDING (async)."""
    try:
        if prop == "async":
            fn(_Done(op, name))
            return _PENDING
        fn()
        return 0
    except BaseException as exc:  # noqa: BLE001 - recorded, re-raised at wait
        eid = _errors.register(exc, name)
        if _naive[0]:  # NaiveEngine runs ops in the pushing thread: the push raises it
            _tls.naive_failed = eid
        return eid


def _raise_naive_failure(writes=()) -> None:
    """NaiveEngine (as MXNet's): the error of an op just run (NaiveEngine's push returns once it
    finished, also an async op completed by another thread) raises at the call that ran it."""
    eid = getattr(_tls, "naive_failed", 0)
    if eid:
        _tls.naive_failed = 0
        _errors.raise_for(eid)
    for h in writes:
        eid = lib.ember_var_error(h)
        if eid:
            _errors.raise_for(eid)


@ffi.def_extern()
def ember_py_trampoline(ctx, op):
    fn, prop, name = _pyops.pop(int(ffi.cast("intptr_t", ctx)))
    return _run(fn, prop, name, op)


BATCH_SLICE_S = 0.0002  # a worker's batch of Python ops stops after this long: later ops queue again


@ffi.def_extern()
def ember_py_batch(ctxs, ops, n, errs):
    # Ready ops popped together run under one GIL acquisition; past the time slice the rest go
    # back to the queue, so an op that becomes ready meanwhile (maybe of higher priority) is not
    # stuck behind a long batch.
    deadline = _clock() + BATCH_SLICE_S
    for i in range(n):
        if i and _clock() > deadline:
            for j in range(i, n):
                errs[j] = _REQUEUE
            return 0
        fn, prop, name = _pyops.pop(int(ffi.cast("intptr_t", ctxs[i])))
        errs[i] = _run(fn, prop, name, ops[i])
    return 0


_trampoline = lib.ember_py_trampoline
lib.ember_set_batch(_E, lib.ember_py_trampoline, lib.ember_py_batch)


def _queue_for(device, prop: str) -> int:
    if prop == "copy":
        return _COPY_QUEUE
    if device is None or getattr(device, "device_type", "cpu") == "cpu":
        return _CPU_QUEUE
    key = (device.device_type, device.device_id)
    q = _gpu_queues.get(key)
    if q is None:
        q = lib.ember_queue_add(_E, _env_int(("EMBER_GPU_WORKER_NTHREADS", "MXNET_GPU_WORKER_NTHREADS"), 2))
        if q < 0:
            raise EngineError("too many device queues")
        _gpu_queues[key] = q
        _queue_names[q] = f"{device.device_type}({device.device_id})"
    return q


def _handles(vars_: Iterable[Var], what: str):
    out = []
    for v in vars_:
        h = getattr(v, "_h", False)
        if not h:
            if h is False:
                raise TypeError(f"push: {what} must be engine.Var objects, got {type(v).__name__}")
            raise EngineError(f"push: engine variable {v.name or ''} in {what} was already deleted")
        out.append(h)
    return out


def push(fn: Callable, read: Iterable[Var] = (), write: Iterable[Var] = (), priority: int = 0,
         device=None, name: Optional[str] = None, prop: str = "normal", inline: bool = False,
         on_error: bool = False) -> None:
    """Schedule `fn` after the ops it depends on through `read` and `write`.

    fn() runs on a worker of the device's queue (or, with inline=True, in this
    thread when everything it needs is ready now).  prop='async': fn(done) is
    called and must call done() or done(exc) later, from any thread.
    prop='copy' runs on the copy queue.  An exception raised by fn is recorded
    on every var in `write` and re-raised by wait()/wait_all().  An op whose input
    failed is skipped (its writes inherit the error), unless on_error=True (async
    ops only): then it still runs, `done.input_failed` is true, and it must still
    call done(), e.g. to release an ordered resource that later ops wait for.
    """
    bulk = getattr(_tls, "bulk", None)
    if inline and bulk is None and prop == "normal" and _inline_begin(_E):
        _run_idle_inline(fn, read, write, name)
        return
    if prop not in PROPS:
        raise ValueError(f"push: prop must be one of {sorted(PROPS)}, got {prop!r}")
    if on_error and prop != "async":
        raise ValueError(f"push: on_error=True needs prop='async' (the op learns of the failure "
                         f"through done.input_failed), got prop={prop!r}")
    if bulk is not None and prop == "normal" and priority == 0 and not _naive[0]:
        bulk.add(fn, read, write, name)  # (NaiveEngine runs each op at its call, as MXNet's)
        return
    if bulk is not None:
        bulk.flush()
    _push_now(fn, read, write, priority, device, name, prop, inline, _FLAG_ON_ERROR if on_error else 0)


def _run_idle_inline(fn, read, write, name):
    """push() of an inline op while the engine is idle: check the variables, then run it now."""
    try:
        bad = any(v._h is None for v in write) or any(v._h is None for v in read)
    except AttributeError:
        bad = True
    if bad:
        _inline_end(_E, _NULL, 0, 0)
        raise _handle_error(read, write)
    _run_claimed(fn, name, lambda: write)


def run_if_idle(fn: Callable, name: Optional[str] = None, writes_on_error: Optional[Callable] = None) -> bool:
    """Run fn() now, in this thread, if the engine is idle; return False (and do nothing) if not.

    Idle: nothing pending anywhere, no variable holding an error, no bulk group open in this thread,
    profiler off.  While fn runs no other op starts, so fn sees every earlier write and no later
    access, exactly as a pushed op would.  If fn raises, the error is recorded on the variables that
    `writes_on_error()` returns (the caller's outputs) and re-raised at their next wait, as usual.
    This is the cheapest way to run a tiny op: no variable needs to exist unless it fails.
    """
    if getattr(_tls, "bulk", None) is not None or not _inline_begin(_E):
        return False
    _run_claimed(fn, name, writes_on_error)
    return True


def _run_claimed(fn, name, writes_on_error):
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - recorded on the written variables, raised at wait
        release_claim_failed(exc, name, writes_on_error() if writes_on_error is not None else ())
        return
    _inline_end(_E, _NULL, 0, 0)


def run_in_caller(fn: Callable, args: tuple, name: Optional[str], deps) -> bool:
    """Run `fn(*args)` now, in this thread, if the engine lets the op start at once; else do
    nothing and return False (the caller then pushes it the ordinary way, `engine.push`).

    The one in-caller protocol, shared by the imperative path and the executors (internal: not
    part of `ember.engine`'s public API).  Two ways are tried, in this order:

    1. the engine-wide idle claim: nothing pending anywhere, no variable carrying an error,
       profiler off: fn runs while no other op may start, without registering anything (no
       engine variable is needed unless fn fails);
    2. "every access can start now": the op is registered on its variables and handed to this
       thread only if nothing pending stands in its way (no pending write on what it reads,
       nothing pending on what it writes, no error); ops pushed meanwhile wait for it.

    `deps` is a zero-argument callable returning `(reads, writes, fresh)` (sequences of Var),
    called only when needed (the engine is busy, or fn raised): `reads`/`writes` are the op's
    accesses; `fresh` holds variables of outputs made for this op that no other op can reach
    yet: they need no ordering and are not claimed, but carry fn's error like `writes`.
    Returns True when the op ran here: if fn raised, the error is recorded on `writes` and
    `fresh` and raised at their next wait (under NaiveEngine, raised here).  Returns False,
    having run and pushed nothing, when the op would have to wait, when this thread has a bulk
    group open, or while `ember.engine.lab` records.
    """
    if bulk_threads:
        if getattr(_tls, "bulk", None) is not None or recorder is not None:
            return False
    if _inline_begin(_E):
        try:
            fn(*args)
        except BaseException as exc:  # noqa: BLE001 - recorded on the written variables, raised at wait
            _, writes, fresh = deps()
            release_claim_failed(exc, name, tuple(writes) + tuple(fresh))
            return True
        _inline_end(_E, _NULL, 0, 0)
        return True
    reads, writes, fresh = deps()
    op = claim_vars(reads, writes, name)
    if op is None:
        return False
    try:
        fn(*args)
    except BaseException as exc:  # noqa: BLE001
        eid = _errors.register(exc, name)
        _complete(op, eid)
        if fresh:  # not claimed: they get the error through an op of their own (raised once)
            _push_now(partial(_reraise, exc), (), fresh, 0, None, name, "normal", False)
        if _naive[0]:
            _errors.raise_for(eid)
        return True
    _complete(op, 0)
    return True


def _reraise(exc: BaseException) -> None:
    raise exc


# The run_if_idle protocol in pieces, for per-op hot paths that cannot afford a closure per op
# (ember/imperative/fastpath.py):  if claim_idle(): run the op, then release_claim() -- or, if it
# raised, release_claim_failed(exc, name, written_vars).  claim_idle() does not look at bulk
# groups: callers check `bulk_threads` first.
claim_idle = functools.partial(_inline_begin, _E)
release_claim = functools.partial(_inline_end, _E, _NULL, 0, 0)


def release_claim_failed(exc: BaseException, name: Optional[str], writes: Sequence[Var]) -> None:
    """End an inline claim whose op raised `exc`: the error is recorded on `writes` (raised at their wait)."""
    eid = _errors.register(exc, name)
    handles = [v._h for v in writes]
    _inline_end(_E, handles, len(handles), eid)
    if _naive[0]:
        _errors.raise_for(eid)


_FLAG_NOW = lib.EMBER_FLAG_CALLER | lib.EMBER_FLAG_NOW


def claim_vars(read: Sequence[Var], write: Sequence[Var], name: Optional[str] = None):
    """Register an op on `read`/`write` and hand it to this thread, if every access can start now.

    The other half of the hot-path protocol, for when the engine is not idle: the op waits for
    nothing (no pending write on what it reads, nothing pending on what it writes, no error), so
    the caller runs it at once and then calls finish_claimed(op[, exc]); ops pushed on these
    variables meanwhile wait for it, as for any pushed op.  Returns None, having pushed nothing,
    when the op would have to wait: push it the ordinary way then.
    """
    reads, writes = op_handles(read, write)
    run_here = _run_here_slot()
    rc = _push(_E, _trampoline, _NULL, reads, len(reads), writes, len(writes), _CPU_QUEUE, 0,
               PROPS["normal"], _names.get(name) or op_name(name), _FLAG_NOW, run_here)
    return run_here[0] if rc == _RUN_IN_CALLER else None


def finish_claimed(op, exc: Optional[BaseException] = None, name: Optional[str] = None) -> None:
    """Complete an op from claim_vars; `exc` (if it raised) is recorded on its writes, raised at their wait
    (under NaiveEngine, here)."""
    eid = _errors.register(exc, name) if exc is not None else 0
    _complete(op, eid)
    if eid and _naive[0]:
        _errors.raise_for(eid)


def register_error(exc: BaseException, name: Optional[str] = None) -> int:
    """An error id for `exc`, for native code that ends ops itself (ember_complete(op, id)); wait()
    and wait_all() raise `exc` for it."""
    return _errors.register(exc, name)


def _handle_error(read, write):
    try:
        _handles(read, "read")
        _handles(write, "write")
    except (TypeError, EngineError) as exc:
        return exc
    return EngineError("push: bad variable")


def op_handles(read: Sequence[Var], write: Sequence[Var]):
    """(read handles, write handles) of live Vars, for pushes made from native code;
    TypeError/EngineError naming a bad one."""
    try:
        reads = [v._h for v in read]
        writes = [v._h for v in write]
    except AttributeError:
        reads, writes = _handles(read, "read"), _handles(write, "write")
    if None in reads or None in writes:
        _handles(read, "read"), _handles(write, "write")  # raises the clear error
    return reads, writes


def _run_here_slot():
    """This thread's `ember_opr **` where ember_push hands back an op for the caller to run."""
    try:
        return _tls.run_here
    except AttributeError:
        run_here = _tls.run_here = ffi.new("ember_opr **")
        return run_here


def _push_now(fn, read, write, priority, device, name, prop, inline, flags=0):
    if recorder is not None:  # ember.engine.lab is recording: it notes the op and times fn
        fn, read, write = recorder.on_push(fn, read, write, priority, device, name, prop)
    inline = inline or getattr(_tls, "in_caller", False)
    reads, writes = op_handles(read, write)
    hid = next(_op_ids)
    _pyops[hid] = (fn, prop, name)
    if _naive[0]:
        _tls.naive_failed = 0
    run_here = _run_here_slot()
    cname = _names.get(name) or op_name(name)
    queue = _CPU_QUEUE if device is None and prop == "normal" else _queue_for(device, prop)
    rc = _push(_E, _trampoline, _cast("void *", hid), reads, len(reads), writes, len(writes),
               queue, priority, PROPS[prop], cname,
               # an async op ready at push starts in this thread anyway: run it here, without
               # the C-to-Python callback the engine would otherwise make
               (_FLAG_CALLER if inline or prop == "async" else 0) | flags, run_here)
    if rc == _RUN_IN_CALLER:
        del _pyops[hid]
        op = run_here[0]
        rc = _run(fn, prop, name, op)
        if rc != _PENDING:
            _complete(op, rc)
    elif rc == _SKIPPED:
        del _pyops[hid]
    elif rc < 0:
        _pyops.pop(hid, None)
        raise EngineError(f"push of '{name}' rejected by the engine (code {rc})")
    if _naive[0]:
        _raise_naive_failure(writes)


@contextlib.contextmanager
def ops_in_caller():
    """Within the block, every op this thread pushes runs at once, in this thread, when its inputs
    are ready (as small inline ops do), however large it is and however busy the engine.

    For code that pushes ops from inside an op (a Python custom operator's forward, see
    ember/ops/custom.py): its ops, on variables nothing else holds, finish before it returns
    without needing a worker, so waiting for them inside the op cannot deadlock."""
    prev = getattr(_tls, "in_caller", False)
    _tls.in_caller = True
    try:
        yield
    finally:
        _tls.in_caller = prev


def push_native(fn_ptr, ctx=None, read: Iterable[Var] = (), write: Iterable[Var] = (), priority: int = 0,
                device=None, name: Optional[str] = None, inline: bool = False) -> None:
    """Push a C kernel (an `int (*)(void *ctx, ember_opr *op)` cdata); it runs without the GIL."""
    flush_bulk()
    if recorder is not None:  # ember.engine.lab notes it (a C kernel is not timed)
        _, read, write = recorder.on_push(None, read, write, priority, device, name, "native")
    reads = _handles(read, "read")
    writes = _handles(write, "write")
    rc = _push(_E, fn_ptr, ctx if ctx is not None else _NULL, reads, len(reads), writes, len(writes),
               _queue_for(device, "normal"), priority, PROPS["normal"], op_name(name),
               lib.EMBER_FLAG_INLINE if inline else 0, _NULL)
    if rc < 0:
        raise EngineError(f"push of native op '{name}' rejected by the engine (code {rc})")


def flush_bulk() -> None:
    """Push this thread's open bulk group now.  Code that pushes ops from C (push_native, the
    kvstore's native queue and copies) calls it first: those pushes bypass the group, so ops it
    still holds would otherwise be ordered after them."""
    bulk = getattr(_tls, "bulk", None)
    if bulk is not None:
        bulk.flush()


def wait(var: Var) -> None:
    """Block until `var` has no pending write; raise the error recorded on it, if any."""
    flush_bulk()
    var._check()
    eid = lib.ember_wait_var(_E, var._h)
    if eid:
        _errors.raise_for(eid)


def wait_all(timeout: Optional[float] = None) -> None:
    """Block until every pushed op has finished; raise the first error since the last wait_all.

    With a timeout (seconds), raise TimeoutError if ops are still pending then.
    """
    flush_bulk()
    eid = lib.ember_wait_all(_E, -1 if timeout is None else int(timeout * 1000))
    if eid == -1:
        raise TimeoutError(f"engine still has {stats()['pending']} pending ops after {timeout} s")
    _errors.raise_for_wait_all(eid)


class _Bulk:
    """Consecutive small ops of one thread gathered into one engine op (MXNet's bulk execution)."""

    def __init__(self, size: int):
        self.size = size
        self.fns = []
        self.reads = []
        self.writes = []
        self.names = []

    def add(self, fn, read, write, name):
        self.fns.append(fn)
        self.reads.extend(read)
        self.writes.extend(write)
        self.names.append(name)
        if len(self.fns) >= self.size:
            self.flush()

    def flush(self):
        if not self.fns:
            return
        fns, reads, writes = self.fns, self.reads, self.writes
        self.fns, self.reads, self.writes, self.names = [], [], [], []

        def run_segment():
            for f in fns:
                f()

        _push_now(run_segment, reads, writes, 0, None, f"Bulk[{len(fns)}]", "normal", False)


@contextlib.contextmanager
def bulk(size: int):
    """Within the block, this thread's ops are grouped `size` at a time into single engine ops.

    An error in one op of a group fails the whole group (its writes carry the error).
    """
    previous = set_bulk_size(size)
    try:
        yield
    finally:
        set_bulk_size(previous)


def set_bulk_size(size: int) -> int:
    """Set this thread's bulk size (0 or 1 turns bulking off); returns the previous size."""
    if not isinstance(size, int) or size < 0:
        raise ValueError(f"bulk size must be a non-negative int, got {size!r}")
    global bulk_threads
    old = getattr(_tls, "bulk", None)
    if old is not None:
        old.flush()
    new = _Bulk(size) if size > 1 else None
    with _bulk_count_lock:
        bulk_threads += (new is not None) - (old is not None)
    _tls.bulk = new
    return old.size if old is not None else 0


# How many threads have a bulk group open.  Callers that run ops inline without engine.push (the
# imperative tiny-op path) check this one global instead of a thread-local on every op: while it
# is non-zero they take the pushing path, which respects this thread's open group.
bulk_threads = 0
# While ember.engine.lab records, it holds one count here too (so every op takes the pushing path
# and is seen) and sets `recorder`; None otherwise: the push path's only cost is that one check.
recorder = None
_bulk_count_lock = threading.Lock()


_policy_state = {"name": "priority", "key": None}


@ffi.def_extern()
def ember_py_policy_key(name, priority, seq, dependants, queue):
    key = _policy_state["key"]
    try:
        return int(key(ffi.string(name).decode() if name != ffi.NULL else "", priority, seq, dependants, queue))
    except Exception:  # noqa: BLE001 - a broken experimental policy falls back to priority order
        return priority


def set_policy(policy) -> str:
    """Swap the scheduling policy at run time ('priority', 'fifo', 'lifo', 'critical_path' or a
    Python policy object); returns the previous policy's name.  Ops already queued keep their order."""
    code, key, name = _policy.resolve(policy)
    old = _policy_state["name"]
    _policy_state.update(name=name, key=key)
    lib.ember_set_policy(_E, code, lib.ember_py_policy_key if key is not None else ffi.NULL)
    return old


def get_policy() -> str:
    return _policy_state["name"]


def set_engine_type(name: str) -> str:
    """Switch between 'ThreadedEngine' and 'NaiveEngine' (after finishing pending ops); returns the old type."""
    key = str(name).lower().replace("async", "")
    if key not in ENGINE_TYPES:
        raise ValueError(f"unknown engine type {name!r}; use ThreadedEngine or NaiveEngine")
    old = engine_type()
    wait_all_quiet()
    lib.ember_engine_set_naive(_E, 1 if ENGINE_TYPES[key] else 0)
    _naive[0] = ENGINE_TYPES[key]
    return old


def engine_type() -> str:
    return "NaiveEngine" if lib.ember_engine_is_naive(_E) else "ThreadedEngine"


def wait_all_quiet() -> None:
    """Finish pending ops without raising (errors stay on their variables)."""
    lib.ember_wait_all(_E, -1)


def stats() -> dict:
    """Counters: ops pushed, completed, failed, skipped (inherited errors), run inline, pending; per queue."""
    s = ffi.new("ember_stats *")
    lib.ember_get_stats(_E, s)
    _errors.prune()
    queues = {}
    for q in range(s.nqueues):
        queues[_queue_names.get(q, str(q))] = {
            "pushed": lib.ember_queue_stat(_E, q, 0), "run": lib.ember_queue_stat(_E, q, 1),
            "waiting": lib.ember_queue_stat(_E, q, 2)}
    return {"pushed": s.pushed, "completed": s.completed, "failed": s.failed, "skipped": s.skipped,
            "inline": s.inline_runs, "pending": s.pending, "queues": queues,
            "engine_type": engine_type(), "policy": get_policy(), "errors_held": len(_errors)}


def queue_name(q: int) -> str:
    return _queue_names.get(q, str(q))


def native_engine():
    """The C engine handle (for native extensions and benchmarks)."""
    return _E


# -- process lifecycle --------------------------------------------------------

def _shutdown():
    timeout = float(os.environ.get("EMBER_SHUTDOWN_TIMEOUT", "30"))
    flush_bulk()
    # After stop, pushes run synchronously in the caller, so late garbage collection still works.
    lib.ember_engine_stop(_E, int(timeout * 1000))


def _before_fork():
    flush_bulk()
    lib.ember_engine_stop(_E, int(float(os.environ.get("EMBER_SHUTDOWN_TIMEOUT", "30")) * 1000))


def _after_fork_in_parent():
    lib.ember_engine_start(_E)


def _after_fork_in_child():
    lib.ember_engine_start_in_child(_E)


atexit.register(_shutdown)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)
