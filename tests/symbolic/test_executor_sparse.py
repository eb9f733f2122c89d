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


def test_sparse_aux_states_are_read_densely_and_written_back():
    # BatchNorm's moving statistics given row_sparse (MXNet's storage fallback): the forward reads
    # them densely and its update is cast back into the given arrays, which stay row_sparse and intact
    # (bound raw, the update once wrote float data over a row_sparse array's row indices)
    rng = np.random.RandomState(3)
    xn, mean, var = rng.normal(0, 1, (4, 3)).astype(np.float32), rng.uniform(size=3), rng.uniform(0.5, 1, size=3)
    sym = mx.sym.BatchNorm(mx.sym.var("data"), fix_gamma=False, momentum=0.9, name="bn")
    aux = {"bn_moving_mean": mx.nd.array(mean).tostype("row_sparse"),
           "bn_moving_var": mx.nd.array(var).tostype("row_sparse")}
    args = {"data": mx.nd.array(xn), "bn_gamma": mx.nd.ones((3,)), "bn_beta": mx.nd.zeros((3,))}
    ex = sym.bind(mx.cpu(), args, aux_states=aux)
    out = ex.forward(is_train=True)[0].asnumpy()
    mu, sigma2 = xn.mean(axis=0), xn.var(axis=0)
    np.testing.assert_allclose(out, (xn - mu) / np.sqrt(sigma2 + 1e-3), rtol=1e-4, atol=1e-5)
    for name, before, batch in (("bn_moving_mean", mean, mu), ("bn_moving_var", var, sigma2)):
        got = ex.aux_dict[name]
        assert got is aux[name] and got.stype == "row_sparse"
        np.testing.assert_array_equal(got.indices.asnumpy(), [0, 1, 2])
        np.testing.assert_allclose(got.asnumpy(), 0.9 * before + 0.1 * batch, rtol=1e-5)
    # inference reads the updated statistics
    ex2 = sym.bind(mx.cpu(), args, aux_states=aux)
    want = (xn - aux["bn_moving_mean"].asnumpy()) / np.sqrt(aux["bn_moving_var"].asnumpy() + 1e-3)
    np.testing.assert_allclose(ex2.forward(is_train=False)[0].asnumpy(), want, rtol=1e-4, atol=1e-5)


def test_check_numeric_gradient_of_batchnorm_with_row_sparse_inputs_and_aux():
    rng = np.random.RandomState(0)
    ins = [mx.nd.array(a).tostype("row_sparse") for a in (rng.normal(-0.1, 0.1, (2, 3)), np.ones(3), np.ones(3))]
    aux = [mx.nd.array(rng.uniform(size=3)).tostype("row_sparse") for _ in range(2)]
    sym = mx.sym.BatchNorm(mx.sym.var("data", stype="row_sparse"), fix_gamma=False)
    check_numeric_gradient(sym, ins, aux, numeric_eps=1e-3, rtol=0.16, atol=1e-2)
    assert all(np.array_equal(a.indices.asnumpy(), [0, 1, 2]) for a in aux)
