"""Random ops: shapes, dtypes, ranges, moments, reproducibility through ctx.rng, errors."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import grads, run  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402


def test_uniform_range_moments_and_reproducible():
    out = run("_random_uniform", [], {"low": -2, "high": 3, "shape": (200, 50)}, seed=4)
    assert out.dtype == np.float32 and out.shape == (200, 50)
    assert out.min() >= -2 and out.max() < 3
    assert abs(out.mean() - 0.5) < 0.05 and abs(out.var() - 25 / 12) < 0.1
    again = run("_random_uniform", [], {"low": -2, "high": 3, "shape": (200, 50)}, seed=4)
    np.testing.assert_array_equal(out, again)
    other = run("_random_uniform", [], {"low": -2, "high": 3, "shape": (200, 50)}, seed=5)
    assert not np.array_equal(out, other)


def test_normal_moments_and_dtype():
    out = run("_random_normal", [], {"loc": 1.5, "scale": 2.0, "shape": (20000,), "dtype": "float64"})
    assert out.dtype == np.float64
    assert abs(out.mean() - 1.5) < 0.06 and abs(out.std() - 2.0) < 0.06
    assert run("normal", [], {"shape": (3,), "dtype": "float16"}).dtype == np.float16


def test_randint():
    out = run("_random_randint", [], {"low": -3, "high": 4, "shape": (5000,)})
    assert out.dtype == np.int32
    assert set(np.unique(out)) == set(range(-3, 4))
    assert run("_random_randint", [], {"low": 0, "high": 2, "shape": (2,), "dtype": "int64"}).dtype == np.int64


def test_other_distributions():
    e = run("_random_exponential", [], {"lam": 4.0, "shape": (20000,)})
    assert e.min() >= 0 and abs(e.mean() - 0.25) < 0.01
    g = run("_random_gamma", [], {"alpha": 2.0, "beta": 3.0, "shape": (20000,)})
    assert abs(g.mean() - 6.0) < 0.15
    p = run("_random_poisson", [], {"lam": 3.0, "shape": (20000,)})
    assert np.all(p == np.round(p)) and abs(p.mean() - 3.0) < 0.06


def test_like_ops_take_data_shape_and_dtype():
    x = np.zeros((3, 4), np.float64)
    out = run("_random_uniform_like", [x], {"low": 5, "high": 6})
    assert out.shape == (3, 4) and out.dtype == np.float64 and out.min() >= 5
    assert run("_random_normal_like", [x]).shape == (3, 4)


def test_shuffle_permutes_rows():
    x = np.arange(20).reshape(10, 2).astype(np.float32)
    out = run("_shuffle", [x], seed=1)
    assert not np.array_equal(out, x)
    np.testing.assert_array_equal(np.sort(out[:, 0]), x[:, 0])
    np.testing.assert_array_equal(out[:, 1] - out[:, 0], np.ones(10))


def test_declares_rng_and_errors():
    assert ops.get("_random_uniform").resources == ("rng",)
    k = ops.get("_random_uniform").kernel("cpu")
    with pytest.raises(OperatorError, match="_random_uniform: no random generator"):
        k(ops.OpContext(np), ops.get("_random_uniform").parse_attrs({"shape": (2,)}), [], [np.zeros(2, np.float32)], [])
    with pytest.raises(OperatorError, match="low .* must be <= high"):
        run("_random_uniform", [], {"low": 2, "high": 1, "shape": (2,)})
    with pytest.raises(OperatorError, match="_random_normal: invalid value 'int8' for attribute 'dtype'"):
        ops.get("_random_normal").parse_attrs({"dtype": "int8"})
    with pytest.raises(OperatorError, match="_random_randint: required attribute 'low'"):
        ops.get("_random_randint").parse_attrs({"high": 3})


def test_sample_ops_use_per_element_parameters():
    low = np.array([0.0, 10.0], np.float32)
    out = run("sample_uniform", [low, low + 1], {"shape": (500,)})
    assert out.shape == (2, 500) and out.dtype == np.float32
    assert out[0].min() >= 0 and out[0].max() < 1 and out[1].min() >= 10 and out[1].max() < 11
    n = run("_sample_normal", [np.array([0.0, 5.0]), np.array([1.0, 0.1])], {"shape": (4000,)})
    assert n.dtype == np.float64 and abs(n[1].mean() - 5) < 0.01 and abs(n[0].std() - 1) < 0.05
    assert run("sample_poisson", [np.array([2.0])], {"shape": (3,)}).shape == (1, 3)
    with pytest.raises(ShapeError, match="_sample_uniform: parameter arrays must have one shape"):
        ops.get("_sample_uniform").shapes(ops.get("_sample_uniform").parse_attrs({}), [(2,), (3,)])


def test_sample_multinomial():
    p = np.array([[0.0, 1.0, 0.0], [0.5, 0.5, 0.0]], np.float32)
    out = run("sample_multinomial", [p], {"shape": (1000,)})
    assert out.shape == (2, 1000) and out.dtype == np.int32
    assert (out[0] == 1).all() and set(np.unique(out[1])) == {0, 1} and abs(out[1].mean() - 0.5) < 0.05
    s, logp = run("sample_multinomial", [np.array([0.0, 1.0, 0.0], np.float32)], {"get_prob": True})
    assert s.shape == (1,) and s[0] == 1 and logp[0] == 0
    q = np.array([[0.2, 0.3, 0.5]])
    s, _ = run("sample_multinomial", [q], {"shape": (4,), "get_prob": True})  # grads() draws with seed 0 too
    g = grads("sample_multinomial", [q], {"shape": (4,), "get_prob": True}, [np.zeros((1, 4)), np.ones((1, 4))])
    want = np.zeros(3)
    for k in s[0]:
        want[k] += 1 / q[0, k]
    np.testing.assert_allclose(g[0][0], want)
