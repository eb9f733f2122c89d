"""_contrib_DeformableConvolution: zero offsets give Convolution, integer offsets shift the taps, and the
gradients of data, offset, weight and bias equal central differences."""
import numpy as np
import pytest

import ember as mx

from ._gradcheck import check_grad, run

ATTRS = {"kernel": (3, 3), "pad": (1, 1), "num_filter": 4, "num_group": 2, "num_deformable_group": 2}


def test_zero_offsets_are_a_convolution():
    rng = np.random.default_rng(0)
    x, w, b = rng.random((2, 4, 6, 5)), rng.normal(size=(4, 2, 3, 3)), rng.random(4)
    out = run("_contrib_DeformableConvolution", [x, np.zeros((2, 36, 6, 5)), w, b], ATTRS)
    conv = run("Convolution", [x, w, b], {"kernel": (3, 3), "pad": (1, 1), "num_filter": 4, "num_group": 2})
    np.testing.assert_allclose(out, conv, rtol=1e-12, atol=1e-12)


def test_an_integer_offset_moves_a_tap():
    x = np.random.default_rng(1).random((1, 1, 6, 6))
    w = np.zeros((1, 1, 3, 3))
    w[0, 0, 1, 1] = 1.0  # the center tap alone: output(y, x) = data at (y + oy, x + ox)
    off = np.zeros((1, 18, 6, 6))
    off[0, 8], off[0, 9] = 1.0, 2.0
    out = run("_contrib_DeformableConvolution", [x, off, w], {"kernel": (3, 3), "pad": (1, 1), "num_filter": 1,
                                                               "no_bias": True})
    np.testing.assert_allclose(out[0, 0, :5, :4], x[0, 0, 1:6, 2:6])
    assert (out[0, 0, 5] == 0).all()  # row 6 is outside the image


@pytest.mark.parametrize("seed", [0, 1])
def test_gradients_match_central_differences(seed):
    rng = np.random.default_rng(seed)
    x, w, b = rng.random((1, 4, 5, 5)), rng.normal(0, 0.5, (4, 2, 3, 3)), rng.random(4)
    # offsets away from integer positions, where the bilinear sample is smooth
    off = np.floor(rng.random((1, 36, 5, 5)) * 3 - 1) + 0.2 + 0.6 * rng.random((1, 36, 5, 5))
    check_grad("_contrib_DeformableConvolution", [x, off, w, b], ATTRS, eps=1e-6, rtol=1e-4, atol=1e-6)
