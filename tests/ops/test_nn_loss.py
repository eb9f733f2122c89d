"""Regression outputs, MakeLoss and BlockGrad: forward values and MXNet's head-gradient-free backward."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import analytic_grads, run_op  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import ShapeError  # noqa: E402

rng = np.random.default_rng(6)


@pytest.mark.parametrize("op,fwd,dfn", [
    ("LinearRegressionOutput", lambda x: x, lambda d: d),
    ("LogisticRegressionOutput", lambda x: 1 / (1 + np.exp(-x)), lambda d: d),
    ("MAERegressionOutput", lambda x: x, np.sign),
])
def test_regression_outputs(op, fwd, dfn):
    x, label = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    out = run_op(op, [x, label], {"grad_scale": 2.0})[0]
    np.testing.assert_allclose(out, fwd(x), rtol=1e-12)
    head = rng.standard_normal((4, 3))  # ignored, as in MXNet
    g = analytic_grads(op, [x, label], {"grad_scale": 2.0}, [head])
    np.testing.assert_allclose(g[0], dfn(fwd(x) - label) * 2.0 / 3, rtol=1e-12)
    assert g[1] is None


def test_regression_label_shapes():
    op = ops.get("LinearRegressionOutput")
    a = op.parse_attrs({})
    assert op.shapes(a, [(4, 1), None])[0][1] == (4, 1)
    assert op.shapes(a, [(4, 1), (4,)])[0][1] == (4,)
    with pytest.raises(ShapeError, match="LinearRegressionOutput: label shape"):
        op.shapes(a, [(4, 2), (4,)])


@pytest.mark.parametrize("norm,expected", [("null", 3.0), ("batch", 3.0 / 4), ("valid", None)])
def test_make_loss(norm, expected):
    x = rng.standard_normal((4, 3))
    attrs = {"normalization": norm, "grad_scale": 3.0, "valid_thresh": 0.2}
    np.testing.assert_array_equal(run_op("MakeLoss", [x], attrs)[0], x)
    g = analytic_grads("MakeLoss", [x], attrs, [rng.standard_normal((4, 3))])[0]
    if expected is None:
        expected = 3.0 / max(int((x > 0.2).sum()), 1)
    np.testing.assert_allclose(g, np.full_like(x, expected), rtol=1e-12)
    assert ops.get("make_loss") is ops.get("MakeLoss")


def test_block_grad_and_stop_gradient():
    x = rng.standard_normal((2, 3))
    np.testing.assert_array_equal(run_op("BlockGrad", [x])[0], x)
    assert analytic_grads("BlockGrad", [x], {}, [np.ones((2, 3))]) == [None]
    assert ops.get("stop_gradient") is ops.get("BlockGrad")
