"""Gradients read only what they need (item: memory planning), and still match finite differences.

A backward op that reads a forward input keeps it alive until backward in a symbolic plan.
These tests pin down which arrays each gradient reads: unary ops read the output or the
input (never both where the maths allows), elemwise_add/sub read nothing but the out_grad,
broadcast_add/sub read only the input shapes.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import F, check_grad, run  # noqa: E402

import ember as mx  # noqa: E402
from ember import ops  # noqa: E402

rng = np.random.default_rng(7)

READS_OUTPUT = ["exp", "expm1", "sqrt", "rsqrt", "cbrt", "rcbrt", "reciprocal", "tan", "tanh", "sigmoid",
                "relu", "softsign", "hard_sigmoid", "erfinv", "_rpower_scalar"]
READS_INPUT = ["log", "log2", "log10", "log1p", "square", "abs", "sin", "cos", "arcsin", "arccos", "arctan",
               "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "degrees", "radians", "erf", "gammaln", "clip",
               "_power_scalar", "_rdiv_scalar", "_mod_scalar", "_maximum_scalar", "smooth_l1"]
DOMAIN = {"arcsin": (-0.8, 0.8), "arccos": (-0.8, 0.8), "arctanh": (-0.8, 0.8), "erfinv": (-0.8, 0.8),
          "arccosh": (1.2, 3.0)}
ATTRS = {"clip": {"a_min": -0.5, "a_max": 0.7}, "_rpower_scalar": {"scalar": 1.7}, "_power_scalar": {"scalar": 3.0},
         "_rdiv_scalar": {"scalar": 2.0}, "_mod_scalar": {"scalar": 0.7}, "_maximum_scalar": {"scalar": 0.1}}


SIGNED = ("relu", "softsign", "abs", "tanh", "sigmoid", "sin", "clip")  # defined for negative x too


def _sample(name, shape=(3, 4)):
    lo, hi = DOMAIN.get(name, (0.3, 1.8))
    x = rng.uniform(lo, hi, shape)
    return x * rng.choice([-1, 1], shape) if name in SIGNED else x


@pytest.mark.parametrize("name", READS_OUTPUT)
def test_backward_reads_only_the_output(name):
    assert ops.get(f"_backward_{name}").input_names(ops.get(name).parse_attrs(ATTRS.get(name, {}))) == \
        ["ograd", "output"]


@pytest.mark.parametrize("name", READS_INPUT)
def test_backward_reads_only_the_input(name):
    assert ops.get(f"_backward_{name}").input_names(ops.get(name).parse_attrs(ATTRS.get(name, {}))) == \
        ["ograd", "data"]


@pytest.mark.parametrize("name", READS_OUTPUT + READS_INPUT)
def test_gradient_matches_finite_differences(name):
    check_grad(name, [_sample(name)], ATTRS.get(name), rtol=1e-4, atol=1e-6)


class _Recorder:
    """An F that records every array handed to an op (by id), then evaluates with numpy."""

    def __init__(self):
        self.seen = set()

    def __getattr__(self, op):
        def call(*arrays, **attrs):
            self.seen.update(id(a) for a in arrays)
            return getattr(F, op)(*arrays, **attrs)
        return call


@pytest.mark.parametrize("name", READS_OUTPUT)
def test_gradient_never_hands_the_input_to_an_op(name):
    x = _sample(name)
    attrs = ops.get(name).parse_attrs(ATTRS.get(name, {}))
    y = run(name, [x], attrs)
    rec = _Recorder()
    ops.get(name).gradient(rec, attrs, [x], [y], [np.ones_like(y)])
    assert id(x) not in rec.seen and id(y) in rec.seen


class _ShapeOnly:
    """Stands for an input whose values must not be read: only .shape works."""

    def __init__(self, shape):
        self.shape = shape

    def __array__(self, *a, **k):
        raise AssertionError("the gradient read an input's values")


@pytest.mark.parametrize("name", ["elemwise_add", "elemwise_sub"])
def test_symbolic_same_shape_add_sub_gradient_is_the_out_grad(name):
    a, b, g = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("g")
    res = ops.get(name).gradient(mx.sym, {}, [a, b], [None], [g])
    assert res[0] is g  # no node, no buffer: the out_grad entry itself
    if name == "elemwise_add":
        assert res[1] is g
    else:
        assert res[1].list_arguments() == ["g"]


@pytest.mark.parametrize("name", ["elemwise_add", "elemwise_sub", "broadcast_add", "broadcast_sub"])
def test_same_shape_add_sub_gradients_read_no_input_and_are_fresh(name):
    g = rng.standard_normal((2, 3))
    res = ops.get(name).gradient(F, {}, [_ShapeOnly((2, 3)), _ShapeOnly((2, 3))], [None], [g])
    assert res[0] is not g and res[1] is not g and res[0] is not res[1]
    np.testing.assert_array_equal(res[0], g)
    np.testing.assert_array_equal(res[1], g if name.endswith("add") else -g)


def test_autograd_grad_results_of_an_add_do_not_alias():
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([3.0, 4.0])
    a.attach_grad()
    b.attach_grad()
    head = mx.nd.array([1.0, 1.0])
    with mx.autograd.record():
        y = a + b
    ga, gb = mx.autograd.grad(y, [a, b], head_grads=head)
    ga += 5
    np.testing.assert_array_equal(gb.asnumpy(), [1.0, 1.0])
    np.testing.assert_array_equal(head.asnumpy(), [1.0, 1.0])


@pytest.mark.parametrize("name,ls,rs", [("broadcast_add", (2, 3), (3,)), ("broadcast_sub", (2, 1, 3), (4, 1)),
                                        ("broadcast_add", (2, 3), (2, 3))])
def test_broadcast_add_sub_gradient_uses_shapes_only(name, ls, rs):
    lhs, rhs = rng.standard_normal(ls), rng.standard_normal(rs)
    out = run(name, [lhs, rhs])
    g = rng.standard_normal(out.shape)
    nan_l, nan_r = np.full(ls, np.nan), np.full(rs, np.nan)  # values must not matter, only shapes
    got = ops.get(name).gradient(F, {}, [nan_l, nan_r], [None], [g])
    sign = -1 if name == "broadcast_sub" else 1
    want_r = np.sum(g, axis=tuple(range(g.ndim - len(rs))))
    want_r = np.sum(want_r, axis=tuple(i for i, n in enumerate(rs) if n == 1), keepdims=True)
    want_l = np.sum(g, axis=tuple(range(g.ndim - len(ls))))
    want_l = np.sum(want_l, axis=tuple(i for i, n in enumerate(ls) if n == 1), keepdims=True)
    np.testing.assert_allclose(got[0], want_l)
    np.testing.assert_allclose(got[1], sign * want_r)
    check_grad(name, [lhs, rhs])


def test_symbolic_backward_shape_only_inputs_declared():
    for name in ("_backward_broadcast_add", "_backward_broadcast_sub"):
        assert ops.get(name).shape_only({}) == (1, 2)
    assert ops.get("_backward_broadcast_mul").shape_only({}) == ()


@pytest.mark.parametrize("name", ["broadcast_mul", "broadcast_div", "elemwise_mul", "elemwise_div"])
def test_mul_div_gradients_match_finite_differences(name):
    if name.startswith("broadcast"):
        inputs = [rng.uniform(0.5, 2, (2, 3)), rng.uniform(0.5, 2, (1, 3))]
    else:
        inputs = [rng.uniform(0.5, 2, (2, 3)), rng.uniform(0.5, 2, (2, 3))]
    check_grad(name, inputs)


def test_symbolic_sigmoid_tanh_backward_do_not_read_the_input():
    x = mx.sym.var("x")
    pre = mx.sym.FullyConnected(x, num_hidden=4, name="fc")
    y = mx.sym.tanh(mx.sym.sigmoid(pre)) + mx.sym.exp(pre)
    ex = y.simple_bind(mx.cpu(), x=(2, 3))
    xv = rng.standard_normal((2, 3))
    w = rng.standard_normal((4, 3))
    ex.arg_dict["x"][:] = xv
    ex.arg_dict["fc_weight"][:] = w
    ex.arg_dict["fc_bias"][:] = 0
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((2, 4)))
    p = xv @ w.T
    s = 1 / (1 + np.exp(-p))
    dpre = (1 - np.tanh(s) ** 2) * s * (1 - s) + np.exp(p)
    np.testing.assert_allclose(ex.grad_dict["x"].asnumpy(), dpre @ w, rtol=1e-4)


SHAPE_ONLY_CASES = [
    ("_backward_broadcast_add", [rng.standard_normal((2, 3)), np.zeros((2, 1)), np.zeros((3,))], {}),
    ("_backward_broadcast_sub", [rng.standard_normal((2, 3)), np.zeros((1, 3)), np.zeros((2, 3))], {}),
    ("reshape_like", [rng.standard_normal((2, 6)), np.zeros((3, 4))], {}),
    ("_backward_broadcast_to", [rng.standard_normal((4, 3)), np.zeros((1, 3))], {}),
    ("_backward_Cast", [rng.standard_normal((2, 3)), np.zeros((2, 3), np.float32)], {}),
    ("_backward_Concat", [rng.standard_normal((2, 5)), np.zeros((2, 2)), np.zeros((2, 3))], {"num_args": 2, "dim": 1}),
    ("_backward_sum", [rng.standard_normal((2,)), np.zeros((2, 3)), np.zeros((2,))], {"axis": 1}),
    ("_backward_mean", [rng.standard_normal((1, 3)), np.zeros((2, 3)), np.zeros((1, 3))], {"axis": 0, "keepdims": True}),
    ("_backward_Pooling", [rng.standard_normal((1, 2, 3, 3)), np.zeros((1, 2, 5, 5)), np.zeros((1, 2, 3, 3))],
     {"pool_type": "avg", "kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}),
    ("_backward_Pooling", [rng.standard_normal((1, 2, 1, 1)), np.zeros((1, 2, 4, 3)), np.zeros((1, 2, 1, 1))],
     {"pool_type": "sum", "global_pool": True, "kernel": (1, 1)}),
]


def test_max_pooling_backward_reads_values():
    op = ops.get("_backward_Pooling")
    assert op.shape_only(op.parse_attrs({"pool_type": "max", "kernel": (2, 2)})) == ()
    assert op.shape_only(op.parse_attrs({"pool_type": "lp", "p_value": 2, "kernel": (2, 2)})) == ()


@pytest.mark.parametrize("name,inputs,attrs", SHAPE_ONLY_CASES, ids=[c[0] for c in SHAPE_ONLY_CASES])
def test_shape_only_inputs_are_really_not_read(name, inputs, attrs):
    """Garbage in the declared shape-only inputs (what a planner reusing their bytes leaves) changes nothing."""
    op = ops.get(name)
    idx = op.shape_only(op.parse_attrs(attrs))
    assert idx
    clean = run(name, inputs, attrs, all_outputs=True)
    dirty = [np.full_like(x, np.nan) if i in idx else x for i, x in enumerate(inputs)]
    for a, b in zip(clean, run(name, dirty, attrs, all_outputs=True)):
        np.testing.assert_array_equal(a, b)
        assert np.isfinite(a).all()


SYMBOLIC_ADD_CASES = {
    # name: (build(a, b), grad_req, d/da, d/db for head gradient G, ones inputs, grads primed with 1 for 'add')
    "a+b add": (lambda a, b: a + b, "add", lambda G: 1 + G, lambda G: 1 + G),
    "a-b": (lambda a, b: a - b, "write", lambda G: G, lambda G: -G),
    "a+a": (lambda a, b: a + a + 0 * b, "write", lambda G: 2 * G, lambda G: 0 * G),
    "(a+b)+(a-b)": (lambda a, b: (a + b) + (a - b), "write", lambda G: 2 * G, lambda G: 0 * G),
    "sigmoid(a)+b*2": (lambda a, b: mx.sym.sigmoid(a) + b * 2, "add",
                       lambda G: 1 + G * 0.19661193324148185, lambda G: 1 + 2 * G),
}


@pytest.mark.parametrize("case", list(SYMBOLIC_ADD_CASES))
def test_symbolic_add_gradient_entries_shared_by_two_inputs(case):
    """The out_grad entry handed to both inputs of an add lands correctly in each grad array."""
    build, req, da, db = SYMBOLIC_ADD_CASES[case]
    a, b = mx.sym.var("a"), mx.sym.var("b")
    ex = build(a, b).simple_bind(mx.cpu(), grad_req=req, a=(2, 3), b=(2, 3))
    if req == "add":
        for g in ex.grad_dict.values():
            g[:] = 1
    G = rng.standard_normal((2, 3))
    ex.forward(is_train=True, a=np.ones((2, 3)), b=np.ones((2, 3)))
    ex.backward(mx.nd.array(G))
    np.testing.assert_allclose(ex.grad_dict["a"].asnumpy(), da(G), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ex.grad_dict["b"].asnumpy(), db(G), rtol=1e-5, atol=1e-6)
