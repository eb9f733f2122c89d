"""The communication thread's ordering and failure rules (plain tasks, no MPI needed)."""
from __future__ import annotations

import threading

import pytest

from ember.kvstore import KVStoreCommError, mpienv
from ember.kvstore.comm import Communicator


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
