"""Operator behaviours MXNet 1.9.1's own tests rely on (values against numpy / finite differences)."""
import numpy as np
import pytest

import ember as mx
from ember.base import MXNetError, ShapeError
from ember.test_utils import check_numeric_gradient, check_symbolic_backward, check_symbolic_forward


def test_fully_connected_on_1d_data_is_a_batch_of_one_feature_rows():
    x = np.arange(4.0)
    w = np.array([[1.0], [-2.0], [0.5]])
    b = np.array([0.1, 0.2, 0.3])
    out = mx.nd.FullyConnected(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), num_hidden=3)
    np.testing.assert_allclose(out.asnumpy(), x[:, None] @ w.T + b, rtol=1e-6)
    sym = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="fc")
    assert sym.infer_shape(x=(4,)) == ([(4,), (3, 1), (3,)], [(4, 3)], [])
    check_numeric_gradient(sym, [x, w, b])
    # flatten=False: one vector of 4 inputs
    flat = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, flatten=False, name="fc")
    assert flat.infer_shape(x=(4,))[1] == [(3,)]
    with pytest.raises(ShapeError, match=r"\(3, 1\) is expected"):
        mx.nd.FullyConnected(mx.nd.array(x), mx.nd.ones((3, 4)), mx.nd.array(b), num_hidden=3)


def test_relu_gradient_is_nan_at_nan():
    data = np.array([np.nan, -1.0, 0.0, 2.0, np.inf])
    x = mx.nd.array(data)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.relu(x)
    y.backward(mx.nd.full((5,), 3.0))
    np.testing.assert_array_equal(y.asnumpy(), [np.nan, 0, 0, 2, np.inf])
    np.testing.assert_array_equal(x.grad.asnumpy(), [np.nan, 0, 0, 3, 3])
    check_symbolic_backward(mx.sym.relu(mx.sym.var("x")), [data], [np.ones(5)], [[np.nan, 0, 0, 1, 1]],
                            equal_nan=True)


def test_broadcast_like_refuses_empty_axes():
    a, b = mx.nd.ones((1, 3)), mx.nd.ones((2, 3))
    with pytest.raises(MXNetError, match="empty lhs_axes"):
        mx.nd.broadcast_like(a, b, lhs_axes=(), rhs_axes=())
    with pytest.raises(MXNetError, match="differ in length"):
        mx.nd.broadcast_like(a, b, lhs_axes=(0,), rhs_axes=())
    assert mx.nd.broadcast_like(a, b, lhs_axes=(0,), rhs_axes=(0,)).shape == (2, 3)
    assert mx.nd.broadcast_like(a, b, rhs_axes=(1,)).shape == (2, 3)  # rhs_axes alone: every axis


@pytest.mark.parametrize("k, length", [(-3, 0), (-2, 1), (3, 1), (4, 0), (0, 3), (1, 3)])
def test_diag_k_up_to_the_side_lengths(k, length):
    m = np.arange(12.0).reshape(3, 4)
    out = mx.nd.diag(mx.nd.array(m), k=k).asnumpy()
    assert out.shape == (length,)
    np.testing.assert_array_equal(out, np.diag(m, k=k))


@pytest.mark.parametrize("k", [-4, 5])
def test_diag_k_beyond_the_matrix_raises(k):
    with pytest.raises(MXNetError, match="does not exist"):
        mx.nd.diag(mx.nd.ones((3, 4)), k=k)
    with pytest.raises(MXNetError, match="does not exist"):
        mx.sym.diag(mx.sym.var("x"), k=k).infer_shape(x=(3, 4))
    assert mx.nd.diag(mx.nd.ones(3), k=k).shape == (3 + abs(k),) * 2  # 1-D input: any k


def test_sort_family_with_axis_none_flattens_symbolically_too():
    data = np.random.RandomState(1).rand(2, 3, 4)
    x = mx.sym.var("x")
    flat = np.sort(data, axis=None)
    assert mx.sym.sort(x, axis=None).infer_shape(x=data.shape)[1] == [(24,)]
    check_symbolic_forward(mx.sym.sort(x, axis=None, is_ascend=False), [data], [flat[::-1]])
    check_symbolic_forward(mx.sym.argsort(x, axis=None), [data], [np.argsort(data, axis=None)])
    assert mx.sym.topk(x, axis=None, k=3, ret_typ="both").infer_shape(x=data.shape)[1] == [(3,), (3,)]
    check_symbolic_forward(mx.sym.topk(x, axis=None, k=3, ret_typ="value"), [data], [flat[::-1][:3]])
    mask = mx.sym.topk(x, axis=None, k=3, ret_typ="mask")
    assert mask.infer_shape(x=data.shape)[1] == [data.shape]
    assert mx.sym.sort(x).infer_shape(x=data.shape)[1] == [data.shape]  # the default axis is still -1
    # the attribute survives JSON as 'None'
    again = mx.sym.load_json(mx.sym.sort(x, axis=None).tojson())
    assert again.infer_shape(x=data.shape)[1] == [(24,)]
