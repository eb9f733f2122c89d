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
from ..engine import native
from . import jobdir, mpienv
from .errors import KVStoreCommError, KVStoreError

CHECK_EVERY = 0.2  # seconds between looks for a failed peer while a request is pending
_flush_bulk = native.flush_bulk


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


class NativeAllreduce:
    """An in-order allreduce queue run by a C thread on its own communicator."""

    def __init__(self, MPI, comm, settings):
        iallreduce, test = _entry_points()
        self._MPI, self._comm = MPI, comm
        self._timeout = settings.timeout
        self._failure: Optional[str] = None
        try:
            self._q = native.CollectiveQueue(
                iallreduce, test, MPI._sizeof(MPI.Comm), _handle(comm.handle), _handle(MPI.SUM.handle),
                int(MPI.IN_PLACE), settings.window, settings.chunk_bytes, mpienv.SPIN_SECONDS, settings.timeout,
                CHECK_EVERY, self._check_from_c, self._check_failed)
        except RuntimeError:
            raise KVStoreError("could not start the kvstore's native communication thread") from None
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
        return (self._q.prepare(send, recv, recv.size, self._dtype(recv.dtype), recv.itemsize, copy_to,
                                reads, writes, name), name, keep)

    def issue(self, call: tuple, priority: int) -> None:
        """Issue a prepare()d call: it takes the next place in this queue's order."""
        _flush_bulk()  # the value may come from an op still held by this thread's bulk group
        kept = self._kept
        # after a failure, abandoned requests may still write into their buffers: keep them all
        q = self._q
        if kept and self._failure is None and kept[0][0] < q.finished():
            finished = q.finished()
            while kept and kept[0][0] < finished:
                kept.popleft()
        args, name, keep = call
        seq = q.issue(args, priority)
        if seq < 0:
            raise KVStoreError(f"{_what(name)}: " + ("this kvstore was closed; create a new one" if seq == -1
                                                      else f"bad arguments for the native queue (code {seq})"))
        kept.append((seq, keep))

    @property
    def max_in_flight(self) -> int:
        """The most allreduce requests that were in flight at once."""
        return self._q.max_in_flight()

    def stop(self, timeout: float) -> bool:
        """Finish every call issued so far and stop the thread; False if calls were still
        outstanding after `timeout` seconds (then the queue is left to finish on its own)."""
        if self._q.closed:
            return True
        if not self._q.stop(timeout):
            return False
        if self._failure is None:
            self._kept.clear()
        return True

    # ----------------------------------------------------------------- failures (from the C thread)
    def _check_from_c(self, name: str, why: int, code: int) -> int:
        return self._check(_what(name), why, code)

    @staticmethod
    def _check_failed(exc: BaseException) -> int:
        mpienv.mark_failed()
        return native.register_error(KVStoreCommError("kvstore communication failed"), "kvstore")

    def _check(self, what: str, why: int, code: int) -> int:
        if why == native.COLL_WAITING:
            reason = jobdir.peer_failure()
            if reason is None:
                return 0
            exc = mpienv.peer_failed(what, reason)
        elif why == native.COLL_TIMEOUT:
            exc = mpienv.no_progress(what, self._timeout)
        elif why == native.COLL_MPI_ERROR:
            exc = mpienv.mpi_failed(what, self._MPI.Get_error_string(code))
        elif why == native.COLL_INPUT_FAILED:
            mpienv.mark_failed()
            self._failure = self._failure or str(mpienv.input_failed(what))
            return 0
        else:
            exc = KVStoreCommError(f"{what}: kvstore communication stopped after an earlier failure"
                                   + (f": {self._failure}" if self._failure else ""))
            return native.register_error(exc, what)
        mpienv.mark_failed()
        self._failure = self._failure or str(exc)
        return native.register_error(exc, what)
