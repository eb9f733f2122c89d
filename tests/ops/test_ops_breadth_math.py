"""softmin, softmax_cross_entropy, batch_take, choose/fill_element_0index, _onehot_encode, _split_v2
and the Python helpers over them (moveaxis, linspace, histogram, split_v2, contrib.isnan/isinf/isfinite):
numpy references and finite differences."""
import numpy as np
import pytest

import ember as mx
from ember import autograd
from ember.base import ShapeError

from ._gradcheck import check_grad, run


def _np_softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_softmin_matches_softmax_of_negated_input():
    x = np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32)
    for axis, t in ((-1, None), (1, 2.0), (0, 0.5)):
        got = mx.nd.softmin(mx.nd.array(x), axis=axis, temperature=t).asnumpy()
        want = _np_softmax(-x / (t or 1.0), axis)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_softmin_gradient_finite_differences():
    x = np.random.default_rng(1).standard_normal((2, 5))
    check_grad("softmin", [x])
    check_grad("softmin", [x], {"axis": 0, "temperature": 3.0})


def test_softmin_use_length_masks_the_tail():
    x = np.random.default_rng(2).standard_normal((2, 4)).astype(np.float32)
    got = run("softmin", [x, np.array([2, 4], np.int32)], {"use_length": True})
    np.testing.assert_allclose(got[0, :2], _np_softmax(-x[0, :2]), rtol=1e-5)
    assert np.all(got[0, 2:] == 0)
    np.testing.assert_allclose(got[1], _np_softmax(-x[1]), rtol=1e-5)


def test_softmax_cross_entropy_value_and_gradient():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6))
    lab = np.array([0, 5, 2, 2], dtype=np.float64)
    got = run("softmax_cross_entropy", [x, lab])
    p = _np_softmax(x, 1)
    assert got.shape == (1,)
    np.testing.assert_allclose(got[0], -np.log(p[np.arange(4), lab.astype(int)]).sum(), rtol=1e-10)
    check_grad("softmax_cross_entropy", [x, lab], wrt=[0])
    # symbolic inference: label shape from data, output (1,)
    s = mx.sym.softmax_cross_entropy(mx.sym.var("a"), mx.sym.var("l"))
    assert s.infer_shape(a=(4, 6)) == ([(4, 6), (4,)], [(1,)], [])
    with pytest.raises(ShapeError):
        s.infer_shape(a=(4, 6, 2))


def test_batch_take_clips_indices():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = mx.nd.batch_take(mx.nd.array(a), mx.nd.array([5, -3, 2], dtype="int32")).asnumpy()
    np.testing.assert_array_equal(got, [3, 4, 10])
    with pytest.raises(Exception):
        mx.nd.batch_take(mx.nd.array(a), mx.nd.array([0, 1, 2], dtype="float32")).asnumpy()


def test_choose_and_fill_element_0index():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([0, 3, 1], np.float32)
    np.testing.assert_array_equal(run("choose_element_0index", [a, idx]), [0, 7, 9])
    filled = run("fill_element_0index", [a, np.array([7, 8, 9], np.float32), idx])
    want = a.copy()
    want[[0, 1, 2], [0, 3, 1]] = [7, 8, 9]
    np.testing.assert_array_equal(filled, want)
    check_grad("choose_element_0index", [a.astype(np.float64), idx.astype(np.float64)], wrt=[0])
    x = mx.nd.array(a)
    x.attach_grad()
    with autograd.record():
        y = mx.nd.choose_element_0index(x, mx.nd.array(idx))
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.eye(4)[[0, 3, 1]])


def test_onehot_encode_writes_out():
    out = mx.nd.zeros((3, 5))
    res = mx.nd.onehot_encode(mx.nd.array([1, 4, 0]), out)
    np.testing.assert_array_equal(out.asnumpy(), np.eye(5)[[1, 4, 0]])
    assert res is out or np.array_equal(res.asnumpy(), out.asnumpy())


def test_split_v2_sections_indices_and_gradient():
    x = np.arange(24, dtype=np.float64).reshape(2, 6, 2)
    for ios in (3, (2, 5), (1, 9)):
        got = [o.asnumpy() for o in mx.nd.split_v2(mx.nd.array(x), ios, axis=1)]
        want = np.split(x, ios, axis=1)
        assert [g.shape for g in got] == [w.shape for w in want]
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)
    sq = mx.nd.split_v2(mx.nd.array(x), 2, axis=0, squeeze_axis=True)
    assert [o.shape for o in sq] == [(6, 2), (6, 2)]
    check_grad("_split_v2", [x], {"indices": (0, 2, 5), "axis": 1})
    check_grad("_split_v2", [x], {"sections": 2, "axis": 0, "squeeze_axis": True})
    with pytest.raises(ValueError):
        mx.nd.split_v2(mx.nd.array(x), 4, axis=1)
    s = mx.sym.split_v2(mx.sym.var("a"), 3, axis=1)
    assert s.infer_shape(a=(2, 6))[1] == [(2, 2)] * 3
    with pytest.raises(ShapeError):
        s.infer_shape(a=(2, 5))


def test_split_v2_autograd_with_unused_outputs():
    x = mx.nd.array(np.arange(12).reshape(6, 2))
    x.attach_grad()
    with autograd.record():
        parts = mx.nd.split_v2(x, (2, 3))
        z = parts[0].sum() * 2 + parts[2].sum()
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy()[:, 0], [2, 2, 0, 1, 1, 1])


def test_moveaxis_linspace_histogram_helpers():
    a = np.arange(60).reshape(3, 4, 5)
    for src, dst in ((0, 2), (-1, 0), ((0, 1), (2, 0))):
        np.testing.assert_array_equal(mx.nd.moveaxis(mx.nd.array(a), src, dst).asnumpy(), np.moveaxis(a, src, dst))
    with pytest.raises(ValueError):
        mx.nd.moveaxis(mx.nd.array(a), 3, 0)
    np.testing.assert_allclose(mx.nd.linspace(2, 3, 5, endpoint=False).asnumpy(), np.linspace(2, 3, 5, endpoint=False))
    assert mx.sym.linspace(0, 1, 4).infer_shape()[1] == [(4,)]
    data = np.array([1, 2, 2, 3, 5, 7], np.float32)
    counts, edges = mx.nd.histogram(mx.nd.array(data), bins=4, range=(0, 5))
    wc, we = np.histogram(data, bins=4, range=(0, 5))
    np.testing.assert_array_equal(counts.asnumpy(), wc)
    np.testing.assert_allclose(edges.asnumpy(), we)
    with pytest.raises(ValueError):
        mx.sym.histogram(mx.sym.var("a"), bins=3)


def test_contrib_isnan_isinf_isfinite():
    x = np.array([1, np.inf, -np.inf, np.nan, 0], np.float32)
    nd = mx.nd.array(x)
    np.testing.assert_array_equal(mx.nd.contrib.isinf(nd).asnumpy(), np.isinf(x))
    np.testing.assert_array_equal(mx.nd.contrib.isnan(nd).asnumpy(), np.isnan(x))
    np.testing.assert_array_equal(mx.nd.contrib.isfinite(nd).asnumpy(), np.isfinite(x))


def test_contrib_rand_zipfian_distribution_and_expected_counts():
    mx.random.seed(3)
    n, rmax = 20000, 40
    sampled, exp_true, exp_sampled = mx.nd.contrib.rand_zipfian(mx.nd.array([3, 10, 0]), n, rmax)
    s = sampled.asnumpy()
    assert s.dtype == np.int64 and s.shape == (n,) and s.min() >= 0 and s.max() < rmax
    prob = np.log((np.arange(rmax) + 2) / (np.arange(rmax) + 1)) / np.log(rmax + 1)
    np.testing.assert_allclose(np.bincount(s, minlength=rmax) / n, prob, atol=0.012)
    np.testing.assert_allclose(exp_true.asnumpy(), prob[[3, 10, 0]] * n, rtol=1e-12)
    np.testing.assert_allclose(exp_sampled.asnumpy(), prob[s] * n, rtol=1e-12)


def test_contrib_boolean_mask_values_gradient_and_errors():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    d = mx.nd.array(x)
    d.attach_grad()
    with autograd.record():
        y = mx.nd.contrib.boolean_mask(d, mx.nd.array([0, 1, 0, 1]))
    y.backward(mx.nd.ones_like(y) * 2)
    np.testing.assert_array_equal(y.asnumpy(), x[[1, 3]])
    np.testing.assert_array_equal(d.grad.asnumpy(), np.repeat([[0], [2], [0], [2]], 3, axis=1))
    np.testing.assert_array_equal(mx.nd.contrib.boolean_mask(d, mx.nd.array([1, 0, 1]), axis=1).asnumpy(),
                                  x[:, [0, 2]])
    assert mx.nd.contrib.boolean_mask(d, mx.nd.array([0, 0, 0, 0])).shape == (0, 3)
    with pytest.raises(ValueError):
        mx.nd.contrib.boolean_mask(d, mx.nd.array([1, 0]))


def test_sym_contrib_rand_zipfian_runs_in_an_executor():
    s, et, es = mx.sym.contrib.rand_zipfian(mx.sym.var("t"), 500, 30)
    ex = mx.sym.Group([s, et, es]).bind(mx.cpu(), {"t": mx.nd.array([1, 5])})
    sampled, exp_true, exp_sampled = ex.forward()
    prob = np.log((np.arange(30) + 2) / (np.arange(30) + 1)) / np.log(31)
    assert sampled.dtype == np.int64 and sampled.shape == (500,)
    np.testing.assert_allclose(exp_true.asnumpy(), prob[[1, 5]] * 500, rtol=1e-12)
    np.testing.assert_allclose(exp_sampled.asnumpy(), prob[sampled.asnumpy()] * 500, rtol=1e-12)


def test_nd_logical_helpers_take_arrays_and_scalars():
    a = mx.nd.array([0, 1, 2])
    b = mx.nd.array([1, 0, 3])
    np.testing.assert_array_equal(mx.nd.logical_and(a, b).asnumpy(), [0, 0, 1])
    np.testing.assert_array_equal(mx.nd.logical_or(a, 0).asnumpy(), [0, 1, 1])
    np.testing.assert_array_equal(mx.nd.logical_xor(1, b).asnumpy(), [0, 1, 0])
    assert mx.nd.logical_and(1, 0) == 0.0


def test_contrib_getnnz_counts_stored_values_of_csr():
    sp = pytest.importorskip("scipy.sparse")
    m = sp.random(5, 7, density=0.3, format="csr", random_state=0)
    m.data[0] = 0.0  # an explicitly stored zero still counts
    c = mx.nd.sparse.csr_matrix((m.data, m.indices, m.indptr), shape=m.shape)
    for axis in (None, 0, 1):
        got = mx.nd.contrib.getnnz(c, axis=axis)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got.asnumpy(), np.atleast_1d(m.getnnz(axis=axis)))
    with pytest.raises(Exception, match="csr"):
        mx.nd.contrib.getnnz(mx.nd.ones((2, 2))).asnumpy()
    assert mx.sym.contrib.getnnz(mx.sym.var("x"), axis=0).infer_shape(x=(4, 9))[1] == [(9,)]
