"""mx.np core: the ndarray view type and numpy-style creation, against numpy and MXNet 1.9.1's
observed behaviour (dtypes, repr strings, reshape errors; checked with its venv)."""
import numpy as np
import pytest

import ember as mx
from ember.base import MXNetError


@pytest.fixture
def np_shape():
    with mx.np_shape(True):
        yield


def test_creation_dtypes_follow_mxnet():
    assert mx.np.array([[1, 2], [3, 4]]).dtype == np.float32          # Python lists: float32
    assert mx.np.array(np.array([1, 2], dtype=np.int64)).dtype == np.int64  # numpy arrays keep theirs
    assert mx.np.array(np.array([1.0, 2.0])).dtype == np.float64
    assert mx.np.array([1, 2], dtype=int).dtype == np.int64
    for made in (mx.np.zeros((2,)), mx.np.ones((2,)), mx.np.empty((2,)), mx.np.full((2,), 3), mx.np.arange(5)):
        assert made.dtype == np.float32 and isinstance(made, mx.np.ndarray)
    np.testing.assert_array_equal(mx.np.arange(0, 1, 0.25).asnumpy(), np.arange(0, 1, 0.25))
    np.testing.assert_array_equal(mx.np.arange(2, 7, 2).asnumpy(), [2, 4, 6])
    ints = mx.np.arange(3, dtype="int32")
    assert ints.dtype == np.int32 and ints.asnumpy().tolist() == [0, 1, 2]
    np.testing.assert_array_equal(mx.np.full((2, 3), 7, dtype="int64").asnumpy(), np.full((2, 3), 7))


def test_like_functions_and_full_with_an_array():
    a = mx.np.array(np.arange(6, dtype=np.float64).reshape(2, 3))
    for made, want in ((mx.np.zeros_like(a), np.zeros((2, 3))), (mx.np.ones_like(a), np.ones((2, 3))),
                       (mx.np.full_like(a, 2.5), np.full((2, 3), 2.5))):
        assert made.dtype == np.float64 and isinstance(made, mx.np.ndarray)
        np.testing.assert_array_equal(made.asnumpy(), want)
    assert mx.np.empty_like(a).shape == (2, 3)
    row = mx.np.array([1, 2, 3])
    np.testing.assert_array_equal(mx.np.full((2, 3), row).asnumpy(), np.full((2, 3), [1, 2, 3]))
    with pytest.raises(ValueError, match="cannot broadcast"):
        mx.np.full((3,), mx.np.ones((2, 3)))


def test_repr_and_str_as_mxnet():
    assert repr(mx.np.array([[1, 2], [3, 4]])) == "array([[1., 2.],\n       [3., 4.]])"
    assert repr(mx.np.array([1.5, 2], dtype="float64")) == "array([1.5, 2. ], dtype=float64)"
    assert repr(mx.np.array([1, 0], dtype="int32")) == "array([1, 0], dtype=int32)"
    assert repr(mx.np.array([1, 0], dtype=bool)) == "array([ True, False])"
    assert repr(mx.np.array([True, False])) == "array([1., 0.])"
    assert str(mx.np.array([[1, 2], [3, 4]])) == "[[1. 2.]\n [3. 4.]]"


def test_scalar_and_zero_size_arrays_in_np_shape_mode(np_shape):
    assert repr(mx.np.ones(())) == "array(1.)"
    assert mx.np.ones((0, 2)).shape == (0, 2)
    assert repr(mx.np.zeros((0, 3))) == "array([], shape=(0, 3))"
    assert mx.np.zeros((2, 0)).reshape(0, 5).shape == (0, 5)


def test_operators_and_methods_return_np_arrays_with_numpy_semantics():
    x = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    a = mx.np.array(x)
    for got, want in ((a + 1, x + 1), (2 * a, 2 * x), (a - a, x - x), (a / 2, x / 2), (-a, -x),
                      (a ** 2, x ** 2), (abs(a), abs(x)), (a.T, x.T), (a[0], x[0]), (a.sum(), x.sum()),
                      (a.reshape(-1), x.reshape(-1)), (a.astype("float64"), x.astype(np.float64))):
        assert isinstance(got, mx.np.ndarray)
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    eq = a == a
    assert isinstance(eq, mx.np.ndarray) and eq.dtype == np.bool_ and eq.asnumpy().all()
    assert (a > 0).asnumpy().tolist() == [[True, False], [True, True]]


def test_reshape_uses_numpy_rules():
    a = mx.np.array(np.arange(6).reshape(2, 3))
    assert mx.np.reshape(a, (3, -1)).shape == (3, 2)
    assert a.reshape((6,)).shape == (6,) and a.reshape(1, 6).shape == (1, 6)
    for bad in ((-1, 4), (-1, -1), (0, 6), (-2,), (4,)):
        with pytest.raises(MXNetError, match="cannot reshape"):
            mx.np.reshape(a, bad)


def test_views_between_nd_and_np_share_storage():
    legacy = mx.nd.array([1, 2, 3])
    view = legacy.as_np_ndarray()
    assert isinstance(view, mx.np.ndarray)
    view[:] = 5  # writes the shared storage
    assert legacy.asnumpy().tolist() == [5, 5, 5]
    back = view.as_nd_ndarray()
    assert type(back) is mx.nd.NDArray and back.asnumpy().tolist() == [5, 5, 5]
    with pytest.raises(ValueError, match="as_np_ndarray"):
        mx.np.array(legacy)
    with pytest.raises(MXNetError, match="not supported for SparseNDArray"):
        mx.nd.sparse.zeros("csr", (2, 2)).as_np_ndarray()


def test_autograd_through_np_arrays():
    x = mx.np.array([[1.0, 2.0], [3.0, 4.0]])
    x.attach_grad()
    with mx.autograd.record():
        y = (x * x).sum()
    assert isinstance(y, mx.np.ndarray)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x.asnumpy())


def test_npx_switches():
    assert mx.npx.is_np_array() is False and mx.npx.is_np_shape() is False
    mx.npx.set_np()
    try:
        assert mx.npx.is_np_array() and mx.npx.is_np_shape()
    finally:
        mx.npx.reset_np()
    with pytest.raises(MXNetError, match="dtype=True"):
        mx.npx.set_np(dtype=True)
    assert not mx.npx.is_np_array()
    mx.npx.set_np(shape=True, array=False)
    try:
        assert mx.npx.is_np_shape()
    finally:
        mx.npx.reset_np()
    assert not mx.npx.is_np_shape()


def test_npx_reshape_special_values():
    x = mx.np.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4, 1))
    for spec, want in [((-2, -1), (2, 12)), ((-4,), (2, 3, 4, 1)), ((-5, -2, -3), (6, 4)),
                       ((-6, 1, -1, -4), (1, 2, 3, 4, 1)), ((6, -1), (6, 4))]:
        y = mx.npx.reshape(x, spec)
        assert type(y) is mx.np.ndarray and y.shape == want
        np.testing.assert_array_equal(y.asnumpy(), x.asnumpy().reshape(want))
    with pytest.raises(MXNetError, match="-3 skips an input dimension of size 1"):
        mx.npx.reshape(x, (-3, -1))


def test_np_random_choice():
    mx.np.random.seed(7)
    with mx.np_shape(True):
        draws = mx.np.random.choice(3, size=30000, p=[0.2, 0.3, 0.5])
        assert draws.dtype == np.int64 and draws.shape == (30000,)
        np.testing.assert_allclose(np.bincount(draws.asnumpy(), minlength=3) / 30000, [0.2, 0.3, 0.5], atol=0.015)
        perm = mx.np.random.choice(10, size=(2, 5), replace=False).asnumpy()
        assert sorted(perm.ravel().tolist()) == list(range(10))
        picked = mx.np.random.choice(mx.np.array([4.0, 5.0, 6.0]), size=2, replace=False, p=[0.0, 0.5, 0.5])
        assert sorted(picked.asnumpy().tolist()) == [5.0, 6.0]
        assert mx.np.random.choice(4).shape == ()
    with pytest.raises(ValueError, match="larger sample than population"):
        mx.np.random.choice(3, size=4, replace=False)
    with pytest.raises(TypeError):
        mx.np.random.choice(3, shape=(2,))  # numpy's name is size (MXNet's test_exc_handling)


def test_format_spec_applies_to_0d_arrays_only():
    # MXNet 1.9.1 / numpy: a 0-d array formats as its scalar, an array with dimensions refuses a spec
    a = mx.np.array(np.pi)
    ref = np.array(np.pi, dtype=np.float32)
    assert "{:0.3g}".format(a) == "{:0.3g}".format(ref) == "3.14"
    assert "{:>8.2f}".format(mx.np.array(2.5)) == "{:>8.2f}".format(np.float32(2.5))
    assert "{:d}".format(mx.np.array(7, dtype="int32")) == "7"
    v = mx.np.array([np.pi])
    assert "{}".format(v) == "{}".format(v.asnumpy()) == str(v)
    with pytest.raises(TypeError, match="format spec"):
        "{:30}".format(v)


def test_copy_takes_numpy_order_argument():
    a = mx.np.array([2, 3, 4, 5], dtype=np.int32)
    b = a.copy(order="C")
    assert isinstance(b, mx.np.ndarray) and b.dtype == np.int32
    np.testing.assert_array_equal(b.asnumpy(), a.asnumpy().copy())
    b[0] = 9  # a copy, not a view
    assert a.asnumpy()[0] == 2
    with pytest.raises(NotImplementedError, match="only 'C'"):
        a.copy(order="F")


def test_npx_save_load_round_trips_numpy_shapes(tmp_path):
    rng = np.random.RandomState(3)
    shapes = [(2, 0, 1), (), (0, 4), (2, 3), ()]
    refs = [rng.randint(0, 10, size=s).astype(d) for s, d in zip(shapes, ("int64", "float32", "int32",
                                                                           "float64", "int8"))]
    fname = str(tmp_path / "arrays.npx")
    with mx.util.np_shape(True), mx.util.np_array(True):
        arrays = [mx.np.array(r, dtype=r.dtype) for r in refs]
        mx.npx.save(fname, arrays[1])  # one array: a list of one comes back
        one = mx.npx.load(fname)
        assert isinstance(one, list) and len(one) == 1 and type(one[0]) is mx.np.ndarray
        assert one[0].shape == () and one[0].dtype == np.float32 and one[0].item() == refs[1].item()
        mx.npx.save(fname, arrays)
        back = mx.npx.load(fname)
        assert [a.shape for a in back] == shapes and [a.dtype for a in back] == [r.dtype for r in refs]
        for a, r in zip(back, refs):
            np.testing.assert_array_equal(a.asnumpy(), r)
        mx.npx.save(fname, {str(i): a for i, a in enumerate(arrays)})
        named = mx.npx.load(fname)
        assert sorted(named) == [str(i) for i in range(len(refs))]
        for k, a in named.items():
            np.testing.assert_array_equal(a.asnumpy(), refs[int(k)])
        with pytest.raises(TypeError, match="mx.np.ndarray"):
            mx.npx.save(fname, [mx.nd.ones((2,))])
        with pytest.raises(TypeError, match="str keys"):
            mx.npx.save(fname, {1: arrays[0]})
        with pytest.raises(ValueError, match="must be"):
            mx.npx.save(fname, (arrays[0],))
    with pytest.raises(ValueError, match="NumPy semantics"):  # legacy mode refuses, as MXNet
        mx.npx.load(fname)
