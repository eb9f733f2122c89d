"""The communication thread: runs MPI work in the order it was issued by the program.

Every process of a job issues the same kvstore calls in the same order, but the engine runs
their ops whenever their inputs are ready, so readiness order differs between processes.
Collectives must match across processes, so each call reserves a sequence number when it is
issued (`reserve`, main thread) and hands its ready work over later (`submit`, from an engine
op); work runs strictly in sequence order, each piece waiting on nonblocking MPI requests
(`mpienv.poll`) so the GIL stays free for the engine's compute threads.

Fast path: when a Nonblocking task is submitted exactly in its turn and nothing is in flight,
the submitting thread posts its requests itself and tests them for a moment (`inline_spin`
seconds); only if they are still pending does the communication thread take them over.  That
saves a thread hand-off per small collective, without parking an engine worker on a slow peer."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Tuple

from . import mpienv
from .errors import KVStoreCommError

Task = Callable[[], None]
Done = Callable[[Optional[BaseException]], None]


@dataclass
class Nonblocking:
    """A task made of nonblocking requests: `start()` posts them and returns them, `finish()` runs
    once they completed.  Consecutive ready ones are started together and polled as one batch,
    so several buckets are in flight at once (posting order still follows the sequence)."""

    start: Callable[[], list]
    finish: Callable[[], None]
    what: str


class Communicator:
    """An in-order executor of communication tasks (one daemon thread plus the inline fast path)."""

    def __init__(self, poll: Optional[Callable[[list, str], None]] = None, name: str = "ember-kvstore-comm",
                 batch: int = 64, inline_spin: float = 2e-4):
        self._poll = poll
        self._batch = batch
        self._inline_spin = inline_spin if poll is not None else 0.0
        self._cv = threading.Condition()
        self._issued = 0
        self._next = 0
        self._ready: Dict[int, Tuple[object, Done]] = {}
        self._busy = False  # a batch is running (on the thread or inline)
        self._handover: Optional[Tuple[list, List[Tuple[object, Done]]]] = None
        self._failure: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def reserve(self) -> int:
        """Claim the next slot in the communication order (call in program order)."""
        with self._cv:
            seq = self._issued
            self._issued += 1
            return seq

    def submit(self, seq: int, task, done: Done) -> None:
        """Run `task` in slot `seq`, then `done(None)`, or `done(error)` if it (or an earlier task) failed."""
        with self._cv:
            inline = (self._inline_spin > 0 and isinstance(task, Nonblocking) and seq == self._next
                      and not self._busy and self._failure is None)
            if not inline:
                self._ready[seq] = (task, done)
                self._cv.notify()
                return
            self._next += 1
            self._busy = True
        self._run_inline(task, done)

    def _run_inline(self, task: Nonblocking, done: Done) -> None:
        MPI = mpienv.mpi()
        try:
            reqs = task.start()
            deadline = time.perf_counter() + self._inline_spin
            while not MPI.Request.Testall(reqs):
                if time.perf_counter() > deadline:
                    with self._cv:  # still pending: the communication thread finishes it
                        self._handover = (reqs, [(task, done)])
                        self._cv.notify()
                    return
            task.finish()
        except BaseException as e:
            self._fail(e, [(task, done)])
            return
        self._release()
        done(None)

    def call(self, task: Callable[[], object], timeout: Optional[float] = None):
        """Run `task` in order and wait for its result in the calling thread (init, barrier)."""
        box = {}
        finished = threading.Event()

        def run():
            box["value"] = task()

        def done(exc):
            box["error"] = exc
            finished.set()
        self.submit(self.reserve(), run, done)
        if not finished.wait(timeout):
            mpienv.mark_failed()
            raise KVStoreCommError("kvstore call did not complete: the communication thread is stuck "
                                   "behind earlier work that never became ready")
        if box["error"] is not None:
            raise box["error"]
        return box.get("value")

    # ----------------------------------------------------------------- the thread
    def _release(self) -> None:
        with self._cv:
            self._busy = False
            self._cv.notify()

    def _fail(self, error: BaseException, taken) -> None:
        mpienv.mark_failed()
        with self._cv:
            if self._failure is None:
                self._failure = error
            self._busy = False
            self._cv.notify()
        for _, done in taken:
            done(error)

    def _take(self):
        """(requests already posted, tasks): a handed-over batch, or the next task plus the
        Nonblocking tasks ready right after it."""
        with self._cv:
            while self._handover is None and (self._busy or self._next not in self._ready):
                self._cv.wait()
            if self._handover is not None:
                handover, self._handover = self._handover, None
                return handover
            self._busy = True
            taken = [self._ready.pop(self._next)]
            self._next += 1
            while (isinstance(taken[0][0], Nonblocking) and self._poll is not None
                   and len(taken) < self._batch and self._next in self._ready
                   and isinstance(self._ready[self._next][0], Nonblocking)):
                taken.append(self._ready.pop(self._next))
                self._next += 1
            return None, taken

    def _loop(self) -> None:
        while True:
            reqs, taken = self._take()
            if self._failure is not None:
                self._fail(KVStoreCommError(f"kvstore communication stopped after an earlier failure: "
                                            f"{self._failure}"), taken)
                continue
            try:
                if isinstance(taken[0][0], Nonblocking):
                    if reqs is None:
                        reqs = []
                        for task, _ in taken:
                            reqs.extend(task.start())
                    self._poll(reqs, taken[0][0].what if len(taken) == 1 else
                               f"{taken[0][0].what} (and {len(taken) - 1} more)")
                    for task, _ in taken:
                        task.finish()
                else:
                    taken[0][0]()
            except BaseException as e:  # recorded by the engine on the ops' outputs
                self._fail(e, taken)
                continue
            self._release()
            for _, done in taken:
                done(None)
