"""The tiny-op path (ember/imperative/fastpath.py): same results, ordering and errors as the general path."""
import contextlib
import threading
import time

import numpy as np
import pytest

import ember as mx
from ember import engine, ops
from ember.imperative import fastpath
from ember.imperative.invoke import INLINE_MAX_ELEMENTS
from ember.ops import registry

_BINARY = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide, "**": np.power,
           "==": np.equal, "!=": np.not_equal, ">": np.greater, ">=": np.greater_equal,
           "<": np.less, "<=": np.less_equal}


def _apply(op, x, y):
    return eval(f"x {op} y", {}, {"x": x, "y": y})


def _forms():
    """Every registered op that declares a ufunc form for its CPU kernel."""
    for name in ops.list():
        if ops.get(name).cpu_ufunc() is not None:
            yield name, ops.get(name).kernel("cpu")


def test_operators_on_small_arrays_take_plans():
    fastpath._forget_plans()
    a, b = mx.nd.ones((4,)), mx.nd.ones((4,))
    (a + b).wait_to_read()
    (a * 2.0).wait_to_read()
    f32 = np.dtype("float32")
    sig = fastpath.sig_of((4,), f32)
    assert a._sig is sig and (a + b)._sig is sig  # one interned plan key per shape and dtype
    assert mx.nd.NDArray.__add__.plans[0][(sig, sig)]
    assert mx.nd.NDArray.__mul__.plans[1][sig]
    assert not mx.nd.NDArray.__iadd__.plans[0]  # each operator has its own plans


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16"])
@pytest.mark.parametrize("op", sorted(_BINARY))
def test_array_operators_match_numpy(op, dtype):
    rng = np.random.default_rng(0)
    x = (rng.uniform(1, 4, (3, 4)) * 3).astype(dtype)
    y = (rng.uniform(1, 4, (1, 4)) * 3).astype(dtype)  # broadcast along the first axis
    with np.errstate(over="ignore"):  # float16 powers overflow to inf in both
        got = _apply(op, mx.nd.array(x, dtype=dtype), mx.nd.array(y, dtype=dtype)).asnumpy()
        want = _apply(op, x, y)
    if op == "/" and np.dtype(dtype).kind == "i":
        want = np.trunc(x / y)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**", ">", "=="])
@pytest.mark.parametrize("scalar", [2, 2.5])
def test_scalar_operators_cast_the_scalar_like_mxnet(op, dtype, scalar):
    x = np.arange(1, 7, dtype=dtype).reshape(2, 3)
    a = mx.nd.array(x, dtype=dtype)
    s = scalar if np.dtype(dtype).kind == "f" else np.dtype(dtype).type(scalar)  # MXNet: DType(scalar)
    for got, want in ((_apply(op, a, scalar), _apply(op, x, s)), (_apply(op, scalar, a), _apply(op, s, x))):
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got.asnumpy(), want.astype(dtype), rtol=1e-6)


def test_every_ufunc_form_equals_its_kernel():
    rng = np.random.default_rng(1)
    checked = 0
    for name, kernel in _forms():
        form, ufunc, kinds, constant, _ = ops.get(name).cpu_ufunc()
        for dtype in ("float32", "int32"):
            if np.dtype(dtype).kind not in kinds:
                continue
            x = rng.uniform(1, 5, (5,)).astype(dtype)
            y = rng.uniform(1, 5, (5,)).astype(dtype)
            attrs = {"scalar": 1.7}
            ins = [x, y] if form == "binary" else [x]
            by_kernel, by_form = np.empty(5, dtype), np.empty(5, dtype)
            scalar = 1.7 if constant is None else constant
            s = scalar if x.dtype.kind == "f" else x.dtype.type(scalar)

            def run_form():
                if form == "binary":
                    ufunc(x, y, out=by_form)
                elif form == "unary":
                    ufunc(x, out=by_form, casting="unsafe")
                elif form == "scalar":
                    ufunc(x, s, out=by_form, casting="unsafe")
                else:
                    ufunc(s, x, out=by_form, casting="unsafe")
            try:
                kernel(registry.OpContext(np), attrs, ins, [by_kernel], [])
            except Exception as exc:  # e.g. hypot on ints: the form must fail the same way
                with pytest.raises(type(exc)):
                    run_form()
                continue
            run_form()
            np.testing.assert_array_equal(by_kernel, by_form, err_msg=f"{name} {dtype}")
            checked += 1
    assert checked > 30


def test_override_applies_at_once_and_restores():
    a, b = mx.nd.ones((3,)), mx.nd.ones((3,))
    np.testing.assert_array_equal((a + b).asnumpy(), [2, 2, 2])  # a plan is cached now

    def sub_instead(ctx, attrs, inputs, outputs, aux):
        np.subtract(inputs[0], inputs[1], out=outputs[0])
    old = ops.override("broadcast_add", "cpu", sub_instead)
    try:
        np.testing.assert_array_equal((a + b).asnumpy(), [0, 0, 0])
        assert ops.get("broadcast_add").cpu_ufunc() is None  # the form described the replaced kernel
    finally:
        ops.get("broadcast_add").kernels.pop("cpu")
        registry._changed()
    assert old is ops.get("broadcast_add").kernels["any"]
    assert ops.get("broadcast_add").cpu_ufunc() == ("binary", np.add, "biuf", None, None)
    np.testing.assert_array_equal((a + b).asnumpy(), [2, 2, 2])


def _slow_write(arr, value, delay=0.05):
    """Push an op that sleeps, then writes `value` into `arr` (keeps the engine busy)."""
    data = arr._data

    def op():
        time.sleep(delay)
        data[...] = value
    engine.push(op, write=[arr.var], name="slow_write")


def test_reads_wait_for_pending_writes():
    a = mx.nd.zeros((4,))
    _slow_write(a, 5.0)
    c = a + 1.0  # must see the pending write
    a += 2.0     # and must come after it too
    np.testing.assert_array_equal(c.asnumpy(), np.full(4, 6.0))
    np.testing.assert_array_equal(a.asnumpy(), np.full(4, 7.0))


def test_engine_busy_elsewhere_runs_at_once_and_orders_later_ops():
    other, gate = mx.nd.zeros((1,)), threading.Event()
    engine.push(lambda: gate.wait(10), write=[other.var], name="held")
    a, b = mx.nd.ones((4,)), mx.nd.full((4,), 2.0)
    a.wait_to_read()
    b.wait_to_read()
    c = a + b
    a += c
    done_before = engine.stats()["completed"]
    assert engine.stats()["pending"] >= 1  # the held op still waits: these ran without waiting for it
    gate.set()
    np.testing.assert_array_equal(c._data, np.full(4, 3.0))
    np.testing.assert_array_equal(a._data, np.full(4, 4.0))
    _slow_write(a, 10.0, delay=0.02)  # a pending write on a: the next ops on a wait for it
    d = a * 2.0
    np.testing.assert_array_equal(d.asnumpy(), np.full(4, 20.0))
    assert engine.stats()["completed"] > done_before


def test_inplace_through_a_view_is_ordered():
    base = mx.nd.zeros((2, 3))
    view = base.reshape((6,))
    _slow_write(base, 1.0)
    view += 1.0
    view *= 3.0
    np.testing.assert_array_equal(base.asnumpy(), np.full((2, 3), 6.0))


def test_bulk_group_keeps_program_order():
    a = mx.nd.zeros((3,))
    with engine.bulk(8):
        for _ in range(5):
            a += 1.0
        b = a * 2.0
        a += 10.0
    np.testing.assert_array_equal(b.asnumpy(), np.full(3, 10.0))
    np.testing.assert_array_equal(a.asnumpy(), np.full(3, 15.0))
    assert engine.core.bulk_threads == 0


def _failing_ufunc(x, y, out, casting="same_kind"):
    raise ArithmeticError("test ufunc failure")


def _failing_kernel(ctx, attrs, inputs, outputs, aux):
    _failing_ufunc(inputs[0], inputs[1], out=outputs[0], casting="same_kind")


if not ops.exists("_test_fastpath_fail"):
    ops.register(ops.OpDef("_test_fastpath_fail", inputs=["lhs", "rhs"], infer_shape=lambda a, s: (s, [s[0]]),
                           kernels={"any": _failing_kernel}, ufunc_form=registry.UfuncForm("binary", _failing_ufunc),
                           doc="test-only: a ufunc form that raises"))


@pytest.mark.parametrize("busy", ["idle", "input pending", "elsewhere"])
def test_kernel_error_is_raised_at_the_next_read(busy):
    a, b = mx.nd.ones((3,)), mx.nd.ones((3,))
    if busy == "input pending":  # the op is pushed, after the pending write
        _slow_write(a, 1.0, delay=0.02)
    elif busy == "elsewhere":  # the op claims its own variables and runs at once
        _slow_write(mx.nd.zeros((1,)), 1.0, delay=0.05)
    bad = fastpath.operator("_test_fastpath_fail", "_plus_scalar")(a, b)
    dependent = bad + 1.0  # reads a failed array: inherits the error
    with pytest.raises(ArithmeticError, match="test ufunc failure"):
        dependent.asnumpy()
    bad.asnumpy()  # the same error, raised once (MXNet clears it)
    np.testing.assert_array_equal((a + b).asnumpy(), [2, 2, 2])  # nothing else lost


def test_autograd_inputs_take_the_recording_path():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * x + 2.0 * x
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.array([1.0, 2.0, 3.0]) + 2)


def test_big_outputs_are_pushed_not_run_inline():
    n = INLINE_MAX_ELEMENTS * 2
    a = mx.nd.ones((n,))
    _slow_write(a, 3.0, delay=0.01)
    b = a + a
    np.testing.assert_array_equal(b.asnumpy()[:3], [6, 6, 6])


def test_freed_input_is_a_clear_error():
    a, b = mx.nd.ones((2,)), mx.nd.ones((2,))
    (a + b).wait_to_read()
    a._chunk.free()
    with pytest.raises(mx.base.FreedArrayError):
        a + b


def test_threads_get_consistent_results():
    results = []

    def work(seed):
        x = mx.nd.array(np.full(8, float(seed)))
        for _ in range(200):
            x = x + 1.0
            x *= 1.0
        results.append((seed, x.asnumpy()))
    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4
    for seed, got in results:
        np.testing.assert_array_equal(got, np.full(8, seed + 200.0))


def test_fresh_tiny_outputs_are_numpy_arrays_and_large_ones_come_from_the_memory_manager():
    mx.nd.waitall()
    a, big = mx.nd.ones((16, 16)), mx.nd.ones((INLINE_MAX_ELEMENTS * 2,))
    before = mx.memory.stats()
    for _ in range(10):
        c = a + a
        d = mx.nd.exp(a)
    assert mx.memory.stats()["num_allocs"] == before["num_allocs"]  # numpy allocated these
    assert c._chunk.block is None and d._chunk.block is None and c._data.flags.c_contiguous
    e = big + big
    assert mx.memory.stats()["num_allocs"] == before["num_allocs"] + 1 and e._chunk.block is not None
    np.testing.assert_array_equal(c.asnumpy(), np.full((16, 16), 2.0))


# -- kernel plans: mx.nd.<op>(...) and the NDArray methods built on it ------------------------
@contextlib.contextmanager
def _no_plans():
    """Within the block no plan is made (every call takes the general path)."""
    fastpath._forget_plans()
    plan_makers = fastpath._operator_plan, fastpath._kernel_plan, fastpath._out_plan
    fastpath._operator_plan = lambda plans, key, *rest: False
    fastpath._kernel_plan = lambda key, *rest: False
    fastpath._out_plan = lambda key, *rest: False
    try:
        yield
    finally:
        fastpath._operator_plan, fastpath._kernel_plan, fastpath._out_plan = plan_makers
        fastpath._forget_plans()


def _by_general_path(fn):
    """fn() with no plan made (every call takes the general path)."""
    with _no_plans():
        return fn().asnumpy()


@pytest.mark.parametrize("call", [
    lambda x, y: mx.nd.exp(x), lambda x, y: mx.nd.relu(x - 1.5), lambda x, y: mx.nd.sigmoid(x),
    lambda x, y: mx.nd.sum(x, axis=1), lambda x, y: mx.nd.sum(x, axis=0, keepdims=True),
    lambda x, y: mx.nd.dot(x, y.T), lambda x, y: mx.nd.softmax(x), lambda x, y: x.exp(), lambda x, y: -x,
    lambda x, y: abs(x - 2), lambda x, y: mx.nd.clip(x, a_min=1.2, a_max=2.5), lambda x, y: mx.nd.broadcast_maximum(x, y),
    lambda x, y: x.sum(), lambda x, y: mx.nd.argmax(x, axis=1),
], ids=["exp", "relu", "sigmoid", "sum_axis", "sum_keepdims", "dot", "softmax", "exp_method", "neg", "abs",
        "clip", "maximum", "sum_all", "argmax"])
def test_kernel_plans_match_the_general_path(call):
    rng = np.random.default_rng(3)
    x = mx.nd.array(rng.uniform(1, 3, (4, 5)))
    y = mx.nd.array(rng.uniform(1, 3, (4, 5)))
    want = _by_general_path(lambda: call(x, y))
    fastpath._KERNEL_PLANS.clear()
    first, second = call(x, y).asnumpy(), call(x, y).asnumpy()  # the second call takes the plan
    np.testing.assert_allclose(first, want, rtol=1e-6)
    np.testing.assert_allclose(second, want, rtol=1e-6)
    assert any(fastpath._KERNEL_PLANS.values())


def _planned_keys(name):
    return [k for k, v in fastpath._KERNEL_PLANS.items() if k[0] == name and v]


def test_kernel_plans_take_any_number_of_inputs_and_ignore_the_name():
    """FullyConnected (three inputs, Gluon's `name="fwd"`) and a split (several outputs) are planned:
    equal to the general path, differentiated like it."""
    rng = np.random.default_rng(5)
    x, w, b = (mx.nd.array(rng.standard_normal(s)) for s in ((4, 6), (3, 6), (3,)))
    fc = lambda: mx.nd.FullyConnected(x, w, b, num_hidden=3, name="fwd")  # noqa: E731
    split = lambda: mx.nd.split(x, num_outputs=2, axis=1)  # noqa: E731
    want_fc = _by_general_path(fc)
    with _no_plans():
        want_split = [a.asnumpy() for a in split()]
    fastpath._KERNEL_PLANS.clear()
    for _ in range(2):
        np.testing.assert_allclose(fc().asnumpy(), want_fc, rtol=1e-6)
        got = split()
        assert isinstance(got, list) and len(got) == 2
        for g, want in zip(got, want_split):
            np.testing.assert_array_equal(g.asnumpy(), want)
    assert _planned_keys("FullyConnected") and _planned_keys(mx.ops.get("split").name)
    for a in (x, w, b):
        a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.FullyConnected(x, w, b, num_hidden=3, name="fwd")
    y.backward(mx.nd.ones((4, 3)))
    np.testing.assert_allclose(x.grad.asnumpy(), np.ones((4, 3)) @ w.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(w.grad.asnumpy(), np.ones((3, 4)) @ x.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(b.grad.asnumpy(), np.full(3, 4.0), rtol=1e-6)


def test_kernel_plans_of_large_outputs_use_the_memory_manager_and_keep_order():
    """A planned op with a large output gets it from the memory manager and runs after a pending
    write of its input (in the caller when the engine lets it, else pushed)."""
    n = INLINE_MAX_ELEMENTS * 2
    a = mx.nd.ones((n,))
    mx.nd.relu(a).wait_to_read()
    assert _planned_keys("relu")
    before = mx.memory.stats()["num_allocs"]
    _slow_write(a, -3.0, delay=0.01)
    r = mx.nd.relu(a + 4)
    assert mx.memory.stats()["num_allocs"] > before and r._chunk.block is not None
    np.testing.assert_array_equal(r.asnumpy()[:3], [1, 1, 1])
    big, w = mx.nd.ones((64, 512)), mx.nd.ones((300, 512))
    for _ in range(2):
        out = mx.nd.FullyConnected(big, w, no_bias=True, num_hidden=300)
        np.testing.assert_array_equal(out.asnumpy()[0, :3], [512, 512, 512])
    assert _planned_keys("FullyConnected")


def test_kernel_plans_refuse_wrong_input_counts_with_the_general_error():
    x, w = mx.nd.ones((2, 3)), mx.nd.ones((4, 3))
    with pytest.raises(mx.base.OperatorError):
        mx.nd.FullyConnected(x, w, num_hidden=4)  # the bias is missing (no_bias=False)
    with pytest.raises(mx.base.ShapeError):
        mx.nd.FullyConnected(x, w, mx.nd.ones((5,)), num_hidden=4)


def test_kernel_plans_refuse_what_they_cannot_cache():
    x = mx.nd.array(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(mx.nd.sum(x, axis=[0]).asnumpy(), [3, 5, 7])  # unhashable attr value
    np.testing.assert_array_equal(mx.nd.broadcast_add(lhs=x, rhs=x).asnumpy(), 2 * x.asnumpy())  # named inputs
    assert not any(isinstance(v, mx.nd.NDArray) for k in fastpath._KERNEL_PLANS for v in k)
    with pytest.raises(mx.base.OperatorError, match="unknown attribute 'bogus'"):
        mx.nd.sum(x, bogus=1)
    with pytest.raises(mx.base.ShapeError):
        mx.nd.dot(x, x)


def _train_flag_kernel(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = 1.0 if ctx.is_train else 0.0


if not ops.exists("_test_fastpath_train_flag"):
    ops.register(ops.OpDef("_test_fastpath_train_flag", infer_shape=lambda a, s: (s, [s[0]]),
                           kernels={"any": _train_flag_kernel}, doc="test-only: 1 in train mode, else 0"))


def test_kernel_plans_see_the_current_train_mode_and_device():
    x = mx.nd.ones((3,))
    assert mx.nd._test_fastpath_train_flag(x).asnumpy().tolist() == [0, 0, 0]
    with mx.autograd.train_mode():
        assert mx.nd._test_fastpath_train_flag(x).asnumpy().tolist() == [1, 1, 1]
    assert mx.nd._test_fastpath_train_flag(x).asnumpy().tolist() == [0, 0, 0]
    y = mx.nd.ones((3,), ctx=mx.cpu(1))
    out = mx.nd._test_fastpath_train_flag(y)
    assert out.context == mx.cpu(1)


def test_kernel_override_applies_to_kernel_plans():
    x = mx.nd.ones((3,))
    mx.nd._test_fastpath_train_flag(x).wait_to_read()  # plan cached

    def twos(ctx, attrs, inputs, outputs, aux):
        outputs[0][...] = 2.0
    ops.override("_test_fastpath_train_flag", "cpu", twos)
    try:
        assert mx.nd._test_fastpath_train_flag(x).asnumpy().tolist() == [2, 2, 2]
    finally:
        ops.get("_test_fastpath_train_flag").kernels.pop("cpu")
        registry._changed()
    assert mx.nd._test_fastpath_train_flag(x).asnumpy().tolist() == [0, 0, 0]


def test_kernel_plan_error_is_raised_at_the_next_read():
    x = mx.nd.ones((3,))
    bad = mx.nd._test_imperative_fail(x)  # conftest's always-failing op
    bad2 = mx.nd._test_imperative_fail(x)  # the second call runs from the plan
    for b in (bad, bad2):
        with pytest.raises(ValueError, match="test kernel failure"):
            b.asnumpy()
    np.testing.assert_array_equal(mx.nd.exp(x * 0).asnumpy(), [1, 1, 1])


@pytest.mark.parametrize("shape", [(1,), (1, 1), (2,)])
def test_in_place_operators_on_one_element_arrays(shape):
    # one-element in-place plans go through a temporary (numpy's aliased one-element path is slow)
    a, b = mx.nd.full(shape, 3.0), mx.nd.full(shape, 2.0)
    i = mx.nd.full(shape, 7, dtype="int32")
    for _ in range(2):  # the second round runs from the plans
        a += b
        a *= b
        a -= 1.0
        a /= b
        i /= 2  # int32 true division truncates, in place, as MXNet's DType(scalar)
    np.testing.assert_allclose(a.asnumpy(), np.full(shape, ((((3 + 2) * 2 - 1) / 2 + 2) * 2 - 1) / 2))
    assert i.dtype == np.int32
    np.testing.assert_array_equal(i.asnumpy(), np.full(shape, 1))


def test_busy_engine_runs_tiny_ops_here_without_making_engine_vars():
    other, gate = mx.nd.zeros((1,)), threading.Event()
    engine.push(lambda: gate.wait(10), write=[other.var], name="held")
    try:
        a, b = mx.nd.ones((4,)), mx.nd.full((4,), 2.0)
        c = a + b
        d = mx.nd.exp(c * 0.0)
        # ran at once in this thread (the held op still waits); the new arrays get a var only when
        # a later op reads them on the busy engine (c), not for being made (d)
        assert engine.stats()["pending"] >= 1
        assert c._chunk._var is not None and d._chunk._var is None
        np.testing.assert_array_equal(c._data, np.full(4, 3.0))
        np.testing.assert_array_equal(d._data, np.ones(4))
    finally:
        gate.set()


def test_recorded_calls_take_plans_and_differentiate_like_the_general_path():
    xv = np.array([[1.0, 2.0], [3.0, 0.5]], np.float32)
    wv = np.array([[0.5, -1.0], [2.0, 3.0]], np.float32)

    def f(x, w):
        return (mx.nd.exp(x * w * 0.1 + 1.0) / (4.0 - w) - x ** 2.0).sum() + mx.nd.relu(x - w).sum(axis=1).sum()

    runs = []
    for general in (False, True):
        x, w = mx.nd.array(xv), mx.nd.array(wv)
        x.attach_grad()
        w.attach_grad()
        with _no_plans() if general else contextlib.nullcontext():
            fastpath._forget_plans()
            with mx.autograd.record():
                y = f(x, w)
            y.backward()
            if not general:  # the recorded calls ran from plans
                assert mx.nd.NDArray.__mul__.plans[0] and mx.nd.NDArray.__rsub__.plans[1]
                assert any(fastpath._KERNEL_PLANS.values())
        runs.append((y.asnumpy(), x.grad.asnumpy(), w.grad.asnumpy()))
    for got, want in zip(*runs):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    e = np.exp(xv * wv * 0.1 + 1.0)
    want_dx = e * wv * 0.1 / (4.0 - wv) - 2 * xv + (xv > wv)
    want_dw = e * xv * 0.1 / (4.0 - wv) + e / (4.0 - wv) ** 2 - (xv > wv)
    np.testing.assert_allclose(runs[0][1], want_dx, rtol=1e-5)
    np.testing.assert_allclose(runs[0][2], want_dw, rtol=1e-5)


def test_in_place_update_of_a_recorded_array_is_still_refused():
    x = mx.nd.ones((3,))
    x.attach_grad()
    with mx.autograd.record():
        y = x * 2.0
        with pytest.raises(mx.base.EmberError, match="in-place update while recording"):
            y += 1.0


def _engine_idle() -> bool:
    """Whether the engine grants its idle claim now (not while a variable holds an error, e.g. of an
    earlier test's array still alive)."""
    engine.wait_all_quiet()
    if not engine.core.idle_claim():
        return False
    engine.core.idle_release_ok()
    return True


def test_fresh_outputs_get_a_chunk_only_when_something_needs_one():
    a = mx.nd.ones((2, 3))
    idle = _engine_idle()
    c = a + a
    assert (c._c is None) == idle  # under the idle claim nothing can be pending on it: no chunk
    np.testing.assert_array_equal(c.asnumpy(), np.full((2, 3), 2.0))
    assert (c._c is None) == idle and c.context == mx.cpu(0)  # reading needs no chunk; the device makes one
    d = a * 3.0
    view = d.reshape((6,))
    assert view._chunk is d._chunk and d._chunk._var is None  # views share the chunk made for them
    view += 1.0
    np.testing.assert_array_equal(d.asnumpy(), np.full((2, 3), 4.0))
    e = a - 1.0
    e._free()
    with pytest.raises(mx.base.FreedArrayError):
        e + 1.0
    if engine.engine_type() == "NaiveEngine":  # (its push runs the op at once: nothing stays pending)
        return
    gate = threading.Event()
    engine.push(lambda: gate.wait(10), write=[a.var], name="held")
    try:
        f = a + a  # pushed after the held op: its output needs a var now
        assert f._chunk._var is not None
    finally:
        gate.set()
    np.testing.assert_array_equal(f.asnumpy(), np.full((2, 3), 2.0))


# -- calls with out= ----------------------------------------------------------------------------
def _out_planned(name):
    return [k for k, v in fastpath._OUT_PLANS.items() if k[0] == name and v]


def _sgd_group(rng, shapes):
    weights = [mx.nd.array(rng.standard_normal(s)) for s in shapes]
    grads = [mx.nd.array(rng.standard_normal(s)) for s in shapes]
    return weights, grads


def test_out_plans_update_weights_like_the_general_path():
    """An optimizer's multi-weight update (out= the weights, lrs/wds as lists) runs from a plan
    from the second call on and gives the general path's values; `name=` is ignored."""
    shapes = [(5, 3), (3,), (2, 2, 2)]
    lrs, wds = [0.1, 0.2, 0.3], [0.0, 0.01, 0.02]

    def update(weights, grads):
        flat = [a for pair in zip(weights, grads) for a in pair]
        return mx.nd.multi_sgd_update(*flat, out=weights, num_weights=3, lrs=lrs, wds=wds,
                                      rescale_grad=0.5, clip_gradient=1.0, name="upd")

    runs = []
    for general in (True, False):
        weights, grads = _sgd_group(np.random.default_rng(7), shapes)
        start = [w.asnumpy() for w in weights]
        with _no_plans() if general else contextlib.nullcontext():
            fastpath._forget_plans()
            for _ in range(3):
                assert update(weights, grads) is weights
            if not general:
                assert _out_planned("multi_sgd_update")
        runs.append([w.asnumpy() for w in weights])
    for got, want in zip(*runs):
        np.testing.assert_allclose(got, want, rtol=1e-6)
    w = start[1].copy()  # the same three steps by numpy's formula (weight 1)
    g = np.clip(0.5 * grads[1].asnumpy(), -1.0, 1.0)
    for _ in range(3):
        w = w - 0.2 * (g + 0.01 * w)
    np.testing.assert_allclose(runs[1][1], w, rtol=1e-5)


def test_out_plans_keep_engine_order():
    """A planned out= call writes after a pending write of its input and before a later read."""
    a, b, out = mx.nd.zeros((4,)), mx.nd.ones((4,)), mx.nd.zeros((4,))
    for _ in range(2):
        mx.nd.elemwise_add(a, b, out=out)
    assert _out_planned("elemwise_add")
    _slow_write(a, 5.0)
    mx.nd.elemwise_add(a, b, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(4, 6.0))
    _slow_write(out, -1.0)
    mx.nd.elemwise_add(out, b, out=out)  # the same elements in and out: element-wise, in place
    np.testing.assert_array_equal(out.asnumpy(), np.zeros(4))


def test_out_plans_compute_through_scratch_when_an_output_overlaps_an_input():
    """An out= array that is also the input, other than as the op declares, goes through scratch
    from a plan too: here `reverse` with a kernel that overwrites elements it reads later (numpy's
    own kernels guard against overlap; a user's override need not)."""
    def reverse_by_loop(ctx, attrs, inputs, outputs, aux):
        x, out = inputs[0], outputs[0]
        for i in range(x.shape[0]):
            out[i] = x[x.shape[0] - 1 - i]
    old = ops.override("reverse", "cpu", reverse_by_loop)
    try:
        v = np.arange(6.0, dtype=np.float32)
        for _ in range(2):
            mx.nd.reverse(mx.nd.array(v), axis=0, out=mx.nd.zeros(6))
        assert _out_planned("reverse")
        a = mx.nd.array(v)
        mx.nd.reverse(a, axis=0, out=a)
        np.testing.assert_array_equal(a.asnumpy(), v[::-1])
    finally:
        ops.override("reverse", "cpu", old)


def test_out_plans_refuse_what_the_general_path_refuses():
    x, y = mx.nd.ones((2, 3)), mx.nd.ones((2, 3))
    out = mx.nd.zeros((2, 3))
    for _ in range(2):
        mx.nd.elemwise_add(x, y, out=out)
    assert _out_planned("elemwise_add")
    with pytest.raises(mx.base.ShapeError, match="out= array 0 has shape"):
        mx.nd.elemwise_add(x, y, out=mx.nd.zeros((3, 2)))
    with pytest.raises(mx.base.DTypeError, match="out= array 0 has dtype"):
        mx.nd.elemwise_add(x, y, out=mx.nd.zeros((2, 3), dtype="float64"))
    dead = mx.nd.zeros((2, 3))
    dead._free()
    with pytest.raises(mx.base.FreedArrayError, match="freed"):
        mx.nd.elemwise_add(x, y, out=dead)
    x.attach_grad()
    with mx.autograd.record():
        z = x * 2.0
        with pytest.raises(mx.base.EmberError, match="in-place update while recording"):
            mx.nd.elemwise_add(x, y, out=z)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 2.0))


def test_trainer_steps_take_out_plans():
    """gluon.Trainer's SGD step goes through planned multi_sgd_update calls and gives SGD's values."""
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Constant(0.5))
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = mx.nd.array(np.arange(8.0).reshape(2, 4))
    fastpath._forget_plans()
    for _ in range(2):
        with mx.autograd.record():
            loss = net(x).sum()
        loss.backward()
        trainer.step(2)
    assert _out_planned("multi_sgd_update")
    # d(sum)/dW = column sums of x for every row; two steps of lr 0.1 / batch 2
    want = 0.5 - 2 * 0.1 * x.asnumpy().sum(axis=0) / 2
    np.testing.assert_allclose(net.weight.data().asnumpy(), np.tile(want, (3, 1)), rtol=1e-6)


def test_kernel_plans_of_ops_with_hidden_outputs_return_the_visible_ones():
    """An op with a hidden output (_softmax_ce_per_sample's log-probabilities) is planned: the call
    returns the visible output, the tape keeps both and backward gives the general path's gradient."""
    x = mx.nd.array(np.random.default_rng(2).standard_normal((5, 4)))
    label = mx.nd.array([0, 3, 1, 2, 2])

    def loss_and_grad():
        x.attach_grad()
        with mx.autograd.record():
            loss = mx.nd._softmax_ce_per_sample(x, label)
        assert isinstance(loss, mx.nd.NDArray) and loss.shape == (5,)
        assert len(loss._ag.node.outputs) == 2
        loss.backward()
        return loss.asnumpy(), x.grad.asnumpy()
    with _no_plans():
        want_loss, want_grad = loss_and_grad()
    fastpath._KERNEL_PLANS.clear()
    for _ in range(2):
        got_loss, got_grad = loss_and_grad()
        np.testing.assert_array_equal(got_loss, want_loss)
        np.testing.assert_array_equal(got_grad, want_grad)
    assert _planned_keys("_softmax_ce_per_sample")
