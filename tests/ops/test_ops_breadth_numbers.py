"""Numbers that used to differ from MXNet 1.9.1: integer mod gradients, integer arange, LayerNorm
parameter gradients on large batches, float32 exp rounding."""
import numpy as np

import ember as mx
from ember import autograd


def test_int32_broadcast_mod_gradient_is_zero_not_int_min():
    a = mx.nd.array([7, -7, 5], dtype="int32")
    b = mx.nd.array([2, 3, 0], dtype="int32")
    a.attach_grad()
    b.attach_grad()
    with autograd.record():
        y = mx.nd.broadcast_mod(a, b)
    y.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), [0, 0, 0])  # MXNet 1.9.1 gives zeros for integer mod
    np.testing.assert_array_equal(b.grad.asnumpy(), [0, 0, 0])


def test_float_mod_gradient_unchanged():
    a = mx.nd.array([7.5, -7.0, 5.0])
    b = mx.nd.array([2.0, 3.0, 4.0])
    b.attach_grad()
    with autograd.record():
        y = mx.nd.broadcast_mod(a, b)
    y.backward()
    np.testing.assert_allclose(b.grad.asnumpy(), -np.floor(a.asnumpy() / b.asnumpy()))


def test_integer_arange_steps_in_the_dtype():
    # MXNet 1.9.1: length from the float bounds, values start + i * int(step)
    np.testing.assert_array_equal(mx.nd.arange(0, 5, 1.5, dtype="int32").asnumpy(), [0, 1, 2, 3])
    np.testing.assert_array_equal(mx.nd.arange(-3, 7, 2.7, dtype="int64").asnumpy(), [-3, -1, 1, 3])
    np.testing.assert_array_equal(mx.nd.arange(3, repeat=2).asnumpy(), [0, 0, 1, 1, 2, 2])
    want = np.float32(0) + np.arange(10, dtype=np.float32) * np.float32(0.1)
    np.testing.assert_array_equal(mx.nd.arange(0, 1, 0.1).asnumpy(), want)


def test_layer_norm_parameter_gradients_accumulate_precisely():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4096, 64)).astype(np.float32)
    gamma = rng.standard_normal(64).astype(np.float32)
    beta = rng.standard_normal(64).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    data, g, b = mx.nd.array(x), mx.nd.array(gamma), mx.nd.array(beta)
    for v in (data, g, b):
        v.attach_grad()
    with autograd.record():
        out = mx.nd.LayerNorm(data, g, b, axis=-1, eps=1e-3)
    out.backward(mx.nd.array(dy))
    x64 = x.astype(np.float64)
    xhat = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-3)
    np.testing.assert_allclose(g.grad.asnumpy(), (dy * xhat).sum(0), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(b.grad.asnumpy(), dy.astype(np.float64).sum(0), rtol=1e-5, atol=1e-4)


def test_exp_float32_is_correctly_rounded():
    x = np.linspace(-20, 20, 4001).astype(np.float32)
    got = mx.nd.exp(mx.nd.array(x)).asnumpy()
    np.testing.assert_array_equal(got, np.exp(x.astype(np.float64)).astype(np.float32))
    v = mx.nd.ones((1,))
    v.attach_grad()
    with autograd.record():
        z = mx.nd.elemwise_add(mx.nd.exp(v), v)
    dx, = autograd.grad(z, [v], create_graph=True)
    assert abs(dx.asscalar() - 3.71828175) < 1e-7
    dx.backward()
    assert abs(v.grad.asscalar() - 2.71828175) < 1e-7
