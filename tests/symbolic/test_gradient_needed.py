"""Gradients nobody needs are not computed: FullyConnected's and Convolution's backward skip the data
gradient of an input without one (grad_req 'null' in a graph, an array outside the tape imperatively)."""
import numpy as np

import ember as mx
import ember.ops.nn_conv as nn_conv
from ember import autograd
from ember.symbolic.gradient import build_gradient
from ember.symbolic.graph import topo_order


def _mlp():
    x = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=4, name="fc0"), act_type="relu")
    return mx.sym.FullyConnected(h, num_hidden=3, name="fc1")


def _backward_nodes(sym, wrt_names, op="_backward_FullyConnected"):
    heads = sym._outputs
    order = topo_order(heads)
    wrt = [n for n in order if n.op is None and n.name in wrt_names]
    entries, _ = build_gradient(heads, wrt, order)
    nodes = topo_order([e for e in entries if e is not None])
    return {n.name: n for n in nodes if n.op is not None and n.op.name == op}


def test_gradient_pass_skips_the_data_gradient_of_the_first_layer_only():
    nodes = _backward_nodes(_mlp(), {"fc0_weight", "fc0_bias", "fc1_weight", "fc1_bias"})
    flags = {name.split("_")[0]: n.parsed_attrs["no_data_grad"] for name, n in nodes.items()}
    assert flags == {"fc0": True, "fc1": False}
    # MXNet's three outputs stay (a monitor names them): the skipped one is zeroed, not computed
    assert nodes[next(k for k in nodes if k.startswith("fc0"))].num_outputs() == 3


def test_gradient_pass_keeps_the_data_gradient_when_data_wants_one():
    nodes = _backward_nodes(_mlp(), {"data", "fc0_weight"})
    assert all(not n.parsed_attrs["no_data_grad"] for n in nodes.values())


def _numpy_mlp_grads(x, w0, b0, w1, b1, dy):
    z = x @ w0.T + b0
    h = np.maximum(z, 0)
    dh = (dy @ w1) * (z > 0)
    return {"fc0_weight": dh.T @ x, "fc0_bias": dh.sum(0), "fc1_weight": dy.T @ h, "fc1_bias": dy.sum(0),
            "data": dh @ w0}


def _values(rng):
    return {"data": rng.randn(5, 6), "fc0_weight": rng.randn(4, 6), "fc0_bias": rng.randn(4),
            "fc1_weight": rng.randn(3, 4), "fc1_bias": rng.randn(3)}


def test_executor_gradients_with_and_without_the_data_gradient():
    rng = np.random.RandomState(0)
    vals = _values(rng)
    dy = rng.randn(5, 3)
    want = _numpy_mlp_grads(vals["data"], vals["fc0_weight"], vals["fc0_bias"], vals["fc1_weight"],
                            vals["fc1_bias"], dy)
    for data_req in ("null", "write"):
        args = {k: mx.nd.array(v) for k, v in vals.items()}
        grads = {k: mx.nd.zeros(v.shape) for k, v in vals.items()}
        reqs = {k: "write" for k in vals}
        reqs["data"] = data_req
        exe = _mlp().bind(mx.cpu(), args=args, args_grad=grads, grad_req=reqs)
        exe.forward(is_train=True)
        exe.backward([mx.nd.array(dy)])
        for k in vals:
            if k == "data" and data_req == "null":
                np.testing.assert_array_equal(grads[k].asnumpy(), 0)
                continue
            np.testing.assert_allclose(grads[k].asnumpy(), want[k], rtol=1e-4, atol=1e-5)


def test_autograd_skips_the_data_gradient_of_an_array_outside_the_tape():
    rng = np.random.RandomState(1)
    vals = _values(rng)
    dy = rng.randn(5, 3)
    want = _numpy_mlp_grads(vals["data"], vals["fc0_weight"], vals["fc0_bias"], vals["fc1_weight"],
                            vals["fc1_bias"], dy)
    for attach_data in (False, True):
        arrs = {k: mx.nd.array(v) for k, v in vals.items()}
        for k, a in arrs.items():
            if k != "data" or attach_data:
                a.attach_grad()
        with autograd.record():
            h = mx.nd.relu(mx.nd.FullyConnected(arrs["data"], arrs["fc0_weight"], arrs["fc0_bias"], num_hidden=4))
            y = mx.nd.FullyConnected(h, arrs["fc1_weight"], arrs["fc1_bias"], num_hidden=3)
        y.backward(mx.nd.array(dy))
        for k, a in arrs.items():
            if k == "data" and not attach_data:
                assert a.grad is None
                continue
            np.testing.assert_allclose(a.grad.asnumpy(), want[k], rtol=1e-4, atol=1e-5)


def test_backward_op_without_data_gradient_keeps_its_outputs_and_zeroes_the_skipped_one():
    rng = np.random.RandomState(2)
    dy, x, w = mx.nd.array(rng.randn(5, 3)), mx.nd.array(rng.randn(5, 6)), mx.nd.array(rng.randn(3, 6))
    dx, dw, db = mx.nd._backward_FullyConnected(dy, x, w, num_hidden=3, no_data_grad=True)
    np.testing.assert_array_equal(dx.asnumpy(), np.zeros((5, 6), np.float32))
    np.testing.assert_allclose(dw.asnumpy(), dy.asnumpy().T @ x.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(db.asnumpy(), dy.asnumpy().sum(0), rtol=1e-5)
    dx2, only = mx.nd._backward_FullyConnected(dy, x, w, num_hidden=3, no_bias=True, no_data_grad=True)
    np.testing.assert_array_equal(dx2.asnumpy(), np.zeros((5, 6), np.float32))
    np.testing.assert_allclose(only.asnumpy(), dw.asnumpy(), rtol=1e-6)


def _fc_case(rng, weight_req, bias_req, attach_data):
    x, w, b = (mx.nd.array(rng.randn(*s)) for s in ((5, 6), (3, 6), (3,)))
    dy = rng.randn(5, 3)
    if attach_data:
        x.attach_grad()
    w.attach_grad(grad_req=weight_req)
    b.attach_grad(grad_req=bias_req)
    w.grad[:] = 1.0
    b.grad[:] = 1.0
    bufs = (w.grad, b.grad)
    for _ in range(2):  # twice: 'add' accumulates, 'write' overwrites
        with autograd.record():
            y = mx.nd.FullyConnected(x, w, b, num_hidden=3)
        y.backward(mx.nd.array(dy))
    xn, wn = x.asnumpy(), w.asnumpy()
    return x, w, b, bufs, dy.T @ xn, dy.sum(0), dy @ wn


def test_autograd_writes_fully_connected_gradients_into_the_variables_buffers():
    rng = np.random.RandomState(3)
    for attach_data in (False, True):
        x, w, b, bufs, dw, db, dx = _fc_case(rng, "write", "write", attach_data)
        assert w.grad is bufs[0] and b.grad is bufs[1]
        np.testing.assert_allclose(w.grad.asnumpy(), dw, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(b.grad.asnumpy(), db, rtol=1e-5, atol=1e-6)
        if attach_data:
            np.testing.assert_allclose(x.grad.asnumpy(), dx, rtol=1e-5, atol=1e-6)


def test_autograd_fully_connected_add_and_mixed_grad_reqs():
    rng = np.random.RandomState(4)
    x, w, b, _, dw, db, _ = _fc_case(rng, "add", "write", False)
    np.testing.assert_allclose(w.grad.asnumpy(), 1 + 2 * dw, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.asnumpy(), db, rtol=1e-5, atol=1e-6)
    x, w, b, _, dw, db, _ = _fc_case(rng, "write", "add", True)
    np.testing.assert_allclose(w.grad.asnumpy(), dw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), 1 + 2 * db, rtol=1e-5, atol=1e-5)


def test_a_weight_used_twice_sums_both_gradients():
    rng = np.random.RandomState(5)
    x, w = mx.nd.array(rng.randn(4, 3)), mx.nd.array(rng.randn(3, 3))
    w.attach_grad()
    with autograd.record():
        h = mx.nd.FullyConnected(x, w, num_hidden=3, no_bias=True)
        y = mx.nd.FullyConnected(h, w, num_hidden=3, no_bias=True)
    y.backward(mx.nd.ones((4, 3)))
    xn, wn = x.asnumpy(), w.asnumpy()
    hn = xn @ wn.T
    dy = np.ones((4, 3))
    want = dy.T @ hn + (dy @ wn).T @ xn
    np.testing.assert_allclose(w.grad.asnumpy(), want, rtol=1e-4, atol=1e-5)


# -- Convolution --------------------------------------------------------------------------------
def _convnet():
    x = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.Convolution(x, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv0"), act_type="relu")
    return mx.sym.Convolution(h, kernel=(3, 3), num_filter=2, stride=(2, 2), name="conv1")


def _conv_values(rng):
    return {"data": rng.randn(2, 3, 6, 6), "conv0_weight": rng.randn(4, 3, 3, 3), "conv0_bias": rng.randn(4),
            "conv1_weight": rng.randn(2, 4, 3, 3), "conv1_bias": rng.randn(2)}


def _counting_data_gradients(monkeypatch):
    calls = []
    real = nn_conv.conv_backward_data

    def counted(*args, **kw):
        calls.append(tuple(args[4]))  # the data shape it computes
        return real(*args, **kw)
    monkeypatch.setattr(nn_conv, "conv_backward_data", counted)
    return calls


def test_gradient_pass_skips_the_first_convolutions_data_gradient():
    nodes = _backward_nodes(_convnet(), {"conv0_weight", "conv0_bias", "conv1_weight", "conv1_bias"},
                            "_backward_Convolution")
    assert {name.split("_")[0]: n.parsed_attrs["no_data_grad"] for name, n in nodes.items()} == \
        {"conv0": True, "conv1": False}
    nodes = _backward_nodes(_convnet(), {"data", "conv1_weight"}, "_backward_Convolution")
    assert all(not n.parsed_attrs["no_data_grad"] for n in nodes.values())


def _conv_case(seed):
    """The convnet's argument values and a head gradient."""
    rng = np.random.RandomState(seed)
    return _conv_values(rng), mx.nd.array(rng.randn(2, 2, 2, 2))


def test_executor_convolution_gradients_with_and_without_the_data_gradient(monkeypatch):
    calls = _counting_data_gradients(monkeypatch)
    vals, dy = _conv_case(6)
    got = {}
    for data_req in ("write", "null"):
        del calls[:]
        args = {k: mx.nd.array(v) for k, v in vals.items()}
        grads = {k: mx.nd.ones(v.shape) for k, v in vals.items()}
        reqs = dict({k: "write" for k in vals}, data=data_req)
        exe = _convnet().bind(mx.cpu(), args=args, args_grad=grads, grad_req=reqs)
        exe.forward(is_train=True)
        exe.backward([dy])
        got[data_req] = {k: g.asnumpy() for k, g in grads.items()}
        # conv1's data gradient always; conv0's only when the data wants one
        assert sorted(calls) == sorted([(2, 4, 6, 6)] + ([(2, 3, 6, 6)] if data_req == "write" else []))
    for k in vals:
        if k == "data":
            np.testing.assert_array_equal(got["null"][k], 1)  # grad_req null: the buffer is not touched
        else:
            np.testing.assert_array_equal(got["null"][k], got["write"][k])
    # the data gradient itself, against finite differences of sum(y * dy)
    exe = _convnet().bind(mx.cpu(), args={k: mx.nd.array(v) for k, v in vals.items()})

    def objective(data):
        exe.arg_dict["data"][:] = data
        return float((exe.forward()[0] * dy).sum().asscalar())
    data, eps = vals["data"].astype(np.float32), 1e-3
    for idx in [(0, 0, 0, 0), (1, 2, 3, 4), (0, 1, 5, 2)]:
        plus, minus = data.copy(), data.copy()
        plus[idx] += eps
        minus[idx] -= eps
        np.testing.assert_allclose(got["write"]["data"][idx], (objective(plus) - objective(minus)) / (2 * eps),
                                   rtol=2e-2, atol=2e-2)


def test_autograd_skips_the_convolution_data_gradient_of_an_array_outside_the_tape(monkeypatch):
    calls = _counting_data_gradients(monkeypatch)
    vals, dy = _conv_case(7)
    got = {}
    for attach_data in (True, False):
        del calls[:]
        arrs = {k: mx.nd.array(v) for k, v in vals.items()}
        for k, a in arrs.items():
            if k != "data" or attach_data:
                a.attach_grad()
        with autograd.record():
            h = mx.nd.relu(mx.nd.Convolution(arrs["data"], arrs["conv0_weight"], arrs["conv0_bias"],
                                             kernel=(3, 3), num_filter=4, pad=(1, 1)))
            y = mx.nd.Convolution(h, arrs["conv1_weight"], arrs["conv1_bias"], kernel=(3, 3), num_filter=2,
                                  stride=(2, 2))
        y.backward(dy)
        got[attach_data] = {k: a.grad.asnumpy() for k, a in arrs.items() if a.grad is not None}
        assert len(calls) == (2 if attach_data else 1)
    assert "data" not in got[False]
    for k, g in got[False].items():
        np.testing.assert_array_equal(g, got[True][k])


def test_convolution_backward_without_data_gradient_zeroes_it():
    rng = np.random.RandomState(8)
    dy, x, w = (mx.nd.array(rng.randn(*s)) for s in ((2, 3, 4, 4), (2, 2, 6, 6), (3, 2, 3, 3)))
    full = mx.nd._backward_Convolution(dy, x, w, kernel=(3, 3), num_filter=3, no_bias=True)
    dx, dw = mx.nd._backward_Convolution(dy, x, w, kernel=(3, 3), num_filter=3, no_bias=True, no_data_grad=True)
    np.testing.assert_array_equal(dx.asnumpy(), np.zeros((2, 2, 6, 6), np.float32))
    np.testing.assert_array_equal(dw.asnumpy(), full[1].asnumpy())
    assert np.abs(full[0].asnumpy()).sum() > 0
