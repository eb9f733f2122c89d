"""MXNet's numpy-test helpers in ember.test_utils and `numpy_op_signature`."""
import inspect

import numpy as onp
import pytest

import ember as mx
from ember import test_utils
from ember.numpy_op_signature import _get_builtin_op


def test_matrix_with_real_eigvals():
    a = test_utils.new_matrix_with_real_eigvals_nd((2, 3, 4, 4))
    assert a.shape == (2, 3, 4, 4)
    w = onp.linalg.eigvals(a)
    assert onp.abs(w.imag).max() < 1e-8
    assert onp.abs(w.real).max() <= 10 + 1e-6


def test_sym_matrix_with_real_eigvals():
    a = test_utils.new_sym_matrix_with_real_eigvals_nd((5, 3, 3))
    onp.testing.assert_allclose(a, onp.swapaxes(a, -1, -2), atol=1e-12)
    assert onp.abs(onp.linalg.eigvalsh(a)).max() <= 10 + 1e-6


def test_matrix_shape_checked():
    with pytest.raises(ValueError):
        test_utils.new_matrix_with_real_eigvals_nd((3, 4))


def test_no_tvm():
    assert test_utils.has_tvm_ops() is False


def test_builtin_op_lookup():
    assert _get_builtin_op("_np_reshape") is mx.np.reshape
    assert _get_builtin_op("broadcast_add") is None
    with pytest.raises(ValueError):
        _get_builtin_op("_np_no_such_function")
    assert str(inspect.signature(mx.np.reshape)) == "(a, newshape, order='C', out=None)"


def test_reshape_out():
    x = mx.np.arange(6)
    out = mx.np.zeros((2, 3))
    assert mx.np.reshape(x, (2, 3), out=out) is out
    onp.testing.assert_array_equal(out.asnumpy(), onp.arange(6).reshape(2, 3))
    with pytest.raises(ValueError):
        mx.np.reshape(x, (3, 2), out=out)
