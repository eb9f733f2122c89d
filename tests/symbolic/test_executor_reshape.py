"""Executor.reshape with MXNet 1.9.1's semantics, shared storage pools, simple_bind sharing
(shared_arg_names, shared_buffer, shared_exec), group2ctx and get_optimized_symbol."""
import numpy as np
import pytest

import ember as mx
from ember.base import MXNetError


def _fc_exe(batch=5, grad_req="null"):
    x = mx.sym.Variable("x")
    y = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    exe = y.simple_bind(mx.cpu(), x=(batch, 4), grad_req=grad_req)
    exe.arg_dict["x"][:] = 1
    exe.arg_dict["fc_weight"][:] = mx.nd.ones((4, 4))
    exe.arg_dict["fc_bias"][:] = 0
    return exe


def test_smaller_batch_writes_into_the_old_arrays():
    exe = _fc_exe()
    small = exe.reshape(x=(3, 4))
    assert small.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]
    assert small.arg_dict["x"].shape == (3, 4)
    small.arg_dict["x"][:] = 2  # a view of the first 12 elements of the old data array
    np.testing.assert_array_equal(exe.arg_dict["x"].asnumpy()[:3], np.full((3, 4), 2.0))
    np.testing.assert_array_equal(exe.arg_dict["x"].asnumpy()[3:], np.ones((2, 4)))
    small.forward()
    np.testing.assert_array_equal(small.outputs[0].asnumpy(), np.full((3, 4), 8.0))
    # the outputs share the old executor's storage, as in MXNet
    np.testing.assert_array_equal(exe.outputs[0].asnumpy()[:3], np.full((3, 4), 8.0))
    exe.forward()
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [[8.0] * 4] * 3 + [[4.0] * 4] * 2)


def test_up_sizing_and_partial_shaping_rules():
    exe = _fc_exe()
    with pytest.raises(MXNetError, match="allow_up_sizing"):
        exe.reshape(x=(6, 4))
    big = exe.reshape(allow_up_sizing=True, x=(6, 4))
    big.arg_dict["x"][:] = 0  # a new array: the old data is untouched
    np.testing.assert_array_equal(exe.arg_dict["x"].asnumpy(), np.ones((5, 4)))
    assert big.arg_dict["fc_weight"] is exe.arg_dict["fc_weight"]
    big.arg_dict["x"][:] = 1
    np.testing.assert_array_equal(big.forward()[0].asnumpy(), np.full((6, 4), 4.0))
    # changing the feature size changes the (unnamed) weight: needs partial_shaping
    with pytest.raises(MXNetError, match="partial_shaping"):
        exe.reshape(x=(5, 2))
    part = exe.reshape(x=(5, 2), partial_shaping=True)
    assert part.arg_dict["fc_weight"].shape == (4, 2)
    # names that are no input and non-tuple values are ignored, as MXNet does
    same = exe.reshape(x=(5, 4), not_an_input=(3,), fc_bias=[1])
    assert same.arg_dict["x"] is exe.arg_dict["x"]


def test_reshape_keeps_gradients_and_monitor():
    exe = _fc_exe(grad_req="write")
    names = []
    exe.set_monitor_callback(lambda n, a: names.append(str(n)))
    small = exe.reshape(x=(2, 4))
    assert small.grad_dict["fc_weight"] is exe.grad_dict["fc_weight"]
    assert small.grad_dict["x"].shape == (2, 4)
    small.forward(is_train=True)
    small.backward(mx.nd.ones((2, 4)))
    np.testing.assert_array_equal(small.grad_dict["fc_bias"].asnumpy(), np.full(4, 2.0))
    np.testing.assert_array_equal(small.grad_dict["fc_weight"].asnumpy(), np.full((4, 4), 2.0))
    assert "fc_output" in names


def test_executors_on_one_pool_are_ordered():
    """Two executors on one storage pool, used alternately without waits, give each its own results."""
    x = mx.sym.var("x")
    y = mx.sym.sqrt(mx.sym.exp(mx.sym.relu(x) * 2) + 1)
    big = y.simple_bind(mx.cpu(), x=(256,), grad_req="null")
    small = big.reshape(x=(100,))
    other = y.simple_bind(mx.cpu(), x=(256,), grad_req="null", shared_exec=big)  # shares the pool too
    rng = np.random.RandomState(0)
    want = lambda v: np.sqrt(np.exp(np.maximum(v, 0) * 2) + 1)  # noqa: E731
    for _ in range(5):
        a, b = rng.uniform(-1, 1, 256).astype(np.float32), rng.uniform(-1, 1, 256).astype(np.float32)
        out_b = big.forward(x=mx.nd.array(a))[0]
        got_b = out_b.asnumpy()
        out_o = other.forward(x=mx.nd.array(b))[0]
        np.testing.assert_allclose(got_b, want(a), rtol=1e-5)
        np.testing.assert_allclose(out_o.asnumpy(), want(b), rtol=1e-5)
        small.arg_dict["x"][:] = a[:100]
        np.testing.assert_allclose(small.forward()[0].asnumpy(), want(a[:100]), rtol=1e-5)


def test_simple_bind_sharing():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    buffer = {}
    e1 = net.simple_bind(mx.cpu(), data=(4, 5), shared_buffer=buffer, shared_arg_names=["fc_weight", "fc_bias"])
    # inputs and their gradients go to the buffer (MXNet's keys), parameters do not
    assert sorted(buffer) == ["data", "grad of data", "grad of softmax_label", "softmax_label"]
    assert buffer["data"] is e1.arg_dict["data"]
    e2 = net.simple_bind(mx.cpu(), data=(2, 5), shared_buffer=buffer, shared_exec=e1,
                         shared_arg_names=["fc_weight", "fc_bias"])
    assert e2.arg_dict["fc_weight"] is e1.arg_dict["fc_weight"]
    assert e2.grad_dict["fc_weight"] is e1.grad_dict["fc_weight"]
    e2.arg_dict["data"][:] = 7  # a view of the buffer's (4, 5) array
    np.testing.assert_array_equal(e1.arg_dict["data"].asnumpy()[:2], np.full((2, 5), 7.0))
    e2.grad_dict["data"][:] = 3
    np.testing.assert_array_equal(e1.grad_dict["data"].asnumpy()[:2], np.full((2, 5), 3.0))
    # without shared_arg_names the parameters are not shared (MXNet)
    e3 = net.simple_bind(mx.cpu(), data=(4, 5), shared_exec=e1)
    assert e3.arg_dict["fc_weight"] is not e1.arg_dict["fc_weight"]
    # a shared argument of another shape gets its own array (MXNet does not raise)
    e4 = mx.sym.FullyConnected(data, num_hidden=2, name="fc").simple_bind(
        mx.cpu(), data=(4, 5), shared_exec=e1, shared_arg_names=["fc_weight"])
    assert e4.arg_dict["fc_weight"].shape == (2, 5) and e1.arg_dict["fc_weight"].shape == (3, 5)


def test_group2ctx_places_variables():
    with mx.AttrScope(ctx_group="dev1"):
        a = mx.sym.var("a") * 2
    with mx.AttrScope(ctx_group="dev2"):
        c = a + mx.sym.var("b")
    exe = c.simple_bind(mx.cpu(0), a=(2, 3), b=(2, 3), group2ctx={"dev1": mx.cpu(1), "dev2": mx.cpu(2)})
    assert exe.arg_dict["a"].context == mx.cpu(1) and exe.grad_dict["b"].context == mx.cpu(2)
    exe.arg_dict["a"][:] = 1
    exe.arg_dict["b"][:] = 5
    np.testing.assert_array_equal(exe.forward(is_train=True)[0].asnumpy(), np.full((2, 3), 7.0))
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_array_equal(exe.grad_dict["a"].asnumpy(), np.full((2, 3), 2.0))


def test_get_optimized_symbol():
    x = mx.sym.var("x")
    y = mx.sym.FullyConnected(mx.sym.relu(x), num_hidden=2, name="fc")
    exe = y.simple_bind(mx.cpu(), x=(3, 4))
    opt = exe.get_optimized_symbol()
    assert isinstance(opt, mx.sym.Symbol) and opt is not y
    assert opt.list_arguments() == y.list_arguments() and opt.list_outputs() == y.list_outputs()
    assert opt.tojson() == y.tojson()


def _bind_both(sym, monkeypatch, **shapes):
    exes = []
    for flag in ("0", "1"):
        monkeypatch.setenv("MXNET_ELIMINATE_COMMON_EXPR", flag)
        exes.append(sym.simple_bind(mx.cpu(), **shapes))
    return exes


def test_common_subexpressions_run_once(monkeypatch, rng):
    a, b, c = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("c")
    sym = ((a + b) + c) * ((a + b) + c)
    before = sym.tojson()
    plain, cse = _bind_both(sym, monkeypatch, a=(3, 4), b=(3, 4), c=(3, 4))
    assert sym.tojson() == before  # the user's graph is not changed
    n_plain = len(plain.get_optimized_symbol().get_internals())
    n_cse = len(cse.get_optimized_symbol().get_internals())
    assert n_plain - n_cse == 2  # (a+b) and (..)+c once each, as MXNet
    vals = {k: rng.uniform(-1, 1, (3, 4)).astype(np.float32) for k in "abc"}
    for exe in (plain, cse):
        exe.forward(is_train=True, **{k: mx.nd.array(v) for k, v in vals.items()})
        exe.backward(mx.nd.ones((3, 4)))
    s = vals["a"] + vals["b"] + vals["c"]
    np.testing.assert_allclose(cse.outputs[0].asnumpy(), s * s, rtol=1e-6)
    for k in "abc":  # d(s*s)/dk = 2s, through the one shared node
        np.testing.assert_allclose(cse.grad_dict[k].asnumpy(), 2 * s, rtol=1e-5)
        np.testing.assert_allclose(plain.grad_dict[k].asnumpy(), 2 * s, rtol=1e-5)


def test_cse_keeps_outputs_distinct_and_random_ops_apart(monkeypatch):
    a = mx.sym.var("a")
    d = mx.sym.relu(a, name="d")
    m1, m2 = mx.sym.elemwise_mul(a, d, name="m"), mx.sym.elemwise_mul(a, d, name="m2")
    _, cse = _bind_both(mx.sym.Group([m1, m2]), monkeypatch, a=(2,))
    opt = cse.get_optimized_symbol()
    assert opt.get_internals().list_outputs() == ["a", "d_output", "m_output", "m_0_copy_output"]  # MXNet's names
    outs = cse.forward(a=mx.nd.array([1.0, 2.0]))
    assert outs[0] is not outs[1]
    np.testing.assert_array_equal(outs[1].asnumpy(), [1.0, 4.0])
    drop = mx.sym.Dropout(a, p=0.5) + mx.sym.Dropout(a, p=0.5)  # random: never merged
    plain, cse = _bind_both(drop, monkeypatch, a=(2,))
    assert len(cse.get_optimized_symbol().get_internals()) == len(plain.get_optimized_symbol().get_internals())


def test_pool_switches_are_ordered_without_waits():
    """Alternate three executors of one pool many times, copying each output right away and reading
    nothing until the end: the switch barriers order every run after the previous user's work."""
    x = mx.sym.var("x")
    y = mx.sym.tanh(mx.sym.exp(mx.sym.relu(x) * 0.5) - x) * 3
    a = y.simple_bind(mx.cpu(), x=(512,), grad_req="null")
    b = a.reshape(x=(300,))
    c = y.simple_bind(mx.cpu(), x=(700,), grad_req="null", shared_exec=a)  # larger: grows the pool
    rng = np.random.RandomState(1)
    want = lambda v: np.tanh(np.exp(np.maximum(v, 0) * 0.5) - v) * 3  # noqa: E731
    runs = []
    for i in range(30):
        exe = (a, b, c)[i % 3]
        v = rng.uniform(-2, 2, exe.arg_dict["x"].shape).astype(np.float32)
        exe.arg_dict["x"][:] = v
        runs.append((v, exe.forward()[0].copy()))
    for v, out in runs:
        np.testing.assert_allclose(out.asnumpy(), want(v), rtol=1e-5, atol=1e-6)
    assert a._storage.pool is c._storage.pool and len(a._storage.pool.blocks) >= 1


def test_executors_of_one_pool_never_overlap_in_time():
    """While the first executor's node is held inside its kernel, the second one's nodes wait."""
    import threading
    import time
    from ember import ops
    x = mx.sym.var("x")
    y = mx.sym.sum(mx.sym.exp(x) * 2)
    a = y.simple_bind(mx.cpu(), x=(64,), grad_req="null")
    c = (mx.sym.var("x") * 3 + 1).simple_bind(mx.cpu(), x=(256,), grad_req="null", shared_exec=a)
    release, log = threading.Event(), []
    old = ops.get("exp").kernel("cpu")

    def held_exp(ctx, attrs, ins, outs, aux):
        log.append("a:start")
        release.wait(10)
        old(ctx, attrs, ins, outs, aux)
        log.append("a:end")
    old_mul = ops.get("_mul_scalar").kernel("cpu")

    def logged_mul(ctx, attrs, ins, outs, aux):
        if ins[0].shape == (256,):
            log.append("c:run")
        old_mul(ctx, attrs, ins, outs, aux)
    ops.override("exp", "cpu", held_exp)
    ops.override("_mul_scalar", "cpu", logged_mul)
    try:
        a.arg_dict["x"][:] = 0.5
        c.arg_dict["x"][:] = 1.0
        out_a = a.forward()[0]
        out_c = c.forward()[0]
        for _ in range(50):  # give a wrongly unordered op every chance to start
            if "c:run" in log:
                break
            time.sleep(0.01)
        release.set()
        mx.nd.waitall()
    finally:
        release.set()
        ops.override("exp", "cpu", old)
        ops.override("_mul_scalar", "cpu", old_mul)
    assert log == ["a:start", "a:end", "c:run"]
    np.testing.assert_allclose(out_c.asnumpy(), np.full(256, 4.0))
    assert a.forward()[0].asscalar() == pytest.approx(64 * 2 * np.exp(0.5), rel=1e-5)
