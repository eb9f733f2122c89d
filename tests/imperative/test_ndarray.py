"""NDArray creation, properties, copies, devices and DLPack."""
import pickle

import numpy as np
import pytest

import ember as mx
from ember import engine

try:
    import cupy  # noqa: F401
    HAS_GPU = mx.num_gpus() > 0
except ImportError:
    HAS_GPU = False


def test_creation_functions():
    np.testing.assert_array_equal(mx.nd.zeros((2, 3)).asnumpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(mx.nd.ones(4, dtype="int32").asnumpy(), np.ones(4, np.int32))
    np.testing.assert_array_equal(mx.nd.full((2,), 7.5).asnumpy(), [7.5, 7.5])
    assert mx.nd.empty((3, 0)).shape == (3, 0)
    np.testing.assert_array_equal(mx.nd.arange(5).asnumpy(), np.arange(5, dtype=np.float32))
    np.testing.assert_array_equal(mx.nd.arange(1, 4, 0.5, repeat=2).asnumpy(),
                                  np.repeat(np.arange(1, 4, 0.5), 2).astype(np.float32))
    x = mx.nd.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(mx.nd.zeros_like(x).asnumpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal(mx.nd.ones_like(x).asnumpy(), np.ones((2, 2)))


def test_array_dtype_defaults_like_mxnet():
    assert mx.nd.array([1, 2]).dtype == np.float32
    assert mx.nd.array(np.arange(3)).dtype == np.float32  # MXNet: float32 unless given
    assert mx.nd.array(np.arange(3), dtype="int64").dtype == np.int64
    src = mx.nd.array([1, 2], dtype="float64")
    assert mx.nd.array(src).dtype == np.float64
    with pytest.raises(TypeError):
        mx.nd.array([[1, 2], [3]])
    # Python ints out of the integer dtype's range wrap as under MXNet 1.9.1's numpy 1.x (numpy 2 refuses)
    want = np.array([1621, -120, 300], dtype=np.int64).astype(np.uint8)
    np.testing.assert_array_equal(mx.nd.array([1621, -120, 300], dtype="uint8").asnumpy(), want)
    assert mx.nd.array([200], dtype="int8").asnumpy().tolist() == [-56]


def test_properties_and_repr():
    x = mx.nd.array(np.arange(6).reshape(2, 3), ctx=mx.cpu(0))
    assert x.shape == (2, 3) and x.size == 6 and x.ndim == 2
    assert x.dtype is np.float32 and x.context == mx.cpu(0) and x.ctx == mx.cpu(0)
    assert x.stype == "default" and x.grad is None
    if mx.ops.exists("transpose"):
        assert x.T.shape == (3, 2)
    text = repr(x)
    assert text.endswith("<NDArray 2x3 @cpu(0)>") and "[[0. 1. 2.]" in text
    assert x[1, 2].asscalar() == 5.0
    with pytest.raises(ValueError, match="scalar"):
        x.asscalar()
    np.testing.assert_array_equal(np.asarray(x), np.arange(6).reshape(2, 3))


def test_default_context_from_with_block():
    with mx.cpu(1):
        assert mx.nd.zeros((1,)).context == mx.cpu(1)
    assert mx.nd.zeros((1,)).context == mx.cpu(0)


def test_the_same_context_object_can_be_entered_twice():
    one, two = mx.cpu(1), mx.cpu(2)
    assert mx.cpu(1) is one  # contexts are shared objects; entering one keeps no state on it
    with one:
        with two:
            with one:
                assert mx.current_context() == mx.cpu(1)
            assert mx.current_context() == mx.cpu(2)
        assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == mx.cpu(0)


@pytest.mark.parametrize("src,spec,want", [
    ((2, 3, 4), (0, -1), (2, 12)), ((2, 3, 4), (-2,), (2, 3, 4)), ((2, 3, 4), (-3, 4), (6, 4)),
    ((2, 3, 4), (-4, 1, 2, -2), (1, 2, 3, 4)), ((2, 3, 4), (2, -4, -1, 3, 4), (2, 1, 3, 4)),
    ((6,), (-1, 3), (2, 3)), ((2, 3, 4), (-1, 0), (8, 3)),
])
def test_reshape_special_values(src, spec, want):
    x = mx.nd.array(np.arange(np.prod(src)).reshape(src))
    y = x.reshape(spec)
    assert y.shape == want
    assert y.var is x.var  # a view
    np.testing.assert_array_equal(y.asnumpy().ravel(), np.arange(np.prod(src)))


def test_reshape_reverse_and_call_forms():
    x = mx.nd.zeros((10, 5, 4))
    assert x.reshape((-1, 0), reverse=True).shape == (50, 4)
    assert x.reshape(20, 10).shape == (20, 10)
    assert x.reshape(shape=(200,)).shape == (200,)


def test_astype_copy_copyto_as_in_context():
    a = np.array([1.7, -2.2, 3.0], np.float32)
    x = mx.nd.array(a)
    y = x.astype("int32")
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y.asnumpy(), a.astype(np.int32))
    assert x.astype(np.float32, copy=False) is x
    c = x.copy()
    c[:] = 0
    np.testing.assert_array_equal(x.asnumpy(), a)
    target = mx.nd.zeros((3,), dtype="float64")
    assert x.copyto(target) is target
    np.testing.assert_allclose(target.asnumpy(), a.astype(np.float64))
    other = x.copyto(mx.cpu(1))
    assert other.context == mx.cpu(1) and other.var is not x.var
    assert x.as_in_context(mx.cpu(0)) is x
    with pytest.raises(ValueError, match="shape"):
        x.copyto(mx.nd.zeros((4,)))
    with pytest.raises(TypeError):
        x.copyto("cpu")


def test_wrap_uses_the_given_var():
    var = engine.Var("planned")
    buf = np.zeros(4, np.float32)
    x = mx.nd.NDArray._wrap(buf, var, mx.cpu())
    assert x.var is var
    x += 2
    x.wait_to_read()
    np.testing.assert_array_equal(buf, np.full(4, 2.0))
    del x  # the var is not owned: it stays usable
    engine.push(lambda: None, read=(var,))
    engine.wait(var)


def test_from_numpy_zero_copy_and_copy():
    a = np.arange(4, dtype=np.float32)
    x = mx.nd.from_numpy(a, zero_copy=True)
    x += 1
    x.wait_to_read()
    np.testing.assert_array_equal(a, [1, 2, 3, 4])
    y = mx.nd.from_numpy(a, zero_copy=False)
    y += 1
    y.wait_to_read()
    np.testing.assert_array_equal(a, [1, 2, 3, 4])
    with pytest.raises(ValueError, match="contiguous"):
        mx.nd.from_numpy(np.ones((3, 3))[:, 1])


def test_dlpack_round_trip_shares_memory():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x += 1  # pending write: export must wait for it
    y = mx.nd.from_dlpack(x.to_dlpack_for_write())
    y += 10
    y.wait_to_read()  # y has its own var: writes through it are ordered only among y's ops
    np.testing.assert_array_equal(x.asnumpy(), [12, 13, 14])
    n = np.from_dlpack(x)  # __dlpack__ / __dlpack_device__
    np.testing.assert_array_equal(n, [12, 13, 14])
    z = mx.nd.from_dlpack(np.arange(3.0))
    np.testing.assert_array_equal(z.asnumpy(), [0, 1, 2])
    r = mx.nd.from_dlpack(mx.nd.to_dlpack_for_read(x))
    np.testing.assert_array_equal(r.asnumpy(), [12, 13, 14])
    with pytest.raises(TypeError):
        mx.nd.from_dlpack([1, 2])


def test_pickle_round_trip():
    x = mx.nd.array([[1, 2], [3, 4]], dtype="float64")
    y = pickle.loads(pickle.dumps(x))
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())


def test_op_methods_dispatch_to_registry_ops():
    x = mx.nd.array([[1.0, -2.0], [3.0, 4.0]])
    np.testing.assert_allclose(x.sum(axis=1).asnumpy(), [-1.0, 7.0])


def test_gpu_context_without_cupy_is_a_clear_error():
    if HAS_GPU:
        pytest.skip("a GPU is present")
    with pytest.raises(mx.base.EmberError, match="gpu|GPU|CuPy"):
        mx.nd.zeros((2,), ctx=mx.gpu(0))


@pytest.mark.skipif(not HAS_GPU, reason="needs CuPy and a GPU")
def test_gpu_arrays_round_trip_and_mixing_is_an_error():
    g = mx.nd.array([1.0, 2.0], ctx=mx.gpu(0))
    assert type(g._data).__module__.startswith("cupy")
    np.testing.assert_array_equal((g + g).asnumpy(), [2.0, 4.0])
    np.testing.assert_array_equal(g.copyto(mx.cpu()).asnumpy(), [1.0, 2.0])
    with pytest.raises(mx.base.ContextError):
        g + mx.nd.ones((2,))


def test_setitem_copies_a_value_from_another_context():
    # as MXNet's x[:] = y (copyto): the value is copied over, whole or into a slice
    x = mx.nd.zeros((2, 3), ctx=mx.cpu(1))
    x[:] = mx.nd.ones((2, 3), ctx=mx.cpu(0))
    x[1, 1:] = mx.nd.array([5.0, 6.0], ctx=mx.cpu(0))
    np.testing.assert_array_equal(x.asnumpy(), [[1, 1, 1], [1, 5, 6]])
    assert x.context == mx.cpu(1)


def test_copies_make_an_engine_var_only_when_the_engine_needs_one():
    import threading
    x = mx.nd.arange(6).reshape((2, 3))
    y = x.copy()
    z = x[:, 1:]  # a strided slice: copied into a fresh array
    assert y._chunk._var is None and z._chunk._var is None  # ran at once: no var, no release op later
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    np.testing.assert_array_equal(z.asnumpy(), x.asnumpy()[:, 1:])
    gate = threading.Event()
    engine.push(lambda: (gate.wait(10), x._data.fill(7)), write=[x._chunk.var], name="held write")
    try:
        w = x.copy()  # must wait for the held write: it is pushed, and its fresh output gets a var
        assert w._chunk._var is not None
    finally:
        gate.set()
    np.testing.assert_array_equal(w.asnumpy(), np.full((2, 3), 7.0))


def test_stack_settled_stacks_now_only_what_nothing_can_be_pending_on():
    import threading
    from ember.imperative.copying import stack_settled
    parts = [mx.nd.array(np.full((2, 3), i, np.float32)) for i in range(4)]
    got = stack_settled(parts)
    assert got is not None and got.shape == (4, 2, 3) and got._chunk._var is None
    np.testing.assert_array_equal(got.asnumpy(), np.stack([p.asnumpy() for p in parts]))
    # a part with an engine var may have a write pending: the op's ordered path must take it
    gate = threading.Event()
    engine.push(lambda: (gate.wait(10), parts[1]._data.fill(9)), write=[parts[1]._chunk.var], name="held")
    try:
        assert stack_settled(parts) is None
        pending = mx.nd.stack(*parts)
    finally:
        gate.set()
    assert pending.asnumpy()[1].tolist() == [[9, 9, 9], [9, 9, 9]]
    assert stack_settled([parts[0], mx.nd.zeros((3, 2))]) is None          # shapes differ: the op's error
    assert stack_settled([parts[0], parts[2].astype("float64")]) is None   # dtypes differ
    assert stack_settled([]) is None and stack_settled([np.zeros(2)]) is None
    # 0-d samples (numpy's stack) and samples of one row or none (joined along their first axis)
    for shape in ((), (1,), (1, 5), (0, 3), (3, 1, 2)):
        rs = np.random.RandomState(len(shape))
        samples = [rs.standard_normal(shape).astype(np.float32) for _ in range(5)]
        got = stack_settled([mx.nd.array(s) if s.ndim else mx.nd.array(s.reshape(1)).reshape(()) for s in samples])
        assert got.shape == (5,) + shape
        np.testing.assert_array_equal(got.asnumpy(), np.stack(samples))
