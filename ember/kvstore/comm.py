"""The communication thread: runs MPI work in the order it was issued by the program.

Every process of a job issues the same kvstore calls in the same order, but the engine runs
their ops whenever their inputs are ready, so readiness order differs between processes.
Collectives must match across processes, so each call reserves a sequence number when it is
issued (`reserve`, main thread) and hands its ready work over later (`submit`, from an engine
op); work runs strictly in sequence order, each piece waiting on nonblocking MPI requests
(`mpienv.poll`) so the GIL stays free for the engine's compute threads.

Window: the collectives of consecutive ready tasks (a task may be several chunks) are posted in
sequence order, but at most `window` requests are in flight at once; the next one is posted
when the oldest completes.  MPICH runs many nonblocking collectives posted together much slower
than a few at a time (64 x 256 KiB on 2 ranks: 12-13 ms all at once, 4.5-5 ms with 1-4 in
flight), while a window above 1 still hides the gap between one collective and the next.

Fast path: when a Nonblocking task is submitted exactly in its turn and nothing is in flight,
the submitting thread posts its requests itself and tests them for a moment (`inline_spin`
seconds); only if they are still pending does the communication thread take them over.  That
saves a thread hand-off per small collective, without parking an engine worker on a slow peer."""
from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable, Deque, Dict, List, Optional, Sequence, Tuple

from . import mpienv
from .errors import KVStoreCommError, KVStoreError

Task = Callable[[], None]
Done = Callable[[Optional[BaseException]], None]


class Nonblocking:
    """A task made of nonblocking collectives.

    `start()` is called once, in the task's turn, and returns zero-argument functions that each
    post one collective and return its request; the communicator calls them in order, keeping at
    most `window` requests in flight (over all tasks).  `finish()` runs once all of them completed.
    `what`'s str() names the task in error messages.  (A slotted class: one is made per push.)"""

    __slots__ = ("start", "finish", "what")

    def __init__(self, start: Callable[[], Sequence[Callable[[], object]]], finish: Callable[[], None],
                 what: object):
        self.start, self.finish, self.what = start, finish, what


class _Flight:
    """A Nonblocking task in the pipeline: how many of its collectives are posted / still pending."""

    __slots__ = ("task", "done", "posts", "posted", "pending")

    def __init__(self, task: Nonblocking, done: Done):
        self.task, self.done = task, done
        self.posts: Optional[List[Callable[[], object]]] = None  # from task.start(), in its turn
        self.posted = 0
        self.pending = 0

    @property
    def complete(self) -> bool:
        return self.posts is not None and self.posted == len(self.posts) and self.pending == 0


Pipeline = Tuple[Deque[_Flight], Deque[Tuple[_Flight, object]]]  # (flights in order, (flight, request) in posting order)


def _mpi_test(req) -> bool:
    return req.Test()


class Communicator:
    """An in-order executor of communication tasks (one daemon thread plus the inline fast path).

    `poll(requests, what)` waits for requests (raising on timeout or peer failure) and
    `test(request)` checks one without waiting; both default to MPI's.  Without `poll`, only
    plain tasks can be run (the unit tests of the ordering rules)."""

    def __init__(self, poll: Optional[Callable[[list, str], None]] = None, name: str = "ember-kvstore-comm",
                 window: int = 2, inline_spin: float = 2e-4,
                 test: Optional[Callable[[object], bool]] = None):
        if not isinstance(window, int) or window < 1:
            raise KVStoreError(f"communication window must be a positive int, got {window!r}")
        self._poll = poll
        self._test = test or _mpi_test
        self._window = window
        self._inline_spin = inline_spin if poll is not None else 0.0
        self._cv = threading.Condition()
        self._issued = 0
        self._next = 0
        self._ready: Dict[int, Tuple[object, Done]] = {}
        # Someone (the thread or an inline submitter) is running a plain task or owns the pipeline.
        self._busy = False
        self._handover: Optional[Pipeline] = None
        self._failure: Optional[BaseException] = None
        self._max_in_flight = 0  # the most requests ever in flight at once (checked by the tests)
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    @property
    def window(self) -> int:
        """The most collectives in flight at once."""
        return self._window

    def reserve(self) -> int:
        """Claim the next slot in the communication order (call in program order)."""
        with self._cv:
            if self._stopping:
                raise KVStoreError("this kvstore was closed; create a new one")
            seq = self._issued
            self._issued += 1
            return seq

    def submit(self, seq: int, task, done: Done) -> None:
        """Run `task` in slot `seq`, then `done(None)`, or `done(error)` if it (or an earlier task) failed."""
        if isinstance(task, Nonblocking) and self._poll is None:
            raise KVStoreError("a Communicator without a poll function cannot run nonblocking tasks")
        with self._cv:
            inline = (self._inline_spin > 0 and isinstance(task, Nonblocking) and seq == self._next
                      and not self._busy and self._failure is None)
            if not inline:
                self._ready[seq] = (task, done)
                self._cv.notify()
                return
            self._next += 1
            self._busy = True
        self._run_inline(_Flight(task, done))

    def _run_inline(self, flight: _Flight) -> None:
        try:
            deadline = time.perf_counter() + self._inline_spin
            flight.posts = posts = list(flight.task.start())
            if len(posts) == 1:  # the common case, kept short: one request, no pipeline bookkeeping
                req = posts[0]()
                flight.posted = flight.pending = 1
                self._max_in_flight = max(self._max_in_flight, 1)
                test = self._test
                while not test(req):
                    if time.perf_counter() > deadline:
                        self._hand_over(deque([flight]), deque([(flight, req)]))
                        return
                flight.pending = 0
            else:
                flights, outstanding = deque([flight]), deque()
                while True:
                    self._post(flights, outstanding)
                    if not outstanding:
                        break
                    if self._test(outstanding[0][1]):
                        outstanding.popleft()[0].pending -= 1
                    elif time.perf_counter() > deadline:
                        self._hand_over(flights, outstanding)
                        return
            flight.task.finish()
        except BaseException as e:
            self._fail(e, [flight.done])
            return
        self._release()
        flight.done(None)

    def _hand_over(self, flights, outstanding) -> None:
        with self._cv:  # still pending: the communication thread finishes it
            self._handover = (flights, outstanding)
            self._cv.notify()

    def stop(self, timeout: Optional[float] = None) -> bool:
        """Take no new tasks; let the thread finish every task issued so far, then exit.

        Returns False if tasks were still outstanding after `timeout` seconds (a task whose
        engine op never became ready); the thread then exits whenever they are done."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        self._thread.join(timeout)
        return not self._thread.is_alive()

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

    # ----------------------------------------------------------------- the pipeline
    def _post(self, flights: Deque[_Flight], outstanding) -> None:
        """Post the next collectives, in sequence order, while fewer than `window` are in flight."""
        for f in flights:
            if f.posts is None:
                f.posts = list(f.task.start())
            while f.posted < len(f.posts):
                if len(outstanding) >= self._window:
                    return
                req = f.posts[f.posted]()
                f.posted += 1
                f.pending += 1
                outstanding.append((f, req))
                if len(outstanding) > self._max_in_flight:
                    self._max_in_flight = len(outstanding)

    def _advance(self, flights: Deque[_Flight], outstanding) -> None:
        """One step of the pipeline: top up the window, wait for the oldest request, then finish
        (and report) every leading task whose collectives all completed."""
        self._post(flights, outstanding)
        if outstanding:
            flight, req = outstanding[0]
            self._poll([req], flight.task.what)
            outstanding.popleft()
            flight.pending -= 1
        while flights and flights[0].complete:
            flight = flights[0]
            flight.task.finish()  # if it raises, the flight is still in `flights` and gets the error
            flights.popleft()
            flight.done(None)

    # ----------------------------------------------------------------- the thread
    def _release(self) -> None:
        with self._cv:
            self._busy = False
            # wake the thread only when work waits (a wake-up costs a thread switch) or it may exit
            if self._ready or self._stopping:
                self._cv.notify()

    def _fail(self, error: BaseException, dones: List[Done]) -> None:
        mpienv.mark_failed()
        with self._cv:
            if self._failure is None:
                self._failure = error
            self._busy = False
            self._cv.notify()
        for done in dones:
            done(error)

    def _take(self, flights: Deque[_Flight]):
        """Wait for work.  Returns (a pipeline handed over by an inline submitter or None, a plain
        task to run or None, tasks refused after a failure); ready Nonblocking tasks are appended
        to `flights`, which this thread owns (holding `_busy`) until it is empty again."""
        refused = []
        with self._cv:
            while True:
                if self._handover is not None:  # an inline submitter gave up its pipeline to us
                    handed, self._handover = self._handover, None
                    return handed, None, refused
                mine = bool(flights)  # this thread owns the pipeline (and _busy) while it is not empty
                while (mine or not self._busy) and self._next in self._ready:
                    task, done = self._ready[self._next]
                    if self._failure is not None:
                        refused.append((task, done))
                    elif isinstance(task, Nonblocking):
                        flights.append(_Flight(task, done))
                        mine = True
                    elif mine:
                        break  # a plain task waits until the collectives before it completed
                    else:
                        self._busy = True
                        del self._ready[self._next]
                        self._next += 1
                        return None, (task, done), refused
                    del self._ready[self._next]
                    self._next += 1
                if flights:
                    self._busy = True
                    return None, None, refused
                if refused:
                    return None, None, refused
                if self._stopping and not self._busy and self._next == self._issued:
                    return None, None, None  # closed, and every issued task has run
                self._cv.wait()

    def _loop(self) -> None:
        flights: Deque[_Flight] = deque()
        outstanding: Deque[Tuple[_Flight, object]] = deque()
        while True:
            handed, plain, refused = self._take(flights)
            if refused is None:
                return
            for _, done in refused:
                done(KVStoreCommError(f"kvstore communication stopped after an earlier failure: {self._failure}"))
            if handed is not None:
                flights, outstanding = handed
                continue
            if plain is not None:
                task, done = plain
                try:
                    task()
                except BaseException as e:  # recorded by the engine on the ops' outputs
                    self._fail(e, [done])
                    continue
                self._release()
                done(None)
                continue
            if not flights:
                continue
            try:
                self._advance(flights, outstanding)
            except BaseException as e:
                # Requests already posted by the failed pipeline are abandoned: the process is
                # going down (mark_failed) and later work is refused.
                failed = [f.done for f in flights]
                flights.clear()
                outstanding.clear()
                self._fail(e, failed)
                continue
            if not flights:
                self._release()
