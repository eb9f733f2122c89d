"""bind: grad_req dicts may name arguments the symbol lacks (MXNet ignores them); args may too when None."""
import numpy as np
import pytest

import ember as mx


def test_extra_grad_req_names_and_none_args_are_ignored():
    x = mx.sym.var("x")
    y = x * 3
    grad = mx.nd.zeros((2,))
    ex = y.bind(mx.cpu(), {"x": mx.nd.ones((2,)), "b": None}, args_grad={"x": grad, "b": None},
                grad_req={"x": "write", "b": "add"})
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((2,)))
    np.testing.assert_array_equal(grad.asnumpy(), [3, 3])


def test_an_extra_argument_holding_an_array_is_still_an_error():
    x = mx.sym.var("x")
    with pytest.raises(mx.base.ArgumentError, match="unknown arguments"):
        (x * 3).bind(mx.cpu(), {"x": mx.nd.ones((2,)), "typo": mx.nd.ones((2,))})
