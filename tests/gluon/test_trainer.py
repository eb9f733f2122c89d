"""gluon.Trainer: updates against numpy references, several contexts, stale gradients, kvstore
choices, state files (round trips and files written by MXNet 1.9.1), errors, and dist_sync jobs."""
from __future__ import annotations

import importlib.util
import json
import os
import pickle
import signal
import subprocess
import sys

import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon
from ember.base import FormatError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "data", "trainer")


def _load_by_path(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load_by_path("_optimizer_reference", os.path.join(ROOT, "tests", "toolkit", "optimizer_reference.py"))

SHAPES = {"net_weight": (4, 3), "net_bias": (3,)}
MULTS = {"net_weight": (1.0, 1.0), "net_bias": (2.0, 0.5)}  # (lr_mult, wd_mult)
BATCH = 4


def _initial(name: str) -> np.ndarray:
    return np.random.RandomState(3 if name == "net_bias" else 2).randn(*SHAPES[name]).astype(np.float32)


def _grads(steps: int, ctx_count: int = 1, seed: int = 5):
    """grads[step][ctx][name]: a known gradient per step, context and parameter."""
    rng = np.random.RandomState(seed)
    return [[{n: rng.randn(*s).astype(np.float32) for n, s in SHAPES.items()} for _ in range(ctx_count)]
            for _ in range(steps)]


def _set_values(param, values: np.ndarray) -> None:
    """Set every copy of `param` (set_data would copy across contexts with setitem, which ember's
    NDArray does not do yet)."""
    for arr in param.list_data():
        arr[:] = mx.nd.array(values, ctx=arr.context)


def _params(ctxs=None, grad_req="write"):
    ctxs = ctxs or [mx.cpu(0)]
    params = gluon.ParameterDict()
    for name, shape in SHAPES.items():
        p = params.get(name, shape=shape, lr_mult=MULTS[name][0], wd_mult=MULTS[name][1], grad_req=grad_req)
        p.initialize(ctx=ctxs)
        _set_values(p, _initial(name))
    return params


def _backward(params, step_grads, names=None):
    """On each context c, backward of sum(p * step_grads[c][p]): the gradient is exactly that array."""
    names = names or list(SHAPES)
    for c, ctx in enumerate(params[names[0]].list_ctx()):
        with autograd.record():
            loss = mx.nd.add_n(*[(params[n].data(ctx) * mx.nd.array(step_grads[c][n], ctx=ctx)).sum()
                                 for n in names])
        loss.backward()


def _reference(kind, grads, lr, wd=0.0, lr_at=None, **kwargs):
    """numpy weights after training on the gradients summed over contexts, with the multipliers."""
    out = {}
    for name in SHAPES:
        lr_mult, wd_mult = MULTS[name]
        summed = [sum(ctx_grads[name] for ctx_grads in step) for step in grads]
        scaled_lr_at = (lambda t, f=lr_at, m=lr_mult: f(t) * m) if lr_at else None
        out[name] = ref.run_reference(kind, _initial(name), summed, lr_at=scaled_lr_at, lr=lr * lr_mult,
                                      wd=wd * wd_mult, rescale_grad=1.0 / BATCH, **kwargs)[-1]
    return out


def _check_weights(params, expected, rtol=1e-5, atol=1e-6):
    for name in SHAPES:
        for arr in params[name].list_data():
            np.testing.assert_allclose(arr.asnumpy(), expected[name], rtol=rtol, atol=atol, err_msg=name)


# -- updates against numpy ---------------------------------------------------------------------------
CASES = [
    ("sgd", {"learning_rate": 0.1, "wd": 0.01}, {}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "clip_gradient": 0.3}, {"momentum": 0.9,
                                                                                          "clip_gradient": 0.3}),
    ("adam", {"learning_rate": 0.05, "wd": 0.001, "beta1": 0.8}, {"beta1": 0.8}),
    ("rmsprop", {"learning_rate": 0.01, "centered": True}, {"centered": True}),
    ("adagrad", {"learning_rate": 0.1, "wd": 0.01}, {}),
]


@pytest.mark.parametrize("optimizer,options,ref_kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_steps_match_the_numpy_reference(optimizer, options, ref_kwargs):
    params = _params()
    trainer = gluon.Trainer(params, optimizer, options)
    grads = _grads(4)
    for step in grads:
        _backward(params, step)
        trainer.step(BATCH)
    assert trainer._kvstore is None and trainer._update_on_kvstore is None  # one context: no store
    expected = _reference(optimizer, grads, options["learning_rate"], options.get("wd", 0.0), **ref_kwargs)
    _check_weights(params, expected)


def test_an_optimizer_instance_with_an_lr_scheduler():
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.2)
    optimizer = mx.optimizer.SGD(learning_rate=0.2, momentum=0.5, lr_scheduler=sched)
    params = _params()
    trainer = gluon.Trainer(params, optimizer)
    assert trainer.optimizer is optimizer and optimizer.param_dict[1] is params["net_weight"]
    grads = _grads(5)
    seen = []
    for step in grads:
        _backward(params, step)
        trainer.step(BATCH)
        seen.append(trainer.learning_rate)
    # the schedule halves the rate after every second update: 0.2 0.2 0.1 0.1 0.05 at updates 1..5
    lr_at = lambda t: 0.2 * 0.5 ** ((t - 1) // 2)  # noqa: E731
    assert seen == pytest.approx([lr_at(t) for t in range(1, 6)])
    _check_weights(params, _reference("sgd", grads, 0.2, lr_at=lr_at, momentum=0.5))
    with pytest.raises(UserWarning, match="LRScheduler of the optimizer has already been defined"):
        trainer.set_learning_rate(0.1)


def test_set_learning_rate_and_lr_mult_changes_apply_to_the_next_step():
    params = _params()
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 1.0})
    assert trainer.learning_rate == 1.0
    w = params["net_weight"]
    before = w.data().asnumpy()
    _backward(params, _grads(1)[0])
    trainer.set_learning_rate(0.5)
    w.lr_mult = 4.0  # the optimizer reads multipliers from the live parameters
    trainer.step(1)
    np.testing.assert_allclose(w.data().asnumpy(), before - 2.0 * _grads(1)[0][0]["net_weight"], rtol=1e-6)
    assert trainer.learning_rate == 0.5 and trainer.optimizer.lr == 0.5


def test_params_as_dict_list_or_parameterdict_are_numbered_in_sorted_name_order():
    params = _params()
    by_dict = gluon.Trainer(dict(params.items()), "sgd")
    by_pdict = gluon.Trainer(params, "sgd")
    assert [p.name for p in by_dict._params] == [p.name for p in by_pdict._params] == ["net_bias", "net_weight"]
    by_list = gluon.Trainer([params["net_weight"], params["net_bias"]], "sgd")
    assert [p.name for p in by_list._params] == ["net_weight", "net_bias"]
    assert by_list._param2idx == {"net_weight": 0, "net_bias": 1}
    assert params["net_weight"]._trainer is by_list  # the last trainer made over it


def test_grad_req_null_parameters_are_left_alone():
    params = _params()
    params["net_bias"].grad_req = "null"
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1})
    grads = _grads(1)
    _backward(params, grads[0])
    trainer.step(BATCH)
    np.testing.assert_array_equal(params["net_bias"].data().asnumpy(), _initial("net_bias"))
    expected = _initial("net_weight") - 0.1 * grads[0][0]["net_weight"] / BATCH
    np.testing.assert_allclose(params["net_weight"].data().asnumpy(), expected, rtol=1e-6)


class _Linear(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(2, 3))

    def hybrid_forward(self, F, x, weight):
        return F.dot(x, weight, transpose_b=True)


def test_a_hybridized_block_trains_like_numpy():
    net = _Linear(prefix="lin_")
    net.initialize(mx.init.Constant(0.5))
    net.hybridize()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = np.random.RandomState(0).randn(4, 3).astype(np.float32)
    target = np.random.RandomState(1).randn(4, 2).astype(np.float32)
    w = np.full((2, 3), 0.5, np.float32)
    for _ in range(3):
        with autograd.record():
            loss = ((net(mx.nd.array(x)) - mx.nd.array(target)) ** 2).sum()
        loss.backward()
        trainer.step(4)
        w = w - 0.1 / 4 * (2 * (x @ w.T - target)).T @ x
    np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-5, atol=1e-6)


# -- several contexts ------------------------------------------------------------------------------------
@pytest.mark.parametrize("kvstore,update_on_kvstore,expect_update_on_kvstore", [
    ("device", None, True), ("device", False, False), ("local", None, True), ("local", False, False),
])
@pytest.mark.parametrize("optimizer,options,ref_kwargs", [
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, {"momentum": 0.9}),
    ("adam", {"learning_rate": 0.05}, {}),
], ids=["sgd", "adam"])
def test_several_contexts_train_on_the_summed_gradient(kvstore, update_on_kvstore, expect_update_on_kvstore,
                                                       optimizer, options, ref_kwargs):
    ctxs = [mx.cpu(0), mx.cpu(1)]
    params = _params(ctxs)
    trainer = gluon.Trainer(params, optimizer, options, kvstore=kvstore, update_on_kvstore=update_on_kvstore)
    grads = _grads(3, ctx_count=2)
    for step in grads:
        _backward(params, step)
        trainer.step(BATCH)
    assert trainer._kvstore.type == kvstore
    assert trainer._update_on_kvstore is expect_update_on_kvstore
    # Adam's bias correction needs one step count per step, however many devices update
    assert trainer.optimizer.num_update == 3
    _check_weights(params, _reference(optimizer, grads, options["learning_rate"], options.get("wd", 0.0),
                                      **ref_kwargs))


def test_update_on_kvstore_follows_mxnet_update_on_kvstore(monkeypatch):
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", "0")
    trainer = gluon.Trainer(_params([mx.cpu(0), mx.cpu(1)]), "sgd")
    trainer._init_kvstore()
    assert trainer._kvstore.type == "device" and trainer._update_on_kvstore is False


def test_without_a_kvstore_each_context_updates_with_its_own_gradient():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    params = _params(ctxs)
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore=None)
    grads = _grads(1, ctx_count=2)
    _backward(params, grads[0])
    trainer.step(BATCH)
    assert trainer._kvstore is None
    for c, arr in enumerate(params["net_weight"].list_data()):
        expected = _initial("net_weight") - 0.1 * grads[0][c]["net_weight"] / BATCH
        np.testing.assert_allclose(arr.asnumpy(), expected, rtol=1e-6)


def test_allreduce_grads_then_update_with_clipping_in_between():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    params = _params(ctxs)
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, update_on_kvstore=False)
    grads = _grads(1, ctx_count=2)
    _backward(params, grads[0])
    trainer.allreduce_grads()
    for name in SHAPES:
        summed = grads[0][0][name] + grads[0][1][name]
        for g in params[name].list_grad():
            np.testing.assert_allclose(g.asnumpy(), summed, rtol=1e-6)
    norm = gluon.utils.clip_global_norm([params[n].grad(mx.cpu(0)) for n in SHAPES], 1.0)
    gluon.utils.clip_global_norm([params[n].grad(mx.cpu(1)) for n in SHAPES], 1.0)
    trainer.update(BATCH)
    for name in SHAPES:
        summed = grads[0][0][name] + grads[0][1][name]
        lr_mult = MULTS[name][0]
        expected = _initial(name) - 0.1 * lr_mult * summed * min(1.0, 1.0 / norm) / BATCH
        for arr in params[name].list_data():
            np.testing.assert_allclose(arr.asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_one_step_pushes_every_gradient_in_one_list_call():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    params = _params(ctxs)
    kv = mx.kv.create("device")
    calls = []
    pushpull = kv.pushpull

    def recording(key, value, out=None, priority=0):
        calls.append((list(key), out is not None))
        return pushpull(key, value, out=out, priority=priority)
    kv.pushpull = recording
    trainer = gluon.Trainer(params, "sgd", kvstore=kv)
    for step in _grads(2, ctx_count=2):
        _backward(params, step)
        trainer.step(BATCH)
    assert trainer._kvstore is kv
    assert calls == [([0, 1], True)] * 2  # both parameters, new weights pulled into the copies


def test_mismatched_contexts_are_refused():
    a = gluon.Parameter("a", shape=(2,))
    a.initialize(ctx=mx.cpu(0))
    b = gluon.Parameter("b", shape=(2,))
    b.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    with pytest.raises(AssertionError, match="All Parameters must be initialized on the same set of contexts, "
                                             r"but Parameter b is initialized on \[cpu\(0\), cpu\(1\)\]"):
        gluon.Trainer([a, b], "sgd")
    trainer = gluon.Trainer([b], "sgd", kvstore=None)
    b.reset_ctx(mx.cpu(2))
    with autograd.record():
        loss = b.data(mx.cpu(2)).sum()
    loss.backward()
    with pytest.raises(RuntimeError, match=r"'b' is now on \[cpu\(2\)\], but the Trainer was created for"):
        trainer.step(1)


def test_data_on_a_context_without_the_parameters_fails_naming_them():
    net = _Linear(prefix="lin_")
    net.initialize(ctx=mx.cpu(0))
    gluon.Trainer(net.collect_params(), "sgd")
    with pytest.raises(RuntimeError, match=r"Parameter 'lin_weight' was not initialized on context cpu\(1\)"):
        with autograd.record():
            net(mx.nd.ones((2, 3), ctx=mx.cpu(1)))


# -- stale gradients ---------------------------------------------------------------------------------------
STALE = ("Gradient of Parameter `net_bias` on context cpu(0) has not been updated by backward since last `step`. "
         "This could mean a bug in your model that made it only use a subset of the Parameters (Blocks) for this "
         "iteration. If you are intentionally only using a subset, call step with ignore_stale_grad=True to "
         "suppress this warning and skip updating of Parameters with stale gradient")


def test_a_stale_gradient_raises_and_ignore_stale_grad_skips_only_that_parameter():
    params = _params()
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1})
    grads = _grads(2)
    _backward(params, grads[0])
    trainer.step(BATCH)
    assert not params["net_weight"].data()._fresh_grad  # cleared by the update
    _backward(params, grads[1], names=["net_weight"])  # this backward does not reach the bias
    bias_before = params["net_bias"].data().asnumpy()
    with pytest.raises(UserWarning) as info:
        trainer.step(BATCH)
    assert str(info.value) == STALE
    trainer.step(BATCH, ignore_stale_grad=True)
    np.testing.assert_array_equal(params["net_bias"].data().asnumpy(), bias_before)
    expected = _initial("net_weight") - 0.1 * (grads[0][0]["net_weight"] + grads[1][0]["net_weight"]) / BATCH
    np.testing.assert_allclose(params["net_weight"].data().asnumpy(), expected, rtol=1e-6)
    with pytest.raises(UserWarning, match="has not been updated by backward since last `step`"):
        trainer.update(BATCH)  # nothing is fresh any more


# -- errors ---------------------------------------------------------------------------------------------------
def test_bad_arguments_raise_mxnet_errors():
    params = _params()
    with pytest.raises(ValueError, match="First argument must be a list or dict of Parameters, got <class"):
        gluon.Trainer(params["net_weight"], "sgd")
    with pytest.raises(ValueError, match="got list of <class 'int'>"):
        gluon.Trainer([1], "sgd")
    with pytest.raises(ValueError, match="cannot find optimizer 'nosuch'"):
        gluon.Trainer(params, "nosuch")
    with pytest.raises(AssertionError, match="optimizer_params must be None"):
        gluon.Trainer(params, mx.optimizer.SGD(), {"learning_rate": 1})
    with pytest.raises(TypeError, match="kvstore must be"):
        gluon.Trainer(_params([mx.cpu(0), mx.cpu(1)]), "sgd", kvstore=3).step(1, ignore_stale_grad=True)
    with pytest.raises(ValueError, match="update_on_kvstore=True needs a kvstore"):
        gluon.Trainer(params, "sgd", update_on_kvstore=True).step(1, ignore_stale_grad=True)
    on_store = gluon.Trainer(_params([mx.cpu(0), mx.cpu(1)]), "sgd", update_on_kvstore=True)
    with pytest.raises(AssertionError, match=r"allreduce_grads\(\) when parameters are updated on kvstore"):
        on_store.allreduce_grads()
    with pytest.raises(AssertionError, match=r"update\(\) when parameters are updated on kvstore"):
        on_store.update(1)


def test_gradient_compression_is_refused_by_the_store():
    trainer = gluon.Trainer(_params([mx.cpu(0), mx.cpu(1)]), "sgd",
                            compression_params={"type": "2bit", "threshold": 0.5})
    with pytest.raises(mx.kv.KVStoreError, match="gradient compression is not supported"):
        trainer.step(1, ignore_stale_grad=True)


def test_uninitialized_and_deferred_parameters():
    with pytest.raises(RuntimeError, match="Parameter 'w' has not been initialized"):
        gluon.Trainer([gluon.Parameter("w", shape=(3,))], "sgd")
    deferred = gluon.Parameter("d", shape=(0,), allow_deferred_init=True)
    deferred.initialize()
    trainer = gluon.Trainer([deferred], "sgd")
    with pytest.raises(gluon.DeferredInitializationError, match="Parameter 'd' has not been initialized yet"):
        trainer.step(1)


def test_a_store_without_optimizer_support_updates_on_the_devices():
    class SumOnlyStore(mx.kv.KVStore):
        def is_capable(self, capability):
            return False
    params = _params([mx.cpu(0), mx.cpu(1)])
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore=SumOnlyStore("local"))
    grads = _grads(1, ctx_count=2)
    _backward(params, grads[0])
    trainer.step(BATCH)
    assert trainer._update_on_kvstore is False
    _check_weights(params, _reference("sgd", grads, 0.1))
    refused = gluon.Trainer(params, "sgd", kvstore=SumOnlyStore("local"), update_on_kvstore=True)
    with pytest.raises(ValueError, match="Please set update_on_kvstore=False"):
        refused._init_kvstore()


def test_parameters_declared_row_sparse_follow_mxnet_store_choices():
    # a row_sparse weight makes MXNet's choice (a store, even for one context, updating on it),
    # a row_sparse gradient keeps single-node updates local
    weight = gluon.Parameter("emb_weight", shape=(5, 2), stype="row_sparse", grad_stype="row_sparse")
    weight.initialize(mx.init.Constant(1.0), ctx=mx.cpu(0))
    trainer = gluon.Trainer([weight], "sgd", {"learning_rate": 0.5})
    g = np.arange(10, dtype=np.float32).reshape(5, 2)
    rows = mx.nd.arange(0, 5)
    for step in range(2):
        with autograd.record():
            loss = (weight.row_sparse_data(rows) * mx.nd.array(g)).sum()  # pulled from the store
        loss.backward()
        trainer.step(2)
    assert trainer._kvstore.type == "device" and trainer._update_on_kvstore is True
    # the store holds the update; row_sparse_data reads back the rows asked for (as MXNet 1.9.1)
    expected = np.zeros_like(g)
    expected[[0, 3]] = (1.0 - 0.5 * g)[[0, 3]]
    np.testing.assert_allclose(weight.row_sparse_data(mx.nd.array([0, 3])).asnumpy(), expected, rtol=1e-6)
    other = gluon.Parameter("emb2_weight", shape=(5, 2), stype="row_sparse")  # weight keeps its Trainer (MXNet)
    other.initialize(ctx=mx.cpu(0))
    with pytest.raises(ValueError, match="Cannot set update_on_kvstore=False when sparse weights are present"):
        gluon.Trainer([other], "sgd", update_on_kvstore=False)._init_kvstore()
    grad_only = gluon.Parameter("g_weight", shape=(3,), grad_stype="row_sparse")
    grad_only.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    local = gluon.Trainer([grad_only], "sgd")
    local._init_kvstore()
    assert local._kvstore.type == "device" and local._update_on_kvstore is False


# -- loaded parameters reset the store ---------------------------------------------------------------------
@pytest.mark.parametrize("kvstore", ["local", "device"])
def test_a_reset_store_is_made_again_from_the_current_values(kvstore):
    params = _params([mx.cpu(0), mx.cpu(1)])
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore=kvstore)
    grads = _grads(2, ctx_count=2)
    _backward(params, grads[0])
    trainer.step(BATCH)
    first_store = trainer._kvstore
    for name in SHAPES:  # new values, as Parameter.set_data writes them before resetting the store
        _set_values(params[name], _initial(name))
    trainer._reset_kvstore()
    assert trainer._kvstore is None and trainer._kv_initialized is False
    assert trainer._params_to_init == trainer._params
    _backward(params, grads[1])
    trainer.step(BATCH)
    assert trainer._kvstore is not first_store and not trainer._params_to_init
    _check_weights(params, _reference("sgd", grads[1:], 0.1))


@pytest.mark.parametrize("kvstore", ["local", "device"])
def test_loading_parameters_resets_the_store_and_training_goes_on_from_them(kvstore, tmp_path):
    params = _params([mx.cpu(0), mx.cpu(1)])
    path = str(tmp_path / "p.params")
    params.save(path)
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1}, kvstore=kvstore)
    grads = _grads(2, ctx_count=2)
    _backward(params, grads[0])
    trainer.step(BATCH)
    params.load(path)  # back to the initial values: the store's copy is stale now
    assert trainer._kvstore is None and trainer._kv_initialized is False
    _backward(params, grads[1])
    trainer.step(BATCH)
    _check_weights(params, _reference("sgd", grads[1:], 0.1))


# -- state files ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ctx_count,update_on_kvstore", [(1, None), (2, True), (2, False)])
@pytest.mark.parametrize("optimizer,options", [
    ("adam", {"learning_rate": 0.05, "lr_scheduler": "factor"}),
    ("sgd", {"learning_rate": 0.1, "momentum": 0.9}),
], ids=["adam", "sgd"])
def test_resuming_from_saved_states_equals_uninterrupted_training(tmp_path, ctx_count, update_on_kvstore,
                                                                 optimizer, options):
    def make():
        opts = dict(options)
        if opts.get("lr_scheduler") == "factor":
            opts["lr_scheduler"] = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=opts["learning_rate"])
        params = _params([mx.cpu(i) for i in range(ctx_count)])
        return params, gluon.Trainer(params, optimizer, opts, update_on_kvstore=update_on_kvstore)
    grads = _grads(5, ctx_count)
    full_params, full = make()
    for step in grads:
        _backward(full_params, step)
        full.step(BATCH)
    params, first = make()
    for step in grads[:3]:
        _backward(params, step)
        first.step(BATCH)
    path = str(tmp_path / "t.states")
    first.save_states(path)
    resumed = gluon.Trainer(params, "rmsprop")  # the saved optimizer replaces this one
    resumed.load_states(path)
    assert type(resumed.optimizer) is type(full.optimizer) and resumed.optimizer.num_update == 3
    assert resumed.optimizer.param_dict[0] is params["net_bias"]
    for step in grads[3:]:
        _backward(params, step)
        resumed.step(BATCH)
    for name in SHAPES:
        for a, b in zip(params[name].list_data(), full_params[name].list_data()):
            np.testing.assert_allclose(a.asnumpy(), b.asnumpy(), rtol=1e-6, atol=1e-7)


def test_load_states_keeps_lr_mult_with_the_parameters(tmp_path):
    params = _params([mx.cpu(0), mx.cpu(1)])
    trainer = gluon.Trainer(params, "sgd", {"learning_rate": 0.1})
    _backward(params, _grads(1, 2)[0])
    trainer.step(1)
    assert trainer._kvstore._updater.optimizer._get_lr(1) == pytest.approx(0.1)
    path = str(tmp_path / "s.states")
    trainer.save_states(path)
    trainer.load_states(path)
    assert trainer.optimizer is trainer._kvstore._updater.optimizer
    params["net_weight"].lr_mult = 2.0
    assert trainer._kvstore._updater.optimizer._get_lr(1) == pytest.approx(0.2)


def test_a_malformed_state_file_is_refused(tmp_path):
    params = _params()
    trainer = gluon.Trainer(params, "sgd")
    bad = tmp_path / "bad.states"
    bad.write_bytes(b"\x12\x01 not states at all")
    with pytest.raises(FormatError):
        trainer.load_states(str(bad))
    with open(os.path.join(FIXTURES, "sgd_momentum.states"), "rb") as f:
        truncated = f.read()[:200]
    bad.write_bytes(truncated)
    with pytest.raises(FormatError, match="malformed MXNet optimizer states"):
        trainer.load_states(str(bad))


class _RunsCode:
    ran = False

    def __reduce__(self):
        return (_mark_ran, ())


def _mark_ran():
    _RunsCode.ran = True


def test_a_pickle_naming_other_code_is_refused_without_running_it(tmp_path):
    # MXNet's files are pickles; only MXNet's NDArray, optimizer and scheduler names may appear
    path = tmp_path / "evil.states"
    path.write_bytes(pickle.dumps({0: _RunsCode()}))
    trainer = gluon.Trainer(_params(), "sgd")
    with pytest.raises(FormatError, match=r"refer to .*_mark_ran, which is not part of optimizer states"):
        trainer.load_states(str(path))
    assert not _RunsCode.ran


MXNET_CASES = sorted(f[:-len(".states")] for f in os.listdir(FIXTURES) if f.endswith(".states"))


def _fixture(case):
    data = np.load(os.path.join(FIXTURES, case + ".npz"))
    meta = json.loads(str(data["meta"]))
    return data, meta


def _fixture_trainer(meta, start):
    """Parameters set to `start` (name -> array) with the fixture's multipliers, and a Trainer."""
    ctxs = [mx.cpu(i) for i in range(meta["contexts"])]
    params = gluon.ParameterDict()
    for name, (lr_mult, wd_mult) in meta["mults"].items():
        p = params.get(name, shape=start[name].shape, lr_mult=lr_mult, wd_mult=wd_mult)
        p.initialize(ctx=ctxs)
        _set_values(p, start[name])
    options = dict(meta["params"])
    if "lr_scheduler" in options:
        cls, kwargs = options["lr_scheduler"]
        options["lr_scheduler"] = getattr(mx.lr_scheduler, cls)(**kwargs)
    return params, gluon.Trainer(params, meta["optimizer"], options)


def _fixture_steps(params, trainer, data, meta, steps):
    names = list(meta["mults"])
    ctxs = params[names[0]].list_ctx()
    for s in steps:
        _backward(params, [{n: data[f"grad_{s}_{n}"] * (c + 1) for n in names} for c in range(len(ctxs))], names)
        trainer.step(meta["batch_size"])


@pytest.mark.parametrize("case", MXNET_CASES)
def test_training_from_scratch_matches_mxnet(case):
    data, meta = _fixture(case)
    params, trainer = _fixture_trainer(meta, {n: data[f"w0_{n}"] for n in meta["mults"]})
    _fixture_steps(params, trainer, data, meta, range(meta["steps_before"] + meta["steps_after"]))
    assert bool(trainer._update_on_kvstore) == meta["update_on_kvstore"]
    for name in meta["mults"]:
        for arr in params[name].list_data():
            np.testing.assert_allclose(arr.asnumpy(), data[f"final_{name}"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", MXNET_CASES)
def test_states_saved_by_mxnet_resume_training_as_in_mxnet(case, tmp_path):
    data, meta = _fixture(case)
    params, trainer = _fixture_trainer(meta, {n: data[f"after_save_{n}"] for n in meta["mults"]})
    trainer.load_states(os.path.join(FIXTURES, case + ".states"))
    assert trainer.optimizer.num_update == meta["steps_before"]
    assert trainer.optimizer.rescale_grad == pytest.approx(1.0 / meta["batch_size"])
    before = meta["steps_before"]
    _fixture_steps(params, trainer, data, meta, range(before, before + meta["steps_after"]))
    for name in meta["mults"]:
        for arr in params[name].list_data():
            np.testing.assert_allclose(arr.asnumpy(), data[f"final_{name}"], rtol=1e-5, atol=1e-6)
    trainer.save_states(str(tmp_path / "again.states"))  # what was loaded saves in ember's format
    again, _ = mx.optimizer.state_file.loads((tmp_path / "again.states").read_bytes())
    assert sorted(again) == [0, 1]


# -- dist_sync over the launcher ------------------------------------------------------------------------
try:
    pytest.importorskip("mpi4py")
    from ember.kvstore import launch
    launch.find_mpiexec()
    HAVE_MPIEXEC = True
except (SystemExit, pytest.skip.Exception):
    HAVE_MPIEXEC = False
needs_mpiexec = pytest.mark.skipif(not HAVE_MPIEXEC, reason="no mpi4py/mpiexec (pip install 'ember[dist]')")
WORKER = os.path.join(HERE, "_trainer_dist_worker.py")
MARKER = "EMBER_KV_TEST_RUN"  # the kvstore tests' marker: their helper finds leftover processes by it


@pytest.fixture(scope="module")
def no_stray_processes():
    """Fail if a rank or launcher of these jobs outlives its job (and kill it)."""
    yield
    procs = _load_by_path("_kvstore_procs", os.path.join(ROOT, "tests", "kvstore", "_procs.py"))
    leftovers = procs.tagged_processes(os.getpid())
    for pid, _ in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    assert not leftovers, f"processes left running after the Trainer's MPI jobs: {leftovers}"


def _run_job(tmp_path, workers, optimizer, update_on_kvstore, contexts, steps, kv_type="dist_sync", servers=0,
             limit=150):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, HERE]))
    env[MARKER] = str(os.getpid())
    cmd = [sys.executable, "-m", "ember.kvstore.launch", "-n", str(workers), "-s", str(servers), "--job-timeout",
           str(limit), sys.executable, WORKER, str(tmp_path), kv_type, optimizer, update_on_kvstore, str(contexts),
           str(steps)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=limit + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"MPI job hung past {limit + 30}s:\n{out[-3000:]}")
    assert proc.returncode == 0, out[-4000:]
    return [np.load(tmp_path / f"rank{r}.npz") for r in range(workers)]


@needs_mpiexec
@pytest.mark.parametrize("workers,optimizer,update_on_kvstore,contexts", [
    (2, "sgd", "default", 1),
    (2, "adam", "0", 2),
    (3, "adam", "1", 1),
    (3, "sgd", "0", 1),
])
def test_dist_sync_workers_equal_one_process_on_the_summed_gradient(tmp_path, no_stray_processes, workers,
                                                                    optimizer, update_on_kvstore, contexts):
    worker = _load_by_path("_trainer_dist_worker", WORKER)
    steps = 3
    results = _run_job(tmp_path, workers, optimizer, update_on_kvstore, contexts, steps)
    options = dict(worker.OPTIMIZERS[optimizer])
    lr, wd = options.pop("learning_rate"), options.pop("wd", 0.0)
    for name in worker.SHAPES:
        summed = [sum(worker.gradient(name, r, c, s) for r in range(workers) for c in range(contexts))
                  for s in range(steps)]
        lr_mult = worker.LR_MULT[name]
        expected = ref.run_reference(optimizer, worker.initial(name, 0), summed, lr=lr * lr_mult, wd=wd,
                                     rescale_grad=1.0 / worker.BATCH_SIZE, **options)[-1]
        for r, res in enumerate(results):
            for c in range(contexts):
                np.testing.assert_allclose(res[f"{name}_ctx{c}"], expected, rtol=1e-5, atol=1e-6,
                                           err_msg=f"{name} on rank {r}, context {c}")
    for res in results:
        assert bool(res["update_on_kvstore"]) == (update_on_kvstore != "0")
        assert res["pushpull_calls"].tolist() == [2] * steps  # every step: one call with both parameters
        if update_on_kvstore != "0":
            assert "Possible change in the `batch_size`" in str(res["batch_change_error"])


@needs_mpiexec
def test_dist_async_updates_on_the_servers(tmp_path, no_stray_processes):
    # one worker, so the server sees its pushes in order and the result is exact; the servers get
    # the pickled optimizer without its param_dict, so lr_mult does not apply there (as in MXNet)
    worker = _load_by_path("_trainer_dist_worker", WORKER)
    steps = 3
    (result,) = _run_job(tmp_path, 1, "sgd", "default", 2, steps, kv_type="dist_async", servers=1)
    assert "Please set update_on_kvstore=True when training in async mode." == str(result["async_refusal"])
    assert bool(result["update_on_kvstore"])
    options = dict(worker.OPTIMIZERS["sgd"])
    for name in worker.SHAPES:
        summed = [worker.gradient(name, 0, 0, s) + worker.gradient(name, 0, 1, s) for s in range(steps)]
        expected = ref.run_reference("sgd", worker.initial(name, 0), summed, lr=options["learning_rate"],
                                     wd=options["wd"], momentum=options["momentum"],
                                     rescale_grad=1.0 / worker.BATCH_SIZE)[-1]
        for c in range(2):
            np.testing.assert_allclose(result[f"{name}_ctx{c}"], expected, rtol=1e-5, atol=1e-6)
