"""Larger CPU ops run in their caller when they can start at once while BLAS uses every core
(`invoke.LARGE_OPS_IN_CALLER`, auto by default; EMBER_LARGE_OPS_IN_CALLER forces it), are pushed
otherwise, never wait in the caller for pending inputs, and keep the engine's error rules."""
import os
import sys
import threading

import numpy as np
import pytest

import ember as mx
from ember import ops
from ember.base import EmberError
from ember.engine import blas
from ember.ops import OpDef

invoke = sys.modules["ember.imperative.invoke"]
BIG = invoke.INLINE_MAX_ELEMENTS * 4
threaded = pytest.mark.skipif(mx.engine.engine_type() == "NaiveEngine",
                              reason="needs an asynchronous engine (NaiveEngine runs every op at push)")


def _op(name, kernel):
    if not ops.exists(name):
        ops.register(OpDef(name, infer_shape=lambda a, s: (s, [s[0]]), kernels={"any": kernel}))
    return getattr(mx.nd, name)


_where = []


def _record_thread(ctx, attrs, inputs, outputs, aux):
    _where.append(threading.get_ident())
    outputs[0][...] = inputs[0] * 2


def _ran_in_caller(x) -> bool:
    del _where[:]
    y = _op("_test_large_op_thread", _record_thread)(x)
    y.wait_to_read()
    np.testing.assert_array_equal(y.asnumpy()[:3], [2, 2, 2])
    return _where == [threading.get_ident()]


@threaded
def test_forced_on_a_large_op_runs_in_its_caller_and_forced_off_on_a_worker(monkeypatch):
    x = mx.nd.ones((BIG,))
    x.wait_to_read()
    monkeypatch.setattr(invoke, "LARGE_OPS_IN_CALLER", True)
    before = mx.engine.stats()["inline"]
    assert _ran_in_caller(x)
    assert mx.engine.stats()["inline"] > before
    monkeypatch.setattr(invoke, "LARGE_OPS_IN_CALLER", False)
    assert not _ran_in_caller(x)


@threaded
def test_auto_follows_whether_blas_uses_every_core(monkeypatch):
    x = mx.nd.ones((BIG,))
    x.wait_to_read()
    monkeypatch.setattr(invoke, "LARGE_OPS_IN_CALLER", None)
    monkeypatch.setattr(blas, "uses_every_core", lambda: True)
    assert _ran_in_caller(x)
    monkeypatch.setattr(blas, "uses_every_core", lambda: False)
    assert not _ran_in_caller(x)


@threaded
def test_a_large_op_with_a_pending_input_is_pushed_not_waited_for(monkeypatch):
    gate = threading.Event()
    opened_late = []

    def gated(ctx, attrs, inputs, outputs, aux):
        opened_late.append(not gate.wait(10))
        outputs[0][...] = inputs[0] + 1
    ones = mx.nd.ones((BIG,))
    ones.wait_to_read()
    monkeypatch.setattr(invoke, "LARGE_OPS_IN_CALLER", False)
    x = _op("_test_large_op_gated", gated)(ones)  # on a worker, pending until the gate opens
    monkeypatch.setattr(invoke, "LARGE_OPS_IN_CALLER", True)
    y = x * 3  # must not wait here: the gate opens below, in this thread
    gate.set()
    np.testing.assert_array_equal(y.asnumpy()[:2], [6, 6])
    assert opened_late == [False]


@threaded
def test_a_failing_large_op_in_the_caller_raises_at_the_wait(monkeypatch):
    monkeypatch.setattr(invoke, "LARGE_OPS_IN_CALLER", True)

    def failing(ctx, attrs, inputs, outputs, aux):
        raise ValueError("large op failed on purpose")
    x = mx.nd.ones((BIG,))
    x.wait_to_read()
    y = _op("_test_large_op_failing", failing)(x)  # ran in the caller: no raise at the call
    with pytest.raises(ValueError, match="on purpose"):
        y.wait_to_read()
    np.testing.assert_array_equal(x.asnumpy()[:2], [1, 1])  # nothing else lost
    mx.nd.waitall()


def test_results_are_the_same_either_way(monkeypatch):
    rs = np.random.RandomState(0)
    a, b = rs.standard_normal((300, 200)).astype(np.float32), rs.standard_normal((200, 400)).astype(np.float32)
    got = []
    for forced in (True, False):
        monkeypatch.setattr(invoke, "LARGE_OPS_IN_CALLER", forced)
        x, w = mx.nd.array(a), mx.nd.array(b)
        got.append((mx.nd.relu(mx.nd.dot(x, w)) + 1).asnumpy())
    np.testing.assert_array_equal(got[0], got[1])
    np.testing.assert_allclose(got[0], np.maximum(a @ b, 0) + 1, rtol=1e-4, atol=1e-4)


def test_environment_variable(monkeypatch):
    for value, want in (("", None), ("auto", None), ("0", False), ("1", True)):
        monkeypatch.setenv("EMBER_LARGE_OPS_IN_CALLER", value)
        assert invoke._large_ops_in_caller_from_env() is want
    monkeypatch.setenv("EMBER_LARGE_OPS_IN_CALLER", "yes")
    with pytest.raises(EmberError, match="EMBER_LARGE_OPS_IN_CALLER"):
        invoke._large_ops_in_caller_from_env()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one core: any BLAS thread count uses every core")
def test_blas_uses_every_core_until_limited_below_the_core_count():
    pytest.importorskip("threadpoolctl")
    if not blas.uses_every_core():
        pytest.skip("BLAS already limited below the core count by the environment")
    try:
        assert blas.set_blas_threads(1)
        assert not blas.uses_every_core()
    finally:
        blas.set_blas_threads(None)
    assert blas.uses_every_core()
