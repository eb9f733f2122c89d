"""numpy's own functions and ufuncs on mx.np arrays (ember/numpy_dispatch_protocol.py): registered
names run mx.np's implementation, others numpy's on host copies; results against numpy."""
import numpy as onp
import pytest

import ember as mx
from ember.numpy_dispatch_protocol import (_NUMPY_ARRAY_FUNCTION_LIST, _NUMPY_ARRAY_UFUNC_LIST,
                                           with_array_function_protocol, with_array_ufunc_protocol)

np = mx.np


@pytest.fixture(autouse=True)
def numpy_semantics():
    with mx.np_shape(True), mx.util.np_array(True):
        yield


def test_registered_functions_and_ufuncs_run_mx_np():
    a = onp.arange(12, dtype=onp.float32).reshape(3, 4) - 4
    x = np.array(a)
    for got, want in ((onp.sum(x, axis=0), a.sum(axis=0)), (onp.transpose(x), a.T), (onp.add(x, 2), a + 2),
                      (onp.maximum(x, 0), onp.maximum(a, 0)), (onp.sqrt(onp.abs(x)), onp.sqrt(onp.abs(a))),
                      (onp.concatenate([x, x]), onp.concatenate([a, a]))):
        assert type(got) is np.ndarray  # mx.np's implementation answered
        onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    assert "sum" in _NUMPY_ARRAY_FUNCTION_LIST and "add" in _NUMPY_ARRAY_UFUNC_LIST
    # recorded through mx.np's own operators: gradients flow
    x.attach_grad()
    with mx.autograd.record():
        y = onp.multiply(x, x)
    y.backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), 2 * a)


def test_unregistered_ones_fall_back_to_numpy_on_host_copies():
    a = onp.array([[3.0, -4.0], [5.0, 12.0]], dtype=onp.float32)
    x = np.array(a)
    got = onp.hypot(x[:, 0], x[:, 1])  # a ufunc mx.np lacks
    assert type(got) is np.ndarray and got.dtype == onp.float32
    onp.testing.assert_allclose(got.asnumpy(), [5.0, 13.0])
    zero_d = onp.hypot(np.array(3.0), np.array(4.0))  # 0-d: an mx.np array, never a numpy scalar
    assert type(zero_d) is np.ndarray and zero_d.shape == () and zero_d.item() == 5.0
    rolled = onp.cumprod(x, axis=1)  # a function mx.np lacks
    assert type(rolled) is np.ndarray
    onp.testing.assert_array_equal(rolled.asnumpy(), onp.cumprod(a, axis=1))
    x.attach_grad()
    with pytest.raises(ValueError, match="autograd"):
        with mx.autograd.record():
            onp.cumprod(x, axis=1)


def test_shares_memory_of_views():
    data = np.zeros((13, 21, 23, 22))
    host = onp.zeros((13, 21, 23, 22), dtype=onp.float32)
    for op in (onp.shares_memory, onp.may_share_memory, np.shares_memory, np.may_share_memory):
        ref = onp.shares_memory if op in (onp.shares_memory, np.shares_memory) else onp.may_share_memory
        assert op(data[0], data[1]) == ref(host[0], host[1]) == False  # noqa: E712
        assert op(data[0, 0, 0, 2:5], data[0, 0, 0, 4:7]) == ref(host[0, 0, 0, 2:5], host[0, 0, 0, 4:7]) == True  # noqa: E712
        assert op(data, np.ones((5, 0))) is False
        assert op(data, data.copy()) is False


def test_protocol_decorators_report_failures_as_runtime_errors():
    @with_array_function_protocol
    def bad():
        raise KeyError("x")

    @with_array_ufunc_protocol
    def good():
        return 1

    with pytest.raises(RuntimeError, match="array function protocol failed"):
        bad()
    assert good() == 1
