"""Indexing and slice assignment against numpy; views share storage and var, copies do not."""
import numpy as np
import pytest

import ember as mx


def _base():
    return np.arange(24, dtype=np.float32).reshape(4, 6)


@pytest.mark.parametrize("key", [
    (slice(1, 3),), (2,), (slice(None), 2), (slice(None, None, 2),), (Ellipsis, 1),
    (1, slice(2, 5)), (slice(None), slice(1, -1, 2)), (slice(3, 0, -1),), (None, 1),
    (-1,), (slice(10, 20),),
])
def test_basic_getitem_matches_numpy(key):
    a = _base()
    got = mx.nd.array(a)[key].asnumpy()
    want = a[key]
    if want.ndim == 0:
        want = want.reshape(1)
    np.testing.assert_array_equal(got, want)


def test_integer_index_on_1d_gives_shape_1_like_mxnet():
    x = mx.nd.array([1.0, 2.0, 3.0])
    assert x[1].shape == (1,)
    assert x[1].asscalar() == 2.0
    assert mx.nd.array(_base())[1, 2].shape == (1,)


def test_numpy_integer_indices_give_the_rows_python_integers_give():
    x = mx.nd.array(_base())
    for key in (2, np.int64(2), np.int32(-2), np.uint8(1), np.intp(0)):
        row = x[key]
        assert row._chunk is x._chunk  # a row view sharing storage and var, as for a Python int
        np.testing.assert_array_equal(row.asnumpy(), _base()[int(key)])
    with pytest.raises(IndexError):
        x[np.int64(len(_base()))]
    np.testing.assert_array_equal(mx.nd.array([1.0, 2.0, 3.0])[np.int64(1)].asnumpy(), [2.0])  # 1-D: shape (1,)


def test_contiguous_slices_are_views_sharing_the_var():
    x = mx.nd.array(_base())
    v = x[1:3]
    r = x.reshape((-1,))
    assert v._chunk is x._chunk and v.var is x.var and r.var is x.var
    v[:] = -1
    r[0] = 100
    want = _base()
    want[1:3] = -1
    want.reshape(-1)[0] = 100
    np.testing.assert_array_equal(x.asnumpy(), want)


def test_non_contiguous_basic_index_is_a_copy_like_mxnet():
    x = mx.nd.array(_base())
    col = x[:, 1]
    assert col._chunk is not x._chunk
    col[:] = 0
    np.testing.assert_array_equal(x.asnumpy(), _base())


@pytest.mark.parametrize("key", [[0, 3, 1], np.array([[1, 1], [0, 2]]), (slice(None), [5, 0]),
                                 ([0, 1], [2, 3]), np.array([True, False, True, False])])
def test_advanced_getitem_with_numpy_keys(key):
    a = _base()
    np.testing.assert_array_equal(mx.nd.array(a)[key].asnumpy(), a[key])


def test_advanced_getitem_with_ndarray_index():
    a = _base()
    idx = mx.nd.array([3, 0, 2])
    np.testing.assert_array_equal(mx.nd.array(a)[idx].asnumpy(), a[[3, 0, 2]])
    np.testing.assert_array_equal(mx.nd.array(a)[idx, 1].asnumpy(), a[[3, 0, 2], 1])


def test_boolean_mask_ndarray_read():
    a = _base()
    mask = mx.nd.array(a[:, 0] > 5).astype("bool")
    np.testing.assert_array_equal(mx.nd.array(a)[mask].asnumpy(), a[a[:, 0] > 5])


@pytest.mark.parametrize("key,value", [
    (slice(None), 7.0), (slice(1, 3), np.arange(6, dtype=np.float32)),
    ((slice(None), 2), np.arange(4, dtype=np.float32)), (2, 5), ((1, 4), -2.0),
    ([0, 2], 9.0), (([0, 3], [1, 5]), np.array([10, 20], np.float32)),
    (np.array([False, True, True, False]), 3.0),
])
def test_setitem_matches_numpy(key, value):
    a = _base()
    x = mx.nd.array(a)
    x[key] = value
    a[key] = value
    np.testing.assert_array_equal(x.asnumpy(), a)


def test_setitem_from_ndarray_broadcasts():
    a = _base()
    x = mx.nd.array(a)
    x[1:3] = mx.nd.array(np.ones((1, 6), np.float32) * 4)
    a[1:3] = 4
    x[:, 0] = mx.nd.array([1, 2, 3, 4])
    a[:, 0] = [1, 2, 3, 4]
    x[mx.nd.array([3])] = mx.nd.array(np.full((1, 6), 8, np.float32))
    a[3] = 8
    np.testing.assert_array_equal(x.asnumpy(), a)


def test_setitem_value_is_copied_at_the_call():
    x = mx.nd.zeros((3,))
    src = np.array([1, 2, 3], np.float32)
    x[:] = src
    src[:] = 0
    np.testing.assert_array_equal(x.asnumpy(), [1, 2, 3])


def test_setitem_overlapping_source_through_views():
    a = _base()
    x = mx.nd.array(a)
    x[1:4] = x[0:3]
    a[1:4] = a[0:3].copy()
    np.testing.assert_array_equal(x.asnumpy(), a)


@pytest.mark.parametrize("key", [4, -5, (0, 6), (slice(None), 7)])
def test_out_of_range_index_raises_index_error_at_the_call(key):
    x = mx.nd.array(_base())
    with pytest.raises(IndexError):
        x[key]
    with pytest.raises(IndexError):
        x[key] = 1.0


def test_out_of_range_list_index_raises_at_the_call():
    x = mx.nd.array(_base())
    with pytest.raises(IndexError):
        x[[0, 9]]


def test_out_of_range_ndarray_index_raises_at_the_next_read():
    x = mx.nd.array(_base())
    y = x[mx.nd.array([0, 9])]
    with pytest.raises(IndexError):
        y.asnumpy()
    np.testing.assert_array_equal(x.asnumpy(), _base())  # nothing else lost


def test_setitem_shape_mismatch_is_value_error():
    x = mx.nd.array(_base())
    with pytest.raises(ValueError, match="shape"):
        x[1:3] = mx.nd.ones((3, 6))
    with pytest.raises(ValueError, match="shape"):
        x[:] = np.ones(5)


def test_iteration_and_len():
    a = _base()
    x = mx.nd.array(a)
    assert len(x) == 4
    rows = [r.asnumpy() for r in x]
    np.testing.assert_array_equal(np.stack(rows), a)


from hypothesis import given, settings, strategies as st  # noqa: E402


def _slices(n):
    idx = st.one_of(st.none(), st.integers(-n - 2, n + 2))
    return st.builds(slice, idx, idx, st.one_of(st.none(), st.sampled_from([1, 2, -1, -2])))


@st.composite
def _basic_keys(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    key = []
    for n in shape[:draw(st.integers(1, len(shape)))]:
        key.append(draw(st.one_of(st.integers(-n, n - 1), _slices(n))))
    return shape, tuple(key)


@settings(max_examples=60, deadline=None)
@given(_basic_keys(), st.floats(-5, 5, allow_nan=False))
def test_basic_indexing_and_assignment_property(shape_key, value):
    shape, key = shape_key
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = mx.nd.array(a)
    want = a[key]
    got = x[key].asnumpy()
    np.testing.assert_array_equal(got, want.reshape(1) if np.ndim(want) == 0 else want)
    x[key] = value
    a[key] = np.float32(value)
    np.testing.assert_array_equal(x.asnumpy(), a)
