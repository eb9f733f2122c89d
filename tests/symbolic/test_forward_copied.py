"""Executor.forward_copied: copies in, the forward and copies out as one engine op (a hybridized call)."""
import time

import numpy as np
import pytest

import ember as mx
import ember.engine as engine
from ember.gluon import nn


def _bound(sym, **shapes):
    return sym.simple_bind(mx.cpu(), grad_req="null", **shapes)


def test_it_gives_what_copy_forward_and_copies_give():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    sym = mx.sym.Group([mx.sym.tanh(x * 2.0) + y, mx.sym.sum(x), y])  # an output that is an argument
    exe = _bound(sym, x=(3, 4), y=(3, 4))
    xv = mx.nd.array(np.arange(12).reshape(3, 4) / 7.0)
    yv = mx.nd.array(np.ones((3, 4)))
    got = exe.forward_copied([xv, yv], [exe.arg_dict["x"], exe.arg_dict["y"]], False)
    want = [np.tanh(xv.asnumpy() * 2) + 1, xv.asnumpy().sum(keepdims=False).reshape(1), yv.asnumpy()]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.asnumpy().reshape(w.shape), w, rtol=1e-6)
    # the results are copies: the next call does not change them
    first = got[0].asnumpy().copy()
    exe.forward_copied([yv, yv], [exe.arg_dict["x"], exe.arg_dict["y"]], False)
    np.testing.assert_array_equal(got[0].asnumpy(), first)
    np.testing.assert_array_equal(exe.arg_dict["x"].asnumpy(), yv.asnumpy())  # the argument holds the input


def test_a_hybridized_call_on_an_idle_engine_is_one_op_in_the_caller():
    net = nn.HybridSequential()
    net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).rand(5, 3))
    want = net(x).asnumpy()
    net.hybridize()
    net(x).wait_to_read()
    mx.nd.waitall()
    before = mx.engine.stats()
    out = net(x)
    after = mx.engine.stats()
    assert after["inline"] - before["inline"] == 1 and after["pushed"] - before["pushed"] == 1  # one op, run here
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5)


def test_it_waits_for_a_pending_write_of_its_input():
    x = mx.sym.var("x")
    exe = _bound(x * 3.0, x=(4,))
    src = mx.nd.zeros((4,))
    data = src._data
    engine.push(lambda: (time.sleep(0.05), data.fill(2.0)), write=[src.var], name="slow_write")  # pending
    out = exe.forward_copied([src], [exe.arg_dict["x"]], False)
    np.testing.assert_array_equal(out[0].asnumpy(), [6, 6, 6, 6])


def test_random_draws_follow_the_seed_as_the_general_path():
    x = mx.sym.var("x")
    sym = mx.sym.Dropout(x * 1.0, p=0.5)
    a, b = _bound(sym, x=(64,)), _bound(sym, x=(64,))
    src = mx.nd.ones((64,))
    mx.random.seed(3)
    got = a.forward_copied([src], [a.arg_dict["x"]], True)[0].asnumpy()
    mx.random.seed(3)
    b.arg_dict["x"][:] = src
    want = b.forward(is_train=True)[0].asnumpy()
    np.testing.assert_array_equal(got, want)
    assert 0 < (got == 0).sum() < 64


def test_the_general_path_runs_what_it_cannot_take():
    x = mx.sym.var("x")
    exe = _bound(x + 1.0, x=(2, 3))
    target = exe.arg_dict["x"]
    assert exe.forward_copied([target], [target], False) is None          # the argument itself
    assert exe.forward_copied([mx.nd.ones((3, 2))], [target], False) is None  # another shape
    exe.set_monitor_callback(lambda name, arr: None)
    assert exe.forward_copied([mx.nd.ones((2, 3))], [target], False) is None  # a monitor watches


def test_a_kernel_error_surfaces_at_the_next_read_and_keeps_earlier_results():
    from ember import ops
    from ember.ops import registry
    x = mx.sym.var("x")
    exe = _bound(mx.sym.exp(x), x=(3,))
    src = mx.nd.zeros((3,))
    good = exe.forward_copied([src], [exe.arg_dict["x"]], False)[0]

    def failing(ctx, attrs, inputs, outputs, aux):
        raise ArithmeticError("exp failed on purpose")
    old = ops.override("exp", "cpu", failing)
    try:
        bad = exe.forward_copied([src], [exe.arg_dict["x"]], False)[0]
        with pytest.raises(ArithmeticError, match="on purpose"):
            bad.asnumpy()
    finally:
        ops.get("exp").kernels.pop("cpu")
        registry._changed()
    assert old is not None
    np.testing.assert_array_equal(good.asnumpy(), [1, 1, 1])
    np.testing.assert_array_equal(exe.forward_copied([src], [exe.arg_dict["x"]], False)[0].asnumpy(), [1, 1, 1])


def test_a_large_call_of_several_segments_keeps_its_segments_apart(monkeypatch):
    monkeypatch.setenv("MXNET_EXEC_BULK_EXEC_MAX_NODE_TRAIN", "1")
    x = mx.sym.var("x")
    exe = _bound(mx.sym.exp(x) + mx.sym.sin(x), x=(200, 200))  # 40,000 elements a node: pushed
    src = mx.nd.ones((200, 200))
    assert exe.forward_copied([src], [exe.arg_dict["x"]], False) is None
    small = _bound(mx.sym.exp(x) + mx.sym.sin(x), x=(4,))
    got = small.forward_copied([mx.nd.ones((4,))], [small.arg_dict["x"]], False)[0].asnumpy()
    np.testing.assert_allclose(got, np.full(4, np.exp(1) + np.sin(1)), rtol=1e-6)
