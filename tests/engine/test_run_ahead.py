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


@pytest.fixture
def bytes_bound(monkeypatch):
    """set_run_ahead_bytes for one test (restored after it), with large ops pushed to the workers
    (as where a BLAS call does not use every core) instead of run in their caller."""
    import importlib
    monkeypatch.setattr(importlib.import_module("ember.imperative.invoke"), "LARGE_OPS_IN_CALLER", False)
    old = engine.get_run_ahead_bytes()
    yield engine.set_run_ahead_bytes
    engine.set_run_ahead_bytes(old)


def _peak_of_a_chain(steps: int) -> tuple:
    """(peak bytes in use, result) of `steps` additions on a 4 MB array, each result replacing the last."""
    import numpy as np
    import ember as mx
    x = mx.nd.zeros((1024, 1024))
    mx.nd.waitall()
    mx.memory.reset_peak_stats()
    base = mx.memory.stats()["bytes_in_use"]
    for _ in range(steps):
        x = mx.nd.exp(mx.nd.log(x + 1.0))  # a few ms a step: the pusher runs ahead of the worker
    value = x.asnumpy()
    np.testing.assert_allclose(value, steps, rtol=1e-4)
    return mx.memory.stats()["peak_bytes_in_use"] - base, value


def test_memory_taken_ahead_of_the_workers_stays_near_the_byte_bound(bytes_bound):
    bytes_bound(16 << 20)
    peak, _ = _peak_of_a_chain(60)
    assert peak < 64 << 20  # 16 MB ahead, plus the arrays of the ops then running
    bytes_bound(0)
    peak, _ = _peak_of_a_chain(60)
    assert peak > 160 << 20  # unbounded: the chain's arrays pile up (what the bound prevents)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "8"])
def test_bad_byte_bound_is_refused(bad):
    with pytest.raises(ValueError, match="run-ahead bytes"):
        engine.set_run_ahead_bytes(bad)


def test_byte_bound_from_the_environment_and_its_setter(run_python):
    r = run_python("import ember.engine as e; print(e.get_run_ahead_bytes()); print(e.set_run_ahead_bytes(5)); "
                   "print(e.get_run_ahead_bytes())", env={"EMBER_RUN_AHEAD_BYTES": "4096"})
    assert r.stdout.split() == ["4096", "4096", "5"], r.stderr
    r = run_python("import ember.engine", env={"EMBER_RUN_AHEAD_BYTES": "lots"})
    assert r.returncode != 0 and "EMBER_RUN_AHEAD_BYTES='lots' is not an integer" in r.stderr
