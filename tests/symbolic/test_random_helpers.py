"""mx.sym.random helpers (numbers -> _random_*, Symbols -> _sample_*), sampling ops whose unknown
shape a graph fills in, and mx.nd.random's short names for the remaining random ops."""
import json

import numpy as np
import pytest

import ember as mx


def _ops(sym):
    return [n["op"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"]


def test_numbers_draw_with_random_ops_and_symbols_with_sample_ops():
    assert _ops(mx.sym.random.normal(1, 2, shape=(3,))) == ["_random_normal"]
    loc, scale = mx.sym.var("loc"), mx.sym.var("scale")
    s = mx.sym.random.normal(loc, scale, shape=(4,))
    assert _ops(s) == ["_sample_normal"]
    ex = s.bind(mx.cpu(), {"loc": mx.nd.array([0.0, 100.0]), "scale": mx.nd.array([1e-3, 1e-3])})
    out = ex.forward()[0].asnumpy()
    assert out.shape == (2, 4)
    np.testing.assert_allclose(out.mean(axis=1), [0.0, 100.0], atol=0.01)
    with pytest.raises(TypeError, match="all be Symbols or all numbers"):
        mx.sym.random.uniform(loc, 1.0)


def test_exponential_scale_is_the_inverse_rate_and_randint_takes_numbers_only():
    mx.random.seed(1)
    ex = mx.sym.random.exponential(scale=4.0, shape=(20000,)).bind(mx.cpu(), {})
    assert abs(ex.forward()[0].asnumpy().mean() - 4.0) < 0.2
    with pytest.raises(TypeError):
        mx.sym.random.randint(mx.sym.var("a"), 3)


def test_randn_without_shape_takes_the_shape_of_what_it_is_added_to():
    x = mx.sym.var("x")
    y = mx.sym.random.randn(loc=5.0, scale=0.01) + x
    assert y.infer_shape(x=(3, 4))[1] == [(3, 4)]
    out = y.bind(mx.cpu(), {"x": mx.nd.zeros((3, 4))}).forward()[0].asnumpy()
    assert out.shape == (3, 4) and abs(out.mean() - 5.0) < 0.05
    with pytest.raises(mx.base.ShapeError):  # imperatively nothing can fill the shape in
        mx.nd._random_normal()


def test_shuffle_and_multinomial_symbols():
    data = mx.sym.var("d")
    out = mx.sym.random.shuffle(data).bind(mx.cpu(), {"d": mx.nd.arange(10)}).forward()[0].asnumpy()
    assert sorted(out.tolist()) == list(range(10))
    probs = mx.nd.array([[0.0, 1.0, 0.0]])
    s, logp = mx.sym.random.multinomial(data)
    got = mx.sym.Group([s, logp]).bind(mx.cpu(), {"d": probs}).forward()
    assert got[0].asnumpy().tolist() == [1]


def test_nd_random_short_names_resolve_to_registry_ops():
    like = mx.nd.random.normal_like(mx.nd.zeros((2, 3)), loc=1.0, scale=0.0)
    np.testing.assert_array_equal(like.asnumpy(), np.ones((2, 3)))
    assert mx.nd.random.uniform_like(mx.nd.zeros((5,))).shape == (5,)
    with pytest.raises(AttributeError, match="no operator 'nope'"):
        mx.nd.random.nope
