"""MXNet's rule for asynchronous errors: an error is raised once.

An error raised by wait_to_read / asnumpy / wait is not raised again by a later wait or waitall
(whichever array carries it: the failed op's outputs, views of them, ops that inherited it), and ops
reading such an array run again; errors not raised yet still are, by the next waitall, which then
clears them all.  Under NaiveEngine an op's error raises at the call that ran it, for every kind of op.
(Checked against MXNet 1.9.1 by hand with the anchor venv.)
"""
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import ember as mx
import ember.engine as engine
from ember.base import MXNetError


class Boom(Exception):
    pass


def _failing_array():
    """An array whose producing op fails asynchronously (a kernel error, as nd.random.normal(0, -1))."""
    return mx.nd.random.normal(0, -1, (2, 2))


def test_error_raised_by_wait_to_read_is_not_raised_by_waitall():
    a = _failing_array().copyto(mx.cpu())
    with pytest.raises(MXNetError, match="scale"):
        a.wait_to_read()
    mx.nd.waitall()
    a.wait_to_read()  # cleared: a second read does not raise either


def test_unraised_error_raised_once_by_waitall():
    _failing_array().copyto(mx.cpu())
    with pytest.raises(MXNetError, match="scale"):
        mx.nd.waitall()
    mx.nd.waitall()


def test_raised_error_cleared_everywhere_it_was_inherited():
    a, b = _failing_array().copyto(mx.cpu())  # two views of one failed array
    with pytest.raises(MXNetError):
        a.asnumpy()
    b.asnumpy()
    a, b = _failing_array().copyto(mx.cpu())
    with pytest.raises(MXNetError):
        mx.nd.waitall()
    b.asnumpy()
    c = mx.nd.dot(*_failing_array().copyto(mx.cpu())[:1], _failing_array())  # inherits both failures
    with pytest.raises(MXNetError):
        c.asnumpy()


def test_unraised_error_still_raised_after_another_was():
    first, second = engine.Var(), engine.Var()

    def fail(msg):
        def fn():
            raise Boom(msg)
        return fn
    engine.push(fail("first"), write=[first])
    engine.push(fail("second"), write=[second])
    with pytest.raises(Boom, match="first"):
        first.wait()
    with pytest.raises(Boom, match="second"):
        engine.wait_all()
    engine.wait_all()
    second.wait()


def test_readers_of_a_cleared_error_run_again():
    v, w = engine.Var(), engine.Var()
    ran = []

    def boom():
        raise Boom("x")
    engine.push(boom, write=[v])
    engine.push(lambda: ran.append("before"), read=[v], write=[w])  # skipped: inherits the error
    with pytest.raises(Boom):
        w.wait()
    assert ran == []
    engine.push(lambda: ran.append("after"), read=[v], write=[w])  # v's error was raised: it runs
    w.wait()
    assert ran == ["after"] and v.error is None and w.error is None
    engine.wait_all()


def test_kvstore_updates_resume_after_a_raised_push_error():
    """A failed gradient's error, once raised, no longer stops the store's later updates."""
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((3,)))
    kv._set_updater(lambda key, grad, weight: weight.__iadd__(grad))
    grad = mx.nd.ones((3,))

    def broken():
        raise Boom("gradient failed")
    engine.push(broken, write=[grad._chunk.var])
    kv.push(0, grad)
    out = mx.nd.zeros((3,))
    kv.pull(0, out=out)
    with pytest.raises(Boom):
        out.asnumpy()
    kv.push(0, mx.nd.ones((3,)))
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.ones(3))  # the store takes updates again
    mx.nd.waitall()


def test_error_of_async_op_from_another_thread_raised_once():
    v = engine.Var()

    def start(done):
        threading.Timer(0.01, lambda: done(OSError("link down"))).start()
    engine.push(start, write=[v], prop="async")
    with pytest.raises(OSError, match="link down"):
        engine.wait_all()
    v.wait()


_NAIVE_SCRIPT = textwrap.dedent("""
    import sys, traceback
    import ember as mx
    from ember.base import MXNetError
    assert mx.engine.engine_type() == "NaiveEngine"

    def raises_here(what, fn):
        try:
            fn()
        except MXNetError as e:
            # the traceback points at the caller's line, in this file
            frames = traceback.extract_tb(e.__traceback__)
            assert frames[0].filename == __file__, frames
            print(what, "raised")
        else:
            print(what, "did not raise")
        mx.nd.waitall()  # raised at the call: never again

    bad = lambda: mx.nd.random.normal(0, -1, (2, 2))
    raises_here("imperative", bad)
    raises_here("copyto", lambda: bad().copyto(mx.cpu()))
    x = mx.sym.var("x")
    ex = (mx.sym.random.normal(0, -1, (2, 2)) + x).simple_bind(mx.cpu(), x=(2, 2))
    raises_here("executor", lambda: ex.forward())

    def recorded():
        w = mx.nd.ones((2, 2))
        w.attach_grad()
        with mx.autograd.record():
            y = bad() * w
        y.backward()
    raises_here("autograd", recorded)

    def bulk():
        with mx.engine.bulk(8):
            bad()
    raises_here("bulk", bulk)
    a = mx.nd.ones((3,))
    print("after", (a + 1).asnumpy().tolist())
""")


def test_naive_engine_raises_at_the_call_for_every_kind_of_op(tmp_path):
    script = tmp_path / "naive.py"
    script.write_text(_NAIVE_SCRIPT)
    env = {"MXNET_ENGINE_TYPE": "NaiveEngine", "PATH": "/usr/bin:/bin"}
    import os
    env.update({k: v for k, v in os.environ.items() if k in ("PYTHONPATH", "HOME")})
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    assert lines == ["imperative raised", "copyto raised", "executor raised", "autograd raised", "bulk raised",
                     "after [2.0, 2.0, 2.0]"], res.stdout + res.stderr[-2000:]


def test_set_engine_type_naive_raises_at_call_then_threaded_defers():
    previous = engine.set_engine_type("NaiveEngine")
    try:
        with pytest.raises(MXNetError, match="scale"):
            _failing_array()
        mx.nd.waitall()
    finally:
        engine.set_engine_type(previous)
    a = _failing_array()  # threaded: returns at once
    with pytest.raises(MXNetError, match="scale"):
        a.asnumpy()


def test_a_raised_error_still_on_a_variable_leaves_the_in_caller_ways_on():
    # H1's case: a failed array still alive after its error was raised must not send every later
    # tiny op down the slow path.  While the error is live both ways refuse; once raised, both run.
    from ember.engine import core
    engine.set_engine_type("ThreadedEngine")
    v, other = engine.Var("failed"), engine.Var("other")
    engine.push(lambda: 1 / 0, write=[v], name="fails")
    engine.wait_all_quiet()
    assert not core.idle_claim()  # live: an unregistered op could miss that it must inherit it
    assert not core.run_in_caller(lambda: None, (), "reads_failed", lambda: ((v,), (), ()))
    with pytest.raises(ZeroDivisionError):
        v.wait()  # raised: cleared everywhere, though v still carries it until its next write
    assert core.idle_claim()
    core.idle_release_ok()
    ran = []
    gate = threading.Event()
    engine.push(lambda: gate.wait(10), write=[other], name="busy")  # the engine is not idle
    try:
        assert core.run_in_caller(lambda: ran.append(1), (), "reads_raised", lambda: ((v,), (), ()))
    finally:
        gate.set()
    engine.wait_all()
    assert ran == [1] and v.error is None
