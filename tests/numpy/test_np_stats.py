"""mx.np.bincount / percentile / quantile (ember/ops/np_stats.py) against numpy: values, MXNet's dtypes,
errors, and hybridized blocks (bincount's value-dependent length runs op by op) equal to imperative."""
import numpy as onp
import pytest

from ember import np
from ember.base import MXNetError

from ._np_blocks import FnBlock

pytestmark = pytest.mark.usefixtures("np_semantics")


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("minlength", [0, 5, 20])
@pytest.mark.parametrize("weighted", [False, True])
def test_bincount_values_and_hybridized(dtype, minlength, weighted):
    x = onp.random.RandomState(0).randint(0, 10, 15).astype(dtype)
    w = onp.random.RandomState(1).uniform(0, 2, 15).astype("float32") if weighted else None
    ref = onp.bincount(x, w, minlength)
    out = np.bincount(np.array(x, dtype=dtype), None if w is None else np.array(w), minlength)
    assert out.shape == ref.shape
    assert out.dtype == (onp.float32 if weighted else onp.dtype(dtype))  # MXNet: data's dtype, or weights'
    onp.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-6)
    blk = FnBlock((lambda F, a, b: F.np.bincount(a, b, minlength)) if weighted else
                  (lambda F, a: F.np.bincount(a, None, minlength)))
    blk.hybridize()
    args = [np.array(x, dtype=dtype)] + ([np.array(w)] if weighted else [])
    onp.testing.assert_allclose(blk(*args).asnumpy(), ref, rtol=1e-6)
    # a second call whose values need another length is sized anew
    args[0] = np.array(onp.array([12, 3]).astype(dtype))
    if weighted:
        args[1] = np.array([1.0, 2.0])
    assert blk(*args).shape == (max(13, minlength),)


def test_bincount_edges_and_errors():
    assert np.bincount(np.array([], dtype="int32")).shape == (0,)
    assert np.bincount(np.array([], dtype="int32"), minlength=4).asnumpy().tolist() == [0, 0, 0, 0]
    with pytest.raises(MXNetError):
        np.bincount(np.array([1, -1], dtype="int32"))
    with pytest.raises(ValueError):
        np.bincount(np.array([1], dtype="int32"), minlength=-1)
    with pytest.raises(TypeError):
        np.bincount([1, 2])
    with pytest.raises(TypeError):
        np.bincount(np.array([1.0, 2.0]))


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "nearest", "midpoint"])
@pytest.mark.parametrize("a_shape,q,axis", [((2, 3), 0.3, None), ((2, 3, 4, 5), 0.7, 3), ((2, 3, 4), [0.1, 0.5, 1.0], (0, 2)),
                                            ((2, 3, 4), [0.0, 0.25, 0.9], 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_quantile_percentile(interpolation, a_shape, q, axis, keepdims):
    a = onp.random.RandomState(2).uniform(-10, 10, a_shape)
    kw = dict(axis=axis, interpolation=interpolation, keepdims=keepdims)
    ref = onp.quantile(a, q, axis=axis, method=interpolation, keepdims=keepdims)
    qs = q if onp.isscalar(q) else np.array(q)
    out = np.quantile(np.array(a, dtype="float64"), qs, **kw)
    assert out.shape == ref.shape and out.dtype == onp.float64
    onp.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-12)
    pct = np.percentile(np.array(a, dtype="float32"), q * 100 if onp.isscalar(q) else np.array(q) * 100, **kw)
    assert pct.dtype == onp.float32
    onp.testing.assert_allclose(pct.asnumpy(), ref, rtol=1e-4, atol=1e-4)
    blk = FnBlock((lambda F, x: F.np.quantile(x, q, **kw)) if onp.isscalar(q) else
                  (lambda F, x, p: F.np.quantile(x, p, **kw)))
    blk.hybridize()
    args = [np.array(a, dtype="float64")] + ([] if onp.isscalar(q) else [np.array(q, dtype="float64")])
    onp.testing.assert_allclose(blk(*args).asnumpy(), ref, rtol=1e-12)


def test_quantile_dtypes_and_errors():
    assert np.quantile(np.array([1, 2, 3], dtype="int32"), 0.5).dtype == onp.float32  # MXNet: float32 unless f64
    assert float(np.quantile(np.array([1, 2, 3], dtype="int64"), 0.5)) == 2.0
    with pytest.raises(MXNetError):
        np.quantile(np.array([1.0, 2.0]), 1.5).asnumpy()
    with pytest.raises(MXNetError):
        np.percentile(np.array([1.0, 2.0]), np.array([[10.0]]))
    with pytest.raises(MXNetError):
        np.quantile(np.array([1.0, 2.0]), 0.5, interpolation="cubic")
    with pytest.raises(NotImplementedError):
        np.quantile(np.array([1.0, 2.0]), 0.5, overwrite_input=True)


@pytest.mark.parametrize("interpolation", ["lower", "higher", "nearest", "midpoint"])
def test_float16_quantiles_are_computed_in_float16(interpolation):
    """numpy (and MXNet's kernel) interpolate float16 data in float16: a midpoint near zero rounds there;
    the float32 result holds that float16 value, not the exact one."""
    rs = onp.random.RandomState(3)
    for _ in range(20):
        a = rs.uniform(-10, 10, (2, 3, 4)).astype(onp.float16)
        q = rs.uniform(0, 1, (3,)).astype(onp.float32)
        ref = onp.quantile(a, q, axis=1, method=interpolation)
        out = np.quantile(np.array(a, dtype="float16"), np.array(q), axis=1, interpolation=interpolation)
        assert out.dtype == onp.float32
        onp.testing.assert_array_equal(out.asnumpy(), ref.astype(onp.float32))
