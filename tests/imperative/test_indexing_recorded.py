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
