"""_contrib_DeformableConvolution and _contrib_ModulatedDeformableConvolution: zero offsets give Convolution,
integer offsets shift the taps, a mask scales them, outputs equal MXNet 1.9.1's (fixtures from
tests/data/make_deformable_fixtures.py), and the gradients of every input equal central differences."""
import glob
import json
import os

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


MODULATED = "_contrib_ModulatedDeformableConvolution"
FIXTURES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "data", "deformable", "*.npz")))


def test_fixtures_present():
    assert len(FIXTURES) == 6, "run tests/data/make_deformable_fixtures.py with the MXNet venv"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: os.path.basename(p)[:-4])
def test_matches_mxnet(path):
    # sample points before row/column 0, inside (-1, 0), in the last row/column and past the image:
    # the two operators' different boundary rules, as MXNet's CPU kernels apply them
    fx = np.load(path)
    attrs = json.loads(str(fx["attrs"]))
    inputs = [fx[f"in_{k}"] for k in range(sum(1 for key in fx.files if key.startswith("in_")))]
    out = run(f"_contrib_{fx['op']}", inputs, attrs)
    np.testing.assert_allclose(out, fx["out"], rtol=1e-4, atol=1e-5)


def test_a_mask_scales_each_tap():
    rng = np.random.default_rng(2)
    x, w, b = rng.random((1, 4, 6, 6)), rng.normal(size=(4, 2, 3, 3)), rng.random(4)
    conv = run("Convolution", [x, w, b], {"kernel": (3, 3), "pad": (1, 1), "num_filter": 4, "num_group": 2})
    ones = np.ones((1, 18, 6, 6))
    np.testing.assert_allclose(run(MODULATED, [x, np.zeros((1, 36, 6, 6)), ones, w, b], ATTRS), conv, rtol=1e-12)
    off, mask = rng.uniform(-2, 2, (1, 36, 6, 6)), rng.random((1, 18, 6, 6))
    full = run(MODULATED, [x, off, mask, w, b], ATTRS) - b[None, :, None, None]
    half = run(MODULATED, [x, off, mask * 0.5, w, b], ATTRS) - b[None, :, None, None]
    np.testing.assert_allclose(half, full * 0.5, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_modulated_gradients_match_central_differences(seed):
    rng = np.random.default_rng(seed)
    x, w, b = rng.random((1, 4, 5, 5)), rng.normal(0, 0.5, (4, 2, 3, 3)), rng.random(4)
    off = np.floor(rng.random((1, 36, 5, 5)) * 3 - 1) + 0.2 + 0.6 * rng.random((1, 36, 5, 5))
    mask = rng.random((1, 18, 5, 5))
    check_grad(MODULATED, [x, off, mask, w, b], ATTRS, eps=1e-6, rtol=1e-4, atol=1e-6)


def test_modulated_shapes_are_checked():
    with pytest.raises(mx.base.ShapeError, match="mask"):
        run(MODULATED, [np.zeros((1, 4, 5, 5)), np.zeros((1, 36, 5, 5)), np.zeros((1, 9, 5, 5)),
                        np.zeros((4, 2, 3, 3)), np.zeros(4)], ATTRS)
