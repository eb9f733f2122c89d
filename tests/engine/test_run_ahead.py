"""The run-ahead bound: a thread pushing Python ops faster than they run waits (without the GIL)
once more than the bound are pending, until half of them ended; ops that push ops never wait, and
a backlog that cannot drain (an async op waiting for the pusher) stops the waiting instead of
hanging the pusher."""
import time

import pytest

import ember.engine as engine
from ember.engine import core


@pytest.fixture
def bound():
    """set_run_ahead for one test, the previous bound restored after it."""
    old = engine.get_run_ahead()
    yield engine.set_run_ahead
    engine.set_run_ahead(old)


def _push_slow_chain(n, log, var):
    """n ops on one variable, each sleeping (GIL released) 0.5 ms; the most pending seen after a push."""
    most = 0
    for i in range(n):
        engine.push(lambda i=i: (time.sleep(0.0005), log.append(i)), write=[var], name="slow")
        most = max(most, core.stats()["pending"])
    return most


def test_pending_stays_within_the_bound(bound):
    bound(32)
    log, v = [], engine.Var("chain")
    most = _push_slow_chain(300, log, v)
    engine.wait_all()
    assert most <= 32
    assert log == list(range(300))  # the order of a chain is kept


def test_without_a_bound_the_pusher_runs_ahead(bound):
    bound(0)
    log, v = [], engine.Var("chain")
    most = _push_slow_chain(300, log, v)
    engine.wait_all()
    assert most > 100  # what the bound above prevents
    assert log == list(range(300))


def test_async_op_waiting_for_the_pusher_does_not_hang_it(bound):
    bound(16)
    v = engine.Var("gate")
    dones, log = [], []
    engine.push(lambda done: dones.append(done), write=[v], prop="async", name="gate")
    for i in range(100):  # every one waits on the gate, which only this thread opens
        engine.push(lambda i=i: log.append(i), read=[v], write=[engine.Var()] if i % 2 else [v], name="after")
    assert len(log) == 0
    dones[0]()
    engine.wait_all()
    assert sorted(log) == list(range(100))
    # once the backlog drained, pushes wait again
    w = engine.Var("chain")
    assert _push_slow_chain(100, [], w) <= 16
    engine.wait_all()


def test_ops_that_push_ops_never_wait(bound):
    bound(8)
    seen, log = [], []
    inner = engine.Var("inner")

    def outer():
        for i in range(50):
            engine.push(lambda i=i: (time.sleep(0.0002), log.append(i)), write=[inner], name="inner")
        seen.append((core.stats()["pending"], core.lib.ember_run_ahead_over(core._E)))

    engine.push(outer, write=[engine.Var("outer")], name="outer")
    engine.wait_all()
    pending, over = seen[0]
    assert pending > 8 and over == 0  # past the bound, yet a worker's push does not wait
    assert log == list(range(50))


@pytest.mark.parametrize("bad", [-1, 1.5, True, "8"])
def test_bad_bound_is_refused(bad):
    with pytest.raises(ValueError, match="run-ahead bound"):
        engine.set_run_ahead(bad)


def test_set_run_ahead_returns_the_previous_bound(bound):
    bound(40)
    assert engine.set_run_ahead(24) == 40
    assert engine.get_run_ahead() == 24


def test_environment_sets_the_bound(run_python):
    r = run_python("import ember.engine as e; print(e.get_run_ahead())", env={"EMBER_RUN_AHEAD": "48"})
    assert r.stdout.strip() == "48", r.stderr
    r = run_python("import ember.engine", env={"EMBER_RUN_AHEAD": "lots"})
    assert r.returncode != 0 and "EMBER_RUN_AHEAD='lots' is not an integer" in r.stderr
