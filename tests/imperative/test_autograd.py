"""Autograd: gradients from the registry checked against finite differences, grad_req, graphs, errors."""
import numpy as np
import pytest

import ember as mx
from ember import autograd, ops
from ember.ops import OpDef

RNG = np.random.default_rng(2)


def _mul_kernel(ctx, attrs, inputs, outputs, aux):
    np.multiply(inputs[0], inputs[1], out=outputs[0])


def _mul_grad(F, attrs, inputs, outputs, out_grads):
    # written with the op itself, so it is differentiable again (second order)
    return [F._test_imperative_mul(out_grads[0], inputs[1]), F._test_imperative_mul(out_grads[0], inputs[0])]


if not ops.exists("_test_imperative_mul"):
    ops.register(OpDef("_test_imperative_mul", inputs=["lhs", "rhs"],
                       infer_shape=lambda attrs, s: (s, [s[0]]), kernels={"any": _mul_kernel},
                       gradient=_mul_grad, doc="test-only: same-shape product, self-differentiable"))


def _fd_grad(f, x, eps=1e-3):
    """Central finite differences of scalar-valued f at x (float64)."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (f(xp) - f(xm)) / (2 * eps)
    return g


EXPRESSIONS = {
    "poly": (lambda x, y: x * x * y + 3 * x - y / 2, lambda x, y: x * x * y + 3 * x - y / 2),
    "ratio": (lambda x, y: (x + 1.5) / (y * y + 1) - x * 0.25, lambda x, y: (x + 1.5) / (y * y + 1) - x * 0.25),
    "pow": (lambda x, y: (x * y) ** 2 + 2 ** y, lambda x, y: (x * y) ** 2 + 2 ** y),
    "broadcast": (lambda x, y: x * y - y / x, lambda x, y: x * y - y / x),
}
Y_SHAPES = {"broadcast": (1, 3)}


@pytest.mark.parametrize("name", sorted(EXPRESSIONS))
def test_gradients_match_finite_differences(name):
    f_nd, f_np = EXPRESSIONS[name]
    x0 = RNG.uniform(0.5, 1.5, size=(2, 3))
    y0 = RNG.uniform(0.5, 1.5, size=Y_SHAPES.get(name, (2, 3)))
    x, y = mx.nd.array(x0, dtype="float64"), mx.nd.array(y0, dtype="float64")
    x.attach_grad()
    y.attach_grad()
    with autograd.record():
        z = f_nd(x, y)
    z.backward()
    gx = _fd_grad(lambda v: f_np(v, y0).sum(), x0)
    gy = _fd_grad(lambda v: f_np(x0, v).sum(), y0)
    assert y.grad.shape == y0.shape
    np.testing.assert_allclose(x.grad.asnumpy(), gx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(y.grad.asnumpy(), gy, rtol=1e-5, atol=1e-6)


def test_head_gradient_and_reused_input():
    x0 = RNG.uniform(size=(3,))
    x = mx.nd.array(x0)
    x.attach_grad()
    with autograd.record():
        y = x * x + x  # x used three times
    head = np.array([1.0, -2.0, 0.5], np.float32)
    y.backward(mx.nd.array(head))
    np.testing.assert_allclose(x.grad.asnumpy(), head * (2 * x0 + 1), rtol=1e-5)


def test_grad_req_add_accumulates_and_write_overwrites():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    for _ in range(3):
        with autograd.record():
            y = x * 3
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [9.0, 9.0])
    w = mx.nd.array([1.0, 2.0])
    w.attach_grad()
    for _ in range(3):
        with autograd.record():
            y = w * 3
        y.backward()
    np.testing.assert_allclose(w.grad.asnumpy(), [3.0, 3.0])


def test_grad_req_null_leaves_grad_untouched():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad(grad_req="null")
    with autograd.record():
        y = x * 3
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0.0, 0.0])


def test_backward_twice_needs_retain_graph():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad(grad_req="add")
    with autograd.record():
        y = x * x
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [4.0, 8.0])
    with pytest.raises(mx.base.EmberError, match="retain_graph"):
        y.backward()


def test_autograd_grad_returns_without_touching_dot_grad():
    x0 = np.array([0.5, 1.0, 2.0])
    x = mx.nd.array(x0)
    x.attach_grad()
    with autograd.record():
        y = x * x * x
    (g,) = autograd.grad(y, [x])
    np.testing.assert_allclose(g.asnumpy(), 3 * x0 ** 2, rtol=1e-6)
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros(3))


def test_create_graph_second_order_of_cube():
    x0 = np.array([0.5, -1.0, 2.0])
    x = mx.nd.array(x0, dtype="float64")
    x.attach_grad()
    mul = mx.nd._test_imperative_mul
    with autograd.record():
        y = mul(mul(x, x), x)
        (dy,) = autograd.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(dy.asnumpy(), 3 * x0 ** 2)
    dy.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * x0)


def test_mark_variables_and_scopes():
    x = mx.nd.array([2.0])
    g = mx.nd.zeros((1,))
    autograd.mark_variables([x], [g])
    assert not autograd.is_recording()
    with autograd.record():
        assert autograd.is_recording() and autograd.is_training()
        with autograd.pause():
            assert not autograd.is_recording() and not autograd.is_training()
            z = x * 5  # not recorded
        with autograd.predict_mode():
            assert not autograd.is_training()
        y = x * 4
    assert z._ag is None
    y.backward()
    assert g.asnumpy()[0] == 4.0
    prev = autograd.set_training(True)
    assert autograd.is_training() and prev is False
    autograd.set_training(prev)
    with autograd.train_mode():
        assert autograd.is_training()


def test_detach_and_views_outside_recording_do_not_track():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = x.detach() * 2 + x
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [1.0, 1.0])


def test_op_without_gradient_is_a_clear_error_naming_it():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = mx.nd._test_imperative_nograd(x) * 2
    with pytest.raises(mx.base.EmberError, match="_test_imperative_nograd"):
        y.backward()


def test_backward_on_array_outside_graph_is_an_error():
    x = mx.nd.array([1.0])
    with pytest.raises(mx.base.EmberError, match="not in a computational graph"):
        x.backward()
    x.attach_grad()
    with pytest.raises(mx.base.EmberError, match="variable"):
        autograd.grad(x * 2, [mx.nd.array([1.0])])


def test_inplace_on_recorded_array_while_recording_is_an_error():
    x = mx.nd.array([1.0])
    x.attach_grad()
    with autograd.record():
        y = x * 2
        with pytest.raises(mx.base.EmberError, match="autograd"):
            y += 1
        with pytest.raises(mx.base.EmberError, match="autograd"):
            y[:] = 0


def test_is_train_reaches_kernels():
    seen = []

    def kernel(ctx, attrs, inputs, outputs, aux):
        seen.append(ctx.is_train)
        outputs[0][...] = inputs[0]

    if not ops.exists("_test_imperative_probe_train"):
        ops.register(OpDef("_test_imperative_probe_train", infer_shape=lambda a, s: (s, [s[0]]),
                           kernels={"any": kernel}))
    x = mx.nd.ones((1,))
    mx.nd._test_imperative_probe_train(x).wait_to_read()
    with autograd.record():
        mx.nd._test_imperative_probe_train(x).wait_to_read()
    with autograd.record(train_mode=False):
        mx.nd._test_imperative_probe_train(x).wait_to_read()
    assert seen == [False, True, False]


def test_invalid_grad_req():
    with pytest.raises(ValueError, match="grad_req"):
        mx.nd.ones((1,)).attach_grad("sometimes")


def test_slicing_while_recording_flows_gradients():
    x0 = RNG.uniform(size=(3, 4))
    x = mx.nd.array(x0)
    x.attach_grad()
    with autograd.record():
        y = x[1:3] * 2 + x[0] * x[0]
    y.backward()
    want = np.zeros((3, 4))
    want[1:3] += 2
    want[0] += 2 * 2 * x0[0]
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5)


def test_custom_function_gradient():
    class Sigmoid(autograd.Function):
        def forward(self, x):
            y = 1 / (1 + mx.nd.exp(-x))
            self.save_for_backward(y)
            return y

        def backward(self, dy):
            (y,) = self.saved_tensors
            return dy * y * (1 - y)

    x0 = np.array([-1.0, 0.0, 2.0])
    x = mx.nd.array(x0, dtype="float64")
    x.attach_grad()
    with autograd.record():
        z = Sigmoid()(x) * 2
    z.backward()
    s = 1 / (1 + np.exp(-x0))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * s * (1 - s), rtol=1e-6)
    f = Sigmoid()
    f(x)
    with pytest.raises(mx.base.EmberError, match="only once"):
        f(x)


def test_second_order_of_x_cubed_with_library_ops():
    """x**3 through the registry's _power_scalar: d/dx = 3x^2, d2/dx2 = 6x."""
    assert mx.ops.get("_power_scalar").gradient is not None
    assert mx.ops.get("_backward__power_scalar").gradient is not None
    x0 = np.array([0.5, -1.0, 2.0])
    x = mx.nd.array(x0, dtype="float64")
    x.attach_grad()
    with autograd.record():
        y = x ** 3
        (dy,) = autograd.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(dy.asnumpy(), 3 * x0 ** 2)
    dy.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * x0)


def test_gradient_flows_through_copies_to_another_device():
    x = mx.nd.array([1.0, 2.0], ctx=mx.cpu(0))
    x.attach_grad()
    with autograd.record():
        y = x.copyto(mx.cpu(1)) * 3
        z = x.as_in_context(mx.cpu(2)) * x.as_in_context(mx.cpu(2))
    assert y.context == mx.cpu(1)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [3.0, 3.0])
    assert x.grad.context == mx.cpu(0)
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0])


def test_a_hidden_output_gets_no_gradient_buffer(monkeypatch):
    """A hidden output is never handed to the user, so nothing gives it a gradient: the op's gradient
    function gets None there (no buffer of zeros made per backward), and a visible output without
    one still gets zeros."""
    opdef = ops.get("_softmax_ce_per_sample")
    seen = []
    real = opdef.gradient

    def spy(F, attrs, inputs, outputs, out_grads, **kw):
        seen.append([None if g is None else g.asnumpy() for g in out_grads])
        return real(F, attrs, inputs, outputs, out_grads, **kw)
    monkeypatch.setattr(opdef, "gradient", spy)
    x = mx.nd.array(RNG.standard_normal((3, 4)))
    x.attach_grad()
    with autograd.record():
        loss = mx.nd._softmax_ce_per_sample(x, mx.nd.array([1, 0, 3]))
        total = (loss * 2).sum()
    total.backward()
    assert len(seen) == 1 and seen[0][1] is None
    np.testing.assert_array_equal(seen[0][0], [2, 2, 2])
    p = np.exp(x.asnumpy()) / np.exp(x.asnumpy()).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * (p - np.eye(4)[[1, 0, 3]]), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape,ctx", [((3,), mx.cpu(0)), ((2, 3), mx.cpu(1)), ((200, 100), mx.cpu(0))])
def test_default_head_gradient_is_ones_on_the_heads_device(shape, ctx):
    """backward() without head gradients uses ones (made at once for a tiny host head, by an engine
    fill for a large one) on the head's device and dtype."""
    from ember.imperative import creation
    x = mx.nd.array(RNG.standard_normal(shape), ctx=ctx, dtype="float64")
    ones = creation.ones_now(x)
    assert ones.context == ctx and ones.dtype == np.float64 and ones.shape == shape
    np.testing.assert_array_equal(ones.asnumpy(), np.ones(shape))
    x.attach_grad()
    with autograd.record():
        y = x * x
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x.asnumpy())
