"""Second-order gradients through mx.autograd (create_graph=True), against finite differences.

For y = f(x) and a head gradient w, autograd.grad gives w * f'(x); differentiating that
again with head v gives v * w * f''(x) w.r.t. x and v * f'(x) w.r.t. w.  f'' is checked
against central differences of the first derivative (itself computed by autograd).
"""
import numpy as np
import pytest

import ember as mx
from ember import autograd

rng = np.random.default_rng(11)

UNARY = {
    "exp": mx.nd.exp, "log": mx.nd.log, "sin": mx.nd.sin, "cos": mx.nd.cos, "tanh": mx.nd.tanh,
    "sigmoid": mx.nd.sigmoid, "square": mx.nd.square, "sqrt": mx.nd.sqrt, "relu": mx.nd.relu,
    "reciprocal": mx.nd.reciprocal, "rsqrt": mx.nd.rsqrt, "cbrt": mx.nd.cbrt, "expm1": mx.nd.expm1,
    "log1p": mx.nd.log1p, "arctan": mx.nd.arctan, "arcsin": mx.nd.arcsin, "sinh": mx.nd.sinh,
    "softsign": mx.nd.softsign, "erf": mx.nd.erf, "tan": mx.nd.tan, "arccosh": mx.nd.arccosh,
    "arctanh": mx.nd.arctanh, "arccos": mx.nd.arccos, "arcsinh": mx.nd.arcsinh, "cosh": mx.nd.cosh,
    "log2": mx.nd.log2, "log10": mx.nd.log10, "rcbrt": mx.nd.rcbrt, "erfinv": mx.nd.erfinv,
    "clip": lambda x: mx.nd.clip(x, -0.6, 0.9), "abs": mx.nd.abs,
    "x**3": lambda x: x ** 3, "x**-1.5": lambda x: x ** -1.5, "2.5**x": lambda x: 2.5 ** x,
    "x*3": lambda x: x * 3, "x/4": lambda x: x / 4, "3/x": lambda x: 3 / x, "x+1": lambda x: x + 1,
    "1-x": lambda x: 1 - x, "-x": lambda x: -x,
}
DOMAIN = {"arcsin": (-0.7, 0.7), "arccos": (-0.7, 0.7), "arctanh": (-0.7, 0.7), "erfinv": (-0.7, 0.7),
          "arccosh": (1.3, 2.5)}
SIGNED = {"exp", "sin", "cos", "tanh", "sigmoid", "relu", "x**3", "2.5**x", "x*3", "x/4", "x+1", "1-x", "-x",
          "arctan", "sinh", "softsign", "erf", "tan", "expm1", "arcsinh", "cosh", "clip", "abs"}


def _x(name):
    lo, hi = DOMAIN.get(name, (0.4, 1.2))
    x = rng.uniform(lo, hi, (2, 3))
    if name in SIGNED:
        x *= rng.choice([-1.0, 1.0], x.shape)
    return x


def _first(f, x0, w):
    x = mx.nd.array(x0, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = f(x)
    y.backward(mx.nd.array(w, dtype="float64"))
    return x.grad.asnumpy()


@pytest.mark.parametrize("name", list(UNARY))
def test_second_derivative_matches_finite_differences(name):
    f = UNARY[name]
    x0, w0, v0 = _x(name), rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    x = mx.nd.array(x0, dtype="float64")
    w = mx.nd.array(w0, dtype="float64")
    x.attach_grad()
    w.attach_grad()
    with autograd.record():
        y = f(x)
        (dx,) = autograd.grad(y, [x], head_grads=w, create_graph=True)
    np.testing.assert_allclose(dx.asnumpy(), _first(f, x0, w0), rtol=1e-10)
    dx.backward(mx.nd.array(v0, dtype="float64"))
    # elementwise f: d/dx_i sum(v * w * f'(x)) = v_i * w_i * f''(x_i); f'' by central differences of f'
    eps = 1e-5
    ones = np.ones_like(x0)
    fpp = (_first(f, x0 + eps, ones) - _first(f, x0 - eps, ones)) / (2 * eps)
    np.testing.assert_allclose(x.grad.asnumpy(), v0 * w0 * fpp, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(w.grad.asnumpy(), v0 * _first(f, x0, ones), rtol=1e-10)


def test_relu_second_derivative_is_zero_and_flows_to_the_head_gradient():
    x = mx.nd.array([-1.0, 2.0, 3.0], dtype="float64")
    w = mx.nd.array([1.0, 2.0, -1.0], dtype="float64")
    x.attach_grad()
    w.attach_grad()
    with autograd.record():
        (dx,) = autograd.grad(mx.nd.relu(x), [x], head_grads=w, create_graph=True)
        z = (dx * dx).sum()
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 0.0)
    np.testing.assert_allclose(w.grad.asnumpy(), [0.0, 4.0, -2.0])  # d/dw (w * 1[x>0])^2


BINARY = {
    "x*y": (lambda x, y: x * y, (2, 3), (2, 3)),
    "x*y broadcast": (lambda x, y: x * y, (2, 3), (1, 3)),
    "x/y": (lambda x, y: x / y, (2, 3), (2, 3)),
    "x/y broadcast": (lambda x, y: x / y, (2, 3), (3,)),
    "x+y broadcast": (lambda x, y: (x + y) * (x - y), (2, 3), (2, 1)),
    "sym elemwise": (lambda x, y: mx.nd.elemwise_mul(mx.nd.elemwise_add(x, y), mx.nd.elemwise_div(x, y)),
                     (2, 3), (2, 3)),
}


def _grads(f, x0, y0, w0):
    x, y = mx.nd.array(x0, dtype="float64"), mx.nd.array(y0, dtype="float64")
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        z = f(x, y)
    z.backward(mx.nd.array(w0, dtype="float64"))
    return x.grad.asnumpy(), y.grad.asnumpy()


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_second_order_matches_finite_differences(name):
    f, xs, ys = BINARY[name]
    x0, y0 = rng.uniform(0.5, 1.5, xs), rng.uniform(0.5, 1.5, ys)
    zshape = np.broadcast_shapes(xs, ys)
    w0 = rng.standard_normal(zshape)
    v0 = rng.standard_normal(xs)  # weights on d z / d x
    x, y = mx.nd.array(x0, dtype="float64"), mx.nd.array(y0, dtype="float64")
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        z = f(x, y)
        (gx,) = autograd.grad(z, [x], head_grads=mx.nd.array(w0, dtype="float64"), create_graph=True)
    gx.backward(mx.nd.array(v0, dtype="float64"))

    def objective(a, b):
        return float(np.sum(v0 * _grads(f, a, b, w0)[0]))

    eps = 1e-5
    for arr, got in ((x0, x.grad.asnumpy()), (y0, y.grad.asnumpy())):
        num = np.zeros_like(arr)
        for i in np.ndindex(arr.shape):
            hi, lo = arr.copy(), arr.copy()
            hi[i] += eps
            lo[i] -= eps
            if arr is x0:
                num[i] = (objective(hi, y0) - objective(lo, y0)) / (2 * eps)
            else:
                num[i] = (objective(x0, hi) - objective(x0, lo)) / (2 * eps)
        np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-7)


def test_op_without_second_order_says_so():
    x = mx.nd.array([1.5, 2.0], dtype="float64")
    x.attach_grad()
    with autograd.record():
        (dx,) = autograd.grad(mx.nd.gamma(x), [x], create_graph=True)
    with pytest.raises(mx.base.EmberError, match="_backward_gamma"):
        dx.backward()
