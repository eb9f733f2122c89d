"""mx.operator.NumpyOp (MXNet's legacy Python operator on numpy arrays) through the Custom op."""
import numpy as np

import ember as mx


class _Square(mx.operator.NumpyOp):
    def __init__(self):
        super().__init__(need_top_grad=True)

    def list_arguments(self):
        return ["x"]

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0] ** 2

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 2 * in_data[0] * out_grad[0]


def test_default_numpy_op_copies_forward_and_gives_ones_backward():
    s = mx.operator.NumpyOp().get_symbol(mx.sym.var("X"), name="numpy_op")
    dx = mx.nd.zeros((4,))
    ex = s.bind(mx.cpu(), args=[mx.nd.arange(4)], args_grad={"X": dx})
    np.testing.assert_array_equal(ex.forward(is_train=True)[0].asnumpy(), [0, 1, 2, 3])
    ex.backward(mx.nd.ones((4,)) * 5)
    np.testing.assert_array_equal(dx.asnumpy(), np.ones(4))  # MXNet's default backward writes ones


def test_numpy_op_subclass_forward_backward():
    op = _Square()
    s = op(mx.sym.var("a"))
    assert s.list_arguments() == ["a"]
    x = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    dx = mx.nd.zeros((3,))
    ex = s.bind(mx.cpu(), args={"a": mx.nd.array(x)}, args_grad={"a": dx})
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), x ** 2)
    ex.backward(mx.nd.array([1.0, 0.5, 2.0]))
    np.testing.assert_allclose(dx.asnumpy(), 2 * x * [1.0, 0.5, 2.0])
