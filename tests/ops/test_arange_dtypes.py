"""arange computes start + i * step in the output dtype (C casts: truncation, unsigned wrap), mx.nd.arange
through the _arange operator."""
import numpy as np
import pytest

import ember as mx


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
@pytest.mark.parametrize("cfg", [(10,), (0, 10), (5, 100, 4), (50, -50, -2), (1.3, 45.6, 1.3)])
def test_arange_matches_numpy_in_the_dtype(dtype, cfg):
    got = mx.nd.arange(*cfg, repeat=2, dtype=dtype)
    assert got.dtype == dtype
    np.testing.assert_allclose(got.asnumpy(), np.repeat(np.arange(*cfg, dtype=dtype), 2), rtol=1e-6)


def test_unsigned_negative_step_wraps_like_a_c_cast():
    got = mx.nd.arange(4, -4, -2, dtype="uint8").asnumpy()
    assert got.tolist() == [4, 2, 0, 254]


def test_symbolic_arange_is_the_same_operator():
    ex = mx.sym.arange(2, 11, 3, dtype="int32").bind(mx.cpu(), {})
    assert ex.forward()[0].asnumpy().tolist() == [2, 5, 8]
    with pytest.raises(ValueError, match="step must not be zero"):
        mx.nd.arange(0, 3, 0)
