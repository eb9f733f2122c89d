"""ember.backend: a new device kind is one registered table.

"twin" is a second host-memory kind (numpy arrays) that is not 'cpu': it has its own contexts,
memory managers and engine queues, and counts what callers ask of its table, so these tests show
arrays, copies, registry kernels, autograd, executors and the kvstore going through it.  The GPU
(CuPy) table is checked for clean failures where CuPy is missing; tests/memory/test_gpu.py and the
other GPU tests cover it where a GPU exists.
"""
import collections
import importlib.util

import numpy as np
import pytest

import ember as mx
from ember import backend, memory, ops
from ember.base import ContextError


class TwinBackend(backend.Backend):
    """Host memory under another device type: every table call it gets is counted."""

    name, type_id, dlpack_types, shared_ids, pool_env = "twin", 42, (), False, "EMBER_TWIN_MEM_POOL_TYPE"

    def __init__(self):
        self.calls = collections.Counter()

    def alloc(self, nbytes, device_id):
        self.calls["alloc", device_id] += 1
        return super().alloc(nbytes, device_id)

    def run_on(self, fn, device_id):
        def on_twin():
            self.calls["run", device_id] += 1
            fn()
        return on_twin

    def asarray(self, x):
        self.calls["asarray"] += 1
        return super().asarray(x)


@pytest.fixture
def twin():
    table = backend.register(TwinBackend())
    yield table
    mx.nd.waitall()
    backend.unregister("twin")
    memory.set_manager("pooled")  # drops the twin managers with the rest


def test_arrays_and_ops_on_a_registered_kind(twin):
    ctx = mx.Context("twin", 1)
    a, b = np.arange(6.0).reshape(2, 3), np.full((2, 3), 0.5)
    x, y = mx.nd.array(a, ctx=ctx), mx.nd.array(b, ctx=ctx)
    z = mx.nd.exp(x * y + 1)
    assert z.context == ctx and ctx.device_typeid == 42
    np.testing.assert_allclose(z.asnumpy(), np.exp(a * b + 1), rtol=1e-6)
    assert twin.calls["alloc", 1] >= 1 and twin.calls["alloc", 0] == 0
    assert twin.calls["run", 1] >= 2                       # each op ran through the table's run_on
    assert memory.get_manager(ctx) is not memory.get_manager(mx.cpu())
    assert memory.get_manager(ctx) is not memory.get_manager(mx.Context("twin", 0))  # shared_ids=False
    with pytest.raises(ContextError, match="one device"):
        x + mx.nd.array(b, ctx=mx.Context("twin", 0))


def test_copies_to_and_from_cpu_and_between_devices(twin):
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    on_twin = mx.nd.array(h).copyto(mx.Context("twin", 0))
    other = on_twin.as_in_context(mx.Context("twin", 1))
    back = other.as_in_context(mx.cpu())
    assert (on_twin.context, other.context, back.context) == (mx.Context("twin", 0), mx.Context("twin", 1), mx.cpu())
    np.testing.assert_array_equal(back.asnumpy(), h)
    assert twin.calls["asarray"] >= 2  # copies into twin memory convert through the twin table


def _twice_x_minus_y(ctx, attrs, inputs, outputs, aux):
    ctx.xp.subtract(2 * inputs[0], inputs[1], out=outputs[0])


def test_registry_kernel_for_the_kind_alone(twin):
    """A kernel registered for 'twin' serves twin arrays; other devices keep the generic one."""
    old = ops.override("broadcast_add", "twin", _twice_x_minus_y)
    try:
        a, b = np.array([[5.0, 7.0]]), np.array([[1.0, 2.0]])
        t = mx.nd.broadcast_add(mx.nd.array(a, ctx=mx.Context("twin", 0)), mx.nd.array(b, ctx=mx.Context("twin", 0)))
        np.testing.assert_array_equal(t.asnumpy(), 2 * a - b)
        np.testing.assert_array_equal(mx.nd.broadcast_add(mx.nd.array(a), mx.nd.array(b)).asnumpy(), a + b)
    finally:
        del ops.get("broadcast_add").kernels["twin"]
        ops.override("broadcast_add", "any", old)  # the same kernel again: tells the registry's caches


def test_autograd_and_executor_on_the_kind(twin):
    ctx = mx.Context("twin", 0)
    v = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    x = mx.nd.array(v, ctx=ctx)
    x.attach_grad()
    with mx.autograd.record():
        y = (x * x).sum()
    y.backward()
    assert x.grad.context == ctx
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * v)

    runs = twin.calls["run", 0]
    allocs = twin.calls["alloc", 0]
    s = mx.sym.Variable("a") * mx.sym.Variable("b") + 1
    ex = s.bind(ctx, {"a": x, "b": mx.nd.array(v, ctx=ctx)})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), v * v + 1)
    assert twin.calls["run", 0] > runs and twin.calls["alloc", 0] > allocs  # planned memory too
    with pytest.raises(ContextError, match="twin"):
        s.bind(ctx, {"a": x, "b": mx.nd.array(v)})  # an argument on cpu


def test_device_kvstore_on_the_kind(twin):
    kv = mx.kv.create("device")
    shape = (2, 3)
    kv.init("w", mx.nd.zeros(shape, ctx=mx.Context("twin", 0)))
    kv.push("w", [mx.nd.ones(shape, ctx=mx.Context("twin", i)) * (i + 1) for i in range(2)])
    out = mx.nd.zeros(shape)
    kv.pull("w", out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(shape, 3.0))


def test_register_checks_the_type_id_and_unknown_kinds_are_refused():
    clash = TwinBackend()
    clash.type_id = 2  # the GPU's
    with pytest.raises(ContextError, match="taken by 'gpu'"):
        backend.register(clash)
    with pytest.raises(ContextError, match="unknown device type 'twin'"):
        mx.Context("twin", 0)


def test_host_table():
    host = backend.of(mx.cpu())
    assert backend.of_array(np.zeros(2)) is host and backend.of_array([1, 2]) is host
    assert backend.device_key(mx.cpu(3)) == backend.device_key(mx.cpu(0))
    data = host.alloc(100, 0)
    assert data.dtype == np.uint8 and data.size == 100 and data.ctypes.data % backend.ALIGNMENT == 0
    free, total = host.memory_info(0)
    assert 0 < free <= total


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="CuPy is installed")
def test_gpu_table_without_cupy_fails_clearly():
    assert mx.num_gpus() == 0 and mx.util.get_gpu_count() == 0
    with pytest.raises(ContextError, match="'cupy' package"):
        mx.nd.zeros((2,), ctx=mx.gpu(0))
    with pytest.raises(ContextError, match="'cupy' package"):
        mx.context.gpu_memory_info(0)
    with pytest.raises(ContextError, match="DLPack device type 9"):
        backend.for_dlpack(9)
