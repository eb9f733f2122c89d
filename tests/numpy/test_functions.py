"""mx.np's function library against numpy: broadcasting, 0-d and zero-size shapes, reductions,
products, shape functions, numpy-style indexing, the dtype rules of MXNet 1.9.1's mx.np (recorded
from MXNet itself where they differ from numpy), autograd through mx.np functions, mx.np.random
and the npx operators."""
import numpy as onp
import pytest

import ember as mx
from ember.base import MXNetError

np = mx.np
R = onp.random.default_rng(3)


@pytest.fixture(autouse=True)
def numpy_shapes():
    with mx.np_shape(True):  # 0-d and zero-size arrays, as MXNet's mx.np is used (npx.set_np)
        yield


def _r(*shape):
    return R.uniform(0.5, 2.0, size=shape).astype(onp.float32)


def _same(got, want, rtol=1e-5, atol=1e-6):
    assert isinstance(got, np.ndarray), type(got)
    assert got.shape == onp.shape(want), (got.shape, onp.shape(want))
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=rtol, atol=atol)


BROADCAST_SHAPES = [((2, 3), (2, 3)), ((2, 1, 3), (4, 1)), ((), (3,)), ((3,), ()), ((0, 3), (1, 3)),
                    ((2, 0), (1,)), ((1,), (2, 2))]


@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "true_divide", "power", "maximum", "minimum"])
@pytest.mark.parametrize("sa,sb", BROADCAST_SHAPES)
def test_binary_functions_broadcast_like_numpy(name, sa, sb):
    a, b = _r(*sa), _r(*sb)
    _same(getattr(np, name)(np.array(a), np.array(b)), getattr(onp, name)(a, b), rtol=1e-5)


@pytest.mark.parametrize("sa,sb", BROADCAST_SHAPES)
def test_operators_and_comparisons_broadcast_like_numpy(sa, sb):
    a, b = _r(*sa), _r(*sb)
    x, y = np.array(a), np.array(b)
    _same(x + y, a + b)
    _same(x * 2.0 - y / 3.0, a * 2 - b / 3)
    _same(2.0 - x, 2 - a)
    got = x > y
    assert got.dtype == onp.bool_
    _same(got, a > b)
    _same(x == y, a == b)


# (left dtype, right dtype or a Python scalar, operator, result dtype): MXNet 1.9.1's mx.np
DTYPE_RULES = [
    ("int32", "float32", "+", "float32"),     # numpy: float64
    ("int32", "float64", "+", "float64"),
    ("int32", "int64", "+", "int64"),
    ("int64", "float32", "+", "float32"),
    ("uint8", "int32", "+", "int32"),
    ("float16", "float32", "+", "float32"),
    ("float16", "int32", "+", "float16"),
    ("bool", "int32", "+", "int32"),
    ("bool", "bool", "*", "bool"),
    ("int32", 1.5, "+", "int32"),              # the array's dtype is kept with a Python scalar
    ("int32", 2, "*", "int32"),
    ("float64", 2.0, "*", "float64"),
    ("bool", 1, "+", "int64"),
    ("int32", "int32", "/", "float32"),        # true division of integers
    ("int64", "int64", "/", "float32"),
    ("int32", 2, "/", "float32"),
    ("float16", 2, "/", "float16"),
    ("int32", "float32", "**", "float32"),
    ("int32", 2, "%", "int32"),
]


@pytest.mark.parametrize("da,db,op,want", DTYPE_RULES)
def test_binary_dtype_rules_are_mxnets(da, db, op, want):
    a = np.array([1, 2, 3], dtype=da)
    b = db if not isinstance(db, str) else np.array([1, 2, 1], dtype=db)
    got = {"+": lambda: a + b, "*": lambda: a * b, "/": lambda: a / b, "**": lambda: a ** b,
           "%": lambda: a % b}[op]()
    assert got.dtype == onp.dtype(want)
    ref = {"+": onp.add, "*": onp.multiply, "/": onp.true_divide, "**": onp.power, "%": onp.mod}[op](
        a.asnumpy(), b if not isinstance(b, np.ndarray) else b.asnumpy())
    if not (da.startswith("int") and isinstance(db, float)):  # int32 + 1.5: MXNet casts the scalar to int
        onp.testing.assert_allclose(got.asnumpy(), ref.astype(want), rtol=1e-3)


def test_mixed_dtypes_that_mxnet_refuses_are_promoted():
    i, f = np.array([1, 2, 3], dtype="int32"), np.array([1.5, 2.0, 0.5])
    assert np.maximum(i, f).dtype == onp.float32
    _same(np.maximum(i, f), [1.5, 2.0, 3.0])
    _same(np.concatenate([i, f]), [1, 2, 3, 1.5, 2, 0.5])
    _same(i > f, [False, False, True])
    _same(i == 2.5, [False, False, False])  # compared exactly, as numpy
    with pytest.raises(TypeError, match="boolean subtract"):
        np.array([True], dtype="bool") - np.array([False], dtype="bool")


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod", "std", "var"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (None, True), (0, False), (1, True), ((0, 2), False),
                                           (-1, False)])
def test_reductions_match_numpy(name, axis, keepdims):
    a = _r(2, 3, 4)
    got = getattr(np, name)(np.array(a), axis=axis, keepdims=keepdims)
    _same(got, getattr(onp, name)(a, axis=axis, keepdims=keepdims), rtol=1e-4)
    method = getattr(np.array(a), name)(axis=axis, keepdims=keepdims)
    _same(method, getattr(onp, name)(a, axis=axis, keepdims=keepdims), rtol=1e-4)


def test_full_reductions_are_0d_and_keep_mxnets_dtypes():
    i = np.array([[1, 5], [3, 2]], dtype="int32")
    assert np.sum(i).shape == () and np.sum(i).dtype == onp.int32 and int(np.sum(i)) == 11
    assert np.mean(i).dtype == onp.float32 and float(np.mean(i)) == 2.75
    assert np.sum(np.array([True, False, True], dtype="bool")).dtype == onp.int64
    assert np.argmax(i).dtype == onp.int64 and int(np.argmax(i)) == 1
    _same(np.argmax(i, axis=0), [1, 0])
    _same(np.argmin(i, axis=1, keepdims=True), [[0], [1]])
    assert np.std(np.array([1.0, 2, 4]), ddof=1).item() == pytest.approx(onp.std([1, 2, 4], ddof=1), rel=1e-6)
    b = np.array([[True, False], [True, True]], dtype="bool")
    _same(np.all(b, axis=1), [False, True])
    _same(np.any(b, axis=0), [True, True])
    assert np.all(b).shape == () and not bool(np.all(b))


def test_zero_size_and_0d_arrays():
    z = np.zeros((0, 3))
    _same(np.sum(z, axis=0), onp.zeros(3))
    assert np.sum(z).shape == () and float(np.sum(z)) == 0.0
    with pytest.raises(MXNetError, match="zero-size array"):
        np.max(z, axis=0)
    assert onp.isnan(np.mean(z, axis=0).asnumpy()).all()
    _same(np.any(z, axis=0), [False] * 3)
    _same(np.all(z, axis=0), [True] * 3)
    s = np.array(5.0)
    assert s.shape == () and s.ndim == 0 and s.size == 1
    _same(np.sum(s), 5.0)
    _same(s * np.ones((2,)), [5.0, 5.0])
    _same(np.broadcast_to(s, (2, 2)), onp.full((2, 2), 5.0))
    _same(np.concatenate([z, np.ones((2, 3))]), onp.ones((2, 3)))
    assert np.ones((2, 3))[1, 2].shape == ()


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                   ((2, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((), (2, 2))])
def test_dot_matches_numpy(sa, sb):
    a, b = _r(*sa), _r(*sb)
    _same(np.dot(np.array(a), np.array(b)), onp.dot(a, b), rtol=1e-5)


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 4)), ((5, 2, 3), (3, 4)), ((2, 1, 2, 3), (4, 3, 2)),
                                   ((3,), (3, 2)), ((2, 3), (3,)), ((4, 2, 3), (3,)), ((3,), (3,))])
def test_matmul_matches_numpy(sa, sb):
    a, b = _r(*sa), _r(*sb)
    _same(np.matmul(np.array(a), np.array(b)), onp.matmul(a, b), rtol=1e-5)
    _same(np.array(a) @ np.array(b), a @ b, rtol=1e-5)


def test_shape_functions_match_numpy():
    a = _r(2, 3, 4)
    x = np.array(a)
    _same(np.transpose(x), onp.transpose(a))
    _same(np.transpose(x, (2, 0, 1)), onp.transpose(a, (2, 0, 1)))
    _same(np.swapaxes(x, 0, 2), onp.swapaxes(a, 0, 2))
    _same(np.moveaxis(x, 0, -1), onp.moveaxis(a, 0, -1))
    _same(np.expand_dims(x, 1), onp.expand_dims(a, 1))
    _same(np.squeeze(np.ones((1, 3, 1)), axis=2), onp.ones((1, 3)))
    _same(np.ravel(x), a.ravel())
    _same(np.flip(x, 1), onp.flip(a, 1))
    _same(np.tile(x, (2, 1, 1, 2)), onp.tile(a, (2, 1, 1, 2)))
    _same(np.repeat(x, 2, axis=1), onp.repeat(a, 2, axis=1))
    _same(np.repeat(x, 2), onp.repeat(a, 2))
    _same(np.stack([x, x], axis=-1), onp.stack([a, a], axis=-1))
    _same(np.concatenate([x, x], axis=None), onp.concatenate([a, a], axis=None))
    for got, want in zip(np.split(x, [1, 3], axis=2), onp.split(a, [1, 3], axis=2)):
        _same(got, want)
    for got, want in zip(np.split(x, 2), onp.split(a, 2)):
        _same(got, want)
    _same(np.clip(x, 0.8, 1.5), onp.clip(a, 0.8, 1.5))
    _same(np.cumsum(x, axis=1), onp.cumsum(a, axis=1), rtol=1e-5)
    _same(np.sort(x, axis=1), onp.sort(a, axis=1))
    assert np.argsort(x).dtype == onp.int64
    _same(np.argsort(x), onp.argsort(a))
    cond = a > 1.0
    _same(np.where(np.array(cond), x, 0.0), onp.where(cond, a, 0.0))
    _same(np.where(np.array(cond[:, :1]), x, np.zeros((4,))), onp.where(cond[:, :1], a, onp.zeros(4)))
    _same(np.linspace(0, 1, 5), onp.linspace(0, 1, 5))
    _same(np.linspace(2, 3, 4, endpoint=False), onp.linspace(2, 3, 4, endpoint=False))
    _same(np.eye(3, 4, k=1), onp.eye(3, 4, k=1))
    with pytest.raises(ValueError, match="equal division"):  # MXNet's class
        np.split(x, 3, axis=2)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "tanh", "abs", "negative", "square", "floor"])
def test_elementwise_math_matches_numpy(name):
    a = _r(2, 3)
    _same(getattr(np, name)(np.array(a)), getattr(onp, name)(a), rtol=1e-5)


def test_elementwise_math_keeps_integer_dtypes_and_refuses_bool_as_mxnet():
    i = np.array([1, 4, 9], dtype="int32")
    assert np.sqrt(i).dtype == onp.int32
    _same(np.sqrt(i), [1, 2, 3])
    with pytest.raises(MXNetError, match="bool"):
        np.sin(np.array([True], dtype="bool"))
    x = np.array([1.0, onp.nan, onp.inf, -onp.inf])
    _same(np.isnan(x), [False, True, False, False])
    _same(np.isinf(x), [False, False, True, True])
    _same(np.isfinite(x), [True, False, False, False])


def test_numpy_indexing_shapes():
    a = _r(3, 4)
    x = np.array(a)
    assert x[1].shape == (4,)
    assert x[1, 2].shape == () and x[1, 2].item() == pytest.approx(float(a[1, 2]))
    assert np.array(a[0])[2].shape == ()
    _same(x[:, 1], a[:, 1])
    _same(x[None, 1:3], a[None, 1:3])


def test_autograd_through_numpy_functions():
    a, w = _r(2, 3), _r(3, 4)
    x = np.array(a)
    x.attach_grad()
    with mx.autograd.record():
        y = np.sum(np.exp(x) * 2.0) + np.mean(np.matmul(x, np.array(w)))
    y.backward()
    assert isinstance(x.grad, np.ndarray)
    want = 2 * onp.exp(a) + onp.broadcast_to(w.sum(1) / 8.0, (2, 3))
    onp.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5)


def test_np_random_samples_shapes_ranges_and_seed():
    mx.random.seed(5)
    u = np.random.uniform(2.0, 3.0, size=(1000,))
    assert isinstance(u, np.ndarray) and u.dtype == onp.float32
    assert 2.0 <= float(np.min(u)) and float(np.max(u)) < 3.0
    assert np.random.normal(size=None).shape == ()
    k = np.random.randint(0, 4, size=(2, 50))
    assert k.dtype == onp.int64 and set(onp.unique(k.asnumpy())) <= {0, 1, 2, 3}
    np.random.seed(11)
    first = np.random.normal(1.0, 2.0, size=(5,)).asnumpy()
    np.random.seed(11)
    onp.testing.assert_array_equal(np.random.normal(1.0, 2.0, size=(5,)).asnumpy(), first)


def test_npx_operators_return_np_arrays_with_registry_numbers():
    a = _r(2, 5) - 1.0
    x = np.array(a)
    got = mx.npx.softmax(x, axis=-1)
    assert isinstance(got, np.ndarray)
    e = onp.exp(a - a.max(-1, keepdims=True))
    onp.testing.assert_allclose(got.asnumpy(), e / e.sum(-1, keepdims=True), rtol=1e-5)
    _same(mx.npx.relu(x), onp.maximum(a, 0))
    _same(mx.npx.one_hot(np.array([0, 2]), depth=3), onp.eye(3)[[0, 2]])
    fc = mx.npx.fully_connected(x, np.ones((3, 5)), np.zeros((3,)), num_hidden=3)
    _same(fc, a @ onp.ones((5, 3)), rtol=1e-5)


def test_np_shape_switches():
    assert mx.is_np_shape()
    with mx.np_shape(False):
        assert not mx.is_np_shape()

        @mx.use_np_shape
        def inside():
            return mx.is_np_shape()
        assert inside() and not mx.is_np_shape()
    prev = mx.set_np_shape(False)
    try:
        assert prev is True and not mx.util.is_np_shape()
    finally:
        mx.set_np_shape(prev)
    assert not mx.npx.is_np_array()


def test_boolean_mask_indexing_and_assignment():
    a = onp.arange(12, dtype=onp.float32).reshape(3, 4) - 5
    x = np.array(a)
    _same(x[x > 0], a[a > 0])
    rows = onp.array([True, False, True])
    _same(x[np.array(rows, dtype="bool")], a[rows])
    y = np.array(a)
    y.attach_grad()
    with mx.autograd.record():
        z = np.sum(y[y > 2] * 2.0)
    z.backward()
    onp.testing.assert_array_equal(y.grad.asnumpy(), onp.where(a > 2, 2.0, 0.0))
    x[x < 0] = 0
    onp.testing.assert_array_equal(x.asnumpy(), onp.maximum(a, 0))
    x[np.array(rows, dtype="bool")] = np.array([9.0, 8, 7, 6])
    want = onp.maximum(a, 0)
    want[rows] = [9, 8, 7, 6]
    onp.testing.assert_array_equal(x.asnumpy(), want)
    with pytest.raises(IndexError, match="boolean index"):
        x[np.array([True, False], dtype="bool")]


def test_np_random_multinomial_counts_follow_pvals():
    mx.random.seed(7)
    pvals = [0.1, 0.2, 0.3, 0.4, 0.0]
    for p in (pvals, np.array(pvals)):
        for size, shape in ((None, (5,)), ((), (5,)), (3, (3, 5)), ((2, 4), (2, 4, 5))):
            counts = np.random.multinomial(20000, p, size=size)
            assert type(counts) is np.ndarray and counts.dtype == onp.int64 and counts.shape == shape
            rows = counts.asnumpy().reshape(-1, 5)
            assert (rows.sum(axis=1) == 20000).all() and (rows[:, 4] == 0).all()
            onp.testing.assert_allclose(rows / 20000.0, onp.broadcast_to(pvals, rows.shape), atol=0.02)
    # numpy's rule: the last outcome takes what the others leave
    assert np.random.multinomial(10, [1.0, 0.5]).asnumpy().tolist() == [10, 0]
    for size in (0, (0, 2), (4, 0, 2)):
        assert np.random.multinomial(10, pvals, size=size).size == 0
    assert np.random.multinomial(10, []).shape == (0,)
    mx.random.seed(3)
    first = np.random.multinomial(50, pvals, size=4).asnumpy()
    mx.random.seed(3)
    onp.testing.assert_array_equal(np.random.multinomial(50, pvals, size=4).asnumpy(), first)
    for bad in ([[0.2, 0.8]], onp.array([0.5, 0.5]), [-0.1, 1.1], [0.7, 0.7, 0.0]):
        with pytest.raises(ValueError):
            np.random.multinomial(10, bad)


def test_sort_and_argsort_take_numpy_kind():
    a = R.uniform(size=(4, 5)).astype(onp.float32)
    x = np.array(a)
    for kind in (None, "quicksort", "mergesort", "heapsort", "stable"):
        onp.testing.assert_array_equal(np.sort(x, axis=0, kind=kind).asnumpy(), onp.sort(a, axis=0, kind=kind))
        onp.testing.assert_array_equal(onp.sort(x, kind=kind).asnumpy(), onp.sort(a, kind=kind))  # dispatched
        onp.testing.assert_array_equal(np.argsort(x, axis=None, kind=kind).asnumpy(), onp.argsort(a, axis=None))
    with pytest.raises(ValueError, match="kind"):
        np.sort(x, kind="bogo")
    with pytest.raises(NotImplementedError, match="order"):
        np.argsort(x, order="f0")


def test_take_vstack_rand_and_numpy1_constants():
    a = R.uniform(size=(3, 4)).astype(onp.float32)
    x = np.array(a)
    for idx, axis in (([2, -1, 0], None), ([[1], [-3]], 0), (onp.array([3, 0]), 1), ([-1], -1)):
        got = np.take(x, np.array(idx, dtype="int64"), axis=axis)
        onp.testing.assert_array_equal(got.asnumpy(), onp.take(a, idx, axis=axis))
    onp.testing.assert_array_equal(np.take(x, np.array([1.0, 5.0]), axis=1, mode="clip").asnumpy(),
                                   onp.take(a, [1, 5], axis=1, mode="clip"))
    onp.testing.assert_array_equal(np.take(x, np.array([5], dtype="int32"), axis=1, mode="wrap").asnumpy(),
                                   onp.take(a, [5], axis=1, mode="wrap"))
    with pytest.raises(IndexError, match="out of bounds"):
        np.take(x, np.array([4], dtype="int64"), axis=1)
    with pytest.raises(ValueError, match="mode"):
        np.take(x, np.array([0], dtype="int64"), mode="nearest")
    x.attach_grad()
    with mx.autograd.record():
        y = np.take(x, np.array([0, 0, -1], dtype="int64"), axis=0)
    y.backward()
    onp.testing.assert_array_equal(x.grad.asnumpy(), onp.array([[2.0] * 4, [0.0] * 4, [1.0] * 4]))
    parts = [onp.arange(3.0), onp.ones((2, 3)), onp.array(7.0) * onp.ones(3)]
    stacked = np.vstack([np.array(p, dtype=p.dtype) for p in parts])
    onp.testing.assert_array_equal(stacked.asnumpy(), onp.vstack(parts))
    mx.random.seed(2)
    u, n = np.random.rand(200, 3), np.random.randn(5000)
    assert u.shape == (200, 3) and u.dtype == onp.float32 and 0 <= float(u.min()) and float(u.max()) < 1
    assert abs(float(n.mean())) < 0.1 and abs(float(n.std()) - 1) < 0.1 and np.random.rand().shape == ()
    assert (np.PZERO, np.PINF, np.NINF) == (0.0, onp.inf, -onp.inf) and onp.signbit(np.NZERO)


def test_boolean_indices_anywhere_in_a_key_follow_numpy():
    a = R.uniform(size=(3, 2, 3)).astype(onp.float32)
    m = onp.array([[False, True, True], [False, True, False]])
    b = onp.array([[True, False], [False, True], [True, True]])
    x = np.array(a)
    T, F = np.array(True, dtype="bool"), np.array(False, dtype="bool")
    cases = [((T,), (True,)), ((F,), (False,)), ((slice(None), np.array(m, dtype="bool")), (slice(None), m)),
             ((np.array(b, dtype="bool"), 1), (b, 1)), ((0, True, True, np.array(m, dtype="bool")), (0, True, True, m)),
             (([True, False, True],), ([True, False, True],)), ((None, 1, [False, True]), (None, 1, [False, True]))]
    for key, ref in cases:
        got = x[key if len(key) > 1 else key[0]]
        want = a[ref if len(ref) > 1 else ref[0]]
        assert type(got) is np.ndarray and got.shape == want.shape and got.dtype == onp.float32
        onp.testing.assert_array_equal(got.asnumpy(), want)
    # the gradient of a gather of masked elements lands on exactly those elements, repeats summed
    x.attach_grad()
    with mx.autograd.record():
        picked = x[:, np.array(m, dtype="bool")] * np.arange(9).reshape(3, 3) + x[0, True, True, np.array(m, dtype="bool")]
    picked.backward()
    want = onp.zeros_like(a)
    want[:, m] += onp.arange(9).reshape(3, 3)
    want[0, m] += 3  # broadcast over 3 rows of the first term's shape
    onp.testing.assert_allclose(x.grad.asnumpy(), want)
    # assignment through the same keys, in place
    y, ref = np.array(a), a.copy()
    for key, value in (((0, True, True, m), 7.0), ((False, 1), 8.0), ((slice(None), m), onp.array([1.0, 2, 3])),
                       (([True, False, True],), 5.0)):
        mkey = tuple(np.array(k, dtype="bool") if isinstance(k, onp.ndarray) else k for k in key)
        ref[key] = value
        y[mkey] = np.array(value) if isinstance(value, onp.ndarray) else value
        onp.testing.assert_array_equal(y.asnumpy(), ref)
    for bad in (np.array([True], dtype="bool"), np.zeros((4, 4), dtype="bool")):
        with pytest.raises(IndexError):
            np.ones((5, 4, 3))[bad]
    with pytest.raises(IndexError):
        np.ones((5, 4, 3))[0, [True, False]]


def test_operators_with_other_types():
    x = np.array([1.0, 2.0])
    assert (x == None) is False  # noqa: E711 - numpy's answer for an unsupported operand
    assert (x != "a") is True
    _same(x + [1, 2], [2.0, 4.0])
    _same(2 ** x, [2.0, 4.0])
    assert [float(v) for v in x] == [1.0, 2.0]
