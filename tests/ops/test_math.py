"""Unary maths ops against numpy/scipy values and finite-difference gradients."""
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import check_grad, grads, run  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import DTypeError, ShapeError  # noqa: E402

rng = np.random.default_rng(3)
erf = np.vectorize(math.erf)
gamma = np.vectorize(math.gamma)
lgamma = np.vectorize(math.lgamma)

# name: (numpy reference, domain low, domain high)
SMOOTH = {
    "exp": (np.exp, -2, 2), "expm1": (np.expm1, -2, 2), "log": (np.log, 0.2, 3), "log2": (np.log2, 0.2, 3),
    "log10": (np.log10, 0.2, 3), "log1p": (np.log1p, -0.5, 3), "sqrt": (np.sqrt, 0.2, 3),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.2, 3), "cbrt": (np.cbrt, 0.2, 3), "rcbrt": (lambda x: 1 / np.cbrt(x), 0.2, 3),
    "square": (np.square, -2, 2), "reciprocal": (np.reciprocal, 0.5, 3), "sin": (np.sin, -3, 3),
    "cos": (np.cos, -3, 3), "tan": (np.tan, -1, 1), "arcsin": (np.arcsin, -0.9, 0.9),
    "arccos": (np.arccos, -0.9, 0.9), "arctan": (np.arctan, -3, 3), "sinh": (np.sinh, -2, 2),
    "cosh": (np.cosh, -2, 2), "tanh": (np.tanh, -2, 2), "arcsinh": (np.arcsinh, -2, 2),
    "arccosh": (np.arccosh, 1.2, 3), "arctanh": (np.arctanh, -0.9, 0.9), "degrees": (np.degrees, -3, 3),
    "radians": (np.radians, -3, 3), "sigmoid": (lambda x: 1 / (1 + np.exp(-x)), -4, 4),
    "softsign": (lambda x: x / (1 + np.abs(x)), -3, 3), "erf": (erf, -2, 2), "gamma": (gamma, 0.5, 4),
    "gammaln": (lgamma, 0.5, 4), "abs": (np.abs, 0.1, 3), "relu": (lambda x: np.maximum(x, 0), 0.1, 3),
}


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_values_float32(name):
    ref, lo, hi = SMOOTH[name]
    x = rng.uniform(lo, hi, (3, 4)).astype(np.float32)
    out = run(name, [x])
    assert out.dtype == np.float32 and out.shape == x.shape
    np.testing.assert_allclose(out, ref(x.astype(np.float64)), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_gradients(name):
    ref, lo, hi = SMOOTH[name]
    x = rng.uniform(lo, hi, (2, 3))
    check_grad(name, [x], rtol=1e-5, atol=1e-6)


def test_abs_relu_gradients_across_zero():
    x = np.array([-1.5, -0.2, 0.3, 2.0])
    check_grad("abs", [x])
    check_grad("relu", [x])


@pytest.mark.parametrize("name,ref", [("floor", np.floor), ("ceil", np.ceil),
                                      ("rint", lambda x: np.where(x - np.floor(x) <= 0.5, np.floor(x), np.ceil(x))),
                                      ("fix", np.trunc), ("trunc", np.trunc), ("sign", np.sign)])
def test_rounding_values_and_zero_gradient(name, ref):
    x = np.array([-2.5, -1.5, -0.4, 0.0, 0.5, 1.5, 2.7], np.float32)
    np.testing.assert_array_equal(run(name, [x]), ref(x))
    g = grads(name, [x], {}, [np.ones_like(x)])
    assert g[0].shape == x.shape and not g[0].any()


def test_round_is_half_away_from_zero():
    x = np.array([-2.5, -1.5, -0.4, 0.5, 1.5, 2.5], np.float32)
    np.testing.assert_array_equal(run("round", [x]), [-3, -2, -0, 1, 2, 3])


def test_float64_and_float16_keep_dtype():
    for dt in (np.float64, np.float16):
        x = rng.uniform(0.5, 2, (5,)).astype(dt)
        out = run("exp", [x])
        assert out.dtype == dt
        np.testing.assert_allclose(out, np.exp(x.astype(np.float64)), rtol=2e-3 if dt == np.float16 else 1e-12)


def test_backward_op_shape_mismatch():
    with pytest.raises(ShapeError, match=r"_backward_exp.*\(2, 3\).*\(3, 2\)"):
        ops.get("_backward_exp").shapes({}, [(2, 3), (3, 2)])


def test_backward_op_dtype_mismatch():
    with pytest.raises(DTypeError, match="_backward_exp"):
        ops.get("_backward_exp").dtypes({}, [np.dtype("float32"), np.dtype("float64")])


def test_inplace_kernel():
    x = np.linspace(0.1, 1, 6, dtype=np.float32)
    want = np.log(x)
    ops.get("log").kernel("cpu")(ops.OpContext(np), {}, [x], [x], [])
    np.testing.assert_allclose(x, want, rtol=1e-6)


def test_clip():
    x = np.array([-2.0, -0.5, 0.0, 0.7, 3.0])
    np.testing.assert_array_equal(run("clip", [x], {"a_min": -1, "a_max": 1}), np.clip(x, -1, 1))
    check_grad("clip", [x], {"a_min": -1, "a_max": 1})
    xi = np.array([-3, 0, 5], np.int32)
    out = run("clip", [xi], {"a_min": -1.5, "a_max": 2.5})
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, [-1, 0, 2])
    from ember.base import OperatorError
    with pytest.raises(OperatorError, match=r"clip: a_min \(2.0\) must be <= a_max \(1.0\)"):
        run("clip", [x], {"a_min": 2, "a_max": 1})
    with pytest.raises(OperatorError, match="clip: required attribute 'a_min'"):
        ops.get("clip").parse_attrs({"a_max": 1})


def test_logical_not_hard_sigmoid_erfinv_smooth_l1():
    x = np.array([-3.0, -0.5, 0.0, 0.2, 4.0])
    np.testing.assert_array_equal(run("logical_not", [x]), [0, 0, 1, 0, 0])
    np.testing.assert_allclose(run("hard_sigmoid", [x], {"alpha": 0.3}), np.clip(0.3 * x + 0.5, 0, 1))
    check_grad("hard_sigmoid", [np.array([-4.0, -0.5, 0.3, 4.0])], {"alpha": 0.3})
    p = np.array([-0.9, -0.2, 0.3, 0.8])
    np.testing.assert_allclose(erf(run("erfinv", [p])), p, rtol=1e-12)
    check_grad("erfinv", [p])
    s = 2.0
    want = np.where(np.abs(x) < 1 / s ** 2, 0.5 * (s * x) ** 2, np.abs(x) - 0.5 / s ** 2)
    np.testing.assert_allclose(run("smooth_l1", [x], {"scalar": s}), want)
    check_grad("smooth_l1", [np.array([-3.0, -0.1, 0.2, 4.0])], {"scalar": s})
