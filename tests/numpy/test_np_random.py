"""mx.np.random / mx.npx.random distributions (ember/ops/np_random.py): shapes, moments with fixed seeds,
reparameterized gradients against finite differences, parameter errors, graphs and hybridized blocks."""
import numpy as onp
import pytest

import ember as mx
from ember import autograd, np, npx
from ember.gluon import HybridBlock


pytestmark = pytest.mark.usefixtures("np_semantics")


N = 200000


@pytest.mark.parametrize("name,args,mean,var", [
    ("uniform", (-1.0, 3.0), 1.0, 16 / 12),
    ("normal", (2.0, 3.0), 2.0, 9.0),
    ("logistic", (1.0, 2.0), 1.0, onp.pi ** 2 * 4 / 3),
    ("gumbel", (1.0, 2.0), 1.0 + 2.0 * onp.euler_gamma, onp.pi ** 2 * 4 / 6),
    ("laplace", (1.0, 2.0), 1.0, 8.0),
    ("exponential", (2.0,), 2.0, 4.0),
    ("rayleigh", (2.0,), 2.0 * onp.sqrt(onp.pi / 2), (4 - onp.pi) / 2 * 4),
    ("weibull", (2.0,), 0.886227, 1 - 0.886227 ** 2),
    ("pareto", (5.0,), 1 / 4, 5 / (16 * 3)),
    ("power", (3.0,), 3 / 4, 3 / (16 * 5)),
    ("gamma", (3.0, 2.0), 6.0, 12.0),
    ("lognormal", (0.0, 0.5), onp.exp(0.125), (onp.exp(0.25) - 1) * onp.exp(0.25)),
    ("chisquare", (3.0,), 3.0, 6.0),
    ("beta", (2.0, 3.0), 0.4, 6 / (25 * 6)),
])
def test_moments(name, args, mean, var):
    mx.random.seed(7)
    x = getattr(np.random, name)(*args, size=(N,)).asnumpy().astype(onp.float64)
    assert x.shape == (N,)
    assert abs(x.mean() - mean) < 5 * onp.sqrt(var / N) + 1e-3
    assert abs(x.var() - var) / var < 0.05


def test_shapes_and_dtypes():
    assert np.random.normal().shape == ()
    assert np.random.uniform(size=6).shape == (6,)
    assert np.random.gamma(1, size=(4, 0, 5)).shape == (4, 0, 5)
    assert np.random.normal(size=(), dtype="float16").dtype == onp.float16
    assert np.random.exponential(np.ones((2, 3))).shape == (2, 3)
    assert np.random.normal(np.zeros((3, 1)), np.ones((4,))).shape == (3, 4)
    assert np.random.normal(np.zeros((3, 1)), 1.0, size=(2, 3, 5)).shape == (2, 3, 5)
    assert np.random.beta(1, 1, size=(2, 3), dtype="float64").dtype == onp.float64
    with pytest.raises(ValueError):
        np.random.normal(np.zeros((3,)), 1.0, size=(4,)).asnumpy()  # does not broadcast to size


def test_seed_reproducible():
    for seed in (1, 99):
        npx.random.seed(seed)
        a = np.random.uniform(size=(2, 3)).asnumpy()
        npx.random.seed(seed)
        b = np.random.uniform(size=(2, 3)).asnumpy()
        onp.testing.assert_array_equal(a, b)
    npx.random.seed(1)
    c = np.random.uniform(size=(2, 3)).asnumpy()
    assert not onp.array_equal(a, c)


@pytest.mark.parametrize("call", [
    lambda: np.random.exponential(-1), lambda: np.random.normal(0, -1), lambda: np.random.gamma(0, 1),
    lambda: np.random.gamma(1, 0), lambda: np.random.weibull(0), lambda: np.random.pareto(-1),
    lambda: np.random.power(0), lambda: np.random.rayleigh(-1), lambda: np.random.lognormal(sigma=-1),
    lambda: np.random.gamma(np.array(1), np.array(-1.0)), lambda: np.random.gamma(np.array(0), 1),
    lambda: np.random.weibull(np.array([1.0, -1.0])),
    lambda: npx.random.bernoulli(prob=np.array([0.5, 1.5])), lambda: npx.random.bernoulli(0.5, 0.1),
])
def test_parameter_errors(call):
    with pytest.raises(ValueError):
        call().asnumpy()


# x = f(params, noise): re-seeding gives the same noise, so finite differences in a parameter are exact
@pytest.mark.parametrize("name,params", [
    ("uniform", {"low": 0.5, "high": 2.0}), ("normal", {"loc": 0.3, "scale": 1.5}),
    ("logistic", {"loc": 0.3, "scale": 1.5}), ("gumbel", {"loc": 0.3, "scale": 1.5}),
    ("laplace", {"loc": 0.3, "scale": 1.5}), ("exponential", {"scale": 1.5}), ("rayleigh", {"scale": 1.5}),
    ("weibull", {"a": 1.7}), ("pareto", {"a": 2.5}), ("power", {"a": 1.7}), ("lognormal", {"mean": 0.1, "sigma": 0.5}),
])
def test_gradients_finite_differences(name, params):
    shape = (3, 4)
    fn = getattr(np.random, name)
    base = {k: onp.full((4,), v) + 0.1 * onp.arange(4) for k, v in params.items()}
    arrays = {k: np.array(v, dtype="float64") for k, v in base.items()}
    for a in arrays.values():
        a.attach_grad()
    w = onp.random.RandomState(0).uniform(0.5, 1.5, shape)
    mx.random.seed(3)
    with autograd.record():
        out = fn(**arrays, size=shape)
        loss = (out * np.array(w, dtype=out.dtype)).sum()
    loss.backward()
    for k in base:
        num = onp.zeros(4)
        for i in range(4):
            vals = []
            for h in (1e-3, -1e-3):
                p = {kk: vv.copy() for kk, vv in base.items()}
                p[k][i] += h
                mx.random.seed(3)
                vals.append((fn(**{kk: np.array(vv, dtype="float64") for kk, vv in p.items()},
                                size=shape).asnumpy().astype(onp.float64) * w).sum())
            num[i] = (vals[0] - vals[1]) / 2e-3
        onp.testing.assert_allclose(arrays[k].grad.asnumpy(), num, rtol=2e-3, atol=1e-3)


def test_gamma_gradients():
    """scale: g = out / scale; shape: implicit reparameterization d g / d alpha at a fixed CDF value."""
    from scipy.special import gammainc, gammaincinv
    alpha = np.array([0.7, 2.0, 5.0], dtype="float64")
    scale = np.array([2.0, 2.0, 2.0], dtype="float64")
    alpha.attach_grad()
    scale.attach_grad()
    mx.random.seed(5)
    with autograd.record():
        out = np.random.gamma(alpha, scale, size=(2000, 3))
    out.backward()
    g = out.asnumpy() / 2.0
    onp.testing.assert_allclose(scale.grad.asnumpy(), g.sum(axis=0), rtol=1e-5)
    a = alpha.asnumpy()
    q = gammainc(a, g)
    dg = (gammaincinv(a + 1e-6, q) - gammaincinv(a - 1e-6, q)) / 2e-6
    onp.testing.assert_allclose(alpha.grad.asnumpy(), (2.0 * dg).sum(axis=0), rtol=1e-3)


def test_sample_n_and_bernoulli():
    assert npx.random.normal_n(np.zeros((2,)), np.ones((2,)), batch_shape=(10, 3)).shape == (10, 3, 2)
    assert npx.random.uniform_n(batch_shape=4).shape == (4,)
    loc = np.zeros((2,))
    loc.attach_grad()
    with autograd.record():
        y = npx.random.normal_n(loc, 1.0, batch_shape=(5,))
    y.backward()
    onp.testing.assert_allclose(loc.grad.asnumpy(), [5.0, 5.0])
    mx.random.seed(0)
    b = npx.random.bernoulli(prob=0.3, size=(N,)).asnumpy()
    assert set(onp.unique(b)) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.01
    b = npx.random.bernoulli(logit=np.array([-30.0, 30.0]), dtype="int32").asnumpy()
    onp.testing.assert_array_equal(b, [0, 1])


def test_multivariate_normal():
    mx.random.seed(11)
    mean = onp.array([1.0, -2.0])
    cov = onp.array([[2.0, 0.6], [0.6, 1.0]])
    x = np.random.multivariate_normal(np.array(mean), np.array(cov), size=N).asnumpy()
    assert x.shape == (N, 2)
    onp.testing.assert_allclose(x.mean(axis=0), mean, atol=0.02)
    onp.testing.assert_allclose(onp.cov(x.T), cov, atol=0.03)
    assert np.random.multivariate_normal(np.zeros((3, 2)), np.ones((4, 3, 2, 2)) * onp.eye(2), (5,)).shape == (5, 4, 3, 2)


def test_symbolic_graph_from_shapeless_variables():
    loc, scale = mx.sym.Variable("loc"), mx.sym.Variable("scale")
    y = mx.sym._npi_normal(loc, scale, loc=None, scale=None, size=(5, 3))
    _, out_shapes, _ = y.infer_shape(loc=(3,), scale=(1,))
    assert out_shapes == [(5, 3)]
    _, out_shapes, _ = mx.sym._npi_exponential(scale, scale=None).infer_shape(scale=(2, 4))
    assert out_shapes == [(2, 4)]


class _Net(HybridBlock):
    def __init__(self, name, size):
        super().__init__()
        self._op, self._size = name, size

    def hybrid_forward(self, F, x, scale):
        return x + getattr(F.np.random, self._op)(scale=scale, size=self._size) + F.np.random.uniform(size=self._size)


@pytest.mark.parametrize("op", ["exponential", "rayleigh", "normal"])
def test_hybridized_matches_imperative_gradient(op):
    for hybridize in (False, True):
        net = _Net(op, (3, 2))
        if hybridize:
            net.hybridize()
        x, scale = np.zeros((3, 2)), np.ones((2,)) * 2
        scale.attach_grad()
        mx.random.seed(4)
        with autograd.record():
            y = net(x, scale)
        y.backward()
        mx.random.seed(4)
        ref = getattr(np.random, op)(scale=np.ones((2,)) * 2, size=(3, 2)).asnumpy()
        # the sample divided by scale is d sample / d scale (normal: the noise, with loc 0)
        onp.testing.assert_allclose(scale.grad.asnumpy(), (ref / 2).sum(axis=0), rtol=1e-5, atol=1e-6)


def test_choice_traced():
    class Pick(HybridBlock):
        def hybrid_forward(self, F, a, p):
            return F.np.random.choice(a, 3, False, p)
    net = Pick()
    net.hybridize()
    out = net(np.arange(6), np.array([0.1, 0.1, 0.2, 0.2, 0.2, 0.2])).asnumpy()
    assert out.shape == (3,) and len(set(out.tolist())) == 3


def test_constraint_check():
    assert bool(npx.constraint_check(np.ones((2, 3), dtype="bool"), "bad"))
    with pytest.raises(ValueError, match="bad"):
        npx.constraint_check(np.array([True, False]), "bad").asnumpy()
