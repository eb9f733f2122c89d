"""mx.contrib.autograd: gradients against numpy, agreement with ember.autograd, sections and bad arguments."""
import numpy as np
import pytest

import ember as mx
from ember.contrib import autograd as cag

RNG = np.random.default_rng(0)


def _arr(*shape):
    return mx.nd.array(RNG.uniform(0.5, 1.5, size=shape))


@pytest.mark.parametrize("func, expected", [
    (lambda x: mx.nd.exp(x), lambda x: np.exp(x)),
    (lambda x: x * x * 3, lambda x: 6 * x),
    (lambda x: mx.nd.log(x) / 2, lambda x: 0.5 / x),
    (lambda x: mx.nd.sum(mx.nd.sin(x)), lambda x: np.cos(x)),
])
def test_unary_gradients_match_numpy(func, expected):
    x = _arr(3, 4)
    grads, out = cag.grad_and_loss(func)(x)
    np.testing.assert_allclose(grads[0].asnumpy(), expected(x.asnumpy()), rtol=1e-5)
    np.testing.assert_allclose(out.asnumpy(), func(x).asnumpy(), rtol=1e-6)


def test_argnum_and_grad_agree_with_ember_autograd():
    a, b = _arr(2, 3), _arr(2, 3)

    def f(x, y, scale):
        return x * y * scale + x

    only_b = cag.grad(f, argnum=1)(a, b, 2.0)
    assert len(only_b) == 1
    np.testing.assert_allclose(only_b[0].asnumpy(), 2 * a.asnumpy(), rtol=1e-6)

    ga, gb = cag.grad(f, argnum=[0, 1])(a, b, 2.0)
    # the same gradients through ember.autograd's record/backward
    a2, b2 = a.copy(), b.copy()
    a2.attach_grad()
    b2.attach_grad()
    with mx.autograd.record():
        out = f(a2, b2, 2.0)
    out.backward()
    np.testing.assert_allclose(ga.asnumpy(), a2.grad.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(gb.asnumpy(), b2.grad.asnumpy(), rtol=1e-6)


def test_sections_set_and_restore_state():
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    with cag.train_section():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        with cag.test_section():
            assert not mx.autograd.is_recording() and not mx.autograd.is_training()
        assert mx.autograd.is_recording() and mx.autograd.is_training()
    assert not mx.autograd.is_recording() and not mx.autograd.is_training()
    assert cag.set_is_training(True) is False
    assert cag.set_is_training(False) is True


def test_mark_variables_backward_with_head_grads_and_add():
    x = mx.nd.ones((2, 3))
    dx = mx.nd.zeros_like(x)
    cag.mark_variables([x], [dx], grad_reqs="add")
    for _ in range(2):
        with cag.train_section():
            y = x * 2
            cag.backward([y], [mx.nd.array([[1, 2, 3], [4, 5, 6]])])
    np.testing.assert_allclose(dx.asnumpy(), 2 * 2 * np.array([[1, 2, 3], [4, 5, 6]]))
    with cag.train_section():
        z = x * 5
    cag.compute_gradient([z])  # outside the section, as MXNet allows
    np.testing.assert_allclose(dx.asnumpy()[0, 0], 4 + 5)


def test_bad_arguments():
    x = mx.nd.ones((2,))
    with pytest.raises(AssertionError, match="list or tuple"):
        cag.backward(x)
    with pytest.raises(AssertionError, match="same length"):
        cag.backward([x], [None, None])
    with pytest.raises(AssertionError, match="NDArray"):
        cag.grad(lambda v: v * 2)(np.ones(2))
    with pytest.raises(ValueError, match="gradients"):
        cag.mark_variables([x], [])
