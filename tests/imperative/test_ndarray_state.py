"""NDArray pieces of MXNet's Python API: __getstate__/__setstate__ (MXNet's raw record bytes), from_numpy's
ownership rule, mx.nd.load's shape-semantics check, fluent methods, the contiguity rule of basic slicing."""
import itertools
import os
import struct

import numpy as np
import pytest

import ember as mx
from ember.imperative.ndarray import NDArray


def test_getstate_is_one_mxnet_record_and_setstate_restores_it():
    x = mx.nd.array([[1.5, 2.0, -3.0]], dtype="float32")
    state = x.__getstate__()
    raw = bytes(state["handle"])
    magic, stype, ndim = struct.unpack("<IiI", raw[:12])
    assert (magic, stype, ndim) == (0xF993FAC9, 0, 2)
    assert struct.unpack("<2q", raw[12:28]) == (1, 3)
    assert struct.unpack("<iii", raw[28:40]) == (1, 0, 0)  # cpu(0), float32 flag
    np.testing.assert_array_equal(np.frombuffer(raw[40:], np.float32), [1.5, 2.0, -3.0])
    y = mx.nd.zeros((5,))
    y.__setstate__(state)
    assert y.shape == (1, 3) and y.dtype == np.float32
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())


def test_setstate_of_a_gpu_record_loads_on_cpu():
    # one int64 element, saved on gpu(0) (device type 2), as MXNet writes it
    raw = struct.pack("<IiI", 0xF993FAC9, 0, 1) + struct.pack("<q", 1) + struct.pack("<iii", 2, 0, 6) \
        + struct.pack("<q", 7)
    y = mx.nd.zeros((2,))
    y.__setstate__({"handle": bytearray(raw)})
    assert y.context == mx.cpu() and y.dtype == np.int64
    assert y.asnumpy().tolist() == [7]


def test_from_numpy_zero_copy_makes_the_numpy_array_read_only_and_shares_memory():
    a = np.arange(6, dtype=np.float32).reshape(3, 2)
    x = mx.nd.from_numpy(a)
    with pytest.raises(ValueError):
        a[0, 0] = 1
    x[2, 1] = 100
    assert a[2, 1] == 100
    y = mx.nd.from_numpy(a)  # again: still a writeable NDArray over the same memory
    y[0, 0] = -1
    assert a[0, 0] == -1
    b = np.arange(3.0)
    z = mx.nd.from_numpy(b, zero_copy=False)
    z[0] = 5
    assert b.flags.writeable and b[0] == 0


@pytest.mark.parametrize("saved,loading,fails", [(False, False, False), (True, True, False),
                                                  (True, False, True), (False, True, True)])
def test_load_needs_the_shape_semantics_the_file_was_saved_in(tmp_path, saved, loading, fails):
    fname = os.fspath(tmp_path / "arrays")
    with mx.np_shape(saved):
        mx.nd.save(fname, [mx.nd.array(np.ones((2, 0, 1))), mx.nd.array([1, 2])])
    with mx.np_shape(loading):
        if fails:
            with pytest.raises(mx.MXNetError, match="np shape semantics"):
                mx.nd.load(fname)
        else:
            got = mx.nd.load(fname)
            assert [a.shape for a in got] == [(2, 0, 1), (2,)]


def test_global_np_shape_reads_legacy_records(tmp_path):
    fname = os.fspath(tmp_path / "arrays")
    mx.nd.save(fname, [mx.nd.array([1, 2])])
    prev = mx.set_np_shape(2)
    try:
        assert mx.nd.load(fname)[0].asnumpy().tolist() == [1, 2]
    finally:
        mx.set_np_shape(prev)


def test_fluent_methods_match_the_functions():
    x = mx.nd.array(np.random.uniform(size=(2, 3, 4)))
    assert x.shape_array().asnumpy().tolist() == [2, 3, 4]
    assert x.size_array().asnumpy().tolist() == [24]
    np.testing.assert_array_equal(x.transpose(axes=(1, 0, 2)).asnumpy(), x.asnumpy().transpose(1, 0, 2))
    parts = x.split_v2(indices_or_sections=(1, 3), axis=2)
    assert [p.shape for p in parts] == [(2, 3, 1), (2, 3, 2), (2, 3, 1)]
    assert x.reshape_like(rhs=mx.nd.zeros((6, 4))).shape == (6, 4)
    d = mx.nd.array(np.arange(16.0).reshape(1, 4, 2, 2))
    np.testing.assert_array_equal(d.depth_to_space(2).space_to_depth(2).asnumpy(), d.asnumpy())


def test_basic_indexing_contiguity_rule_agrees_with_numpy():
    shape = (3, 4, 5)
    x = np.arange(60).reshape(shape)
    slices = [slice(None), slice(1), slice(1, 3), slice(None, None, 2), slice(None, None, -1), slice(2, 2)]
    for key in itertools.product(slices, repeat=3):
        assert NDArray._basic_indexing_slice_is_contiguous(key, shape) == x[key].flags.c_contiguous, key
    assert NDArray._basic_indexing_slice_is_contiguous((1, slice(None)), (3, 4))
    assert not NDArray._basic_indexing_slice_is_contiguous((slice(None), 1), (3, 4))
