"""Bad input: a clear error at the call when knowable, else at the next read; nothing else lost."""
import gc

import numpy as np
import pytest

import ember as mx
from ember.base import ContextError, DTypeError, EmberError, FreedArrayError, OperatorError, ShapeError


def test_shape_mismatch_raises_at_call_and_pushes_nothing():
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((4, 3))
    with pytest.raises(ShapeError, match="broadcast_add"):
        a + b
    np.testing.assert_array_equal(a.asnumpy(), np.ones((2, 3)))


def test_dtype_mismatch_raises_at_call():
    a = mx.nd.ones((2,), dtype="float32")
    b = mx.nd.ones((2,), dtype="float64")
    with pytest.raises(DTypeError):
        a + b


def test_out_with_wrong_shape_or_dtype():
    a = mx.nd.ones((2, 3))
    with pytest.raises(ShapeError, match="out="):
        mx.nd.broadcast_add(a, a, out=mx.nd.zeros((3, 2)))
    with pytest.raises(DTypeError, match="out="):
        mx.nd.broadcast_add(a, a, out=mx.nd.zeros((2, 3), dtype="float64"))
    with pytest.raises(TypeError, match="out="):
        mx.nd.broadcast_add(a, a, out=np.zeros((2, 3)))


def test_unknown_attribute_and_bad_arguments():
    a = mx.nd.ones((2,))
    with pytest.raises(OperatorError, match="unknown attribute 'scalr'"):
        mx.nd._plus_scalar(a, scalr=1.0)
    with pytest.raises(OperatorError, match="invalid value"):
        mx.nd._plus_scalar(a, scalar="abc")
    with pytest.raises(OperatorError, match="missing input 'rhs'"):
        mx.nd.broadcast_add(a)
    # an op without attributes ignores what it is given, as MXNet's ops without a parameter struct
    # (MXNet's test_cosine_loss passes axis= to broadcast_maximum)
    np.testing.assert_array_equal(mx.nd.broadcast_maximum(a, mx.nd.zeros((2,)), axis=1).asnumpy(), [1, 1])
    assert mx.sym.broadcast_maximum(mx.sym.var("x"), mx.sym.var("y"), axis=1).list_attr() == {"axis": "1"}
    with pytest.raises(TypeError, match="must be an NDArray|positional"):
        mx.nd.broadcast_add(a, np.ones(2))
    with pytest.raises(OperatorError, match="unknown operator"):
        mx.imperative.invoke("no_such_op", [a], {})
    with pytest.raises(AttributeError, match="no_such_op"):
        mx.nd.no_such_op


def test_wrong_context_is_a_context_error():
    a = mx.nd.ones((2,), ctx=mx.cpu(0))
    b = mx.nd.ones((2,), ctx=mx.cpu(1))
    with pytest.raises(ContextError, match="cpu\\(0\\).*cpu\\(1\\)"):
        a + b
    with pytest.raises(ContextError):
        mx.nd.broadcast_add(a, a, out=mx.nd.zeros((2,), ctx=mx.cpu(1)))
    with pytest.raises(ContextError):
        a[mx.nd.array([0], ctx=mx.cpu(1))]


def test_async_kernel_error_raises_at_next_read_with_original_type():
    a = mx.nd.ones((3,))
    bad = mx.nd._test_imperative_fail(a)  # returns at once
    dependent = bad + 1  # reads a failed array: inherits the error
    with pytest.raises(ValueError, match="test kernel failure"):
        dependent.wait_to_read()
    bad.asnumpy()  # the same error, raised once (MXNet clears it)
    np.testing.assert_array_equal((a + 1).asnumpy(), np.full(3, 2.0))  # nothing else lost
    mx.nd.waitall()


def test_freed_array_raises_freed_array_error():
    a = mx.nd.ones((4,))
    view = a[1:3]
    a._free()
    for use in (lambda: a.asnumpy(), lambda: a + 1, lambda: view.asnumpy(), lambda: view[0],
                lambda: mx.nd.broadcast_add(mx.nd.ones((4,)), mx.nd.ones((4,)), out=a)):
        with pytest.raises(FreedArrayError, match="freed"):
            use()
    assert isinstance(FreedArrayError("x"), EmberError)


def test_storage_is_released_only_after_pending_ops(monkeypatch):
    import threading

    import ember.memory as memory
    from ember import ops
    from ember.ops import OpDef

    if mx.engine.engine_type() == "NaiveEngine":
        pytest.skip("needs an asynchronous engine (NaiveEngine runs every op at push)")
    gate = threading.Event()
    ran = []

    def slow(ctx, attrs, inputs, outputs, aux):
        gate.wait(10)
        outputs[0][...] = inputs[0]
        ran.append(True)

    if not ops.exists("_test_imperative_slow"):
        ops.register(OpDef("_test_imperative_slow", infer_shape=lambda a, s: (s, [s[0]]),
                           kernels={"any": slow}))
    released = []
    real_release = memory.release

    def spy(block):
        released.append((block, bool(ran)))
        real_release(block)

    monkeypatch.setattr(memory, "release", spy)
    import sys
    invoke = sys.modules["ember.imperative.invoke"]
    monkeypatch.setattr(invoke, "LARGE_OPS_IN_CALLER", False)
    big = invoke.INLINE_MAX_ELEMENTS + 1  # never run inline in this thread (larger ops are pushed)
    x = mx.nd.ones((big,))
    y = mx.nd._test_imperative_slow(x)
    block = y._chunk.block
    released.clear()  # the pool reuses Block objects: only releases from now on concern y's storage
    del y
    gc.collect()
    assert all(b is not block for b, _ in released)  # still pending: not released yet
    gate.set()
    mx.nd.waitall()
    mine = [after for b, after in released if b is block]
    assert mine == [True]


def test_bool_and_len_rules():
    assert not mx.nd.zeros((1,))
    assert mx.nd.ones((1,))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(mx.nd.ones((2,)))
    assert len(mx.nd.ones((5, 2))) == 5


def test_reshape_errors():
    a = mx.nd.ones((2, 3))
    with pytest.raises(ShapeError):
        a.reshape((4, 2))
    with pytest.raises(ShapeError):
        a.reshape((-1, -1))



def test_storage_freed_by_the_cyclic_gc_is_released_after_the_pass(monkeypatch):
    """A cyclic GC pass can start while this thread holds a memory manager's lock (GC triggered by
    an allocation there); releasing in the pass could deadlock on that lock, so nothing is pushed
    in it: the releases wait for the next allocation (tests/imperative/test_gc_release.py)."""
    import sys
    storage = sys.modules["ember.imperative.storage"]
    seen = []
    real_push = storage.engine.push

    def spy(fn, *args, **kwargs):
        if kwargs.get("name") == "release_storage":
            seen.append(kwargs.get("inline"))
        return real_push(fn, *args, **kwargs)

    class Holder:
        pass

    gc.collect()
    monkeypatch.setattr(storage.engine, "push", spy)
    gc.disable()  # keep the cycles for the explicit collection below
    try:
        for _ in range(3):
            h = Holder()
            h.me = h
            h.arr = mx.nd.ones((100000,)) + 1  # a manager block, an op pushed on it: an engine var
            h.arr.wait_to_read()
            del h
        seen.clear()
        gc.collect()
        in_gc = list(seen)
        waiting = len(storage._after_gc)
        x = mx.nd.ones((8,))  # an allocation: the waiting releases are pushed first
        after = list(seen)
        del x
    finally:
        gc.enable()
    assert in_gc == [] and waiting == 3
    assert after == [True, True, True]
