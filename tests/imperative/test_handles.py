"""MXNet's NDArray handles: `arr.handle`, `ctypes.cast(arr, NDArrayHandle)`, `NDArray(handle, writable)`."""
import ctypes
import gc

import numpy as np
import pytest

import ember as mx
from ember.base import NDArrayHandle
from ember.ndarray import NDArray


def test_a_handle_names_the_same_storage():
    a = mx.nd.array([[1, 2], [3, 4]])
    b = NDArray(a.handle)
    b[:] = 7
    np.testing.assert_array_equal(a.asnumpy(), np.full((2, 2), 7))
    c = NDArray(ctypes.cast(a, NDArrayHandle), writable=False)  # the cast monitor callbacks do
    assert a.writable and not c.writable
    assert mx.nd.min(c).asscalar() == 7
    with pytest.raises(ValueError):
        c[:] = 1
    np.testing.assert_array_equal(a.asnumpy(), np.full((2, 2), 7))  # nothing written


def test_a_handle_of_no_live_array_is_refused():
    a = mx.nd.ones((3,))
    h = a.handle
    del a
    gc.collect()
    with pytest.raises(mx.base.MXNetError, match="not the handle of a live NDArray"):
        NDArray(h)
    with pytest.raises(mx.base.MXNetError, match="not the handle"):
        NDArray("not a handle")


def test_monitor_callbacks_written_against_handles_work():
    # MXNet's idiom: the callback gets (name, array) and rebuilds the array from its handle
    from ember.operator import NDArray as OpNDArray, NDArrayHandle as OpHandle, ctypes as op_ctypes
    seen = {}

    def callback(name, arr):
        view = OpNDArray(op_ctypes.cast(arr, OpHandle), writable=False)
        seen[mx.base.py_str(name)] = float(mx.nd.min(view).asscalar())
    x = mx.sym.var("data")
    sym = mx.sym.Convolution(x, kernel=(1, 1), num_filter=1, name="conv", no_bias=True)
    exe = sym.simple_bind(mx.cpu(), grad_req="null", data=(1, 2, 3, 3))
    exe.arg_dict["data"][:] = 1.0
    exe.arg_dict["conv_weight"][:] = 0.5
    exe.set_monitor_callback(callback, monitor_all=True)
    exe.forward()
    mx.nd.waitall()
    assert seen["conv_output"] == 1.0 and seen["conv_weight"] == 0.5
