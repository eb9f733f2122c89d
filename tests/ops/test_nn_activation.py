"""Activation and LeakyReLU: numpy references, gradients by finite differences, in-place, errors."""
import math
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import NumpyF, check_grad, run_op  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402

rng = np.random.default_rng(4)
X = rng.standard_normal((3, 4)) * 2

REF = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "softrelu": lambda x: np.log1p(np.exp(x)),
    "softsign": lambda x: x / (1 + np.abs(x)),
}


@pytest.mark.parametrize("act", sorted(REF))
def test_activation_forward_and_gradient(act):
    np.testing.assert_allclose(run_op("Activation", [X], {"act_type": act})[0], REF[act](X), rtol=1e-12)
    check_grad("Activation", [X], {"act_type": act})


def test_activation_kernel_may_write_over_its_input():
    op = ops.get("Activation")
    x = X.copy()
    op.kernel("cpu")(ops.OpContext(np), op.parse_attrs({"act_type": "tanh"}), [x], [x], [])
    np.testing.assert_allclose(x, np.tanh(X))


def test_activation_extreme_inputs_stay_finite():
    x = np.array([-1000.0, 1000.0], np.float32)
    for act in ("sigmoid", "softrelu"):
        assert np.all(np.isfinite(run_op("Activation", [x], {"act_type": act})[0])), act


LEAKY = {
    "leaky": (dict(slope=0.1), lambda x: np.where(x > 0, x, 0.1 * x)),
    "elu": (dict(slope=0.7), lambda x: np.where(x > 0, x, 0.7 * np.expm1(x))),
    "selu": ({}, lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))),
    "gelu": ({}, lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
}


@pytest.mark.parametrize("act", sorted(LEAKY))
def test_leaky_forward_and_gradient(act):
    extra, ref = LEAKY[act]
    attrs = dict(act_type=act, **extra)
    np.testing.assert_allclose(run_op("LeakyReLU", [X], attrs)[0], ref(X), rtol=1e-7, atol=1e-12)
    check_grad("LeakyReLU", [X], attrs)


@pytest.mark.parametrize("gamma_shape", [(4,), (1,)])
def test_prelu(gamma_shape):
    x = rng.standard_normal((2, 4, 3))
    gamma = rng.uniform(0.1, 0.5, gamma_shape)
    out = run_op("LeakyReLU", [x, gamma], {"act_type": "prelu"})[0]
    np.testing.assert_allclose(out, np.where(x > 0, x, x * gamma.reshape(1, -1, 1)), rtol=1e-12)
    check_grad("LeakyReLU", [x, gamma], {"act_type": "prelu"})


def test_prelu_gamma_shape_inferred_and_checked():
    op = ops.get("LeakyReLU")
    a = op.parse_attrs({"act_type": "prelu"})
    assert op.input_names(a) == ["data", "gamma"]
    assert op.shapes(a, [(2, 5, 3), None])[0][1] == (5,)
    with pytest.raises(ShapeError, match="LeakyReLU: prelu gamma"):
        op.shapes(a, [(2, 5, 3), (3,)])


def test_rrelu_training_draws_slopes_and_inference_uses_mean():
    x = -np.abs(rng.standard_normal((50, 40))) - 0.1
    out, mask = run_op("LeakyReLU", [x], {"act_type": "rrelu"}, is_train=True, seed=3)
    slopes = out / x
    assert slopes.min() >= 0.125 and slopes.max() <= 0.334 and slopes.std() > 0.03
    np.testing.assert_allclose(mask, slopes, rtol=1e-12)
    again = run_op("LeakyReLU", [x], {"act_type": "rrelu"}, is_train=True, seed=3)[0]
    np.testing.assert_array_equal(out, again)  # same RNG stream, same draw
    out_eval = run_op("LeakyReLU", [x], {"act_type": "rrelu"})[0]
    np.testing.assert_allclose(out_eval, x * (0.125 + 0.334) / 2, rtol=1e-12)
    check_grad("LeakyReLU", [x[:3, :3]], {"act_type": "rrelu"}, is_train=True)
    check_grad("LeakyReLU", [x[:3, :3]], {"act_type": "rrelu"}, is_train=False)


def test_bad_act_type():
    with pytest.raises(OperatorError, match="act_type"):
        ops.get("Activation").parse_attrs({"act_type": "mish"})  # not in MXNet 1.9.1
    with pytest.raises(OperatorError, match="act_type"):
        ops.get("LeakyReLU").parse_attrs({"act_type": "relu6"})
    with pytest.raises(OperatorError, match="Activation: floating point"):
        ops.get("Activation").dtypes(ops.get("Activation").parse_attrs({"act_type": "relu"}), [np.dtype("int32")])


@pytest.mark.parametrize("op,attrs", [("Activation", {"act_type": a}) for a in sorted(REF)] +
                         [("LeakyReLU", {"act_type": a}) for a in ("leaky", "elu", "selu")])
def test_in_place_forward_then_gradient_from_output(op, attrs):
    # the planner may run the forward in place (inplace=[(0, 0)]): the gradient must then need only the output
    opdef = ops.get(op)
    a = opdef.parse_attrs(attrs)
    assert (0, 0) in opdef.inplace
    buf = X.copy()
    opdef.kernel("cpu")(ops.OpContext(np), a, [buf], [buf], [])
    head = np.random.default_rng(0).standard_normal(X.shape)
    # X is overwritten: the backward op receives only (head, output)
    grads = opdef.gradient(NumpyF(), a, [np.full_like(X, np.nan)], [buf], [head])
    eps = 1e-6
    num = (run_op(op, [X + eps], attrs)[0] - run_op(op, [X - eps], attrs)[0]) / (2 * eps) * head
    np.testing.assert_allclose(grads[0], num, rtol=1e-5, atol=1e-7)


def test_leaky_negative_slope_reads_the_input():
    op = ops.get("_backward_LeakyReLU")
    assert op.input_names(op.parse_attrs({"act_type": "leaky", "slope": -0.5}))[1] == "data"
    assert op.input_names(op.parse_attrs({"act_type": "leaky", "slope": 0.5}))[1] == "output"
    check_grad("LeakyReLU", [X], {"act_type": "leaky", "slope": -0.5})
    check_grad("LeakyReLU", [X], {"act_type": "elu", "slope": -0.5})
