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


def test_infer_range_takes_the_length_from_the_graph():
    """MXNet's `infer_range=True` without stop: the length is what the consumer needs (backward shape
    inference), the values start + i * step (each repeated)."""
    s = mx.sym.elemwise_add(mx.sym.arange(start=0, stop=None, infer_range=True), mx.sym.zeros(shape=[5]))
    np.testing.assert_array_equal(s.bind(mx.cpu(), args={}).forward()[0].asnumpy(), np.arange(5))
    s = mx.sym.arange(start=2, step=3, infer_range=True, repeat=2) + mx.sym.var("x")
    assert s.infer_shape(x=(6,))[1] == [(6,)]
    out = s.bind(mx.cpu(), {"x": mx.nd.zeros(6)}).forward()[0].asnumpy()
    np.testing.assert_array_equal(out, [2, 2, 5, 5, 8, 8])
    # without infer_range a missing stop still means [0, start)
    assert mx.sym.arange(4).infer_shape()[1] == [(4,)]
