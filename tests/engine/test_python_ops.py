"""Python ops pushed through `_native.push_fn` (the GIL kept at the push, the callable held by the op
and called from C), run in worker batches or continued by the worker whose completion made them
ready: ordering = serial on every path, threaded and NaiveEngine; errors, references, profiler."""
import gc
import threading
import time
import weakref

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember.engine as engine
from ember import profiler
from ember.engine import core

from .test_random_dag import apply, run_serial

PATHS = ("plain", "priority", "chain", "generator")


def run_paths(program, n_vars, paths):
    """Each op by one of PATHS: plain push (push_fn), prioritised (the general path, push_fn_handles),
    a chain of 3 more updates on its first written variable (worker continuation), reads given as a
    generator (push_fn declines: the general path)."""
    vals = list(range(n_vars))
    serial = []
    vars_ = [engine.Var(f"v{i}") for i in range(n_vars)]
    for (op_id, reads, writes, _), path in zip(program, paths):
        rv, wv = [vars_[r] for r in reads], [vars_[w] for w in writes]
        body = (lambda o=op_id, r=reads, w=writes: apply(vals, o, r, w))
        serial.append((op_id, reads, writes, 0))
        if path == "generator":
            engine.push(body, read=(v for v in rv), write=tuple(wv), name="dag")
        else:
            engine.push(body, read=rv, write=wv, name="dag", priority=op_id % 3 if path == "priority" else 0)
        if path == "chain":
            for k in range(3):
                cid = 10_000 + op_id * 4 + k
                engine.push(lambda o=cid, w=writes[:1]: apply(vals, o, [], w), write=wv[:1], name="chain")
                serial.append((cid, [], writes[:1], 0))
    engine.wait_all()
    return vals, serial


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 5), max_size=3), st.lists(st.integers(0, 5), min_size=1, max_size=2),
                          st.sampled_from(PATHS)), min_size=1, max_size=60),
       st.sampled_from(["ThreadedEngine", "NaiveEngine"]),
       st.sampled_from(["priority", "fifo", "lifo", "critical_path"]))
def test_hypothesis_python_op_paths_equal_serial(ops, engine_type, policy):
    engine.set_engine_type(engine_type)
    engine.set_policy(policy)
    program = [(i, r, w, 0) for i, (r, w, _) in enumerate(ops)]
    vals, serial = run_paths(program, 6, [p for _, _, p in ops])
    assert vals == run_serial(serial, 6)


def test_long_chains_and_fan_out_equal_serial_and_every_op_is_counted():
    engine.set_engine_type("ThreadedEngine")  # (the conftest restores it after each test)
    from .test_random_dag import make_program
    program = make_program(20_000, 3, seed=7)  # 3 variables: long chains, where workers continue ops
    before = engine.stats()["queues"]["cpu"]
    vals, serial = run_paths(program, 3, ["plain"] * len(program))
    assert vals == run_serial(serial, 3)
    after = engine.stats()["queues"]["cpu"]
    assert after["run"] - before["run"] == after["pushed"] - before["pushed"] >= len(program)
    assert after["waiting"] == 0


class _Op:
    """A callable whose lifetime a weakref can watch."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self):
        return self.fn()


def test_the_op_drops_its_callable_after_running_and_after_being_skipped():
    engine.set_engine_type("ThreadedEngine")  # (the conftest restores it after each test)
    v, w = engine.Var(), engine.Var()
    ran = _Op(lambda: None)
    fails = _Op(lambda: 1 / 0)
    skipped = _Op(lambda: pytest.fail("a reader of a failed variable ran"))
    refs = [weakref.ref(o) for o in (ran, fails, skipped)]
    engine.push(ran, write=[v])
    engine.push(fails, write=[v], name="divide")
    engine.push(skipped, read=[v], write=[w], name="reader")
    del ran, fails, skipped
    with pytest.raises(ZeroDivisionError) as info:
        w.wait()  # the reader inherited the error: the original exception, raised once
    assert "divide" in "".join(getattr(info.value, "__notes__", []))
    engine.wait_all()  # raised already: not again
    gc.collect()
    assert [r() for r in refs] == [None, None, None]
    assert engine.stats()["skipped"] >= 1


def test_an_error_in_a_batch_surfaces_at_the_next_wait_and_the_other_ops_run():
    engine.set_engine_type("ThreadedEngine")  # (the conftest restores it after each test)
    vs = [engine.Var() for _ in range(64)]
    hits = []
    gate = threading.Event()
    engine.push(lambda: gate.wait(10), write=vs, name="gate")  # all 64 become ready together
    for i, v in enumerate(vs):
        engine.push((lambda i=i: hits.append(i)) if i != 17 else (lambda: {}["missing"]), write=[v], name=f"op{i}")
    gate.set()
    with pytest.raises(KeyError, match="missing"):
        engine.wait_all()
    assert sorted(hits) == [i for i in range(64) if i != 17]
    assert vs[17].error is None  # raised once by wait_all: consumed
    engine.wait_all()


def test_bad_variables_get_the_general_paths_errors():
    engine.set_engine_type("ThreadedEngine")  # (the conftest restores it after each test)
    with pytest.raises(TypeError, match="engine.Var"):
        engine.push(lambda: None, write=[object()])
    dead = engine.Var("dead")
    dead.delete()
    with pytest.raises(core.EngineError, match="dead"):
        engine.push(lambda: None, read=[dead], write=[engine.Var()])
    engine.push(42, write=[engine.Var("not_callable")], name="not_callable")  # fails when it runs
    with pytest.raises(TypeError, match="not callable"):
        engine.wait_all()


def test_ops_continued_on_a_worker_have_true_profiler_entries():
    engine.set_engine_type("ThreadedEngine")  # (the conftest restores it after each test)
    profiler._records.clear()
    profiler.set_state("run")
    try:
        v = engine.Var()
        for _ in range(100):  # a chain: each op is made ready by the previous one's completion
            engine.push(lambda: time.sleep(0.0005), write=[v], name="chained_sleep")
        engine.wait_all()
    finally:
        profiler.set_state("stop")
    profiler._collect()
    recs = [r for r in profiler._records if r[0] == "chained_sleep"]
    assert len(recs) == 100
    spans = sorted((start, end) for _, _, worker, start, end, _thread in recs)
    for _, _, worker, start, end, _thread in recs:
        assert worker >= 0  # a worker ran it
        assert end - start >= 400_000, f"{end - start} ns"
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert start >= end  # a chain: never two at once


def test_ops_in_caller_on_one_thread_and_worker_sessions_on_others_never_deadlock():
    engine.set_engine_type("ThreadedEngine")  # (the conftest restores it after each test)
    # A thread running ops under the idle claim (they need the GIL) while Python ops pushed by this
    # thread run in worker sessions (which hold the GIL): sessions end, or never start, while a
    # claim is held elsewhere, and pushes keep the GIL only for the push itself.
    mine, theirs = [0], [0]
    stop = threading.Event()
    v_theirs = engine.Var()

    def other_thread():
        while not stop.is_set():
            if not core.run_in_caller(lambda: theirs.__setitem__(0, theirs[0] + 1), (), "claimed",
                                      lambda: ((), (v_theirs,), ())):
                engine.push(lambda: theirs.__setitem__(0, theirs[0] + 1), write=[v_theirs], name="pushed")

    t = threading.Thread(target=other_thread)
    t.start()
    try:
        vs = [engine.Var() for _ in range(8)]
        for i in range(20_000):
            engine.push(lambda: mine.__setitem__(0, mine[0] + 1), write=[vs[i % 8]], name="mine")
            if i % 1000 == 0:
                engine.wait_all(timeout=30)
        engine.wait_all(timeout=30)
    finally:
        stop.set()
        t.join(30)
    assert not t.is_alive()
    engine.wait_all(timeout=30)
    assert mine[0] == 20_000 and theirs[0] > 0
