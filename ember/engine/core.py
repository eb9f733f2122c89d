"""Python side of the native engine: variables, push, wait, bulk, engine type.

A Python op is pushed by `_native.push_fn`, a function of the binding written against the CPython
API: it keeps the GIL (a cffi call releases it, and a worker waiting for the GIL would take it at
every push), and the op holds the callable itself; a worker calls it from C, running such ops one
after another in an engine session that takes the GIL once.  Async ops and ops under NaiveEngine
go through an integer handle into `_pyops` and the cffi callback `ember_py_run`.  Native kernels
are pushed as C function pointers and run without the GIL.  Every other call into C goes through
cffi's out-of-line API mode, which releases the GIL for the duration of the call.

An op may also run in the calling thread, through the one in-caller protocol `run_in_caller`
(the engine-wide idle claim, or "every access can start now"): no thread hand-off, no GIL
ping-pong.  That is the path of tiny imperative ops; large ops go to the worker pools and run in
parallel.  See docs/engine.md.
"""
from __future__ import annotations

import atexit
import contextlib
import gc
from functools import partial
import itertools
import os
import threading
import time
from typing import Callable, Iterable, Optional, Sequence

from ..base import EngineError
from . import policy as _policy
from . import _native
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


def _is_naive(name, error: type) -> bool:
    """Whether engine type `name` is NaiveEngine; `error` names an unknown type."""
    key = str(name).lower().replace("async", "")
    if key not in ENGINE_TYPES:
        raise error(f"unknown engine type {name!r}; use ThreadedEngine or NaiveEngine")
    return ENGINE_TYPES[key]


def _engine_type_from_env() -> bool:
    return _is_naive(os.environ.get("EMBER_ENGINE_TYPE") or os.environ.get("MXNET_ENGINE_TYPE")
                     or "ThreadedEngine", EngineError)


def _run_ahead_from_env() -> int:
    value = os.environ.get("EMBER_RUN_AHEAD", "").strip()
    try:
        return max(int(value), 0) if value else 1024
    except ValueError:
        raise EngineError(f"EMBER_RUN_AHEAD={value!r} is not an integer (ops; 0 = no bound)") from None


def _run_ahead_bytes_from_env() -> int:
    value = os.environ.get("EMBER_RUN_AHEAD_BYTES", "").strip()
    try:
        return max(int(value), 0) if value else 1 << 28
    except ValueError:
        raise EngineError(f"EMBER_RUN_AHEAD_BYTES={value!r} is not an integer (bytes; 0 = no bound)") from None


def _released_ids():
    buf = ffi.new("int[256]")
    while True:
        n = lib.ember_released_errors(_E, buf, 256)
        if n == 0:
            return
        yield from buf[0:n]


CPU_WORKERS = _env_int(("EMBER_CPU_WORKER_NTHREADS", "MXNET_CPU_WORKER_NTHREADS"), os.cpu_count() or 1)
_E = lib.ember_engine_create(1 if _engine_type_from_env() else 0, CPU_WORKERS, _env_int(("EMBER_COPY_NTHREADS",), 1))
# ops a pushing thread may have pending before its pushes wait (set_run_ahead); 0 = no bound
RUN_AHEAD = _run_ahead_from_env()
lib.ember_set_run_ahead(_E, RUN_AHEAD)
# bytes of CPU memory a pushing thread may take while ops are pending before an allocation first waits
# for those ops (set_run_ahead_bytes; 0 = no bound), and the bytes in use at which the next one waits
run_ahead_bytes = [_run_ahead_bytes_from_env()]
run_ahead_mark = [run_ahead_bytes[0] or float("inf")]
_errors = ErrorTable(_released_ids, partial(lib.ember_clear_error, _E))
_naive = [_engine_type_from_env()]  # NaiveEngine: op errors raise at the call that ran the op
_pyops: dict = {}
_op_ids = itertools.count(1)
_names: dict = {}
_gpu_queues: dict = {}
_queue_names = {_CPU_QUEUE: "cpu", _COPY_QUEUE: "copy"}
class _ThreadState(threading.local):
    """Per-thread engine state; class attributes are the defaults (plain lookups on the hot path)."""

    naive_failed = 0     # NaiveEngine: the error id of an op this thread ran that failed
    bulk = None          # the open bulk group, if any
    in_caller = False    # this thread is running an op claimed for its caller


_tls = _ThreadState()
_NULL = ffi.NULL
_push = lib.ember_push
_claim = lib.ember_claim
_release_idle = lib.ember_release_idle
_complete = lib.ember_complete
_ON_ERROR = lib.EMBER_ON_ERROR
_PENDING = lib.EMBER_PENDING


def op_name(name: Optional[str]):
    """A C string for an op name, interned for the life of the process (the profiler keeps pointers)."""
    c = _names.get(name)
    if c is None:
        c = ffi.new("char[]", (name or "op").encode())
        _names[name] = c
    return c


_attrs_cache: dict = {}
_plain_attrs: dict = {}  # name -> attributes of a plain op (cpu queue, priority 0, normal, no flags)


def op_attrs(queue: int, priority: int, prop: int, flags: int, name: Optional[str], mem_bytes: int = 0):
    """An `ember_op_attrs *` for these attributes (cached: a push only passes a pointer)."""
    key = (queue, priority, prop, flags, name, mem_bytes)
    a = _attrs_cache.get(key)
    if a is None:
        a = ffi.new("ember_op_attrs *", {"queue": queue, "priority": priority, "prop": prop, "flags": flags,
                                         "name": op_name(name), "mem_bytes": mem_bytes})
        if len(_attrs_cache) < 4096:  # priorities vary (one per kvstore key): bounded
            _attrs_cache[key] = a
    return a


def _plain(name):
    a = _plain_attrs.get(name)
    if a is None:
        a = _plain_attrs[name] = op_attrs(_CPU_QUEUE, 0, 0, 0, name)
    return a


# True while a cyclic GC pass runs.  Only the collecting thread runs Python code then, except
# when a finalizer lets another thread in: that one also sees True and takes the slower, always
# safe path, so one global serves (cheaper than a thread-local on every array's release).
gc_running = False


def _gc_phase(phase, info) -> None:
    global gc_running
    gc_running = phase == "start"


gc.callbacks.append(_gc_phase)

# Vars that GC passes collected, waiting to be deleted (Var.__del__), and what must happen before
# (ember.imperative.storage registers the releases of the storage collected with them).
_collected_vars: list = []
after_gc_hooks: list = []


def settle_after_gc() -> None:
    """Do what GC passes left for later: the hooks' work, then the collected vars' deletion.
    Called outside a pass: at a wait_all, when a var is made, and by ember.imperative.storage."""
    if gc_running:
        return
    for hook in after_gc_hooks:
        hook()
    while _collected_vars:
        try:
            v = _collected_vars.pop()
        except IndexError:  # another thread took the last one
            return
        if not defer_behind_bulks(v, v.delete):  # (after a release deferred there too)
            v.delete()


class Var:
    """An engine variable: stands for one resource (array storage, RNG state, memory block, workspace).

    Deleting it (`delete()` or garbage collection) is ordered after every op pending on it.
    """

    __slots__ = ("_h", "name", "nbytes", "__weakref__")

    def __init__(self, name: Optional[str] = None, nbytes: int = 0):
        if _collected_vars:
            settle_after_gc()
        self._h = _var_new()
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
            _var_delete(h)

    def __del__(self):
        if gc_running and self._h is not None:
            # collected by a cyclic GC pass, with the objects that held it: their finalizers run in
            # any order and may still push on it (a chunk releasing its memory after the ops pending
            # on it), so it is deleted after the pass (delete_collected_vars), not here
            _collected_vars.append(self)
            return
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
    eid = _tls.naive_failed
    if eid:
        _tls.naive_failed = 0
        _errors.raise_for(eid)
    for h in writes:
        eid = lib.ember_var_error(h)
        if eid:
            _errors.raise_for(eid)


@ffi.def_extern()
def ember_py_run(hid, op):
    fn, prop, name = _pyops.pop(hid)  # an async op, or any op under NaiveEngine
    return _run(fn, prop, name, op)


_py_push = lib.ember_py_push
if lib.ember_py_install(_E) != 0:
    raise ImportError("ember.engine._native: could not install the Python op functions")
# (the error id of an exception raised by a Python op run from C: `_native.push_fn`'s ops)
_native.bind_fn_ops(ffi.typeof("ember_var *"), ffi.typeof("ember_op_attrs *"), _errors.register)
_push_fn = _native.push_fn
_push_fn_handles = _native.push_fn_handles
# The idle claim without a cffi call (neither function blocks, so they keep the GIL): no argument
# conversion, no GIL hand-off.  idle_claim() -> bool, idle_release_ok(); for the tiny-op path too.
idle_claim = _native.claim_idle
idle_release_ok = _native.release_idle_ok
# ember_claim / ember_complete for ops run in their caller, the same way: claim(handles, nread, attrs)
# -> the op's address (0: not handed over), complete(address, error id)
_claim_here = _native.claim
_complete_here = _native.complete
_var_new, _var_delete = _native.var_new, _native.var_delete


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
         on_error: bool = False, mem_bytes: int = 0) -> None:
    """Schedule `fn` after the ops it depends on through `read` and `write`.

    fn() runs on a worker of the device's queue (or, with inline=True, in this thread when it
    may start at once: see run_in_caller).  prop='async': fn(done) is called and must call
    done() or done(exc) later, from any thread.  prop='copy' runs on the copy queue.  An
    exception raised by fn is recorded on every var in `write` and re-raised by wait()/wait_all().
    An op whose input failed is skipped (its writes inherit the error), unless on_error=True
    (async ops only): then it still runs, `done.input_failed` is true, and it must still call
    done(), e.g. to release an ordered resource that later ops wait for.
    mem_bytes: a hint for the memory-aware policy, the net bytes fn frees (< 0: allocates).
    """
    if prop == "normal" and not (priority or inline or on_error or mem_bytes or bulk_threads or _in_caller_threads
                                 or _naive[0]) and (device is None or getattr(device, "device_type", "cpu") == "cpu"):
        # the common case, kept short: a plain Python op for a CPU worker, pushed keeping the GIL;
        # anything push_fn declines (not lists/tuples of live Vars) takes the general path below
        if _push_fn(fn, read, write, _plain_attrs.get(name) or _plain(name)) == 0:
            return
    if prop != "normal":
        if prop not in PROPS:
            raise ValueError(f"push: prop must be one of {sorted(PROPS)}, got {prop!r}")
    if on_error and prop != "async":
        raise ValueError(f"push: on_error=True needs prop='async' (the op learns of the failure "
                         f"through done.input_failed), got prop={prop!r}")
    if bulk_threads:
        bulk = _tls.bulk
        if bulk is not None:
            if prop == "normal" and priority == 0 and not mem_bytes and not _naive[0]:
                bulk.add(fn, read, write, name)  # (NaiveEngine runs each op at its call, as MXNet's)
                return
            bulk.flush()
    _push_now(fn, read, write, priority, device, name, prop, inline, on_error, mem_bytes)


def _push_now(fn, read, write, priority, device, name, prop, inline, on_error=False, mem_bytes=0):
    if recorder is not None:  # ember.engine.lab is recording: it notes the op and times fn
        fn, read, write = recorder.on_push(fn, read, write, priority, device, name, prop)
    if _in_caller_threads and _tls.in_caller:
        inline = True
    vs, nr = var_handles(read, write)
    if prop == "normal":
        queue = _CPU_QUEUE if device is None else _queue_for(device, prop)
        attrs = (_plain(name) if queue == 0 and priority == 0 and not mem_bytes
                 else op_attrs(queue, priority, 0, 0, name, mem_bytes))
        if inline:
            if idle_claim():
                _run_idle(fn, (), name, None, vs, nr)
                return
            if _run_claimed(fn, (), name, vs, nr, attrs, ()):
                return
    else:
        attrs = op_attrs(_queue_for(device, prop), priority, PROPS[prop], _ON_ERROR if on_error else 0, name,
                         mem_bytes)
        if prop == "async" and not _naive[0]:
            # an async op ready at push would start in this thread anyway: start it here, without
            # the C-to-Python callback (NaiveEngine pushes it: its push waits for done())
            op = _claim(_E, vs, nr, len(vs) - nr, attrs)
            if op:
                rc = _run(fn, prop, name, op)
                if rc != _PENDING:
                    _complete(op, rc)
                return
    if prop == "normal" and not _naive[0]:
        rc = _push_fn_handles(fn, vs, nr, attrs)
        if rc != 0:
            raise EngineError(f"push of '{name}' rejected by the engine (code {rc})")
        return
    hid = next(_op_ids)
    _pyops[hid] = (fn, prop, name)
    if _naive[0]:
        _tls.naive_failed = 0
    rc = _py_push(_E, hid, vs, nr, len(vs) - nr, attrs)
    if rc < 0:
        _pyops.pop(hid, None)
        raise EngineError(f"push of '{name}' rejected by the engine (code {rc})")
    if _naive[0]:
        _raise_naive_failure(vs[nr:])


def var_handles(read: Sequence[Var], write: Sequence[Var]):
    """(C handles of `read` then of `write`, len(read)) for a push; TypeError/EngineError naming a
    Var that is not one or was deleted."""
    try:
        vs = [v._h for v in read]
        nr = len(vs)
        vs += [v._h for v in write]
    except AttributeError:
        _handles(read, "read"), _handles(write, "write")  # raises the clear error
        raise
    if None in vs:
        _handles(read, "read"), _handles(write, "write")
    return vs, nr


def op_handles(read: Sequence[Var], write: Sequence[Var]):
    """(read handles, write handles) of live Vars, for pushes made from native code;
    TypeError/EngineError naming a bad one."""
    vs, nr = var_handles(read, write)
    return vs[:nr], vs[nr:]


# -- running an op in its caller ------------------------------------------------------------

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
    if bulk_threads and (_tls.bulk is not None or recorder is not None):
        return False
    if idle_claim():
        _run_idle(fn, args, name, deps)
        return True
    reads, writes, fresh = deps()
    vs, nr = var_handles(reads, writes)
    return _run_claimed(fn, args, name, vs, nr, _plain(name), fresh)


def _written_handles(deps) -> list:
    _, writes, fresh = deps()
    return var_handles((), [*writes, *fresh])[0]


def _run_idle(fn, args, name, deps, vs=None, nr=0) -> None:
    """Run fn(*args) under the idle claim (taken), then release it; if fn raises, its error goes on
    the written variables (of deps(), or the handles vs[nr:]): raised at their wait (under
    NaiveEngine, here)."""
    try:
        fn(*args)
    except BaseException as exc:  # noqa: BLE001 - recorded on the written variables, raised at wait
        eid = _errors.register(exc, name)
        hs = vs[nr:] if deps is None else _written_handles(deps)
        _release_idle(_E, hs, len(hs), eid)
        if _naive[0]:
            _errors.raise_for(eid)
        return
    idle_release_ok()


def _run_claimed(fn, args, name, vs, nr, attrs, fresh) -> bool:
    """Run fn(*args) as an op on vs if ember_claim hands it to this thread; False if it did not."""
    op = _claim_here(vs, nr, attrs)
    if not op:
        return False
    try:
        fn(*args)
    except BaseException as exc:  # noqa: BLE001 - recorded on its writes, raised at wait
        eid = _errors.register(exc, name)
        _complete_here(op, eid)
        if fresh:  # not claimed: they get the error through an op of their own (raised once)
            _push_now(partial(_reraise, exc), (), fresh, 0, None, name, "normal", False)
        if _naive[0]:
            _errors.raise_for(eid)
        return True
    _complete_here(op, 0)
    return True


def _reraise(exc: BaseException) -> None:
    raise exc


def register_error(exc: BaseException, name: Optional[str] = None) -> int:
    """An error id for `exc`, for native code that ends ops itself (ember_complete(op, id)); wait()
    and wait_all() raise `exc` for it."""
    return _errors.register(exc, name)


_in_caller_threads = 0  # threads inside ops_in_caller(): push checks the thread-local only then


@contextlib.contextmanager
def ops_in_caller():
    """Within the block, every op this thread pushes runs at once, in this thread, when it may
    start at once (run_in_caller's rules), however large it is.

    For code that pushes ops from inside an op (a Python custom operator's forward, see
    ember/ops/custom.py): its ops, on variables nothing else holds, finish before it returns
    without needing a worker, so waiting for them inside the op cannot deadlock."""
    global _in_caller_threads
    prev = _tls.in_caller
    _tls.in_caller = True
    with _bulk_count_lock:
        _in_caller_threads += 1
    try:
        yield
    finally:
        _tls.in_caller = prev
        with _bulk_count_lock:
            _in_caller_threads -= 1


def push_native(fn_ptr, ctx=None, read: Iterable[Var] = (), write: Iterable[Var] = (), priority: int = 0,
                device=None, name: Optional[str] = None) -> None:
    """Push a C kernel (an `int (*)(void *ctx, ember_opr *op)` cdata); it runs without the GIL."""
    flush_bulk()
    if recorder is not None:  # ember.engine.lab notes it (a C kernel is not timed)
        _, read, write = recorder.on_push(None, read, write, priority, device, name, "native")
    vs, nr = var_handles(read, write)
    rc = _push(_E, fn_ptr, ctx if ctx is not None else _NULL, vs, nr, len(vs) - nr,
               op_attrs(_queue_for(device, "normal"), priority, 0, 0, name))
    if rc < 0:
        raise EngineError(f"push of native op '{name}' rejected by the engine (code {rc})")


def flush_bulk() -> None:
    """Push this thread's open bulk group now.  Code that pushes ops from C (push_native, the
    kvstore's native queue and copies) calls it first: those pushes bypass the group, so ops it
    still holds would otherwise be ordered after them."""
    bulk = _tls.bulk
    if bulk is not None:
        bulk.flush()


# A blocking wait returns to Python this often (ms), so that a signal handler gets its turn: Ctrl-C
# (KeyboardInterrupt) stops a wait for an op that takes long or never ends, as it stops Python code.
WAIT_SLICE_MS = 100
_wait_now = lib.ember_wait_var_now


def wait(var: Var) -> None:
    """Block until `var` has no pending write; raise the error recorded on it, if any."""
    flush_bulk()
    var._check()
    h = var._h
    eid = _wait_now(h)
    if eid < 0:  # a write is pending
        waiter = lib.ember_wait_begin(_E, h)
        try:
            while not lib.ember_wait_poll(waiter, WAIT_SLICE_MS):
                pass  # (the loop's turn is where Python runs a pending signal handler)
        finally:
            lib.ember_wait_end(waiter)
        eid = lib.ember_var_error(h)
    if eid:
        _errors.raise_for(eid)


def wait_all(timeout: Optional[float] = None) -> None:
    """Block until every pushed op has finished; raise the first error since the last wait_all.

    With a timeout (seconds), raise TimeoutError if ops are still pending then.
    """
    flush_bulk()
    if _collected_vars:
        settle_after_gc()
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        slice_ms = WAIT_SLICE_MS
        if deadline is not None:
            slice_ms = max(0, min(slice_ms, int((deadline - time.monotonic()) * 1000)))
        eid = lib.ember_wait_all(_E, slice_ms)
        if eid != -1:
            break
        if deadline is not None and time.monotonic() >= deadline:
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
        self.after_flush = []  # actions of other threads waiting for this group (defer_behind_bulks)

    def add(self, fn, read, write, name):
        self.fns.append(fn)
        self.reads.extend(read)
        self.writes.extend(write)
        self.names.append(name)
        with _bulk_count_lock:
            for v in (*read, *write):
                groups = _held.get(v)
                if groups is None:
                    _held[v] = [self]
                elif self not in groups:
                    groups.append(self)
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

        try:
            _push_now(run_segment, reads, writes, 0, None, f"Bulk[{len(fns)}]", "normal", False)
        finally:
            with _bulk_count_lock:
                for v in (*reads, *writes):
                    groups = _held.get(v)
                    if groups is not None and self in groups:
                        groups.remove(self)
                        if not groups:
                            del _held[v]
                actions, self.after_flush = self.after_flush, []
            for action in actions:
                action()


def defer_behind_bulks(var: "Var", action: Callable[[], None]) -> bool:
    """If an open bulk group of another thread holds unpushed ops on `var`, run `action` once every
    such group has been pushed and return True; else return False (the caller acts now).

    For what a thread does to another thread's array, e.g. a cyclic GC pass in an engine worker
    releasing a temporary whose ops the main thread's group still holds: releasing its memory
    (or deleting its var) at once would come before those ops."""
    if not bulk_threads:
        return False
    own = _tls.bulk
    with _bulk_count_lock:
        groups = [g for g in _held.get(var, ()) if g is not own]
        if not groups:
            return False
        left = [len(groups)]

        def one_group_pushed():
            with _bulk_count_lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                action()

        for g in groups:
            g.after_flush.append(one_group_pushed)
    return True


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


def set_run_ahead(max_pending: int) -> int:
    """Bound how far a pushing thread runs ahead of the workers: past `max_pending` pending ops a
    push of a Python op waits (without the GIL) until half of them ended, so a training loop
    reuses buffers while they are still in cache instead of queueing steps' worth of ops and
    fresh memory.  0 turns the bound off.  Returns the previous bound."""
    if not isinstance(max_pending, int) or isinstance(max_pending, bool) or max_pending < 0:
        raise ValueError(f"run-ahead bound must be a non-negative int, got {max_pending!r}")
    old = lib.ember_get_run_ahead(_E)
    lib.ember_set_run_ahead(_E, max_pending)
    return old


def get_run_ahead() -> int:
    """The run-ahead bound (see set_run_ahead); 0 = none."""
    return lib.ember_get_run_ahead(_E)


def set_run_ahead_bytes(nbytes: int) -> int:
    """Bound the memory a pushing thread runs ahead with: an op's outputs are allocated when it is
    pushed, so a thread pushing large ops faster than they run (a big network's forward with the
    kernels on a worker) would otherwise hold every intermediate result at once.  Once the CPU
    memory in use has grown by `nbytes` since the last such wait, the next allocation of an array
    first waits (without the GIL) for the ops pending then, whose ends free what they held; then
    the next mark is `nbytes` above the memory still in use.  0 turns the bound off.  Returns the
    previous bound (EMBER_RUN_AHEAD_BYTES, default 256 MiB)."""
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
        raise ValueError(f"run-ahead bytes must be a non-negative int, got {nbytes!r}")
    old = run_ahead_bytes[0]
    run_ahead_bytes[0] = nbytes
    run_ahead_mark[0] = 0 if nbytes else float("inf")  # the next allocation sets the mark
    return old


def get_run_ahead_bytes() -> int:
    """The run-ahead bound in bytes (see set_run_ahead_bytes); 0 = none."""
    return run_ahead_bytes[0]


def set_bulk_size(size: int) -> int:
    """Set this thread's bulk size (0 or 1 turns bulking off); returns the previous size."""
    if not isinstance(size, int) or size < 0:
        raise ValueError(f"bulk size must be a non-negative int, got {size!r}")
    global bulk_threads
    old = _tls.bulk
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
# Var -> the open bulk groups (of any thread) holding unpushed ops on it; guarded by _bulk_count_lock.
_held: dict = {}
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
    """Swap the scheduling policy at run time ('priority', 'fifo', 'lifo', 'critical_path',
    'memory_aware', 'comm_first', a policy.MemoryAware(high_bytes) or a Python policy object);
    returns the previous policy's name.  Ops already queued keep their order."""
    code, key, name = _policy.resolve(policy)
    old = _policy_state["name"]
    _policy_state.update(name=name, key=key)
    lib.ember_set_memory_high(_E, _policy.memory_high(policy))
    lib.ember_set_policy(_E, code, lib.ember_py_policy_key if key is not None else ffi.NULL)
    return old


def get_policy() -> str:
    return _policy_state["name"]


def set_engine_type(name: str) -> str:
    """Switch between 'ThreadedEngine' and 'NaiveEngine' (after finishing pending ops); returns the old type."""
    naive = _is_naive(name, ValueError)
    old = engine_type()
    wait_all_quiet()
    lib.ember_engine_set_naive(_E, 1 if naive else 0)
    _naive[0] = naive
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
    """At exit and before a fork: push this thread's bulk group, finish pending ops, stop the workers."""
    timeout = float(os.environ.get("EMBER_SHUTDOWN_TIMEOUT", "30"))
    flush_bulk()
    # After stop, pushes run synchronously in the caller, so late garbage collection still works.
    lib.ember_engine_stop(_E, int(timeout * 1000))


atexit.register(_shutdown)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_shutdown, after_in_parent=partial(lib.ember_engine_start, _E),
                        after_in_child=partial(lib.ember_engine_start_in_child, _E))
