"""Executors bound with sparse arguments and sparse gradient arrays: the graph computes densely, the
arguments are read at each forward, the gradients cast into the given arrays after each backward."""
import numpy as np
import pytest

import ember as mx
from ember.base import ArgumentError
from ember.test_utils import check_numeric_gradient, check_symbolic_backward


def _sparse_values(shape, seed):
    rng = np.random.RandomState(seed)
    return (rng.uniform(-1, 1, shape) * (rng.uniform(0, 1, shape) > 0.5)).astype(np.float32)


def test_csr_argument_and_gradient():
    xn, wn = _sparse_values((4, 5), 0), np.random.RandomState(1).uniform(-1, 1, (4, 5)).astype(np.float32)
    sym = mx.sym.square(mx.sym.var("data", stype="csr")) * mx.sym.var("w")
    x, w = mx.nd.array(xn).tostype("csr"), mx.nd.array(wn)
    gx, gw = mx.nd.zeros((4, 5)).tostype("csr"), mx.nd.zeros((4, 5))
    ex = sym.bind(mx.cpu(), {"data": x, "w": w}, args_grad={"data": gx, "w": gw})
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), xn ** 2 * wn, rtol=1e-6)
    ex.backward(mx.nd.ones((4, 5)))
    assert ex.arg_dict["data"] is x and ex.grad_dict["data"] is gx and gx.stype == "csr"
    np.testing.assert_allclose(gx.asnumpy(), 2 * xn * wn, rtol=1e-6)
    np.testing.assert_allclose(gw.asnumpy(), xn ** 2, rtol=1e-6)
    # a new value in the sparse argument is read by the next forward; the gradient is rewritten
    x2 = _sparse_values((4, 5), 2)
    mx.nd.array(x2).tostype("csr").copyto(x)
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), x2 ** 2 * wn, rtol=1e-6)
    ex.backward(mx.nd.ones((4, 5)) * 2)
    np.testing.assert_allclose(gx.asnumpy(), 4 * x2 * wn, rtol=1e-6)
    with pytest.raises(ArgumentError, match="sparse gradient arrays take grad_req 'write'"):
        sym.bind(mx.cpu(), {"data": x, "w": w}, args_grad={"data": gx, "w": gw}, grad_req="add")


def test_test_utils_bind_the_gradient_storage_types_asked_for():
    data, weight = mx.sym.var("data"), mx.sym.var("weight")
    sym = mx.sym.dot(data, weight)
    xn = _sparse_values((3, 4), 3)
    wn = np.random.RandomState(4).uniform(-1, 1, (4, 2)).astype(np.float32)
    check_numeric_gradient(sym, [xn, wn], grad_stype_dict={"data": "csr", "weight": "row_sparse"},
                           numeric_eps=1e-2, rtol=1e-2, atol=1e-3)
    head = np.ones((3, 2), np.float32)
    grads = check_symbolic_backward(sym, [xn, wn], [head], [head @ wn.T, xn.T @ head],
                                    grad_stypes={"weight": "row_sparse"}, rtol=1e-5, atol=1e-6)
    assert grads["weight"].stype == "row_sparse" and grads["data"].stype == "default"
