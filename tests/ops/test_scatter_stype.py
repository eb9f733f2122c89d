"""MXNet's _scatter_* operators and the registry's storage-type rules (OpDef.infer_stype) as imperative
sparse calls follow them; numbers against numpy, gradients by finite differences."""
import numpy as np
import pytest

import ember as mx
from ember.ops import registry, stype
from ember.test_utils import check_numeric_gradient


def _rsp_with_zero_row():
    """A row_sparse array storing rows 0 (all zeros, stored explicitly), 2 and 3."""
    values = np.array([[0, 0, 0], [1.5, -2, 0.5], [3, 0, -1]], np.float32)
    rows = np.array([0, 2, 3])
    dense = np.zeros((5, 3), np.float32)
    dense[rows] = values
    return dense, mx.nd.sparse.row_sparse_array((values, rows), shape=(5, 3))


def test_scatter_scalar_ops_compute_the_stored_values_only():
    dense, rsp = _rsp_with_zero_row()
    for op, fn in ((mx.nd._internal._scatter_plus_scalar, np.add), (mx.nd._internal._scatter_minus_scalar, np.subtract)):
        out = op(rsp, scalar=2.5)
        assert out.stype == "row_sparse"
        np.testing.assert_array_equal(out.indices.asnumpy(), [0, 2, 3])  # the explicit zero row too
        expect = np.zeros_like(dense)
        expect[[0, 2, 3]] = fn(dense[[0, 2, 3]], 2.5)
        np.testing.assert_allclose(out.asnumpy(), expect, rtol=1e-6)
        csr = mx.nd.array(dense).tostype("csr")
        out = op(csr, scalar=2.5)
        assert out.stype == "csr"
        np.testing.assert_array_equal(out.indptr.asnumpy(), csr.indptr.asnumpy())
        np.testing.assert_array_equal(out.indices.asnumpy(), csr.indices.asnumpy())
        np.testing.assert_allclose(out.asnumpy(), np.where(dense != 0, fn(dense, 2.5), 0), rtol=1e-6)
        # dense input: the plain op
        out = op(mx.nd.array(dense), scalar=2.5)
        assert out.stype == "default"
        np.testing.assert_allclose(out.asnumpy(), fn(dense, 2.5), rtol=1e-6)


def test_scatter_elemwise_div():
    dense, rsp = _rsp_with_zero_row()
    rhs = np.random.RandomState(0).uniform(1, 2, (5, 3)).astype(np.float32)
    for r in (mx.nd.array(rhs), mx.nd.array(rhs).tostype("row_sparse"), mx.nd.array(rhs).tostype("csr")):
        out = mx.nd._internal._scatter_elemwise_div(rsp, r)
        assert out.stype == "row_sparse"
        np.testing.assert_array_equal(out.indices.asnumpy(), [0, 2, 3])
        np.testing.assert_allclose(out.asnumpy(), dense / rhs, rtol=1e-6)
    # csr or dense lhs: elemwise_div, dense
    out = mx.nd._internal._scatter_elemwise_div(mx.nd.array(dense).tostype("csr"), mx.nd.array(rhs))
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), dense / rhs, rtol=1e-6)
    with pytest.raises(mx.base.MXNetError):
        mx.nd._internal._scatter_elemwise_div(mx.nd.ones((2, 3)), mx.nd.ones((3, 2)))


def test_scatter_gradients_by_finite_differences():
    rng = np.random.RandomState(1)
    a, b = rng.uniform(1, 2, (3, 4)), rng.uniform(1, 2, (3, 4))
    lhs, rhs = mx.sym.var("lhs"), mx.sym.var("rhs")
    check_numeric_gradient(mx.sym._internal._scatter_elemwise_div(lhs, rhs), [a, b], numeric_eps=1e-3, rtol=1e-2,
                           atol=1e-3)
    check_numeric_gradient(mx.sym._internal._scatter_plus_scalar(lhs, scalar=3.0), [a], numeric_eps=1e-3, rtol=1e-2)
    check_numeric_gradient(mx.sym._internal._scatter_minus_scalar(lhs, scalar=3.0), [a], numeric_eps=1e-3, rtol=1e-2)


def test_imperative_results_follow_the_rules():
    dense, rsp = _rsp_with_zero_row()
    out = mx.nd._internal._square_sum(rsp, axis=1, keepdims=True)
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), (dense ** 2).sum(axis=1, keepdims=True), rtol=1e-6)
    assert mx.nd._internal._square_sum(rsp, axis=0).stype == "default"
    # _plus_scalar keeps sparse storage only for a zero scalar
    assert (rsp + 0).stype == "row_sparse" and (rsp + 1).stype == "default"
    np.testing.assert_allclose((rsp + 1).asnumpy(), dense + 1)
    csr = mx.nd.array(dense).tostype("csr")
    q = mx.nd.contrib.quadratic(csr, a=2.0, b=1.0, c=0.0)
    assert q.stype == "csr"
    np.testing.assert_allclose(q.asnumpy(), 2 * dense ** 2 + dense, rtol=1e-6)
    assert mx.nd.contrib.quadratic(csr, a=2.0, b=1.0, c=1.0).stype == "default"
    assert mx.nd._internal._maximum(rsp, rsp).stype == "row_sparse"
    assert mx.nd.sparse.elemwise_div(rsp, rsp).stype == "default"


def test_rules():
    assert stype.dot({"transpose_a": True}, ["csr", "default"]) == ["row_sparse"]
    assert stype.dot({}, ["csr", "default"]) == ["default"]
    assert stype.dot({}, ["default", "csr"]) == ["csr"]
    assert stype.dot({"transpose_b": True}, ["default", "csr"]) == ["default"]
    assert stype.dot({"forward_stype": "csr"}, ["default", "default"]) == ["csr"]
    assert stype.prefer_sparse({}, ["default", "row_sparse"]) == ["row_sparse"]
    assert stype.prefer_sparse({}, ["csr", "row_sparse"]) == ["default"]
    assert stype.elemwise()({}, ["row_sparse", "row_sparse"]) == ["row_sparse"]
    assert stype.elemwise(csr=False)({}, ["csr", "csr"]) == ["default"]
    assert stype.sparse_if_zero_maps_to_zero(np.greater)({"scalar": 1.0}, ["csr"]) == ["csr"]
    assert stype.sparse_if_zero_maps_to_zero(np.greater)({"scalar": -1.0}, ["csr"]) == ["default"]
    # an op without a rule: every output default
    conv = registry.get("Convolution")
    assert registry.get("exp").stypes({}, ["row_sparse"]) == ["default"]
    assert conv.infer_stype is None
    bad = registry.OpDef(name="_test_bad_stype_rule", infer_stype=lambda a, s: ["default", "default"])
    with pytest.raises(mx.base.MXNetError, match="2 storage types for 1 outputs"):
        bad.stypes({}, ["default"])
