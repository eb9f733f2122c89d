"""mx.init: name dispatch, distributions' statistics, reproducibility, errors."""
import json

import numpy as np
import pytest

import ember as mx
from ember import initializer as init
from ember import ndarray as nd


def _seed(s):
    mx.random.seed(s)


def _run(initializer, name, shape, attrs=None):
    arr = nd.zeros(shape) - 7  # a value no rule writes, so untouched entries show
    initializer(init.InitDesc(name, attrs), arr)
    return arr.asnumpy()


def test_name_dispatch():
    u = init.Uniform(0.5)
    assert np.all(_run(u, "fc_bias", (3,)) == 0)
    assert np.all(_run(u, "bn_gamma", (3,)) == 1)
    assert np.all(_run(u, "bn_beta", (3,)) == 0)
    assert np.all(_run(u, "bn_moving_mean", (3,)) == 0)
    assert np.all(_run(u, "bn_moving_var", (3,)) == 1)
    assert np.all(_run(u, "bn_running_var", (3,)) == 1)
    w = _run(u, "fc_weight", (50, 40))
    assert np.all(np.abs(w) <= 0.5) and w.std() > 0.2
    with pytest.raises(init.InitializerError, match="unknown initialization pattern for 'foo'"):
        _run(u, "foo", (2,))


def test_init_attribute_overrides_name():
    got = _run(init.Uniform(), "fc_bias", (2, 2), {"__init__": init.Constant(3.0).dumps()})
    assert np.all(got == 3.0)
    got = _run(init.Uniform(), "fc_weight", (2, 2), {"__init__": "one"})
    assert np.all(got == 1.0)


def test_uniform_normal_statistics():
    _seed(11)
    u = _run(init.Uniform(0.2), "w_weight", (200, 100))
    assert u.min() >= -0.2 and u.max() <= 0.2
    assert abs(u.mean()) < 0.005 and u.std() == pytest.approx(0.2 / np.sqrt(3), rel=0.03)
    n = _run(init.Normal(0.3), "w_weight", (200, 100))
    assert abs(n.mean()) < 0.01 and n.std() == pytest.approx(0.3, rel=0.03)


@pytest.mark.parametrize("rnd_type, factor_type, magnitude", [
    ("uniform", "avg", 3), ("gaussian", "in", 2), ("uniform", "out", 6)])
def test_xavier_scale(rnd_type, factor_type, magnitude):
    shape = (64, 32, 3, 3)
    w = _run(init.Xavier(rnd_type, factor_type, magnitude), "conv_weight", shape)
    fan_in, fan_out = 32 * 9, 64 * 9
    factor = {"avg": (fan_in + fan_out) / 2, "in": fan_in, "out": fan_out}[factor_type]
    scale = np.sqrt(magnitude / factor)
    want_std = scale / np.sqrt(3) if rnd_type == "uniform" else scale
    assert w.std() == pytest.approx(want_std, rel=0.03)
    if rnd_type == "uniform":
        assert np.abs(w).max() <= scale


def test_msra_prelu():
    w = _run(init.MSRAPrelu(factor_type="in", slope=0.0), "fc_weight", (256, 200))
    assert w.std() == pytest.approx(np.sqrt(2.0 / 200), rel=0.03)
    assert json.loads(init.MSRAPrelu().dumps()) == ["msraprelu", {"factor_type": "avg", "slope": 0.25}]


def test_constant_zero_one():
    assert np.all(_run(init.Zero(), "a_weight", (2, 3)) == 0)
    assert np.all(_run(init.One(), "a_weight", (2, 3)) == 1)
    got = _run(init.Constant(np.array([1.0, 2.0, 3.0])), "a_weight", (2, 3))
    np.testing.assert_array_equal(got, [[1, 2, 3], [1, 2, 3]])
    assert json.loads(init.Constant(np.array([1.0, 2.0])).dumps()) == ["constant", {"value": [1.0, 2.0]}]


def test_seed_reproducible():
    _seed(3)
    a = _run(init.Xavier(), "fc_weight", (20, 10))
    _seed(3)
    b = _run(init.Xavier(), "fc_weight", (20, 10))
    c = _run(init.Xavier(), "fc_weight", (20, 10))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


def test_mixed_and_load():
    mixed = init.Mixed(["^conv", ".*"], [init.One(), init.Zero()])
    a = nd.zeros((2,)) - 1
    mixed("conv1_weight", a)
    b = nd.zeros((2,)) - 1
    mixed("fc_weight", b)
    assert a.asnumpy().tolist() == [1, 1] and b.asnumpy().tolist() == [0, 0]
    with pytest.raises(init.InitializerError, match="did not match any pattern"):
        init.Mixed(["^conv"], [init.One()])("fc_weight", b)
    with pytest.raises(ValueError, match="2 patterns but 1"):
        init.Mixed(["a", "b"], [init.One()])
    load = init.Load({"arg:fc_weight": nd.array([[5.0, 6.0]])}, default_init=init.One())
    w = nd.zeros((1, 2))
    load("fc_weight", w)
    assert w.asnumpy().tolist() == [[5, 6]]
    bias = nd.zeros((3,))
    load("fc_bias", bias)
    assert bias.asnumpy().tolist() == [0, 0, 0]  # One() still follows the name rule for biases
    with pytest.raises(init.InitializerError, match="shape mismatch"):
        load("fc_weight", nd.zeros((2, 2)))


def test_create_and_errors():
    assert isinstance(init.create("xavier", magnitude=2), init.Xavier)
    assert init.create('["normal", {"sigma": 0.5}]') == init.Normal(0.5)
    assert isinstance(init.create("zeros"), init.Zero)
    with pytest.raises(init.InitializerError, match="cannot find initializer 'glorot'"):
        init.create("glorot")
    with pytest.raises(init.InitializerError, match="cannot parse"):
        init.create("[broken")
    with pytest.raises(ValueError, match="rnd_type"):
        init.Xavier(rnd_type="laplace")
    with pytest.raises(ValueError, match="factor_type"):
        init.Xavier(factor_type="sum")
    with pytest.raises(init.InitializerError, match="at least 2-D"):
        _run(init.Xavier(), "v_weight", (5,))
    with pytest.raises(TypeError, match="must be an NDArray"):
        init.One()("a_weight", np.zeros(2))


def test_constant_dumps_array_values_round_trip():
    import json
    import ember as mx
    for value in (mx.nd.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])):
        init = mx.init.Constant(value)
        text = init.dumps()
        # the config itself holds the nested list afterwards (MXNet's behaviour), so it serializes
        assert text == json.dumps(["constant", init._kwargs])
        assert json.loads(text) == ["constant", {"value": [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]}]
        arr = mx.nd.zeros((2, 3))
        mx.init.create(text)("w_weight", arr)
        np.testing.assert_array_equal(arr.asnumpy(), [[1, 2, 3], [4, 5, 6]])
    assert mx.init.Constant(1).dumps() == '["constant", {"value": 1}]'


def test_bilinear_kernel():
    import ember as mx
    w = mx.nd.empty((2, 3, 4, 4))
    mx.init.Bilinear()._init_weight("up_weight", w)
    k = np.array([0.25, 0.75, 0.75, 0.25])
    np.testing.assert_allclose(w.asnumpy(), np.broadcast_to(np.outer(k, k), (2, 3, 4, 4)))
    w3 = mx.nd.empty((1, 1, 3, 3))  # odd size: f = 2, c = 0.75
    mx.init.create("bilinear")._init_weight("up_weight", w3)
    k3 = 1 - np.abs(np.arange(3) / 2.0 - 0.75)
    np.testing.assert_allclose(w3.asnumpy()[0, 0], np.outer(k3, k3))
    with pytest.raises(mx.init.InitializerError, match="4-D"):
        mx.init.Bilinear()._init_weight("w", mx.nd.empty((3, 3)))


def test_prelu_gamma_starts_at_a_quarter():
    # MXNet gives prelu's gamma variable '__init__' Constant(0.25) when composed, unless it has an init
    data = mx.sym.Variable("data")
    with mx.name.NameManager():  # automatic names counted from 0 whatever ran before
        net = mx.sym.LeakyReLU(data=data, act_type="prelu")
    assert json.loads(net.attr_dict()["leakyrelu0_gamma"]["__init__"]) == ["Constant", {"value": 0.25}]
    mod = mx.mod.Module(net, label_names=None)
    mod.bind(data_shapes=[("data", (4, 6))])
    mod.init_params(initializer=mx.init.Xavier())
    np.testing.assert_array_equal(mod.get_params()[0]["leakyrelu0_gamma"].asnumpy(), np.full(6, 0.25))
    # a variable with its own init keeps it; a plain variable gets the 0.25 default too
    own = mx.sym.LeakyReLU(data=data, gamma=mx.sym.Variable("g1", init=mx.init.One()), act_type="prelu")
    assert own.attr_dict()["g1"]["__init__"] == mx.init.One().dumps()
    plain = mx.sym.LeakyReLU(data=data, gamma=mx.sym.Variable("g2"), act_type="prelu")
    assert "0.25" in plain.attr_dict()["g2"]["__init__"]
    # BatchNorm's gamma (same name suffix) still starts at one; the attribute survives JSON
    bn = mx.sym.BatchNorm(data, name="bn")
    assert "__init__" not in bn.attr_dict().get("bn_gamma", {})
    again = mx.sym.load_json(net.tojson())
    assert again.attr_dict()["leakyrelu0_gamma"]["__init__"] == net.attr_dict()["leakyrelu0_gamma"]["__init__"]
