"""dist_sync allreduces on the native collective queue (native/collectives.h), without the GIL.

An unfused dist_sync push runs once per key per step, so what it costs in Python adds up over a
model's parameters (and, since each allreduce synchronises the ranks, over the ranks too).  On
this path a push is one C call: it takes the call's place in the communication order and pushes
its engine op; a C thread posts the allreduces in that order, tests them and completes the ops.
Fused buckets use it too, for the allreduce of their fusion buffer.
Python is entered again only when something fails (to build the error) or while a request has
been pending for a long time (to look for a dead peer).

The queue calls the MPI library that mpi4py loaded, through entry points looked up in it here,
on a communicator of its own.  It is used when the library has MPI_Iallreduce and MPI_Test, 4- or
8-byte handles and MPI_THREAD_MULTIPLE; EMBER_KVSTORE_NATIVE=0 turns it off.  Every worker must
decide the same way (the queue's communicator is made collectively), so `create` agrees on it
with the other workers first.
"""
from __future__ import annotations

import ctypes
import os
import re
from collections import deque
from typing import Optional, Sequence

import numpy as np

from .. import engine
from ..engine._native import ffi, lib
from . import jobdir, mpienv
from .errors import KVStoreCommError, KVStoreError

CHECK_EVERY = 0.2  # seconds between looks for a failed peer while a request is pending
_live = set()  # callback handles of the queues not destroyed yet
_allreduce, _finished = lib.ember_coll_allreduce, lib.ember_coll_finished
_from_buffer, _NULL = ffi.from_buffer, ffi.NULL
_flush_bulk = engine.core.flush_bulk


def _entry_points():
    """(MPI_Iallreduce, MPI_Test) addresses in the MPI library this process loaded, or None."""
    paths = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(None, 1)[-1]
                if os.path.basename(path).startswith("libmpi") and path not in paths:
                    paths.append(path)
    except OSError:
        return None
    for path in paths:
        try:  # only a library that is loaded already: RTLD_NOLOAD
            so = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)
            return (ctypes.cast(so.MPI_Iallreduce, ctypes.c_void_p).value,
                    ctypes.cast(so.MPI_Test, ctypes.c_void_p).value)
        except (OSError, AttributeError):
            continue
    return None


def _usable(MPI) -> Optional[str]:
    """None if this process can run the native queue, else why not."""
    if os.environ.get("EMBER_KVSTORE_NATIVE", "1").strip() == "0":
        return "EMBER_KVSTORE_NATIVE=0"
    size = MPI._sizeof(MPI.Comm)
    if size not in (4, 8) or MPI._sizeof(MPI.Request) != size:
        return f"MPI handles of {size} bytes"
    if MPI.Query_thread() != MPI.THREAD_MULTIPLE:
        return "MPI was not initialised with MPI_THREAD_MULTIPLE"
    if _entry_points() is None:
        return "no loaded MPI library exports MPI_Iallreduce and MPI_Test"
    return None


def create(MPI, comm, settings) -> Optional["NativeAllreduce"]:
    """The native queue on `comm` (a communicator for it alone), or None when any worker cannot
    run it; collective over `comm`."""
    ok = _usable(MPI) is None
    agreed = mpienv.with_timeout(lambda: comm.allreduce(int(ok), op=MPI.MIN), mpienv.startup_timeout(),
                                 "agreeing on the kvstore's native communication path")
    return NativeAllreduce(MPI, comm, settings) if agreed else None


def _handle(value: int) -> int:
    """An MPI handle as intptr_t (mpi4py reports them unsigned: MPICH's negative ints wrap)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def _what(name: str) -> str:
    """'kvstore_push[3]' -> 'kvstore push of key 3', 'kvstore_allreduce[0, 1]' -> '... of keys 0, 1'
    (error messages)."""
    m = re.fullmatch(r"kvstore_(\w+)\[(.*)\]", name)
    if m is None:
        return name
    return f"kvstore {m.group(1)} of key{'s' if ', ' in m.group(2) else ''} {m.group(2)}"


@ffi.def_extern()
def ember_py_coll_check(ctx, name, why, code):
    try:
        return ffi.from_handle(ctx)._check(_what(ffi.string(name).decode()), why, code)
    except BaseException:  # noqa: BLE001 - a callback must answer; fail the call with a plain id
        mpienv.mark_failed()
        return engine.core.register_error(KVStoreCommError("kvstore communication failed"), "kvstore")


class NativeAllreduce:
    """An in-order allreduce queue run by a C thread on its own communicator."""

    def __init__(self, MPI, comm, settings):
        iallreduce, test = _entry_points()
        self._c = None
        self._MPI, self._comm = MPI, comm
        self._timeout = settings.timeout
        self._failure: Optional[str] = None
        # The C thread calls back through this handle until the queue is destroyed, even if the
        # store is dropped without close(): keep it alive until then.
        self._self_handle = ffi.new_handle(self)
        _live.add(self._self_handle)
        fns = ffi.new("ember_mpi_fns *")
        fns.iallreduce = ffi.cast("void *", iallreduce)
        fns.test = ffi.cast("void *", test)
        fns.handle_size = MPI._sizeof(MPI.Comm)
        fns.comm = _handle(comm.handle)
        fns.op_sum = _handle(MPI.SUM.handle)
        fns.in_place = int(MPI.IN_PLACE)
        self._c = lib.ember_coll_create(engine.core.native_engine(), fns, settings.window, settings.chunk_bytes,
                                        mpienv.SPIN_SECONDS, settings.timeout, CHECK_EVERY,
                                        lib.ember_py_coll_check, self._self_handle)
        if self._c == ffi.NULL:
            _live.discard(self._self_handle)
            raise KVStoreError("could not start the kvstore's native communication thread")
        self._max_in_flight = 0
        self._types = {}
        self._kept = deque()  # (seq, objects the call's buffers belong to) until the call finished

    def _dtype(self, dtype: np.dtype):
        handle = self._types.get(dtype)
        if handle is None:
            t = self._MPI._typedict.get(dtype.char)
            handle = self._types[dtype] = _handle(t.handle) if t is not None else False
        return handle

    def serves(self, dtype: np.dtype) -> bool:
        """Whether MPI can sum this dtype here (float16 and others without an MPI type cannot)."""
        return dtype != np.float16 and self._dtype(dtype) is not False

    def prepare(self, send: Optional[np.ndarray], recv: np.ndarray, copy_to: Optional[np.ndarray],
                reads: Sequence[engine.Var], writes: Sequence[engine.Var], name: str, keep: tuple) -> tuple:
        """A call that sums `send` (None: `recv` in place) over the workers into `recv`, then copies
        it into `copy_to` if given, as an engine op reading `reads` and writing `writes`; run it
        with issue(), as often as wanted.  The arrays must be C-contiguous host arrays of one
        serves()'d dtype; `keep` holds their owners (the call holds them, and each issued call
        holds them until it is done)."""
        r, w = engine.core.op_handles(reads, writes)
        return (_NULL if send is None else _from_buffer(send), _from_buffer(recv), recv.size,
                self._dtype(recv.dtype), recv.itemsize, _NULL if copy_to is None else _from_buffer(copy_to),
                ffi.new("ember_var *[]", r) if r else _NULL, len(r), ffi.new("ember_var *[]", w), len(w),
                engine.core.op_name(name), name, keep)

    def issue(self, call: tuple, priority: int) -> None:
        """Issue a prepare()d call: it takes the next place in this queue's order."""
        _flush_bulk()  # the value may come from an op still held by this thread's bulk group
        kept = self._kept
        # after a failure, abandoned requests may still write into their buffers: keep them all
        if kept and self._failure is None and kept[0][0] < _finished(self._c):
            finished = _finished(self._c)
            while kept and kept[0][0] < finished:
                kept.popleft()
        send, recv, count, dtype, itemsize, copy_to, r, nr, w, nw, cname, name, keep = call
        seq = _allreduce(self._c, send, recv, count, dtype, itemsize, copy_to, r, nr, w, nw, priority, cname)
        if seq < 0:
            raise KVStoreError(f"{_what(name)}: " + ("this kvstore was closed; create a new one" if seq == -1
                                                      else f"bad arguments for the native queue (code {seq})"))
        kept.append((seq, keep))

    @property
    def max_in_flight(self) -> int:
        """The most allreduce requests that were in flight at once."""
        return lib.ember_coll_max_in_flight(self._c) if self._c is not None else self._max_in_flight

    def stop(self, timeout: float) -> bool:
        """Finish every call issued so far and stop the thread; False if calls were still
        outstanding after `timeout` seconds (then the queue is left to finish on its own)."""
        if self._c is None:
            return True
        if lib.ember_coll_stop(self._c, int(timeout * 1000)) != 0:
            return False
        self._max_in_flight = lib.ember_coll_max_in_flight(self._c)
        lib.ember_coll_destroy(self._c)
        self._c = None
        _live.discard(self._self_handle)
        if self._failure is None:
            self._kept.clear()
        return True

    # ----------------------------------------------------------------- failures (from the C thread)
    def _check(self, what: str, why: int, code: int) -> int:
        if why == lib.EMBER_COLL_WAITING:
            reason = jobdir.peer_failure()
            if reason is None:
                return 0
            exc = mpienv.peer_failed(what, reason)
        elif why == lib.EMBER_COLL_TIMEOUT:
            exc = mpienv.no_progress(what, self._timeout)
        elif why == lib.EMBER_COLL_MPI_ERROR:
            exc = mpienv.mpi_failed(what, self._MPI.Get_error_string(code))
        elif why == lib.EMBER_COLL_INPUT_FAILED:
            mpienv.mark_failed()
            self._failure = self._failure or str(mpienv.input_failed(what))
            return 0
        else:
            exc = KVStoreCommError(f"{what}: kvstore communication stopped after an earlier failure"
                                   + (f": {self._failure}" if self._failure else ""))
            return engine.core.register_error(exc, what)
        mpienv.mark_failed()
        self._failure = self._failure or str(exc)
        return engine.core.register_error(exc, what)
