"""Autograd with sparse arrays: attach_grad(stype=...) on dense and sparse arrays, and gradients
written into sparse gradient buffers (numbers against numpy)."""
import numpy as np
import pytest

import ember as mx

STYPES = ("default", "row_sparse", "csr")


@pytest.mark.parametrize("array_stype", STYPES)
@pytest.mark.parametrize("grad_stype", (None,) + STYPES)
def test_gradient_buffer_storage_type(array_stype, grad_stype):
    x = mx.nd.zeros((3, 2), stype=array_stype)
    assert x.grad is None
    x.attach_grad(stype=grad_stype)
    # as MXNet: the buffer has the array's storage type unless another is asked for
    assert x.grad.stype == (grad_stype or array_stype)
    assert x.grad.shape == (3, 2) and not x.grad.asnumpy().any()
    assert x.detach().stype == array_stype


@pytest.mark.parametrize("stype", STYPES)
def test_backward_through_a_sparse_variable(stype):
    rs = np.random.RandomState(0)
    dense = rs.rand(4, 5).astype(np.float32) * (rs.rand(4, 5) > 0.5)
    dense[2] = 0  # a row without values
    x = mx.nd.array(dense).tostype(stype)
    x.attach_grad()
    head = rs.rand(4, 5).astype(np.float32)
    head[1] = 0
    with mx.autograd.record():
        y = x * 3 + x * x
    y.backward(out_grad=mx.nd.array(head).tostype(stype))
    assert x.grad.stype == stype
    np.testing.assert_allclose(x.grad.asnumpy(), head * (3 + 2 * dense), rtol=1e-6)


@pytest.mark.parametrize("weight_stype", ["row_sparse", "default"])
def test_dot_of_csr_gives_row_sparse_weight_gradient(weight_stype):
    rs = np.random.RandomState(1)
    lhs_np = (rs.rand(3, 6) * (rs.rand(3, 6) > 0.6)).astype(np.float32)
    lhs_np[:, 4] = 0  # a weight row that no sample touches
    lhs = mx.nd.array(lhs_np).tostype("csr")
    w_np = rs.rand(6, 2).astype(np.float32)
    w = mx.nd.array(w_np).tostype(weight_stype)
    w.attach_grad(stype="row_sparse")
    with mx.autograd.record():
        y = mx.nd.dot(lhs, w)
    np.testing.assert_allclose(y.asnumpy(), lhs_np @ w_np, rtol=1e-5)
    y.backward()
    assert w.grad.stype == "row_sparse"
    np.testing.assert_allclose(w.grad.asnumpy(), lhs_np.T @ np.ones((3, 2), np.float32), rtol=1e-6)
    assert 4 not in w.grad.indices.asnumpy()


def test_grad_req_add_accumulates_into_a_sparse_buffer():
    x = mx.nd.array([[1.0, 0], [0, 0], [2, 3]]).tostype("row_sparse")
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            y = x * 2
        y.backward()
    assert x.grad.stype == "row_sparse"
    np.testing.assert_allclose(x.grad.asnumpy(), np.full((3, 2), 4.0))
