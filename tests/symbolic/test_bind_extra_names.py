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
