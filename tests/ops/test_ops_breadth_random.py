"""Negative binomial samplers (moments) and the pdf operators (scipy references, finite differences)."""
import numpy as np
import pytest

import ember as mx
from ember.base import OperatorError

from ._gradcheck import check_grad, run

stats = pytest.importorskip("scipy.stats")


def test_negative_binomial_moments():
    x = run("_random_negative_binomial", [], {"k": 3, "p": 0.4, "shape": (20000,)}, seed=1)
    assert x.dtype == np.float32
    mean, var = 3 * 0.6 / 0.4, 3 * 0.6 / 0.4 ** 2
    assert abs(x.mean() - mean) < 0.1 and abs(x.var() - var) / var < 0.08
    with pytest.raises(OperatorError):
        run("_random_negative_binomial", [], {"k": 3, "p": 1.5, "shape": (2,)})


def test_generalized_negative_binomial_moments_and_poisson_limit():
    x = run("_random_generalized_negative_binomial", [], {"mu": 2.0, "alpha": 0.5, "shape": (20000,)}, seed=2)
    assert abs(x.mean() - 2.0) < 0.08 and abs(x.var() - (2.0 + 0.5 * 4.0)) / 4.0 < 0.08
    y = run("_random_generalized_negative_binomial", [], {"mu": 2.0, "alpha": 0.0, "shape": (20000,)}, seed=3)
    assert abs(y.var() - 2.0) / 2.0 < 0.08


def test_sample_negative_binomial_per_element_parameters():
    k = np.array([1.0, 5.0])
    p = np.array([0.5, 0.8])
    x = run("_sample_negative_binomial", [k, p], {"shape": (8000,)}, seed=4)
    assert x.shape == (2, 8000)
    np.testing.assert_allclose(x.mean(axis=1), k * (1 - p) / p, rtol=0.08)
    g = run("_sample_generalized_negative_binomial", [np.array([1.0, 4.0]), np.array([0.2, 0.0])],
            {"shape": (8000,)}, seed=5)
    np.testing.assert_allclose(g.mean(axis=1), [1.0, 4.0], rtol=0.08)


def test_nd_random_helpers():
    assert mx.nd.random.negative_binomial(k=2, p=0.5, shape=(3, 4)).shape == (3, 4)
    out = mx.nd.random.generalized_negative_binomial(mx.nd.array([1.0, 2.0]), mx.nd.array([0.1, 0.1]), shape=5)
    assert out.shape == (2, 5)
    assert mx.sym.random.negative_binomial(k=2, p=0.5, shape=(2,)).infer_shape()[1] == [(2,)]


PDF_CASES = [
    ("normal", [np.array([[0.3, -1.0, 2.0], [0.1, 0.5, -0.4]]), np.array([0.2, -0.1]), np.array([1.3, 0.7])],
     lambda x, mu, s: stats.norm.pdf(x, mu[:, None], s[:, None])),
    ("gamma", [np.array([[0.3, 1.0, 2.0], [0.5, 1.5, 0.4]]), np.array([2.0, 3.5]), np.array([1.3, 0.7])],
     lambda x, a, b: stats.gamma.pdf(x, a[:, None], scale=1 / b[:, None])),
    ("exponential", [np.array([[0.3, 1.0], [0.5, 2.0]]), np.array([1.5, 0.5])],
     lambda x, lam: stats.expon.pdf(x, scale=1 / lam[:, None])),
    ("poisson", [np.array([[0.0, 1.0, 4.0], [2.0, 3.0, 5.0]]), np.array([1.5, 3.0])],
     lambda x, lam: stats.poisson.pmf(x, lam[:, None])),
    ("negative_binomial", [np.array([[1.0, 3.0], [0.0, 2.0]]), np.array([2.0, 3.0]), np.array([0.4, 0.7])],
     lambda x, k, p: stats.nbinom.pmf(x, k[:, None], p[:, None])),
    ("generalized_negative_binomial", [np.array([[1.0, 3.0], [0.0, 2.0]]), np.array([2.0, 0.7]),
                                       np.array([0.5, 1.5])],
     lambda x, mu, a: stats.nbinom.pmf(x, 1 / a[:, None], 1 / (1 + a[:, None] * mu[:, None]))),
]


@pytest.mark.parametrize("dist,inputs,ref", PDF_CASES, ids=[c[0] for c in PDF_CASES])
def test_pdf_against_scipy_and_finite_differences(dist, inputs, ref):
    op = f"_random_pdf_{dist}"
    np.testing.assert_allclose(run(op, inputs), ref(*inputs), rtol=1e-10)
    np.testing.assert_allclose(run(op, inputs, {"is_log": True}), np.log(ref(*inputs)), rtol=1e-10)
    discrete = dist in ("poisson", "negative_binomial", "generalized_negative_binomial")
    wrt = list(range(1, len(inputs))) if discrete else None
    check_grad(op, inputs, wrt=wrt, rtol=1e-5, atol=1e-8)
    check_grad(op, inputs, {"is_log": True}, wrt=wrt, rtol=1e-5, atol=1e-8)


def test_pdf_shapes():
    s = mx.sym.random_pdf_normal(mx.sym.var("x"), mx.sym.var("mu"), mx.sym.var("sigma"))
    assert s.infer_shape(x=(2, 3, 4), mu=(2, 3))[0] == [(2, 3, 4), (2, 3), (2, 3)]
    with pytest.raises(Exception):
        s.infer_shape(x=(2, 3, 4), mu=(3, 3))


def test_pdf_dirichlet_against_scipy_and_finite_differences():
    alpha = np.array([[1.5, 2.0, 3.0], [0.7, 1.2, 2.2]])
    x = np.array([[[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]], [[0.3, 0.3, 0.4], [0.05, 0.15, 0.8]]])
    out = run("_random_pdf_dirichlet", [x, alpha], {"is_log": True})
    assert out.shape == (2, 2)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(out[i, j], stats.dirichlet.logpdf(x[i, j], alpha[i]), rtol=1e-10)
    check_grad("_random_pdf_dirichlet", [x, alpha], rtol=1e-5, atol=1e-8)
    check_grad("_random_pdf_dirichlet", [x, alpha], {"is_log": True}, rtol=1e-5, atol=1e-8)
    s = mx.sym.random_pdf_dirichlet(mx.sym.var("x"), mx.sym.var("a"))
    assert s.infer_shape(x=(2, 5, 3), a=(2, 3))[1] == [(2, 5)]
    with pytest.raises(Exception):
        s.infer_shape(x=(2, 5, 4), a=(2, 3))
