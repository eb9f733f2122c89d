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


def _fc_objective(x0, w0, b0, h0, vs, flatten, no_bias):
    """sum(v * g) over FullyConnected's first-order gradients g (data, weight[, bias]) for head h0."""
    arrs = [mx.nd.array(a, dtype="float64") for a in ((x0, w0) if no_bias else (x0, w0, b0))]
    for a in arrs:
        a.attach_grad()
    with autograd.record():
        y = mx.nd.FullyConnected(*arrs, num_hidden=w0.shape[0], flatten=flatten, no_bias=no_bias)
    y.backward(mx.nd.array(h0, dtype="float64"))
    return sum(float(np.sum(v * a.grad.asnumpy())) for v, a in zip(vs, arrs))


@pytest.mark.parametrize("flatten,xs", [(True, (3, 2, 2)), (False, (2, 3, 4))])
@pytest.mark.parametrize("no_bias", [False, True])
def test_fully_connected_second_order_matches_finite_differences(flatten, xs, no_bias):
    # the gradient of FullyConnected's gradients (MXNet supports it: a Dense layer under
    # autograd.grad(create_graph=True)), w.r.t. data, weight, bias and the head gradient itself
    nh, k = 3, int(np.prod(xs[1:])) if flatten else xs[-1]
    x0, w0, b0 = rng.standard_normal(xs), rng.standard_normal((nh, k)), rng.standard_normal(nh)
    h0 = rng.standard_normal((xs[0], nh) if flatten else xs[:-1] + (nh,))
    vs = [rng.standard_normal(xs), rng.standard_normal((nh, k))] + ([] if no_bias else [rng.standard_normal(nh)])
    vals = [x0, w0] + ([] if no_bias else [b0])
    arrs = [mx.nd.array(a, dtype="float64") for a in vals]
    head = mx.nd.array(h0, dtype="float64")
    for a in arrs + [head]:
        a.attach_grad()
    with autograd.record():
        y = mx.nd.FullyConnected(*arrs, num_hidden=nh, flatten=flatten, no_bias=no_bias)
        grads = autograd.grad(y, arrs, head_grads=head, create_graph=True, retain_graph=True)
        total = sum((g * mx.nd.array(v, dtype="float64")).sum() for g, v in zip(grads, vs))
    total.backward()

    def objective(i, value):
        args = [x0, w0, b0, h0]
        args[i] = value
        return _fc_objective(*args, vs, flatten, no_bias)

    eps = 1e-5
    checks = list(enumerate(arrs)) + [(3, head)]
    for i, arr in checks:
        base = [x0, w0, b0, h0][i]
        num = np.zeros_like(base)
        for j in np.ndindex(base.shape):
            hi, lo = base.copy(), base.copy()
            hi[j] += eps
            lo[j] -= eps
            num[j] = (objective(i, hi) - objective(i, lo)) / (2 * eps)
        np.testing.assert_allclose(arr.grad.asnumpy(), num, rtol=1e-6, atol=1e-8)


def test_dropout_second_order_is_zero_and_its_head_gradient_takes_the_mask():
    x = mx.nd.array(rng.uniform(0.5, 1.5, (4, 5)), dtype="float64")
    head = mx.nd.array(rng.standard_normal((4, 5)), dtype="float64")
    v = mx.nd.array(rng.standard_normal((4, 5)), dtype="float64")
    x.attach_grad()
    head.attach_grad()
    with autograd.record():
        y = mx.nd.Dropout(x, p=0.5)
        (dx,) = autograd.grad(y, [x], head_grads=head, create_graph=True, retain_graph=True)
        (dx * v).sum().backward()
    mask = (y / x).asnumpy()   # 0 or 1 / (1 - p) per element
    assert set(np.unique(np.round(mask, 12))) <= {0.0, 2.0}
    np.testing.assert_allclose(dx.asnumpy(), head.asnumpy() * mask)
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros((4, 5)))
    np.testing.assert_allclose(head.grad.asnumpy(), v.asnumpy() * mask)
