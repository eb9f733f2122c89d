"""Dropout: training vs inference, mode='always', axes, reproducible masks, gradient through the mask."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import analytic_grads, check_grad, run_op  # noqa: E402

import ember as mx  # noqa: E402
from ember import ops  # noqa: E402
from ember.base import OperatorError  # noqa: E402

X = np.random.default_rng(7).standard_normal((200, 50))


def test_training_drops_about_p_and_rescales():
    out, mask = run_op("Dropout", [X], {"p": 0.3}, is_train=True, seed=1)
    dropped = (mask == 0).mean()
    assert 0.27 < dropped < 0.33
    np.testing.assert_allclose(np.unique(mask), [0, 1 / 0.7])
    np.testing.assert_allclose(out, X * mask, rtol=1e-12)


def test_inference_is_identity_unless_always():
    out, mask = run_op("Dropout", [X], {"p": 0.5}, is_train=False)
    np.testing.assert_array_equal(out, X)
    np.testing.assert_array_equal(mask, 1)
    out = run_op("Dropout", [X], {"p": 0.5, "mode": "always"}, is_train=False)[0]
    assert (out == 0).mean() > 0.4


def test_same_stream_same_mask_and_backward_uses_it():
    a = run_op("Dropout", [X], {"p": 0.5}, is_train=True, seed=9)
    b = run_op("Dropout", [X], {"p": 0.5}, is_train=True, seed=9)
    c = run_op("Dropout", [X], {"p": 0.5}, is_train=True, seed=10)
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])
    head = np.ones_like(X)
    g = analytic_grads("Dropout", [X], {"p": 0.5}, [head], is_train=True, seed=9)[0]
    np.testing.assert_array_equal(g, a[1])
    check_grad("Dropout", [X[:4, :5]], {"p": 0.4}, is_train=True, seed=2)


def test_axes_share_the_mask():
    mask = run_op("Dropout", [X.reshape(20, 10, 50)], {"p": 0.5, "axes": (1,)}, is_train=True)[1]
    assert np.all(mask == mask[:, :1, :])


def test_p_one_drops_everything_and_resources():
    # MXNet 1.9.1 (its test_dropout checks it): the mask is keep * 1/(1-p) = 0 * inf, so p=1 gives
    # NaN outputs (and gradients) while training, and the identity in inference
    out, mask = run_op("Dropout", [X], {"p": 1.0}, is_train=True)
    assert np.isnan(out).all() and np.isnan(mask).all()
    np.testing.assert_array_equal(run_op("Dropout", [X], {"p": 1.0}, is_train=False)[0], X)
    x = mx.nd.array(X[:3, :4])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Dropout(x, p=1.0)
    y.backward()
    assert np.isnan(x.grad.asnumpy()).all()
    op = ops.get("Dropout")
    assert "rng" in op.resources and op.visible_outputs(op.parse_attrs({})) == 1


@pytest.mark.parametrize("attrs,msg", [({"p": 1.5}, "p must be"), ({"axes": (3,)}, "axis 3")])
def test_errors(attrs, msg):
    op = ops.get("Dropout")
    with pytest.raises(OperatorError, match=f"Dropout: {msg}"):
        op.shapes(op.parse_attrs(attrs), [(2, 3)])
