"""mx.np.sum / prod / mean on the registry's _np_sum/_np_prod/_npi_mean: numpy's shapes and dtypes,
graphs built from variables without shapes (MXNet's mx.sym.np.sum(mx.sym.Variable('x'))), gradients
by finite differences, imperative and hybridized."""
import numpy as onp
import pytest

import ember as mx
from ember import np
from ember.base import MXNetError
from ember.test_utils import check_numeric_gradient

from ._np_blocks import FnBlock


pytestmark = pytest.mark.usefixtures("np_semantics")


@pytest.mark.parametrize("name", ["sum", "prod", "mean"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), ()])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("hybridize", [False, True])
def test_values_shapes_and_gradients(name, axis, keepdims, hybridize):
    rng = onp.random.RandomState(0)
    a = rng.uniform(0.5, 1.5, (2, 3, 4))
    blk = FnBlock(lambda F, v: getattr(F.np, name)(v, axis=axis, keepdims=keepdims))
    if hybridize:
        blk.hybridize()
    x = np.array(a, dtype=onp.float64)
    x.attach_grad()
    with mx.autograd.record():
        y = blk(x)
    y.backward()
    want = getattr(onp, name)(a, axis=axis, keepdims=keepdims)
    assert y.shape == want.shape
    onp.testing.assert_allclose(y.asnumpy(), want, rtol=1e-12)
    eps, grad = 1e-6, onp.zeros_like(a)
    for i in onp.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[i] += eps
        lo[i] -= eps
        grad[i] = (getattr(onp, name)(hi, axis=axis).sum() - getattr(onp, name)(lo, axis=axis).sum()) / (2 * eps)
    onp.testing.assert_allclose(x.grad.asnumpy(), grad, rtol=1e-5, atol=1e-8)


def test_dtypes():
    b = np.array(onp.array([True, False, True]), dtype=onp.bool_)
    assert np.sum(b).dtype == onp.int64 and int(np.sum(b)) == 2
    assert np.prod(b).dtype == onp.int64
    i8 = onp.array([100, 100, 100], dtype=onp.int8)
    assert int(np.sum(np.array(i8, dtype=onp.int8), dtype=onp.int32)) == 300  # accumulated wide
    assert np.mean(np.array([1, 2], dtype=onp.int32)).dtype == onp.float32
    assert float(np.mean(np.array([1, 2], dtype=onp.int32))) == 1.5
    assert int(np.mean(np.array(i8, dtype=onp.int8), dtype=onp.int8)) == int(onp.mean(i8, dtype=onp.int8))
    h = onp.random.uniform(size=(100,)).astype(onp.float16)
    onp.testing.assert_allclose(np.sum(np.array(h, dtype=onp.float16), dtype=onp.float32).asnumpy(),
                                onp.sum(h, dtype=onp.float32), rtol=1e-6)
    assert onp.isnan(float(np.mean(np.ones((2, 0)))))
    assert float(np.sum(np.ones((2, 3)), initial=5)) == 11.0
    with pytest.raises(MXNetError):
        np.sum(np.ones((2, 3)), axis=2)
    with pytest.raises(MXNetError):
        np.sum(np.ones((2, 3)), axis=(0, 0))


@pytest.mark.parametrize("name", ["sum", "prod", "mean"])
@pytest.mark.parametrize("axis", [None, 1])
def test_symbol_without_shape(name, axis):
    x_sym = mx.sym.Variable("x").as_np_ndarray()
    s = getattr(mx.sym.np, name)(x_sym, axis=axis, dtype="float32").as_nd_ndarray()
    _, outs, _ = s.infer_shape(x=(2, 3))
    assert outs == [() if axis is None else (2,)]
    x = mx.nd.array(onp.random.uniform(0.5, 1.5, (2, 3)))
    check_numeric_gradient(s, [x], numeric_eps=1e-3, rtol=1e-2, atol=1e-3, dtype=onp.float32)
