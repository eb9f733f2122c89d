"""Executor.backward ignores a head gradient its backward graph never reads (MXNet does not copy it)."""
import numpy as np
import pytest

import ember as mx


def test_head_gradient_of_an_output_without_gradient_is_not_checked():
    x = mx.sym.var("x")
    xa = mx.nd.array(np.random.rand(2, 3))
    xg = mx.nd.ones((2, 3))
    exe = mx.sym.shape_array(x).bind(mx.cpu(), args={"x": xa}, args_grad={"x": xg})
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 3))])  # any shape: nothing reads it
    np.testing.assert_array_equal(xg.asnumpy(), np.zeros((2, 3)))


def test_a_used_head_gradient_of_the_wrong_shape_is_an_error():
    x = mx.sym.var("x")
    exe = (x * 2).bind(mx.cpu(), args={"x": mx.nd.ones((2, 3))}, args_grad={"x": mx.nd.zeros((2, 3))})
    exe.forward(is_train=True)
    with pytest.raises(mx.base.ShapeError, match="head gradient of shape"):
        exe.backward([mx.nd.ones((3, 2))])
