"""Embedding: lookup, clipping of out-of-range indices, scatter-add gradient, shapes and dtypes."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import analytic_grads, check_grad, run_op  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(8)
W = rng.standard_normal((6, 4)).astype(np.float32)


def test_lookup_and_clipping():
    idx = np.array([[0, 5, 2], [7, -1, 2]], dtype=np.float32)
    out = run_op("Embedding", [idx, W], {"input_dim": 6, "output_dim": 4})[0]
    assert out.shape == (2, 3, 4) and out.dtype == np.float32
    np.testing.assert_array_equal(out, W[np.clip(idx.astype(int), 0, 5)])


def test_gradient_accumulates_repeated_rows():
    idx = np.array([1, 3, 1, 1])
    head = rng.standard_normal((4, 4))
    g = analytic_grads("Embedding", [idx, W.astype(np.float64)],
                       {"input_dim": 6, "output_dim": 4, "dtype": "float64"}, [head])
    assert g[0] is None
    ref = np.zeros((6, 4))
    np.add.at(ref, idx, head)
    np.testing.assert_allclose(g[1], ref, rtol=1e-12)
    check_grad("Embedding", [idx, W.astype(np.float64)], {"input_dim": 6, "output_dim": 4, "dtype": "float64"},
               wrt=[1])


def test_shapes_dtypes_errors():
    op = ops.get("Embedding")
    a = op.parse_attrs({"input_dim": 10, "output_dim": 3})
    ins, outs, _ = op.shapes(a, [(2, 5), None])
    assert ins[1] == (10, 3) and outs == [(2, 5, 3)]
    assert op.dtypes(a, [np.dtype("int32"), None])[1] == [np.float32]
    with pytest.raises(ShapeError, match="Embedding: weight"):
        op.shapes(a, [(2, 5), (10, 4)])
    with pytest.raises(OperatorError, match="Embedding: input_dim"):
        op.shapes(op.parse_attrs({"input_dim": 0, "output_dim": 3}), [(2,), None])
    with pytest.raises(OperatorError, match="Embedding: weight dtype"):
        op.dtypes(a, [np.dtype("int32"), np.dtype("float64")])


def test_contrib_sparse_embedding_is_embedding_with_row_sparse_gradient():
    import ember as mx
    idx = np.array([[0, 5], [2, 2]], dtype=np.float32)
    attrs = {"input_dim": 6, "output_dim": 4}
    out = run_op("_contrib_SparseEmbedding", [idx, W], attrs)[0]
    np.testing.assert_array_equal(out, W[idx.astype(int)])
    head = rng.standard_normal((2, 2, 4)).astype(np.float32)
    want = np.zeros_like(W)
    np.add.at(want, idx.astype(int).ravel(), head.reshape(-1, 4))
    # symbolic (dense executor): named and inferred as MXNet's sparseembedding0
    with mx.name.NameManager():
        s = mx.sym.contrib.SparseEmbedding(mx.sym.var("d"), mx.sym.var("w"), **attrs)
    assert s.name == "sparseembedding0"
    assert s.infer_shape(d=(2, 2)) == ([(2, 2), (6, 4)], [(2, 2, 4)], [])
    exe = s.bind(mx.cpu(), {"d": mx.nd.array(idx), "w": mx.nd.array(W)}, args_grad={"w": mx.nd.zeros((6, 4))})
    exe.forward(is_train=True)
    exe.backward(mx.nd.array(head))
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), want, rtol=1e-6)
    # MXNet's `deterministic` is accepted (ember's sums always run in one order): the same numbers
    s2 = mx.sym.contrib.SparseEmbedding(mx.sym.var("d"), mx.sym.var("w"), deterministic=True, **attrs)
    exe2 = s2.bind(mx.cpu(), {"d": mx.nd.array(idx), "w": mx.nd.array(W)}, args_grad={"w": mx.nd.zeros((6, 4))})
    exe2.forward(is_train=True)
    exe2.backward(mx.nd.array(head))
    np.testing.assert_array_equal(exe2.grad_dict["w"].asnumpy(), exe.grad_dict["w"].asnumpy())
    # imperative: the gradient holds exactly the indexed rows, as a row_sparse array
    grads = ops.get("_contrib_SparseEmbedding").gradient(
        mx.nd, ops.get("_contrib_SparseEmbedding").parse_attrs(attrs), [mx.nd.array(idx), mx.nd.array(W)],
        [mx.nd.array(out)], [mx.nd.array(head)])
    assert grads[0] is None and grads[1].stype == "row_sparse"
    np.testing.assert_array_equal(grads[1].indices.asnumpy(), [0, 2, 5])
    np.testing.assert_allclose(grads[1].asnumpy(), want, rtol=1e-6)
