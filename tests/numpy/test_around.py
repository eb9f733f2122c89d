"""mx.np.around / round / round_ (the registry's _npi_around): MXNet 1.9.1's values (taken from MXNet's venv),
half to even, one decimal place scaled at a time in the input's dtype; imperative = hybridized; no gradient."""
import numpy as onp
import pytest

import ember as mx
from ember import np

from ._np_blocks import FnBlock

pytestmark = pytest.mark.usefixtures("np_semantics")

# (values, dtype, decimals, MXNet 1.9.1's result)
CASES = [
    ([0.5, 1.5, 2.5, 3.5, -2.5, -3.5], "float64", 0, [0.0, 2.0, 2.0, 4.0, -2.0, -4.0]),
    ([1.56, 72.54, 6.35, 3.25], "float32", 1, [1.6, 72.5, 6.4, 3.2]),
    ([1234.5, 1250, 1350], "float32", -2, [1200.0, 1200.0, 1400.0]),
    ([15, 25, 35, -15], "int32", -1, [10, 20, 30, -10]),
    ([1.005, 2.675], "float64", 2, [1.0, 2.68]),
    ([7, -3], "int64", 2, [7, -3]),
    ([1234, 1250, -1251], "int32", -2, [1200, 1200, -1200]),
    ([-2147483648, 2147483647, -25], "int32", -1, [-2147483640, 2147483640, -20]),  # C's truncating division
]


@pytest.mark.parametrize("values, dtype, decimals, want", CASES)
def test_values_are_mxnets(values, dtype, decimals, want):
    x = np.array(values, dtype=dtype)
    for fn in (np.around, np.round, np.round_):
        got = fn(x, decimals)
        assert got.dtype == onp.dtype(dtype)
        onp.testing.assert_array_equal(got.asnumpy(), onp.array(want, dtype=dtype))
    blk = FnBlock(lambda F, v: F.np.around(v, decimals))
    blk.hybridize()
    onp.testing.assert_array_equal(blk(x).asnumpy(), onp.array(want, dtype=dtype))


def test_random_values_agree_with_numpy_and_have_no_gradient():
    v = onp.random.RandomState(0).uniform(-100, 100, 50).astype(onp.float32)
    for d in (0, 1, 2, -1):
        onp.testing.assert_allclose(np.around(np.array(v), d).asnumpy(), onp.around(v, d), rtol=1e-6, atol=1e-5)
    x = np.array(v)
    x.attach_grad()
    with mx.autograd.record():
        y = (np.around(x, 1) * x).sum()
    y.backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), onp.around(v, 1), rtol=1e-6, atol=1e-6)  # d/dx of round(x) * x


def test_bool_is_refused():
    with pytest.raises(TypeError, match="bool"):
        np.around(np.array([True, False], dtype="bool"))
