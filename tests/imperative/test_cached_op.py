"""mx.nd.CachedOp (a symbol called on NDArrays, with autograd) and reusing arrays of a freed graph."""
import numpy as np
import pytest

import ember as mx
from ember.imperative.autograd_tape import AutogradError


def _sym():
    x, w = mx.sym.var("x"), mx.sym.var("w")
    return mx.sym.FullyConnected(x, weight=w, no_bias=True, num_hidden=3) * 2 + 1


def test_cached_op_computes_the_symbol_and_writes_out():
    op = mx.nd.CachedOp(_sym())
    x = mx.nd.array(np.random.rand(4, 5))
    w = mx.nd.array(np.random.rand(3, 5))
    want = x.asnumpy() @ w.asnumpy().T * 2 + 1
    np.testing.assert_allclose(op(x, w).asnumpy(), want, rtol=1e-5)
    out = mx.nd.zeros((4, 3))
    assert op(x, w, out=out) is out
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-5)
    w[:] = 0  # the next call sees the new values
    np.testing.assert_allclose(op(x, w).asnumpy(), np.ones((4, 3)))
    with pytest.raises(ValueError, match="expected 2 inputs"):
        op(x)


def test_cached_op_gradients_under_autograd():
    op = mx.nd.CachedOp(_sym())
    x = mx.nd.array(np.random.rand(4, 5))
    w = mx.nd.array(np.random.rand(3, 5))
    w.attach_grad()
    x.attach_grad()
    with mx.autograd.record():
        y = op(x, w)
    y.backward(mx.nd.ones((4, 3)))
    np.testing.assert_allclose(w.grad.asnumpy(), 2 * np.ones((3, 4)) @ x.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.ones((4, 3)) @ w.asnumpy(), rtol=1e-5)


def test_cached_op_with_auxiliary_states():
    data = mx.sym.var("data")
    s = mx.sym.BatchNorm(data, fix_gamma=False, name="bn")
    op = mx.nd.CachedOp(s)
    names = s.list_inputs()
    vals = {"data": mx.nd.array(np.random.rand(2, 3, 4)), "bn_gamma": mx.nd.ones((3,)),
            "bn_beta": mx.nd.zeros((3,)), "bn_moving_mean": mx.nd.ones((3,)) * 0.5,
            "bn_moving_var": mx.nd.ones((3,)) * 4}
    got = op(*[vals[n] for n in names]).asnumpy()
    # inference mode normalizes with the moving statistics given as inputs
    np.testing.assert_allclose(got, (vals["data"].asnumpy() - 0.5) / np.sqrt(4 + 1e-3), rtol=1e-4)


def test_an_output_of_a_freed_graph_is_a_constant_in_a_new_recording():
    x = mx.nd.ones((2,))
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2
        v = y * 5
    v.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [10, 10])
    w = mx.nd.ones((2,))
    w.attach_grad()
    with mx.autograd.record():
        u = y * w  # y's graph is freed: y is a constant here
    u.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [2, 2])
    np.testing.assert_allclose(x.grad.asnumpy(), [10, 10])
    with pytest.raises(AutogradError, match="retain_graph"):
        v.backward()  # the head itself: differentiating a freed graph twice is an error
