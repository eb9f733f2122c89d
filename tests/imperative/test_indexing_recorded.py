"""Advanced indexing with several index arrays while autograd records: values and gradients against numpy."""
import numpy as np
import pytest

import ember as mx

KEYS = [
    ([1, 2], slice(1, 3), [0, 3]),
    (1, [2, 0], np.array([[3], [0]])),
    ([[0], [2]], [1, 3]),
    (slice(None), [0, 0, 2], 1),
    (Ellipsis, [1, 3]),
    (None, [0, 2], slice(0, 2), [3, 1]),
]


@pytest.mark.parametrize("key", KEYS)
def test_recorded_mixed_advanced_indexing_matches_numpy_and_scatters_gradients(key):
    a = np.random.rand(3, 4, 5)
    x = mx.nd.array(a)
    x.attach_grad()
    with mx.autograd.record():
        y = x[key]
    want = a.astype(np.float32)[key]
    assert y.shape == want.shape
    np.testing.assert_allclose(y.asnumpy(), want, rtol=1e-6)
    head = np.random.rand(*want.shape).astype(np.float32)
    y.backward(mx.nd.array(head))
    expected = np.zeros_like(a, dtype=np.float32)
    np.add.at(expected, key, head)  # repeated positions accumulate
    np.testing.assert_allclose(x.grad.asnumpy(), expected, rtol=1e-6)


def test_ndarray_index_components_and_tuples_inside_the_key():
    a = np.arange(60.0).reshape(3, 4, 5)
    x = mx.nd.array(a)
    idx = mx.nd.array([2, 0], dtype="int64")
    np.testing.assert_array_equal(x[1, idx, (1, 2)].asnumpy(), a[1, [2, 0], [1, 2]])
    x.attach_grad()
    with mx.autograd.record():
        y = x[[0, 2], idx, (4, 4)]
    np.testing.assert_array_equal(y.asnumpy(), a[[0, 2], [2, 0], [4, 4]])


@pytest.mark.parametrize("index", [np.array(-1, dtype=np.int32), np.array([-1, 0, -3], dtype=np.int64), [-2, 2],
                                   range(3, 0, -1), mx.nd.array([-1, 1])])
def test_recorded_single_index_array_counts_negatives_from_the_end(index):
    a = np.random.rand(4, 3).astype(np.float32)
    x = mx.nd.array(a)
    x.attach_grad()
    with mx.autograd.record():
        y = x[index]
    key = (index.asnumpy().astype(np.int64) if isinstance(index, mx.nd.NDArray) else np.asarray(index))
    want = a[key]
    np.testing.assert_allclose(y.asnumpy().reshape(want.shape), want)
    y.backward()
    expected = np.zeros_like(a)
    np.add.at(expected, key, 1.0)
    np.testing.assert_allclose(x.grad.asnumpy(), expected)
    with pytest.raises(IndexError):
        with mx.autograd.record():
            x[np.array([4], dtype=np.int64)]


def test_recorded_value_assigned_over_the_whole_array_through_new_axes():
    with mx.np_shape(True):
        for shape, key in (((3, 4), (slice(None), None)), ((3, 0), (slice(None), None)), ((2, 3), (None, Ellipsis))):
            x = mx.nd.zeros(shape)
            sel = np.zeros(shape)[key].shape
            v = np.random.rand(*sel).astype(np.float32)
            y = mx.nd.array(v)
            y.attach_grad()
            with mx.autograd.record():
                x[key] = y
            x.backward()
            np.testing.assert_allclose(x.asnumpy(), v.reshape(shape))
            np.testing.assert_allclose(y.grad.asnumpy(), np.ones(sel, np.float32))
        # part of an empty array is still part: refused as MXNet does
        x = mx.nd.zeros((3, 0))
        y = mx.nd.zeros((0,))
        y.attach_grad()
        with pytest.raises(mx.base.MXNetError, match="Inplace operations"):
            with mx.autograd.record():
                x[2] = y
