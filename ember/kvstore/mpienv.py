"""Process-wide MPI setup for the distributed stores: roles, the worker communicator, heartbeats
to the servers and a clean (or, after a failure, a non-hanging) process exit.

Rank layout (set up by `python -m ember.kvstore.launch`, an mpiexec MPMD job): world ranks
0..W-1 are workers, W..W+S-1 servers, with DMLC_NUM_WORKER=W and DMLC_NUM_SERVER=S.  Without
those variables every rank is a worker (plain `mpiexec -n 4 python train.py`).
"""
from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import time
from typing import List, Optional

from . import config, jobdir
from .errors import KVStoreCommError, KVStoreError, KVStoreTimeoutError

TAG_REQUEST = 11   # worker -> server: (command, ...) tuples
TAG_REPLY = 12     # server -> worker: answers to 'pull' / 'ack' requests
TAG_HEARTBEAT = 13  # worker -> server: "still alive"
SPIN_SECONDS = float(os.environ.get("EMBER_KVSTORE_SPIN", "0.05"))  # busy-test this long, then sleep between tests

_env = None
_env_lock = threading.Lock()
_failed = False


def mpi():
    """The mpi4py MPI module (imported on first use: importing it initialises MPI)."""
    try:
        import mpi4py
    except ImportError as e:
        raise KVStoreError("distributed kvstores need mpi4py and an MPI library: "
                           "pip install 'ember[dist]' (mpi4py, mpich)") from e
    mpi4py.rc.errors = "exception"  # MPI errors become Python exceptions instead of aborting the job
    if "mpi4py.MPI" in sys.modules:
        return sys.modules["mpi4py.MPI"]
    # MPI_Init waits for every process of the job, holding the GIL: if one died before reaching
    # it, nothing in this process runs again.  A watchdog process ends it with the reason instead.
    watchdog = jobdir.start_init_watchdog()
    try:
        from mpi4py import MPI
    finally:
        if watchdog is not None:
            watchdog.terminate()
            watchdog.wait()
    return MPI


def mark_failed() -> None:
    """Remember that communication failed, so exit skips MPI_Finalize (it would wait for dead peers)."""
    global _failed
    _failed = True


def _watch_peer_failures() -> None:
    # MPICH's launcher (with -disable-auto-cleanup) sends SIGUSR1 to the surviving processes when
    # one dies; its default action would kill them silently.  Ignoring it lets each survivor
    # report the failure itself when its pending communication times out.
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGUSR1"):
        if signal.getsignal(signal.SIGUSR1) in (signal.SIG_DFL, None):
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)


def _excepthook_chain(old):
    def hook(tp, value, tb):
        mark_failed()
        old(tp, value, tb)
    return hook


def _exit_handler() -> None:
    env = _env
    if env is not None and env.role == "worker" and not _failed:
        try:
            env.say_goodbye()
        except Exception:  # a goodbye that cannot be delivered must not hide the real exit status
            mark_failed()
    if _failed:
        # Surviving ranks of a broken job: MPI_Finalize could wait forever for the dead peer.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


class MPIEnv:
    """This process's place in the job: role, world/worker communicators, server ranks."""

    def __init__(self):
        self.settings = config.settings()
        self.MPI = mpi()
        world = self.MPI.COMM_WORLD
        self.world = world
        size = world.Get_size()
        nserv = self.settings.num_servers
        nwork = self.settings.num_workers if self.settings.num_workers is not None else size - nserv
        if nwork < 1 or nwork + nserv != size:
            raise KVStoreError(f"DMLC_NUM_WORKER={nwork} + DMLC_NUM_SERVER={nserv} does not match the "
                               f"{size} MPI processes of this job; start it with python -m ember.kvstore.launch")
        self.num_workers = nwork
        self.worker_ranks: List[int] = list(range(nwork))
        self.server_ranks: List[int] = list(range(nwork, nwork + nserv))
        self.role = "worker" if world.Get_rank() < nwork else "server"
        if self.settings.role == "server" and self.role != "server":
            raise KVStoreError(f"DMLC_ROLE=server but MPI rank {world.Get_rank()} is in the worker range")
        self.workers = world if nserv == 0 else None
        self._hb_thread: Optional[threading.Thread] = None
        self._stop = threading.Event()

    def worker_comm(self):
        """The communicator of the worker ranks (created on first use, collectively over workers)."""
        if self.workers is None:
            group = self.world.Get_group().Incl(self.worker_ranks)
            self.workers = with_timeout(lambda: self.world.Create_group(group),
                                        startup_timeout(), "creating the worker communicator")
        return self.workers

    def store_comm(self):
        """A private duplicate of the worker communicator for one store.

        Each store orders its collectives on its own communication thread; two stores sharing
        one communicator could post theirs in different orders on different ranks and match the
        wrong collectives (a hang).  The duplicate is made in program order on the calling thread;
        the parent communicator carries nothing else, so the duplications match on every worker."""
        workers = self.worker_comm()
        return with_timeout(workers.Dup, startup_timeout(), "creating a kvstore's worker communicator")

    def start_heartbeat(self) -> None:
        """Tell the servers every few seconds that this worker lives (they exit if it stops)."""
        if self.role != "worker" or not self.server_ranks or self._hb_thread is not None:
            return
        self._hb_thread = threading.Thread(target=self._heartbeat_loop, name="ember-kvstore-heartbeat",
                                           daemon=True)
        self._hb_thread.start()

    def _heartbeat_loop(self) -> None:
        pending = []
        while not self._stop.wait(self.settings.heartbeat):
            pending = [r for r in pending if not r.Test()]
            for s in self.server_ranks:
                pending.append(self.world.isend(("heartbeat",), dest=s, tag=TAG_HEARTBEAT))

    def say_goodbye(self) -> None:
        """Tell every server this worker is done (servers exit once all workers said so)."""
        self._stop.set()
        if not self.server_ranks:
            return
        reqs = [self.world.isend(("stop",), dest=s, tag=TAG_REQUEST) for s in self.server_ranks]
        poll(self.MPI, reqs, self.settings.timeout, "telling the servers this worker is done")


def startup_timeout() -> float:
    """How long ranks wait for each other at start-up (imports, data loading may differ)."""
    return max(config.settings().timeout, float(os.environ.get("EMBER_KVSTORE_STARTUP_TIMEOUT", "300")))


def with_timeout(fn, timeout: float, what: str):
    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the waiting thread
            box["error"] = e
    t = threading.Thread(target=run, daemon=True, name="ember-kvstore-startup")
    t.start()
    t.join(timeout)
    if t.is_alive():
        mark_failed()
        raise KVStoreTimeoutError(f"{what}: other ranks did not join within {timeout:.0f}s "
                                  f"(a process of the job probably died or never started)")
    if "error" in box:
        raise KVStoreCommError(f"{what} failed: {box['error']}") from box["error"]
    return box["value"]


# Between tests, give the core away (sched_yield also releases the GIL): with more ranks than
# cores, a peer that needs this core to make progress gets it at once.
_yield = getattr(os, "sched_yield", None) or (lambda: time.sleep(0))


def peer_failed(what: str, reason: str) -> KVStoreCommError:
    """The error of a wait that found another process of the job dead (its job-directory notice)."""
    return KVStoreCommError(f"{what}: another process of the job failed ({reason}); stopping")


def no_progress(what: str, timeout: float) -> KVStoreTimeoutError:
    """The error of a wait that saw no progress for `timeout` seconds."""
    return KVStoreTimeoutError(f"{what}: no progress for {timeout:g}s (EMBER_KVSTORE_TIMEOUT); "
                               f"another worker or server probably died or stopped calling the kvstore")


def mpi_failed(what: str, message: str) -> KVStoreCommError:
    """The error of an MPI call that returned an error code."""
    return KVStoreCommError(f"{what}: MPI error: {message}")


def input_failed(what: str) -> KVStoreCommError:
    """The failure of a collective call whose value failed on this worker (it cannot take part)."""
    return KVStoreCommError(f"the value pushed in the {what} failed on this worker, so its allreduces "
                            f"can no longer match the other workers'")


def poll(MPI, reqs, timeout: float, what: str) -> None:
    """Wait for MPI requests without holding the GIL for long; raise after `timeout` s of waiting."""
    start = time.monotonic()
    deadline = start + timeout
    spins = 0
    try:
        while not MPI.Request.Testall(reqs):
            reason = jobdir.peer_failure()
            if reason is not None:
                mark_failed()
                raise peer_failed(what, reason)
            spins += 1
            # MPICH advances nonblocking collectives only inside MPI calls, so keep testing
            # (yielding the GIL between tests) for a while before backing off to short sleeps.
            if spins & 63 or time.monotonic() - start < SPIN_SECONDS:
                _yield()
            else:
                if time.monotonic() > deadline:
                    mark_failed()
                    raise no_progress(what, timeout)
                time.sleep(min(1e-3, 1e-6 * (spins >> 6)))
    except MPI.Exception as e:
        mark_failed()
        raise mpi_failed(what, e.Get_error_string()) from None


def get() -> MPIEnv:
    """The process's MPI environment (initialised on first call)."""
    global _env
    with _env_lock:
        if _env is None:
            _env = MPIEnv()
            _watch_peer_failures()
            atexit.register(_exit_handler)
            sys.excepthook = _excepthook_chain(sys.excepthook)
        return _env
