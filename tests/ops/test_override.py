"""Flashlight's "replace tensor add" experiment: one override changes a + b everywhere."""
import numpy as np

import ember as mx
from ember import ops


def _sub_instead(ctx, attrs, inputs, outputs, aux):
    ctx.xp.subtract(inputs[0], inputs[1], out=outputs[0])


def test_override_broadcast_add_reaches_nd_sym_and_autograd():
    a = mx.nd.array([[5.0, 7.0]])
    b = mx.nd.array([[1.0, 2.0]])
    old = ops.override("broadcast_add", "cpu", _sub_instead)
    try:
        np.testing.assert_array_equal((a + b).asnumpy(), [[4.0, 5.0]])           # mx.nd
        np.testing.assert_array_equal(mx.nd.broadcast_add(a, b).asnumpy(), [[4.0, 5.0]])
        x, y = mx.sym.Variable("x"), mx.sym.Variable("y")
        ex = (x + y).bind(mx.cpu(), {"x": a, "y": b})                          # symbolic executor
        np.testing.assert_array_equal(ex.forward()[0].asnumpy(), [[4.0, 5.0]])
        a.attach_grad()
        with mx.autograd.record():                                               # autograd forward
            out = a + b
        out.backward()
        np.testing.assert_array_equal(out.asnumpy(), [[4.0, 5.0]])
        np.testing.assert_array_equal(a.grad.asnumpy(), [[1.0, 1.0]])
    finally:
        ops.override("broadcast_add", "cpu", old)
        del ops.get("broadcast_add").kernels["cpu"]  # back to the registered device-generic kernel
    np.testing.assert_array_equal((a + b).asnumpy(), [[6.0, 9.0]])


def test_override_returns_previous_kernel():
    op = ops.get("broadcast_mul")
    before = op.kernel("cpu")
    old = ops.override("broadcast_mul", "cpu", _sub_instead)
    try:
        assert old is before and op.kernel("cpu") is _sub_instead
        assert op.kernel("gpu") is before  # other devices keep the generic kernel
    finally:
        del op.kernels["cpu"]
    assert op.kernel("cpu") is before
