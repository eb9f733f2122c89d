"""mx.np edge cases MXNet 1.9.1 handles: 0-d and zero-size inputs, dtype rules, numpy keywords, and
hybridized blocks traced once per input signature.  Checked against numpy and finite differences."""

import numpy as onp
import pytest

import ember as mx
from ember import np, npx
from ember.base import MXNetError

from ._np_blocks import FnBlock as _Fn


pytestmark = pytest.mark.usefixtures("np_semantics")


def _both(fn, x):
    """fn's result imperatively and hybridized (numpy arrays)."""
    blk = _Fn(fn)
    imp = blk(x).asnumpy()
    blk.hybridize()
    return imp, blk(x).asnumpy()


def test_zero_d_axes():
    x = np.array(2.5)
    assert np.squeeze(x, -1).shape == () and np.squeeze(x, 0).shape == ()
    with pytest.raises(MXNetError):
        np.squeeze(x, 1)
    for op in ("argmin", "argmax"):
        r = getattr(np, op)(x, 0)
        assert r.shape == () and r.dtype == onp.int64 and int(r) == 0
        assert int(getattr(np, op)(x, -1)) == 0
        with pytest.raises(MXNetError):
            getattr(np, op)(x, 1)
    assert np.argmin(np.ones((5, 0, 3)), 0).shape == (0, 3)
    with pytest.raises(MXNetError):
        np.argmax(np.ones((5, 0, 3)), 1)
    assert x.transpose(None).shape == () and x.transpose(()).shape == ()
    assert np.tile(np.array(3), ()).shape == () and np.tile(np.array(3), (2, 3)).shape == (2, 3)
    assert np.cumsum(x).shape == (1,)


def test_transpose_errors_and_method_forms():
    a = onp.random.uniform(size=(2, 3, 4)).astype(onp.float32)
    x = np.array(a)
    for axes in [(2, 0, 1), [1, 0, 2], None]:
        onp.testing.assert_array_equal(x.transpose(axes).asnumpy(), a.transpose(axes))
    onp.testing.assert_array_equal(x.transpose(2, 1, 0).asnumpy(), a.transpose(2, 1, 0))
    with pytest.raises(ValueError):
        x.transpose((0, 0, 1))
    with pytest.raises(MXNetError):
        x.transpose((0, 1, 3))
    with pytest.raises(MXNetError):
        x.transpose((0, 1))


def test_eye_zero_columns_and_bool_full():
    for args in [(4, 0), (0, 3), (0,), (3, None, 1), (2, 3)]:
        for dt in ("int32", None):
            onp.testing.assert_array_equal(np.eye(*args, dtype=dt).asnumpy(), onp.eye(*args, dtype=dt or onp.float32))
    assert np.full((2, 3), True).dtype == onp.bool_
    v = np.array([1, 2, 3], dtype=onp.int64)
    out = np.full((0, 3), v)
    assert out.shape == (0, 3) and out.dtype == onp.int64
    assert np.full((3,), v).asnumpy().tolist() == [1, 2, 3]
    imp, hyb = _both(lambda F, x: F.np.full((2, 3), x), v)
    onp.testing.assert_array_equal(imp, onp.full((2, 3), [1, 2, 3]))
    onp.testing.assert_array_equal(hyb, imp)
    onp.testing.assert_array_equal(np.arange(0, 5, None).asnumpy(), onp.arange(5, dtype=onp.float32))
    imp, hyb = _both(lambda F, x: x + F.np.arange(0, 5, None), np.zeros(()))
    onp.testing.assert_array_equal(hyb, onp.arange(5))


def test_clip_method_keywords():
    a = onp.array([1.0, -2.0, 3.0], dtype=onp.float32)
    x = np.array(a)
    onp.testing.assert_array_equal(x.clip(min=0).asnumpy(), a.clip(min=0))
    onp.testing.assert_array_equal(x.clip(max=1).asnumpy(), a.clip(max=1))
    onp.testing.assert_array_equal(x.clip(0, 2).asnumpy(), a.clip(0, 2))
    assert np.clip(0.5, 0, 0.2) == onp.clip(0.5, 0, 0.2)
    with pytest.raises(ValueError):
        x.clip()


def test_bool_ufuncs_out_and_integers():
    a = onp.array([1.0, onp.nan, onp.inf, -onp.inf], dtype=onp.float32)
    x = np.array(a)
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf"):
        out = np.empty((4,), dtype=onp.bool_)
        getattr(np, name)(x, out)
        onp.testing.assert_array_equal(out.asnumpy(), getattr(onp, name)(a))
        with pytest.raises(TypeError):
            getattr(np, name)(x, out=np.empty((4,)))
        with pytest.raises(NotImplementedError):
            getattr(np, name)(x, where=False)
        i = np.array([1, 2], dtype=onp.int32)
        onp.testing.assert_array_equal(getattr(np, name)(i).asnumpy(), getattr(onp, name)(onp.array([1, 2])))
    onp.testing.assert_array_equal(np.logical_not(x).asnumpy(), onp.logical_not(a))
    assert np.logical_not(x).dtype == onp.bool_


def test_hybridized_block_retraces_per_dtype():
    blk = _Fn(lambda F, x: F.np.isinf(x))
    blk.hybridize()
    assert blk(np.array([1.0, onp.inf])).asnumpy().tolist() == [False, True]
    assert blk(np.array([1, 2], dtype=onp.int32)).asnumpy().tolist() == [False, False]
    blk2 = _Fn(lambda F, x: x.reshape(-1) * 2)
    blk2.hybridize()
    assert blk2(np.ones((2, 3))).shape == (6,)
    assert blk2(np.ones((4,))).shape == (4,)


def test_true_divide_of_bool_and_cumsum_dtypes():
    b = np.array([True, False], dtype=onp.bool_)
    r = b / 4
    assert r.dtype == onp.float32 and r.asnumpy().tolist() == [0.25, 0.0]
    assert (4 / np.array([2, 8], dtype=onp.int64)).dtype == onp.float32
    h = onp.random.uniform(size=(50,)).astype(onp.float16)
    got = np.cumsum(np.array(h), dtype=onp.float32)
    assert got.dtype == onp.float32
    onp.testing.assert_allclose(got.asnumpy(), onp.cumsum(h, dtype=onp.float32), rtol=1e-6)
    assert np.cumsum(np.array([True, True, False], dtype=onp.bool_)).dtype == onp.int64
    assert np.cumsum(np.array([1, 2], dtype=onp.int8)).dtype == onp.int8


@pytest.mark.parametrize("src,dst", [((1, 0), (2, 4, 0)), ((1, 1), (2, 4, 0)), ((2,), (2,)), ((), (3,)),
                                     ((4, 1), (2, 4, 3)), ((5,), (3, 4, -2))])
@pytest.mark.parametrize("hybridize", [False, True])
def test_broadcast_to_gradient(src, dst, hybridize):
    a = onp.random.uniform(size=src).astype(onp.float32)
    want = onp.broadcast_to(a, tuple(s if d == -2 else d for s, d in zip((1,) * (len(dst) - len(src)) + src, dst)))
    blk = _Fn(lambda F, x: F.np.broadcast_to(x, dst))
    if hybridize:
        blk.hybridize()
    x = np.array(a)
    x.attach_grad()
    with mx.autograd.record():
        y = blk(x)
    y.backward()
    onp.testing.assert_array_equal(y.asnumpy(), want)
    # d(sum of a broadcast)/da: how many times each element is copied
    onp.testing.assert_allclose(x.grad.asnumpy(), onp.full(src, want.size / max(a.size, 1)) if want.size else 0)


def test_broadcast_to_bad_negative():
    with pytest.raises(MXNetError):
        np.broadcast_to(np.ones((5,)), (-2, 5))


def test_ediff1d_empty_keeps_gradient():
    for shp in [(0,), (1,), (4,)]:
        a = onp.random.uniform(size=shp).astype(onp.float32)
        x = np.array(a)
        x.attach_grad()
        with mx.autograd.record():
            y = np.ediff1d(x, to_begin=np.array([1.0, 2.0]))
        y.backward()
        onp.testing.assert_allclose(y.asnumpy(), onp.ediff1d(a, to_begin=[1.0, 2.0]), rtol=1e-6)
        # the gradient of sum(diff) is -1 at the first element, +1 at the last (0 for fewer than 2)
        g = onp.zeros(shp, onp.float32)
        if a.size > 1:
            g[0], g[-1] = -1, 1
        onp.testing.assert_allclose(x.grad.asnumpy(), g)


def test_trace_and_matmul_errors():
    for shape, a1, a2 in [((), 0, 1), ((2,), 0, 1), ((3, 2, 2), 1, 1), ((3, 2, 2), 0, -4)]:
        with pytest.raises(MXNetError):
            np.trace(np.ones(shape), axis1=a1, axis2=a2)
    with pytest.raises(MXNetError):
        np.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5)))


def test_softmax_zero_size():
    for fn in (npx.softmax, npx.log_softmax):
        x = np.ones((3, 0, 4))
        x.attach_grad()
        with mx.autograd.record():
            y = fn(x, axis=1)
        y.backward()
        assert y.shape == (3, 0, 4) and x.grad.shape == (3, 0, 4)


def test_boolean_mask_of_a_traced_symbol_is_refused_not_misread():
    # x[x > 0] in a hybridized block: the result's shape depends on the mask's values, which a traced
    # graph cannot have; it was read as an integer index array (take): [1, -1, 2, -3] -> [-1, 1, -1, 1]
    from ember.gluon.block import HybridizeError
    x = np.array([1.0, -1.0, 2.0, -3.0])
    blk = _Fn(lambda F, a: a[a > 0])
    onp.testing.assert_array_equal(blk(x).asnumpy(), [1.0, 2.0])
    blk.hybridize()
    with pytest.raises(HybridizeError, match="boolean mask indexing"):
        blk(x)
    ints = _Fn(lambda F, a: a[a.astype("int32")])
    ints.hybridize()  # an integer index array still takes
    onp.testing.assert_array_equal(ints(np.array([1.0, 0.0, 1.0])).asnumpy(), [0.0, 1.0, 0.0])


def test_boolean_mask_setitem_takes_values_for_the_selected_elements():
    # numpy's x[mask] = values: values broadcast to the selected elements' shape (count, trailing...);
    # an array shaped like x is refused as numpy refuses it (ember took that form and refused numpy's)
    rng = onp.random.RandomState(0)
    m = rng.rand(3, 4) > 0.5
    v = rng.rand(int(m.sum())).astype(onp.float32)
    x, ref = np.zeros((3, 4)), onp.zeros((3, 4), onp.float32)
    x[np.array(m, dtype=np.bool_)] = np.array(v)
    ref[m] = v
    onp.testing.assert_array_equal(x.asnumpy(), ref)
    rows = onp.array([True, False, True])
    y, ry = np.zeros((2, 3, 4)), onp.zeros((2, 3, 4), onp.float32)
    val = rng.rand(2, 2, 4).astype(onp.float32)
    y[:, np.array(rows, dtype=np.bool_), :] = np.array(val)
    ry[:, rows, :] = val
    onp.testing.assert_array_equal(y.asnumpy(), ry)
    z = np.zeros((3, 4))
    z[np.array(rows, dtype=np.bool_)] = np.array(onp.arange(4, dtype=onp.float32))  # broadcast per row
    onp.testing.assert_array_equal(z.asnumpy()[[0, 2]], onp.tile(onp.arange(4), (2, 1)))
    with pytest.raises(MXNetError):
        x[np.array(m, dtype=np.bool_)] = np.ones((3, 4))


def test_internal_boolean_mask_assign():
    a = np.array(onp.arange(24, dtype=onp.float32).reshape(2, 3, 4))
    mask = np.array(onp.array([[True, False, True, False], [False, True, True, True], [True, True, False, False]]),
                    dtype=np.bool_)
    out = np._internal.boolean_mask_assign_scalar(a, mask, 42.0, start_axis=1, out=a)
    ref = onp.arange(24, dtype=onp.float32).reshape(2, 3, 4)
    ref[:, mask.asnumpy()] = 42.0
    assert out is a
    onp.testing.assert_array_equal(a.asnumpy(), ref)
    vals = onp.arange(2 * 7, dtype=onp.float32).reshape(2, 7)
    np._internal.boolean_mask_assign_tensor(a, mask, np.array(vals), start_axis=1, out=a)
    ref[:, mask.asnumpy()] = vals
    onp.testing.assert_array_equal(a.asnumpy(), ref)
    with pytest.raises(MXNetError, match="does not match"):
        np._internal.boolean_mask_assign_scalar(a, mask, 1.0, start_axis=0, out=a)
    with pytest.raises(MXNetError, match="must be boolean"):
        np._internal.boolean_mask_assign_scalar(a, np.ones((3, 4)), 1.0, start_axis=1)
