"""Pluggable key-value stores (MXNet 1.9.1's KVStoreBase): the registry behind mx.kv.create, MXNet's
TestStore, and gluon.Trainer driving such a store one key at a time."""
import numpy as np
import pytest

import ember as mx
from ember import gluon


def _two_device_param(name="x"):
    x = gluon.Parameter(name, shape=(4,))
    x.initialize(ctx=[mx.cpu(0), mx.cpu(1)], init="zeros")
    return x


def _step(trainer, *params):
    with mx.autograd.record():
        for p in params:
            for w in p.list_data():
                (w + 1).backward()
    trainer.step(1)


def test_create_finds_registered_stores_first_by_lower_case_class_name():
    kv = mx.kv.create("TestStore")
    assert isinstance(kv, mx.kv.TestStore) and kv.type == "teststore" and (kv.rank, kv.num_workers) == (0, 1)
    assert not kv.is_capable(mx.kv.KVStoreBase.OPTIMIZER)
    with pytest.raises(ValueError, match="capability"):
        kv.is_capable("bogus")
    assert isinstance(mx.kv.create("local"), mx.kv.KVStoreBase)  # ember's own stores implement it too
    with pytest.raises(mx.kv.KVStoreError, match="registered one"):
        mx.kv.create("no_such_store")
    with pytest.raises(TypeError, match="KVStoreBase"):
        mx.kv.KVStoreBase.register(int)


def test_test_store_sums_over_devices_and_broadcasts():
    kv = mx.kv.create("teststore")
    a, b = mx.nd.ones((3,), ctx=mx.cpu(0)), mx.nd.full((3,), 2.0, ctx=mx.cpu(1))
    kv.pushpull(0, [a, b])
    np.testing.assert_array_equal(a.asnumpy(), [3, 3, 3])
    np.testing.assert_array_equal(b.asnumpy(), [3, 3, 3])
    out = [mx.nd.zeros((3,), ctx=mx.cpu(0)), mx.nd.zeros((3,), ctx=mx.cpu(1))]
    kv.broadcast(1, mx.nd.full((3,), 7.0), out=out)
    assert all((o.asnumpy() == 7).all() for o in out)


def test_trainer_drives_a_store_without_an_optimizer_one_key_at_a_time():
    # MXNet's test_trainer_with_teststore: the summed gradient (2) with lr 1 gives -2 on every device
    x = _two_device_param()
    trainer = gluon.Trainer([x], "sgd", {"learning_rate": 1.0, "momentum": 0.5}, kvstore=mx.kv.create("teststore"))
    _step(trainer, x)
    assert trainer._update_on_kvstore is False
    for ctx in (mx.cpu(0), mx.cpu(1)):
        np.testing.assert_array_equal(x.data(ctx).asnumpy(), [-2.0] * 4)
    with pytest.raises(ValueError, match="update_on_kvstore=False"):
        gluon.Trainer([x], "sgd", kvstore=mx.kv.create("teststore"), update_on_kvstore=True)._init_kvstore()


def test_a_user_registered_store_is_created_by_name_and_called_per_key():
    calls = []

    @mx.kv.KVStoreBase.register
    class RecordingStore(mx.kv.TestStore):
        def broadcast(self, key, value, out, priority=0):
            calls.append(("broadcast", key))
            super().broadcast(key, value, out, priority)

        def pushpull(self, key, value, out=None, priority=0):
            calls.append(("pushpull", key))
            super().pushpull(key, value, out, priority)

    try:
        x, y = _two_device_param("x"), _two_device_param("y")
        trainer = gluon.Trainer([x, y], "sgd", {"learning_rate": 0.5}, kvstore="recordingstore")
        _step(trainer, x, y)
        assert calls == [("broadcast", 0), ("broadcast", 1), ("pushpull", 0), ("pushpull", 1)]
        np.testing.assert_array_equal(x.data(mx.cpu(1)).asnumpy(), [-1.0] * 4)
    finally:
        mx.kv.KVStoreBase.kv_registry.pop("recordingstore", None)
