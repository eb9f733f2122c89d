"""_contrib_quantize / _contrib_dequantize against numpy formulas (MXNet's generic CPU kernels)."""
import numpy as np
import pytest

import ember as mx


def test_int8_is_zero_centered_and_round_trips():
    x = np.array([[-2.0, -1.5, -0.5, 0.0, 0.1392, 1.0, 2.5, 3.0]], dtype=np.float32)
    q, lo, hi = mx.nd.contrib.quantize(mx.nd.array(x), mx.nd.array([-1.5]), mx.nd.array([2.5]), out_type="int8")
    assert q.dtype == np.int8 and (lo.asscalar(), hi.asscalar()) == (-2.5, 2.5)
    want = (np.sign(x) * np.minimum(np.abs(x) * np.float32(127 / 2.5) + np.float32(0.5), 127)).astype(np.int8)
    np.testing.assert_array_equal(q.asnumpy(), want)
    d = mx.nd.contrib.dequantize(q, lo, hi)
    np.testing.assert_allclose(d.asnumpy(), want * np.float32(2.5 / 127), rtol=1e-6)
    inside = np.abs(x) <= 2.5
    assert np.abs(d.asnumpy() - x)[inside].max() <= 2.5 / 127 / 2 + 1e-6


def test_uint8_maps_the_range_onto_0_255():
    x = np.array([-2.0, -1.5, 0.0, 1.0, 2.5, 3.0], dtype=np.float32)
    q, lo, hi = mx.nd.contrib.quantize(mx.nd.array(x), mx.nd.array([-1.5]), mx.nd.array([2.5]))
    assert q.dtype == np.uint8
    want = np.clip((x + 1.5) * np.float32(255 / 4.0) + 0.5, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(q.asnumpy(), want)
    np.testing.assert_allclose(mx.nd.contrib.dequantize(q, lo, hi).asnumpy(),
                               want * np.float32(4.0 / 255) - 1.5, rtol=1e-6, atol=1e-6)


def test_quantize_checks_dtypes():
    with pytest.raises(mx.MXNetError, match="float32"):
        mx.nd.contrib.quantize(mx.nd.ones((2,), dtype="float64"), mx.nd.array([0]), mx.nd.array([1]))
    with pytest.raises(mx.MXNetError, match="int8 or uint8"):
        mx.nd.contrib.dequantize(mx.nd.ones((2,)), mx.nd.array([0]), mx.nd.array([1]))
