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


def test_the_last_kernel_writes_the_returned_arrays_when_nothing_reads_them_later():
    x = mx.sym.var("x")
    sym = mx.sym.split(mx.sym.exp(x), num_outputs=2, axis=1)  # the last step: a kernel with two outputs
    exe = _bound(sym, x=(3, 4))
    own = [o.asnumpy().copy() for o in exe.outputs]
    targets = [exe.arg_dict["x"]]
    xv = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
    first = exe.forward_copied([mx.nd.array(xv)], targets, False)
    assert len(exe._copied.direct) == 2 and exe._copied.copied == ()
    for got, want in zip(first, np.split(np.exp(xv), 2, axis=1)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    kept = [f.asnumpy().copy() for f in first]
    second = exe.forward_copied([mx.nd.array(xv + 1)], targets, False)
    for f, k in zip(first, kept):  # each call's arrays are its own
        np.testing.assert_array_equal(f.asnumpy(), k)
    for got, want in zip(second, np.split(np.exp(xv + 1), 2, axis=1)):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    for o, before in zip(exe.outputs, own):  # the executor's own outputs were left as they were
        np.testing.assert_array_equal(o.asnumpy(), before)
    exe.forward(is_train=False)  # the general path writes them again (the kernel's list is restored)
    for o, want in zip(exe.outputs, np.split(np.exp(xv + 1), 2, axis=1)):
        np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-6)


def test_outputs_given_twice_and_outputs_a_backward_reads_stay_correct():
    x = mx.sym.var("x")
    y = mx.sym.split(x * 2.0, num_outputs=2, axis=0)[0]
    exe = _bound(mx.sym.Group([y, y]), x=(4, 2))
    for v in (1.0, 2.0):
        got = exe.forward_copied([mx.nd.full((4, 2), v)], [exe.arg_dict["x"]], False)
        assert len(exe._copied.direct) <= 1 and len(exe._copied.copied) >= 1
        for g in got:
            np.testing.assert_array_equal(g.asnumpy(), np.full((2, 2), 2.0 * v))
        assert got[0]._chunk is not got[1]._chunk
    trained = mx.sym.split(x * 3.0, num_outputs=2, axis=0)[1]
    exe = trained.simple_bind(mx.cpu(), x=(4, 2))  # gradients: the backward reads the forward's arrays
    out = exe.forward_copied([mx.nd.ones((4, 2))], [exe.arg_dict["x"]], True)
    assert exe._copied.direct == ()
    np.testing.assert_array_equal(out[0].asnumpy(), np.full((2, 2), 3.0))
    exe.backward(mx.nd.ones((2, 2)))
    np.testing.assert_array_equal(exe.grad_dict["x"].asnumpy(), [[0, 0], [0, 0], [3, 3], [3, 3]])


def test_a_failing_last_kernel_leaves_its_output_list_as_it_was():
    from ember import ops
    from ember.ops import registry
    fail = [False]

    def exp_or_fail(ctx, attrs, inputs, outputs, aux):
        if fail[0]:
            raise ArithmeticError("exp failed on purpose")
        np.exp(inputs[0], out=outputs[0])
    ops.override("exp", "cpu", exp_or_fail)
    try:
        x = mx.sym.var("x")
        exe = _bound(mx.sym.exp(x), x=(3,))
        target = [exe.arg_dict["x"]]
        np.testing.assert_allclose(exe.forward_copied([mx.nd.zeros((3,))], target, False)[0].asnumpy(), [1, 1, 1])
        assert len(exe._copied.direct) == 1
        fail[0] = True
        bad = exe.forward_copied([mx.nd.ones((3,))], target, False)[0]
        with pytest.raises(ArithmeticError, match="on purpose"):
            bad.asnumpy()
        fail[0] = False
        exe.arg_dict["x"][:] = 2.0
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), np.exp([2, 2, 2]), rtol=1e-6)
    finally:
        ops.get("exp").kernels.pop("cpu")
        registry._changed()


def test_a_last_node_with_aux_states_or_an_argument_output_keeps_its_arrays():
    x = mx.sym.var("x")
    bn = mx.sym.BatchNorm(x, fix_gamma=False, name="bn")  # aux states: the moving mean and variance
    exe = _bound(bn, x=(4, 3))
    exe.arg_dict["bn_gamma"][:] = 1.0
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    got = exe.forward_copied([mx.nd.array(data)], [exe.arg_dict["x"]], True)[0].asnumpy()
    assert exe._copied.direct == ()
    want = (data - data.mean(0)) / np.sqrt(data.var(0) + 1e-3)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert not np.allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), 0)  # updated in training
    ident = _bound(mx.sym.Group([x, mx.sym.exp(x)]), x=(3,))
    out = ident.forward_copied([mx.nd.ones((3,))], [ident.arg_dict["x"]], False)
    np.testing.assert_array_equal(out[0].asnumpy(), [1, 1, 1])
    np.testing.assert_allclose(out[1].asnumpy(), np.exp([1, 1, 1]), rtol=1e-6)


def test_the_plan_is_kept_for_the_same_targets_and_made_again_for_others():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    exe = _bound(x * 2.0 + y, x=(2,), y=(2,))
    a, b = exe.arg_dict["x"], exe.arg_dict["y"]
    targets = (a, b)  # a slot's tuple: known by identity
    exe.forward_copied([mx.nd.ones((2,)), mx.nd.ones((2,))], targets, False)
    plan = exe._copied
    exe.forward_copied([mx.nd.ones((2,)), mx.nd.ones((2,))], targets, False)
    assert exe._copied is plan
    listed = [a, b]  # a list with the same arrays: the same plan (compared by the arrays' ids)
    exe.forward_copied([mx.nd.ones((2,)), mx.nd.ones((2,))], listed, False)
    assert exe._copied is plan
    listed.reverse()  # the same list object, changed: a plan of its own
    got = exe.forward_copied([mx.nd.full((2,), 3.0), mx.nd.ones((2,))], listed, False)[0].asnumpy()
    assert exe._copied is not plan
    np.testing.assert_array_equal(got, [5.0, 5.0])  # y got the first source (3), x the second (1): 1 * 2 + 3
