"""Single-process store ('local', 'device') semantics checked against numpy."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import engine
from ember.kvstore import KVStoreError, KVStoreShapeError, create

TYPES = ["local", "device"]


def sgd_updater(lr):
    """An updater written against the NDArray contract: weight -= lr * grad, as an engine op."""
    calls = []

    def update(key, grad, weight):
        calls.append(key)

        def step():
            weight._data[...] -= lr * grad._data
        engine.push(step, read=[grad.var], write=[weight.var], name="test_sgd")
    update.calls = calls
    return update


@pytest.mark.parametrize("kv_type", TYPES)
def test_init_pull_roundtrip_int_and_str_keys(nd, kv_type):
    kv, kv_str = create(kv_type), create(kv_type)  # one store holds one kind of key, as MXNet
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    kv.init(3, nd.array(a))
    kv_str.init("w", nd.array(a * 2))
    with pytest.raises(ember.base.MXNetError, match="Mixed key types"):
        kv.init("v", nd.array(a))
    with pytest.raises(TypeError, match="Mixed key types"):
        create(kv_type).init([4, "v"], [nd.array(a), nd.array(a)])
    out3, outw = nd.zeros((2, 3)), nd.zeros((2, 3))
    kv.pull(3, out=out3)
    kv_str.pull("w", out=outw)
    np.testing.assert_array_equal(out3.asnumpy(), a)
    np.testing.assert_array_equal(outw.asnumpy(), a * 2)
    assert kv.type == kv_type and kv.rank == 0 and kv.num_workers == 1
    assert kv.is_capable("optimizer") and ember.kv.create is ember.kvstore.create


@pytest.mark.parametrize("kv_type", TYPES)
def test_push_sums_device_values_and_pull_fills_every_output(nd, kv_type):
    kv = create(kv_type)
    rng = np.random.default_rng(0)
    vals = [rng.standard_normal((4, 5)).astype(np.float32) for _ in range(3)]
    kv.init(7, nd.zeros((4, 5)))
    kv.push(7, [nd.array(v, ctx=ember.cpu(i)) for i, v in enumerate(vals)])
    outs = [nd.zeros((4, 5), ctx=ember.cpu(i)) for i in range(2)]
    kv.pull(7, out=outs)
    for o in outs:
        np.testing.assert_allclose(o.asnumpy(), vals[0] + vals[1] + vals[2], rtol=1e-6)


def test_push_without_updater_replaces_the_stored_value(nd):
    kv = create("local")
    kv.init(0, nd.array(np.full((3,), 5.0)))
    kv.push(0, nd.array(np.full((3,), 2.0)))
    kv.push(0, nd.array(np.full((3,), 1.0)))
    out = nd.zeros((3,))
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.ones(3))


def test_key_lists_with_nested_value_lists_and_repeated_keys(nd):
    kv = create("local")
    kv.init([1, 2], [nd.zeros((2,)), nd.zeros((2,))])
    a, b, c = (np.array(x, dtype=np.float32) for x in ([1, 2], [10, 20], [100, 200]))
    kv.push([1, 2, 1], [nd.array(a), [nd.array(b), nd.array(b)], nd.array(c)])
    o1, o2a, o2b = nd.zeros((2,)), nd.zeros((2,)), nd.zeros((2,))
    kv.pull([1, 2], out=[o1, [o2a, o2b]])
    np.testing.assert_array_equal(o1.asnumpy(), a + c)  # repeated key: values aggregated
    np.testing.assert_array_equal(o2a.asnumpy(), 2 * b)
    np.testing.assert_array_equal(o2b.asnumpy(), 2 * b)


@pytest.mark.parametrize("kv_type", TYPES)
def test_updater_gets_key_merged_gradient_and_stored_weight(nd, kv_type):
    kv = create(kv_type)
    w0 = np.linspace(-1, 1, 8).astype(np.float32)
    kv.init("fc_weight", nd.array(w0))
    upd = sgd_updater(0.5)
    kv.set_updater(upd)
    g1, g2 = np.ones(8, np.float32), np.arange(8, dtype=np.float32)
    expected = w0.copy()
    for _ in range(3):
        kv.push("fc_weight", [nd.array(g1), nd.array(g2)], priority=-1)
        expected -= 0.5 * (g1 + g2)
    out = nd.zeros((8,))
    kv.pull("fc_weight", out=out, priority=-1)
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-6)
    assert upd.calls == ["fc_weight"] * 3


def test_pushpull_defaults_to_pulling_into_the_values(nd):
    kv = create("local")
    kv.init(5, nd.zeros((2, 2)))
    x, y = nd.array(np.ones((2, 2))), nd.array(np.full((2, 2), 3.0))
    kv.pushpull(5, [x, y])
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 2), 4.0))
    np.testing.assert_array_equal(y.asnumpy(), np.full((2, 2), 4.0))
    out = nd.zeros((2, 2))
    kv.pushpull(5, [x, y], out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 2), 8.0))


def test_broadcast_inits_and_pulls(nd):
    kv = create("local")
    v = np.random.default_rng(1).standard_normal((3, 2)).astype(np.float32)
    outs = [nd.zeros((3, 2)), nd.zeros((3, 2))]
    kv.broadcast("b", nd.array(v), out=outs)
    for o in outs:
        np.testing.assert_array_equal(o.asnumpy(), v)


def test_init_copies_the_value(nd):
    kv = create("local")
    src = nd.array(np.ones(4))
    kv.init(0, src)
    engine.wait_all()  # the copy has run: now the source may be overwritten
    src._data[...] = 9.0  # later changes to the source must not reach the store
    out = nd.zeros((4,))
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.ones(4))


def test_bad_input_raises_clear_errors(nd):
    kv = create("local")
    kv.init(1, nd.zeros((2, 3)))
    with pytest.raises(KVStoreError, match="already initialized"):
        kv.init(1, nd.zeros((2, 3)))
    with pytest.raises(KVStoreError, match="key 9 has not been initialized"):
        kv.push(9, nd.zeros((2, 3)))
    with pytest.raises(KVStoreError, match="'nope' has not been initialized"):
        kv.pull("nope", out=nd.zeros((2, 3)))
    with pytest.raises(KVStoreShapeError, match=r"shape \(3, 2\).*shape \(2, 3\)"):
        kv.push(1, nd.zeros((3, 2)))
    with pytest.raises(KVStoreShapeError, match="dtype float64"):
        kv.push(1, nd.zeros((2, 3), dtype=np.float64))
    with pytest.raises(KVStoreShapeError, match="pull output"):
        kv.pull(1, out=nd.zeros((6,)))
    with pytest.raises(KVStoreError, match="int or str"):
        kv.push(1.5, nd.zeros((2, 3)))
    with pytest.raises(KVStoreError, match="2 keys but 1 values"):
        kv.push([1, 1], [nd.zeros((2, 3))])
    with pytest.raises(KVStoreError, match="needs `out`"):
        kv.pull(1)
    with pytest.raises(KVStoreError, match="must be an NDArray"):
        kv.push(1, np.zeros((2, 3)))
    with pytest.raises(KVStoreError, match="unknown kvstore type 'nccl2'"):
        create("nccl2")
    with pytest.raises(KVStoreError, match="set_optimizer"):
        kv.save_optimizer_states("/tmp/never-written")
    with pytest.raises(KVStoreError, match="must be callable"):
        kv.set_updater(3)
    assert isinstance(KVStoreError("x"), ember.base.EmberError)


def test_failed_push_leaves_the_store_unchanged(nd):
    kv = create("local")
    kv.init([1, 2], [nd.array(np.ones(2)), nd.array(np.ones(2))])
    with pytest.raises(KVStoreShapeError):
        kv.push([1, 2], [nd.array(np.full(2, 5.0)), nd.zeros((3,))])
    out = nd.zeros((2,))
    kv.pull(1, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.ones(2))


def test_optimizer_states_roundtrip(nd, tmp_path):
    from ember import optimizer as opt
    kv = create("local")
    kv.init(0, ember.nd.array(np.ones(4)))
    kv.set_optimizer(opt.create("sgd", learning_rate=0.1, momentum=0.9))
    kv.push(0, ember.nd.array(np.full(4, 2.0)))
    path = str(tmp_path / "states")
    kv.save_optimizer_states(path)
    kv2 = create("local")
    kv2.init(0, ember.nd.array(np.ones(4)))
    kv2.set_optimizer(opt.create("sgd", learning_rate=0.1, momentum=0.9))
    kv2.load_optimizer_states(path)
    for store in (kv, kv2):
        store.push(0, ember.nd.array(np.full(4, 2.0)))
    a, b = ember.nd.zeros((4,)), ember.nd.zeros((4,))
    kv.pull(0, out=a)
    kv2.pull(0, out=b)
    # momentum after kv's first step: m = -0.1*2 = -0.2; second step: m = 0.9*m - 0.1*2 = -0.38
    np.testing.assert_allclose(a.asnumpy(), np.full(4, 1 - 0.2 - 0.38), rtol=1e-6)
    # kv2 restarted from weight 1 but with kv's saved momentum
    np.testing.assert_allclose(b.asnumpy(), np.full(4, 1 - 0.38), rtol=1e-6)


@pytest.mark.skipif(ember.num_gpus() < 1, reason="needs CuPy and a GPU")
def test_device_store_aggregates_on_the_gpu(nd):
    kv = create("device")
    ctx = ember.gpu(0)
    kv.init(0, nd.zeros((4,), ctx=ctx))
    kv.push(0, [nd.array(np.ones(4), ctx=ctx), nd.array(np.full(4, 2.0), ctx=ctx)])
    out = nd.zeros((4,), ctx=ctx)
    kv.pull(0, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full(4, 3.0))
