"""bind: dicts may name arguments the symbol lacks (MXNet ignores them); an array given for one is ignored
with a warning (a typo, perhaps)."""
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


def test_an_extra_argument_holding_an_array_is_ignored_with_a_warning():
    x = mx.sym.var("x")
    with pytest.warns(UserWarning, match=r"\['typo'\] are not arguments of the symbol"):
        ex = (x * 3).bind(mx.cpu(), {"x": mx.nd.ones((2,)), "typo": mx.nd.ones((2,))})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), [3, 3])


def test_backward_reads_the_first_head_gradients_and_ignores_extra_ones():
    x = mx.sym.var("x")
    grad = mx.nd.zeros((2,))
    ex = (x * 3).bind(mx.cpu(), {"x": mx.nd.ones((2,))}, args_grad={"x": grad})
    ex.forward(is_train=True)
    ex.backward([mx.nd.array([1, 2]), mx.nd.ones((5,))])  # MXNet ignores the second one
    np.testing.assert_array_equal(grad.asnumpy(), [3, 6])
    with pytest.raises(mx.base.MXNetError, match="head gradient is required"):
        ex.backward([])  # fewer than the outputs: an error
