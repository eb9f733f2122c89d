"""Pulls of host keys as native copy ops (native_pull.py, native/host_copy.c)."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

from ember import engine
from ember.base import EngineError
from ember.engine import native
from ember.kvstore import create, native_pull


def _hold(var):
    """Push an op writing `var` that waits until the returned event is set."""
    release = threading.Event()
    engine.push(lambda: release.wait(10), write=[var], name="hold")
    return release


def test_plain_host_outputs_are_copied_natively_and_others_by_python(nd):
    kv = create("local")
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    kv.init(0, nd.array(a))
    engine.wait_all()
    outs = [nd.zeros((3, 4)), nd.zeros((3, 4)), nd.zeros((3, 4), dtype="float64")]
    before = native.host_copies_done()
    kv.pull(0, out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), a)
    # the two float32 outputs natively; the converting one by a Python op
    assert native.host_copies_done() - before == 2


def test_pull_waits_for_the_push_before_it_and_sees_its_sum(nd):
    kv = create("local")
    kv.init("w", nd.zeros((1000,)))
    vals = [nd.array(np.full(1000, i + 1.0, dtype=np.float32)) for i in range(3)]
    release = _hold(vals[0].var)  # the push cannot run yet, so neither can the pull
    kv.push("w", vals)
    out = nd.zeros((1000,))
    kv.pull("w", out=out)
    release.set()
    np.testing.assert_array_equal(out.asnumpy(), np.full(1000, 6.0))


def test_pull_inside_a_bulk_group_sees_the_push_the_group_holds(nd):
    kv = create("local")
    kv.init(0, nd.zeros((4,)))
    engine.wait_all()
    out = nd.zeros((4,))
    with engine.bulk(16):
        value = nd.ones((4,)) * 3
        kv.push(0, value)  # a Python op the group holds until it is flushed
        kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(4, 3.0))


def test_a_failed_push_fails_the_pull_and_the_output_is_untouched(nd):
    kv = create("local")
    kv.init(1, nd.zeros((8,)))
    value, out = nd.zeros((8,)), nd.array(np.full(8, 5.0, dtype=np.float32))
    engine.wait_all()

    def broken():
        raise ValueError("gradient of key 1 failed")
    engine.push(broken, write=[value.var], name="broken")
    before = native.host_copies_done()
    kv.push(1, value)
    kv.pull(1, out=out)
    with pytest.raises(ValueError, match="gradient of key 1 failed"):
        out.wait_to_read()
    engine.wait_all()  # raised once, by the read (as MXNet)
    np.testing.assert_array_equal(out._data, np.full(8, 5.0))
    assert native.host_copies_done() - before == 1  # it ran (copying nothing), so its arrays go


def test_kept_arrays_live_until_the_copy_ran_then_go(nd):
    kv = create("local")
    kv.init(2, nd.array(np.arange(4096, dtype=np.float32)))
    engine.wait_all()
    release = _hold(kv._store[2].var)
    out = nd.zeros((4096,))
    kv.pull(2, out=out)
    kept_src, kept_dst = native_pull._kept[-1]
    assert kept_src is kv._store[2].data and kept_dst is out._data
    del out  # the copy still has to write into this buffer
    gc.collect()
    release.set()
    engine.wait_all()
    np.testing.assert_array_equal(kept_dst, np.arange(4096, dtype=np.float32))
    again = nd.zeros((4096,))
    kv.pull(2, out=again)  # every earlier copy has run: the arrays kept for them are let go
    assert len(native_pull._kept) == 1 and native_pull._kept[0][1] is again._data
    np.testing.assert_array_equal(again.asnumpy(), np.arange(4096, dtype=np.float32))


def test_past_the_keep_limit_pulls_go_to_python_ops(nd, monkeypatch):
    monkeypatch.setattr(native_pull, "KEEP_LIMIT", 2)
    kv = create("local")
    kv.init(3, nd.array(np.ones(16, dtype=np.float32)))
    engine.wait_all()
    release = _hold(kv._store[3].var)
    before = native.host_copies_done()
    outs = [nd.zeros((16,)) for _ in range(5)]
    for o in outs:  # the first clears what earlier tests kept (all of it ran)
        kv.pull(3, out=o)
    assert len(native_pull._kept) == 2
    release.set()
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), np.ones(16))
    assert native.host_copies_done() - before == 2


def test_bad_arguments_of_the_native_copy_are_refused():
    v = engine.Var()
    buf = np.zeros(4, dtype=np.float32)
    assert native.push_host_copy(buf, buf, v, v, 0, "same") == -100  # one variable read and written
    v.delete()
    with pytest.raises(EngineError, match="deleted"):
        native.push_host_copy(buf, np.zeros(4, dtype=np.float32), v, engine.Var(), 0, "deleted")