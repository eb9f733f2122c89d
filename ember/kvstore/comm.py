"""The communication thread: runs MPI work in the order it was issued by the program.

Every process of a job issues the same kvstore calls in the same order, but the engine runs
their ops whenever their inputs are ready, so readiness order differs between processes.
Collectives must match across processes, so each call reserves a sequence number when it is
issued (`reserve`, main thread) and hands its ready work over later (`submit`, from an engine
op); this thread runs the work strictly in sequence order, each piece waiting on nonblocking
MPI requests (`mpienv.poll`) so the GIL stays free for the engine's compute threads."""
from __future__ import annotations

import threading
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
    """An in-order executor of communication tasks on one daemon thread."""

    def __init__(self, poll: Optional[Callable[[list, str], None]] = None, name: str = "ember-kvstore-comm",
                 batch: int = 64):
        self._poll = poll
        self._batch = batch
        self._cv = threading.Condition()
        self._issued = 0
        self._next = 0
        self._ready: Dict[int, Tuple[Task, Done]] = {}
        self._failure: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def reserve(self) -> int:
        """Claim the next slot in the communication order (call in program order)."""
        with self._cv:
            seq = self._issued
            self._issued += 1
            return seq

    def submit(self, seq: int, task: Task, done: Done) -> None:
        """Run `task()` in slot `seq`, then `done(None)`, or `done(error)` if it (or an earlier task) failed."""
        with self._cv:
            self._ready[seq] = (task, done)
            self._cv.notify()

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

    def _take(self) -> List[Tuple[object, Done]]:
        """The next task, plus the Nonblocking tasks ready right after it (batched)."""
        with self._cv:
            while self._next not in self._ready:
                self._cv.wait()
            taken = [self._ready.pop(self._next)]
            self._next += 1
            while (isinstance(taken[0][0], Nonblocking) and self._poll is not None
                   and len(taken) < self._batch and self._next in self._ready
                   and isinstance(self._ready[self._next][0], Nonblocking)):
                taken.append(self._ready.pop(self._next))
                self._next += 1
            return taken

    def _loop(self) -> None:
        while True:
            taken = self._take()
            if self._failure is not None:
                for _, done in taken:
                    done(KVStoreCommError(f"kvstore communication stopped after an earlier failure: "
                                          f"{self._failure}"))
                continue
            try:
                if isinstance(taken[0][0], Nonblocking):
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
                mpienv.mark_failed()
                self._failure = e
                for _, done in taken:
                    done(e)
                continue
            for _, done in taken:
                done(None)
