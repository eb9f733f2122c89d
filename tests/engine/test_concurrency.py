"""Many Python threads pushing and waiting; deleting variables with pending ops; GIL-free native ops."""
import threading
import time

import numpy as np

import ember.engine as engine
from ember.engine._native import lib


def test_pushes_from_8_threads_each_keep_program_order():
    n_threads, n_ops = 8, 3000
    logs = [[] for _ in range(n_threads)]
    shared = engine.Var("shared")
    counter = {"n": 0}

    def worker(t):
        own = engine.Var(f"own{t}")
        for i in range(n_ops):
            engine.push(lambda i=i: logs[t].append(i), write=[own])
            if i % 10 == 0:
                engine.push(lambda: counter.__setitem__("n", counter["n"] + 1), write=[shared])
        own.wait()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    engine.wait_all()
    assert all(log == list(range(n_ops)) for log in logs)
    assert counter["n"] == n_threads * n_ops // 10


def test_inline_and_worker_ops_from_8_threads_share_variables_safely():
    # inline ops run in the caller (idle fast path or handed back by the C core); others on workers.
    # Every thread appends to one shared log through one shared variable: each append must see the
    # previous one complete (read-modify-write of a counter), so any overlap loses increments.
    shared = engine.Var("shared")
    state = {"count": 0}

    def bump():
        c = state["count"]
        if c % 5 == 0:
            time.sleep(0.0002)  # releases the GIL in the middle: other threads and workers may run
        state["count"] = c + 1

    def worker(t):
        for i in range(400):
            engine.push(bump, write=[shared], inline=(i + t) % 3 != 0)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=120)
    engine.wait_all()
    assert state["count"] == 8 * 400


def test_waits_from_many_threads():
    v = engine.Var()
    done = []
    engine.push(lambda: time.sleep(0.05), write=[v])
    results = []

    def waiter():
        v.wait()
        results.append(v.error is None)

    threads = [threading.Thread(target=waiter) for _ in range(8)]
    for th in threads:
        th.start()
    engine.push(lambda: done.append(1), read=[v])
    for th in threads:
        th.join(timeout=30)
    assert results == [True] * 8
    engine.wait_all()
    assert done == [1]


def test_delete_variable_with_pending_ops():
    out = []
    for _ in range(200):
        v = engine.Var()
        engine.push(lambda: time.sleep(0.0005), write=[v])
        engine.push(lambda: out.append(1), read=[v])
        v.delete()  # deferred until both ops finish
        del v
    engine.wait_all()
    assert len(out) == 200


def test_numpy_ops_run_in_parallel_on_workers():
    # matmuls release the GIL: independent ones overlap on 2 workers
    a = np.random.rand(300, 300).astype(np.float32)
    outs = [None] * 8
    vars_ = [engine.Var() for _ in range(8)]
    for i in range(8):
        engine.push(lambda i=i: outs.__setitem__(i, a @ a), write=[vars_[i]])
    engine.wait_all()
    for o in outs:
        np.testing.assert_allclose(o, a @ a, rtol=1e-4)


def test_native_ops_need_no_python():
    v = engine.Var()
    before = engine.stats()["completed"]
    for _ in range(1000):
        engine.push_native(lib.ember_noop, write=[v], name="noop")
    v.wait()
    assert engine.stats()["completed"] - before >= 1000


def test_independent_ops_run_on_different_workers_at_once(run_python):
    # Each op waits at a barrier for the other: this only completes if the two run concurrently,
    # i.e. a worker's batch of ready Python ops leaves work for the other worker.
    code = """
    import threading, ember.engine as e
    for round_ in range(20):
        barrier = threading.Barrier(2, timeout=5)
        for _ in range(2):
            e.push(barrier.wait, write=[e.Var()])
        e.wait_all()
    print('ok')
    """
    r = run_python(code, env={"EMBER_CPU_WORKER_NTHREADS": "2"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
