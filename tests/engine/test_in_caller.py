"""The in-caller protocol (core.run_in_caller, push(inline=True)), its profiler entries, and every
way an op runs keeping the random-DAG = serial property, threaded and under NaiveEngine."""
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember.engine as engine
from ember import profiler
from ember.engine import core

from .test_random_dag import apply, run_serial


def _busy():
    """An op holding a worker until the returned event is set (the engine is not idle meanwhile)."""
    gate = threading.Event()
    engine.push(lambda: gate.wait(10), write=[engine.Var("busy")], name="busy")
    return gate


def test_idle_engine_runs_the_op_here_without_registering_it():
    before = engine.stats()["pushed"]
    seen = []
    v = engine.Var()
    assert core.run_in_caller(seen.append, (threading.get_ident(),), "here", lambda: ((), (v,), ()))
    assert seen == [threading.get_ident()]
    assert engine.stats()["pushed"] - before == 1  # counted, never queued
    v.wait()


def test_busy_engine_runs_an_op_whose_accesses_can_start_now_and_refuses_one_that_must_wait():
    gate = _busy()
    try:
        free, held = engine.Var("free"), engine.Var("held")
        engine.push(lambda: gate.wait(10), write=[held], name="holder")
        seen = []
        assert core.run_in_caller(seen.append, ("ran",), "free", lambda: ((), (free,), ()))
        assert seen == ["ran"]
        before = engine.stats()["pushed"]
        assert not core.run_in_caller(seen.append, ("no",), "held", lambda: ((held,), (free,), ()))
        assert engine.stats()["pushed"] == before and seen == ["ran"]  # nothing ran, nothing was pushed
    finally:
        gate.set()
    engine.wait_all()


@pytest.mark.parametrize("busy", [False, True])
def test_an_error_is_recorded_on_writes_and_fresh_outputs(busy):
    gate = _busy() if busy else None
    w, fresh = engine.Var("w"), engine.Var("fresh")

    def fail():
        raise ValueError("bad op")
    try:
        assert core.run_in_caller(fail, (), "fails", lambda: ((), (w,), (fresh,)))
    finally:
        if gate is not None:
            gate.set()
    engine.wait_all_quiet()
    assert isinstance(fresh.error, ValueError)  # the fresh output carries it too
    with pytest.raises(ValueError, match="bad op"):
        w.wait()
    assert fresh.error is None  # one failure is raised once, wherever it is recorded


def test_naive_engine_raises_at_the_call():
    engine.set_engine_type("NaiveEngine")
    w = engine.Var()

    def fail():
        raise KeyError("at the call")
    with pytest.raises(KeyError, match="at the call"):
        core.run_in_caller(fail, (), "fails", lambda: ((), (w,), ()))


def test_a_bulk_group_open_in_this_thread_refuses():
    with engine.bulk(4):
        assert not core.run_in_caller(lambda: None, (), "x", lambda: ((), (), ()))


def _records(name):
    return [r for r in profiler._records if r[0] == name]


def test_ops_run_in_the_caller_have_true_profiler_entries():
    profiler._records.clear()
    profiler.set_state("run")
    try:
        v = engine.Var()
        engine.push(lambda: time.sleep(0.02), write=[v], name="inline_sleep", inline=True)
        assert core.run_in_caller(time.sleep, (0.02,), "helper_sleep", lambda: ((), (v,), ()))
        engine.wait_all()
    finally:
        profiler.set_state("stop")
    profiler._collect()
    for name in ("inline_sleep", "helper_sleep"):
        (rec,) = _records(name)
        _, _, worker, start, end, thread = rec
        assert worker == -1 and thread == threading.get_ident()  # the caller's thread, not a worker
        assert end - start >= 15_000_000, f"{name}: {end - start} ns"


def test_naive_engine_async_op_returns_only_after_done():
    engine.set_engine_type("NaiveEngine")
    events = []

    def start(done):
        def later():
            time.sleep(0.05)
            events.append("done")
            done()
        threading.Thread(target=later).start()
    engine.push(start, write=[engine.Var()], prop="async", name="async_later")
    events.append("returned")
    assert events == ["done", "returned"]


def test_naive_engine_async_op_failing_later_raises_at_the_push():
    engine.set_engine_type("NaiveEngine")

    def start(done):
        threading.Thread(target=lambda: (time.sleep(0.02), done(RuntimeError("late failure")))).start()
    with pytest.raises(RuntimeError, match="late failure"):
        engine.push(start, write=[engine.Var()], prop="async", name="async_fails")


# -- every way an op runs keeps the random-DAG = serial property -----------------------------

PATHS = ("worker", "inline", "run_in_caller", "async_now", "async_thread", "priority")


def run_mixed(program, n_vars, paths):
    """Each op of `program` runs by one of PATHS (chosen per op), pushed from this thread."""
    vals = list(range(n_vars))
    vars_ = [engine.Var(f"v{i}") for i in range(n_vars)]
    for (op_id, reads, writes, _), path in zip(program, paths):
        body = (lambda o=op_id, r=reads, w=writes: apply(vals, o, r, w))
        rv, wv = [vars_[r] for r in reads], [vars_[w] for w in writes]
        if path == "run_in_caller":
            if not core.run_in_caller(body, (), "dag", lambda rv=rv, wv=wv: (rv, wv, ())):
                engine.push(body, read=rv, write=wv, name="dag")
        elif path.startswith("async"):
            def start(done, body=body, later=path == "async_thread"):
                if later:
                    threading.Thread(target=lambda: (body(), done())).start()
                else:
                    body()
                    done()
            engine.push(start, read=rv, write=wv, prop="async", name="dag")
        else:
            engine.push(body, read=rv, write=wv, name="dag", inline=path == "inline",
                        priority=op_id % 3 if path == "priority" else 0)
    engine.wait_all()
    return vals


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 5), max_size=3), st.lists(st.integers(0, 5), min_size=1, max_size=2),
                          st.sampled_from(PATHS)), min_size=1, max_size=50),
       st.sampled_from(["ThreadedEngine", "NaiveEngine"]))
def test_hypothesis_every_path_equals_serial(ops, engine_type):
    engine.set_engine_type(engine_type)
    program = [(i, r, w, 0) for i, (r, w, _) in enumerate(ops)]
    assert run_mixed(program, 6, [p for _, _, p in ops]) == run_serial(program, 6)


@pytest.mark.parametrize("path", PATHS[:4])
def test_long_program_on_one_path(path):
    from .test_random_dag import make_program
    program = make_program(3000, 20, seed=len(path))
    assert run_mixed(program, 20, [path] * len(program)) == run_serial(program, 20)


def test_an_op_run_under_the_idle_claim_may_push_ops_and_wait_for_them():
    # e.g. a Custom op's forward: no worker may start an op while the claim is held, so the ops
    # its owner pushes run in its thread (else waiting on one inside the op would never return)
    engine.wait_all()
    out, seen = engine.Var("pushed inside"), []

    def body():
        for k in range(3):
            engine.push(lambda k=k: seen.append(k), write=[out], name="inner")
        engine.wait(out)
        seen.append("waited")

    assert core.run_in_caller(body, (), "outer", lambda: ((), (), ()))
    assert seen == [0, 1, 2, "waited"]
