"""FullyConnected: forward against numpy, gradients by finite differences, shape inference, errors."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import check_grad, run_op  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(0)


def test_forward_flatten_matches_numpy():
    x, w, b = rng.standard_normal((4, 3, 2)), rng.standard_normal((5, 6)), rng.standard_normal(5)
    out = run_op("FullyConnected", [x, w, b], {"num_hidden": 5})[0]
    np.testing.assert_allclose(out, x.reshape(4, 6) @ w.T + b, rtol=1e-12)


def test_forward_no_flatten_keeps_leading_axes():
    x, w = rng.standard_normal((2, 3, 4)).astype(np.float32), rng.standard_normal((6, 4)).astype(np.float32)
    out = run_op("FullyConnected", [x, w], {"num_hidden": 6, "flatten": False, "no_bias": True})[0]
    assert out.shape == (2, 3, 6) and out.dtype == np.float32
    np.testing.assert_allclose(out, x @ w.T, rtol=1e-5)


@pytest.mark.parametrize("attrs,shapes", [
    ({"num_hidden": 3}, [(2, 2, 2), (3, 4), (3,)]),
    ({"num_hidden": 2, "no_bias": True, "flatten": False}, [(2, 3, 2), (2, 2)]),
])
def test_gradients(attrs, shapes):
    check_grad("FullyConnected", [rng.standard_normal(s) for s in shapes], attrs)


def test_infer_shape_fills_weight_and_bias():
    op = ops.get("FullyConnected")
    a = op.parse_attrs({"num_hidden": "10"})
    ins, outs, _ = op.shapes(a, [(8, 3, 4, 4), None, None])
    assert ins == [(8, 3, 4, 4), (10, 48), (10,)] and outs == [(8, 10)]
    ins, outs, _ = op.shapes(a, [None, None, None])
    assert outs == [None]


def test_bad_weight_shape_names_op():
    op = ops.get("FullyConnected")
    with pytest.raises(ShapeError, match="FullyConnected.*weight"):
        op.shapes(op.parse_attrs({"num_hidden": 10}), [(8, 4), (10, 5), None])


def test_bad_attributes():
    op = ops.get("FullyConnected")
    with pytest.raises(OperatorError, match="num_hidden"):
        op.parse_attrs({})
    with pytest.raises(ShapeError, match="num_hidden"):
        op.shapes(op.parse_attrs({"num_hidden": 0}), [(2, 3), None, None])
    with pytest.raises(OperatorError, match="mix dtypes"):
        op.dtypes(op.parse_attrs({"num_hidden": 2}), [np.dtype("float32"), np.dtype("float64"), None])


def test_column_bias_as_mxnet_takes_it():
    # MXNet's FullyConnected also takes a (num_hidden, 1) bias; its gradient keeps that shape
    x, w, b = rng.standard_normal((4, 6)), rng.standard_normal((5, 6)), rng.standard_normal((5, 1))
    out = run_op("FullyConnected", [x, w, b], {"num_hidden": 5})[0]
    np.testing.assert_allclose(out, x @ w.T + b.ravel(), rtol=1e-12)
    check_grad("FullyConnected", [x, w, b], {"num_hidden": 5})
    import ember as mx
    xs, ws, bs = (mx.nd.array(a) for a in (x, w, b))
    for a in (ws, bs):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.FullyConnected(xs, ws, bs, num_hidden=5)
    gw, gb = mx.autograd.grad(y, [ws, bs], head_grads=mx.nd.ones((4, 5)))  # handed out, not written
    assert gb.shape == (5, 1)
    np.testing.assert_allclose(gb.asnumpy(), np.full((5, 1), 4.0))
    op = ops.get("FullyConnected")
    with pytest.raises(ShapeError, match="bias"):
        op.shapes(op.parse_attrs({"num_hidden": 5}), [(4, 6), None, (5, 2)])
    sym = mx.sym.FullyConnected(mx.sym.var("data"), mx.sym.var("w"), mx.sym.var("b"), num_hidden=5)
    ex = sym.simple_bind(mx.cpu(), data=(4, 6), b=(5, 1), grad_req="null")
    ex.arg_dict["data"][:] = x
    ex.arg_dict["w"][:] = w
    ex.arg_dict["b"][:] = b
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), out, rtol=1e-5)
    with pytest.raises(ShapeError, match="gradient the graph computes for 'b'"):  # not silently wrong
        sym.simple_bind(mx.cpu(), data=(4, 6), b=(5, 1))
