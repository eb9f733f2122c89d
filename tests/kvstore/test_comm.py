"""The communication thread's ordering and failure rules (plain tasks, no MPI needed)."""
from __future__ import annotations

import threading

import pytest

from ember.kvstore import KVStoreCommError, KVStoreError, mpienv
from ember.kvstore.comm import Communicator, Nonblocking


def collect():
    results, finished = [], threading.Event()
    lock = threading.Lock()

    def make_done(tag, expected):
        def done(exc):
            with lock:
                results.append((tag, exc))
                if len(results) == expected:
                    finished.set()
        return done
    return results, finished, make_done


def test_tasks_run_in_reserved_order_whatever_the_submission_order():
    comm = Communicator()
    seqs = [comm.reserve() for _ in range(5)]
    ran = []
    results, finished, make_done = collect()
    for seq in reversed(seqs):  # readiness order is the reverse of program order
        comm.submit(seq, lambda seq=seq: ran.append(seq), make_done(seq, 5))
    assert finished.wait(10)
    assert ran == seqs
    assert [exc for _, exc in results] == [None] * 5


def test_a_failure_fails_every_later_task_with_a_clear_error(monkeypatch):
    monkeypatch.setattr(mpienv, "_failed", False)
    comm = Communicator()
    seqs = [comm.reserve() for _ in range(3)]
    results, finished, make_done = collect()

    def boom():
        raise KVStoreCommError("peer 1 vanished")
    comm.submit(seqs[0], boom, make_done(0, 3))
    comm.submit(seqs[1], lambda: None, make_done(1, 3))
    comm.submit(seqs[2], lambda: None, make_done(2, 3))
    assert finished.wait(10)
    errors = dict(results)
    assert str(errors[0]) == "peer 1 vanished"
    for tag in (1, 2):
        assert isinstance(errors[tag], KVStoreCommError)
        assert "stopped after an earlier failure: peer 1 vanished" in str(errors[tag])
    assert mpienv._failed  # exit will skip MPI_Finalize


def test_call_returns_the_result_and_reraises_errors():
    comm = Communicator()
    assert comm.call(lambda: 42, timeout=10) == 42
    with pytest.raises(ZeroDivisionError):
        comm.call(lambda: 1 / 0, timeout=10)


def test_call_stuck_behind_work_that_never_arrives_raises(monkeypatch):
    monkeypatch.setattr(mpienv, "_failed", False)
    comm = Communicator()
    comm.reserve()  # a push whose engine op never runs (its input failed)
    with pytest.raises(KVStoreCommError, match="stuck behind earlier work"):
        comm.call(lambda: None, timeout=0.3)


class FakeMPI:
    """Requests that complete when polled (or after `tests_to_complete` tests): the window's bookkeeping without MPI."""

    def __init__(self, tests_to_complete=None):
        self.posted, self.in_flight, self.max_in_flight = [], 0, 0
        self.tests_to_complete = tests_to_complete
        self.lock = threading.Lock()

    def post(self, name):
        def do():
            with self.lock:
                self.posted.append(name)
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return {"name": name, "done": False, "tests": 0}
        return do

    def _complete(self, req):
        with self.lock:
            if not req["done"]:
                req["done"] = True
                self.in_flight -= 1

    def poll(self, reqs, what):
        for r in reqs:
            self._complete(r)

    def test(self, req):
        req["tests"] += 1
        if self.tests_to_complete is not None and req["tests"] >= self.tests_to_complete:
            self._complete(req)
        return req["done"]


def run_nonblocking(comm, fake, chunks_per_task, finish=None):
    """Submit one Nonblocking task per entry of chunks_per_task, in reverse order; returns (results, finished order)."""
    seqs = [comm.reserve() for _ in chunks_per_task]
    results, finished, make_done = collect()
    finish_order = []
    for seq, n in reversed(list(zip(seqs, chunks_per_task))):
        def fin(seq=seq):
            finish_order.append(seq)
            if finish is not None:
                finish(seq)
        task = Nonblocking(lambda seq=seq, n=n: [fake.post((seq, c)) for c in range(n)], fin, f"task {seq}")
        comm.submit(seq, task, make_done(seq, len(seqs)))
    assert finished.wait(10)
    return results, finish_order, seqs


@pytest.mark.parametrize("window", [1, 2, 5])
@pytest.mark.parametrize("tests_to_complete", [None, 1, 3])  # never inline / at once / after a few tests
def test_window_bounds_requests_in_flight_and_keeps_the_order(window, tests_to_complete):
    fake = FakeMPI(tests_to_complete)
    comm = Communicator(poll=fake.poll, test=fake.test, window=window)
    chunks = [3, 1, 4, 1, 5]
    results, finish_order, seqs = run_nonblocking(comm, fake, chunks)
    assert fake.posted == [(s, c) for s, n in zip(seqs, chunks) for c in range(n)]  # sequence order
    assert fake.max_in_flight <= window
    if tests_to_complete is None:  # nothing completes before it is waited for: the window fills
        assert fake.max_in_flight == window == comm._max_in_flight
    assert finish_order == seqs
    assert [exc for _, exc in results] == [None] * len(seqs)
    assert fake.in_flight == 0


def test_plain_tasks_wait_for_the_collectives_before_them():
    fake = FakeMPI()
    comm = Communicator(poll=fake.poll, test=fake.test, window=2)
    seen = []
    seqs = [comm.reserve() for _ in range(3)]
    results, finished, make_done = collect()
    comm.submit(seqs[1], lambda: seen.append(fake.in_flight), make_done(1, 3))  # a barrier, say
    comm.submit(seqs[2], Nonblocking(lambda: [fake.post("after")], lambda: None, "after"), make_done(2, 3))
    comm.submit(seqs[0], Nonblocking(lambda: [fake.post(c) for c in range(4)], lambda: None, "before"),
                make_done(0, 3))
    assert finished.wait(10)
    assert seen == [0] and fake.posted == [0, 1, 2, 3, "after"]
    assert [exc for _, exc in results] == [None] * 3


def test_a_failing_finish_in_the_window_fails_it_and_every_later_task(monkeypatch):
    monkeypatch.setattr(mpienv, "_failed", False)
    fake = FakeMPI()
    comm = Communicator(poll=fake.poll, test=fake.test, window=3)

    def finish(seq):
        if seq == 1:
            raise KVStoreCommError("workers pushed different keys")
    results, finish_order, seqs = run_nonblocking(comm, fake, [2, 2, 2, 2], finish)
    errors = dict(results)
    assert errors[0] is None
    assert str(errors[1]) == "workers pushed different keys"
    for seq in seqs[2:]:  # already posted ones and later ones alike
        assert isinstance(errors[seq], KVStoreCommError)
    assert mpienv._failed
    with pytest.raises(KVStoreCommError, match="stopped after an earlier failure"):
        comm.call(lambda: None, timeout=10)


def test_window_must_be_positive():
    with pytest.raises(KVStoreError, match="window must be a positive int"):
        Communicator(window=0)


def test_stop_runs_what_was_issued_then_exits_and_refuses_new_work():
    comm = Communicator()
    first, late = comm.reserve(), comm.reserve()
    ran = []
    results, finished, make_done = collect()
    comm.submit(first, lambda: ran.append("first"), make_done("first", 2))
    stopper = threading.Thread(target=lambda: ran.append(("stopped", comm.stop(timeout=10))))
    stopper.start()
    comm.submit(late, lambda: ran.append("late"), make_done("late", 2))  # issued before stop: still runs
    stopper.join(15)
    assert finished.wait(10)
    assert ran == ["first", "late", ("stopped", True)]
    assert not comm._thread.is_alive()
    with pytest.raises(KVStoreError, match="closed"):
        comm.reserve()


def test_stop_reports_work_that_never_arrives():
    comm = Communicator()
    comm.reserve()  # its engine op never runs
    assert comm.stop(timeout=0.2) is False
