"""A hybridized block writes its parameters' gradients straight into their `.grad` buffers
(cached_graph.py): the values must be those of the imperative block in every case where the
gradient has to be handed out instead (autograd.grad, a parameter also used outside the block,
the block applied twice, grad_req changes, retain_graph)."""
import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon, nd


def _dense(units=3, in_units=4, seed=0):
    net = gluon.nn.Dense(units, in_units=in_units)
    net.initialize()
    rng = np.random.RandomState(seed)
    net.weight.set_data(nd.array(rng.randn(units, in_units)))
    net.bias.set_data(nd.array(rng.randn(units)))
    return net


def _x(rows=5, cols=4, seed=1):
    return nd.array(np.random.RandomState(seed).randn(rows, cols))


def _slot(net):
    (slots,) = [s for key, s in net._cached_op._slots.items() if key[2]]
    return slots[0]


def test_gradient_is_written_into_the_parameter_buffer():
    net, x = _dense(), _x()
    net.hybridize(inline_limit=0)  # a one-operator graph: not inlined, so the cached graph runs
    grad_buffer = net.weight.grad()
    for _ in range(2):
        with autograd.record():
            loss = (net(x) ** 2).sum()
        loss.backward()
    assert net.weight.grad() is grad_buffer
    ex = _slot(net).executor
    assert ex.grad_dict[net.weight.name] is grad_buffer  # bound, not copied
    w, b, xv = net.weight.data().asnumpy(), net.bias.data().asnumpy(), x.asnumpy()
    y = xv @ w.T + b
    np.testing.assert_allclose(net.weight.grad().asnumpy(), (2 * y).T @ xv, rtol=1e-5)
    np.testing.assert_allclose(net.bias.grad().asnumpy(), (2 * y).sum(0), rtol=1e-5)
    assert net.weight.data()._fresh_grad


def test_autograd_grad_leaves_the_buffer_untouched():
    net, x = _dense(), _x()
    net.hybridize(inline_limit=0)  # a one-operator graph: not inlined, so the cached graph runs
    with autograd.record():
        net(x).sum().backward()  # binds the training executor to the buffers
    net.weight.grad()[:] = 7.0
    w = net.weight.data()
    with autograd.record():
        y = net(x)
    (gw,) = autograd.grad([y], [w])
    np.testing.assert_allclose(gw.asnumpy(), np.tile(x.asnumpy().sum(0), (3, 1)), rtol=1e-5)
    np.testing.assert_allclose(net.weight.grad().asnumpy(), 7.0)


@pytest.mark.parametrize("req", ["write", "add"])
def test_parameter_also_used_outside_the_block(req):
    def grads(hybrid):
        net, x = _dense(), _x()
        net.weight.grad_req = req
        net.hybridize(active=hybrid, inline_limit=0)
        for _ in range(2):
            with autograd.record():
                loss = net(x).sum() + (net.weight.data() * net.weight.data()).sum()
            loss.backward()
        return net.weight.grad().asnumpy(), net.weight.data().asnumpy(), x.asnumpy()

    hybrid, w, xv = grads(True)
    imperative, _, _ = grads(False)
    one = np.tile(xv.sum(0), (3, 1)) + 2 * w
    np.testing.assert_allclose(hybrid, one * (2 if req == "add" else 1), rtol=1e-5)
    np.testing.assert_allclose(hybrid, imperative, rtol=1e-5)


def test_grad_req_add_accumulates_and_switching_rebinds():
    net, x = _dense(), _x()
    net.hybridize(inline_limit=0)  # a one-operator graph: not inlined, so the cached graph runs
    step = np.tile(x.asnumpy().sum(0), (3, 1))
    with autograd.record():
        net(x).sum().backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), step, rtol=1e-5)
    net.weight.grad_req = "add"  # a new buffer: the executor bound to the old one must not serve
    for _ in range(3):
        with autograd.record():
            net(x).sum().backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), 3 * step, rtol=1e-5)
    net.weight.grad_req = "write"
    with autograd.record():
        net(x).sum().backward()
    np.testing.assert_allclose(net.weight.grad().asnumpy(), step, rtol=1e-5)


@pytest.mark.parametrize("req", ["write", "add"])
def test_retain_graph_backward_twice(req):
    net, x = _dense(), _x()
    net.weight.grad_req = req
    net.hybridize(inline_limit=0)  # a one-operator graph: not inlined, so the cached graph runs
    with autograd.record():
        loss = net(x).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    step = np.tile(x.asnumpy().sum(0), (3, 1))
    np.testing.assert_allclose(net.weight.grad().asnumpy(), step * (2 if req == "add" else 1), rtol=1e-5)


def test_input_gradient_and_block_applied_twice_match_imperative():
    def grads(hybrid):
        inner, outer = _dense(4, 4, seed=2), _dense(2, 4, seed=3)
        inner.hybridize(active=hybrid, inline_limit=0)
        x = _x()
        x.attach_grad()
        with autograd.record():
            loss = (outer(nd.relu(inner(x))) * outer(inner(x * 2))).sum()
        loss.backward()
        return [x.grad.asnumpy()] + [p.grad().asnumpy() for blk in (inner, outer)
                                     for p in blk.collect_params().values()]

    for h, i in zip(grads(True), grads(False)):
        np.testing.assert_allclose(h, i, rtol=1e-5, atol=1e-6)


def test_trainer_steps_equal_imperative_training():
    def train(hybrid):
        mx.random.seed(0)
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Dense(8, activation="relu", in_units=4), gluon.nn.Dense(3, in_units=8))
        net.initialize(mx.init.Xavier())
        for i, p in enumerate(net.collect_params().values()):
            p.set_data(nd.array(np.random.RandomState(i).randn(*p.shape) * 0.3))
        net.hybridize(active=hybrid, inline_limit=0)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9})
        lossf = gluon.loss.SoftmaxCrossEntropyLoss()
        x, y = _x(6, 4), nd.array([0, 1, 2, 0, 1, 2])
        for _ in range(4):
            with autograd.record():
                loss = lossf(net(x), y)
            loss.backward()
            trainer.step(6)
        return [p.data().asnumpy() for p in net.collect_params().values()]

    for h, i in zip(train(True), train(False)):
        np.testing.assert_allclose(h, i, rtol=1e-5, atol=1e-6)
