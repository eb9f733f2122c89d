"""Trainer / Updater state files in MXNet 1.9.1's format: files ember writes load in real MXNet
(subprocess with the MXNet venv; skipped when it is absent) and training resumed there gives the
weights ember gets resuming from the same file; MXNet-written files still load in ember; the
pickle ember writes names only MXNet's classes and is read back without unpickling other code."""
from __future__ import annotations

import json
import os
import pickle
import pickletools
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as mx
from ember import autograd, gluon, nd
from ember import optimizer as opt
from ember.base import FormatError
from ember.imperative import serialization
from ember.optimizer import mxnet_states

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(os.path.dirname(HERE), "data", "trainer")
MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")
needs_mxnet = pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="no MXNet 1.9.1 venv (anchor)")

SHAPES = {"net_weight": (3, 4), "net_bias": (4,)}
MULTS = {"net_weight": (1.0, 1.0), "net_bias": (2.0, 0.5)}  # (lr_mult, wd_mult)
BATCH, BEFORE, AFTER = 4, 3, 3

# name -> (optimizer, its parameters (a scheduler as [class, kwargs]), contexts, dtype)
CASES = {
    "sgd_momentum": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, 1, "float32"),
    "adam_factor_schedule": ("adam", {"learning_rate": 0.05, "wd": 0.001, "lr_scheduler":
                                      ["FactorScheduler", {"step": 2, "factor": 0.5, "base_lr": 0.05}]}, 1, "float32"),
    "rmsprop_centered_clip": ("rmsprop", {"learning_rate": 0.01, "centered": True, "clip_gradient": 0.5}, 1,
                              "float32"),
    "adagrad": ("adagrad", {"learning_rate": 0.1, "wd": 0.01}, 1, "float32"),
    # two contexts: the updates (and the saved states) are the kvstore's
    "sgd_momentum_two_contexts_kvstore": ("sgd", {"learning_rate": 0.1, "momentum": 0.9}, 2, "float32"),
    # float16 weights: each state is MXNet's (float32 master weight, momentum) pair
    "sgd_multi_precision_fp16": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "multi_precision": True}, 1,
                                 "float16"),
}


def _options(params: dict, scheduler_module) -> dict:
    params = dict(params)
    if "lr_scheduler" in params:
        cls, kwargs = params["lr_scheduler"]
        params["lr_scheduler"] = getattr(scheduler_module, cls)(**kwargs)
    return params


def _data(case: str):
    _, _, _, dtype = CASES[case]
    rng_w, rng_g = np.random.RandomState(21), np.random.RandomState(22)
    w0 = {k: rng_w.randn(*s).astype(dtype) for k, s in SHAPES.items()}
    grads = [{k: rng_g.randn(*s).astype(dtype) for k, s in SHAPES.items()} for _ in range(BEFORE + AFTER)]
    return w0, grads


def _trainer(case: str, start: dict):
    optimizer, params, count, dtype = CASES[case]
    ctxs = [mx.cpu(i) for i in range(count)]
    pdict = gluon.ParameterDict()
    for name, shape in SHAPES.items():
        p = pdict.get(name, shape=shape, dtype=dtype, lr_mult=MULTS[name][0], wd_mult=MULTS[name][1])
        p.initialize(ctx=ctxs)
        for arr in p.list_data():
            arr[:] = nd.array(start[name], ctx=arr.context, dtype=dtype)
    return pdict, gluon.Trainer(pdict, optimizer, _options(params, mx.lr_scheduler))


def _steps(pdict, trainer, grads, steps):
    """Step s on context c is the backward of sum(p * g_s * (c + 1)): the gradient is exactly that."""
    ctxs = pdict["net_weight"].list_ctx()
    for s in steps:
        for c, ctx in enumerate(ctxs):
            with autograd.record():
                loss = nd.add_n(*[(pdict[k].data(ctx) * nd.array(grads[s][k] * (c + 1), ctx=ctx,
                                                                   dtype=grads[s][k].dtype)).sum() for k in SHAPES])
            loss.backward()
        trainer.step(BATCH)


def _weights(pdict):
    return {k: pdict[k].data(pdict[k].list_ctx()[0]).asnumpy() for k in SHAPES}


# What real MXNet runs: for each case, load ember's states file into a Trainer over parameters at the
# weights of the save and take the remaining steps; also train the whole run from w0 without stopping.
MXNET_SCRIPT = r'''
import json, sys
import numpy as np
import mxnet as mx
from mxnet import autograd, gluon
spec = json.load(open(sys.argv[1]))

def options(params):
    params = dict(params)
    if "lr_scheduler" in params:
        cls, kwargs = params["lr_scheduler"]
        params["lr_scheduler"] = getattr(mx.lr_scheduler, cls)(**kwargs)
    return params

def trainer(case, start, data):
    optimizer, params, count, dtype = case["config"]
    ctxs = [mx.cpu(i) for i in range(count)]
    pdict = gluon.ParameterDict()
    for name, (lr_mult, wd_mult) in spec["mults"].items():
        p = pdict.get(name, shape=data[start + name].shape, dtype=dtype, lr_mult=lr_mult, wd_mult=wd_mult)
        p.initialize(ctx=ctxs)
        p.set_data(mx.nd.array(data[start + name], dtype=dtype))
    return pdict, gluon.Trainer(pdict, optimizer, options(params))

def steps(pdict, tr, data, rng):
    ctxs = pdict["net_weight"].list_ctx()
    for s in rng:
        for c, ctx in enumerate(ctxs):
            grads = {k: data["grad_%d_%s" % (s, k)] for k in spec["mults"]}
            with autograd.record():
                loss = mx.nd.add_n(*[(pdict[k].data(ctx) * mx.nd.array(g * (c + 1), ctx=ctx, dtype=g.dtype)).sum()
                                     for k, g in grads.items()])
            loss.backward()
        tr.step(spec["batch"])

out = {}
for name, case in spec["cases"].items():
    data = np.load(case["npz"])
    total = spec["before"] + spec["after"]
    pdict, tr = trainer(case, "after_save_", data)
    tr.load_states(case["states"])
    opt = tr._optimizer
    out[name + "_optimizer"] = np.array(json.dumps({"class": type(opt).__name__, "num_update": opt.num_update,
                                                    "lr": opt.learning_rate, "rescale_grad": opt.rescale_grad}))
    steps(pdict, tr, data, range(spec["before"], total))
    for k in spec["mults"]:
        out["%s_resumed_%s" % (name, k)] = pdict[k].data(pdict[k].list_ctx()[0]).asnumpy()
    pdict, tr = trainer(case, "w0_", data)
    steps(pdict, tr, data, range(total))
    for k in spec["mults"]:
        out["%s_full_%s" % (name, k)] = pdict[k].data(pdict[k].list_ctx()[0]).asnumpy()
for name, path in spec["updater_files"].items():  # Updater.get_states() without the optimizer (Module's)
    updater = mx.optimizer.get_updater(mx.optimizer.create("sgd", momentum=0.9))
    updater.set_states(open(path, "rb").read())
    for index, state in updater.states.items():
        out["%s_state_%s" % (name, index)] = state.asnumpy()
np.savez(spec["out"], **out)
'''


@pytest.fixture(scope="module")
def ember_runs(tmp_path_factory):
    """Per case, ember's run: BEFORE steps, save_states, then a fresh Trainer resumes from the file."""
    root = tmp_path_factory.mktemp("trainer_states")
    runs = {}
    for case in CASES:
        w0, grads = _data(case)
        pdict, trainer = _trainer(case, w0)
        _steps(pdict, trainer, grads, range(BEFORE))
        states = str(root / f"{case}.states")
        trainer.save_states(states)
        after_save = _weights(pdict)
        record = {f"w0_{k}": v for k, v in w0.items()}
        record.update({f"after_save_{k}": v for k, v in after_save.items()})
        record.update({f"grad_{s}_{k}": g[k] for s, g in enumerate(grads) for k in SHAPES})
        np.savez(str(root / f"{case}.npz"), **record)
        pdict, trainer = _trainer(case, after_save)
        trainer.load_states(states)
        _steps(pdict, trainer, grads, range(BEFORE, BEFORE + AFTER))
        runs[case] = {"states": states, "npz": str(root / f"{case}.npz"), "resumed": _weights(pdict),
                      "num_update": trainer.optimizer.num_update}
    return root, runs


@pytest.fixture(scope="module")
def module_states(tmp_path_factory):
    """A Module trained two batches with SGD momentum, its save_optimizer_states file and states."""
    root = tmp_path_factory.mktemp("module_states")
    data = mx.sym.Variable("data")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(data, num_hidden=3, name="fc"), name="softmax")
    rng = np.random.RandomState(4)
    it = mx.io.NDArrayIter(rng.randn(8, 5).astype(np.float32), rng.randint(0, 3, 8).astype(np.float32), batch_size=4)
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    for batch in it:
        mod.forward_backward(batch)
        mod.update()
    path = str(root / "module.states")
    mod.save_optimizer_states(path)
    return path, {i: s.asnumpy() for i, s in mod._updater.states.items()}


@pytest.fixture(scope="module")
def mxnet_results(ember_runs, module_states, tmp_path_factory):
    if not os.path.exists(MXNET_PYTHON):
        pytest.skip("no MXNet 1.9.1 venv (anchor)")
    root, runs = ember_runs
    spec = {"mults": MULTS, "batch": BATCH, "before": BEFORE, "after": AFTER, "out": str(root / "mxnet.npz"),
            "cases": {c: {"config": list(CASES[c]), "states": r["states"], "npz": r["npz"]} for c, r in runs.items()},
            "updater_files": {"module": module_states[0]}}
    (root / "spec.json").write_text(json.dumps(spec))
    (root / "run_mxnet.py").write_text(MXNET_SCRIPT)
    done = subprocess.run([MXNET_PYTHON, str(root / "run_mxnet.py"), str(root / "spec.json")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(np.load(spec["out"]))


@needs_mxnet
@pytest.mark.parametrize("case", list(CASES))
def test_mxnet_resumes_from_embers_states_as_ember_does(case, ember_runs, mxnet_results):
    _, runs = ember_runs
    optimizer, params, _, dtype = CASES[case]
    info = json.loads(str(mxnet_results[f"{case}_optimizer"]))
    assert info["class"].lower() == optimizer  # the optimizer came from the file, not the Trainer's own
    assert info["num_update"] == BEFORE == runs[case]["num_update"] - AFTER
    assert info["rescale_grad"] == pytest.approx(1.0 / BATCH)
    tol = dict(rtol=1e-3, atol=1e-3) if dtype == "float16" else dict(rtol=1e-5, atol=1e-6)
    for k in SHAPES:
        ember_resumed = runs[case]["resumed"][k]
        np.testing.assert_allclose(ember_resumed, mxnet_results[f"{case}_resumed_{k}"], **tol)
        # and stopping in ember, resuming in MXNet is MXNet's uninterrupted run
        np.testing.assert_allclose(mxnet_results[f"{case}_resumed_{k}"], mxnet_results[f"{case}_full_{k}"], **tol)


@needs_mxnet
def test_module_optimizer_states_load_in_mxnet(module_states, mxnet_results):
    _, states = module_states
    assert states and all(s is not None for s in states.values())
    for index, state in states.items():
        np.testing.assert_array_equal(mxnet_results[f"module_state_{index}"], state)


def _globals(blob: bytes):
    """(module, name) of every class the pickle refers to (protocol 4: STACK_GLOBAL after two strings)."""
    strings, found = [], set()
    for op, arg, _ in pickletools.genops(blob):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            found.add((strings[-2], strings[-1]))
        elif op.name in ("GLOBAL", "INST"):
            found.add(tuple(arg.split(" ", 1)))
    return found


def test_the_file_is_mxnets_pickle_naming_only_mxnet_classes(ember_runs):
    _, runs = ember_runs
    blob = open(runs["adam_factor_schedule"]["states"], "rb").read()
    assert blob[:2] == b"\x80\x04"  # pickle protocol 4, as MXNet 1.9.1 writes
    assert _globals(blob) == {("mxnet.ndarray.ndarray", "NDArray"), ("builtins", "bytearray"),
                              ("mxnet.optimizer.optimizer", "Adam"), ("mxnet.lr_scheduler", "FactorScheduler")}
    with pytest.raises(ModuleNotFoundError, match="mxnet"):
        pickle.loads(blob)  # a plain unpickler needs MXNet itself: the names are MXNet's


def test_each_ndarray_is_one_ndarray_save_record():
    updater = opt.get_updater(opt.create("sgd", momentum=0.9))
    weight = nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    updater(7, nd.ones((2, 3)), weight)
    handles = [arg for op, arg, _ in pickletools.genops(updater.get_states())
               if op.name in ("SHORT_BINBYTES", "BINBYTES", "BINBYTES8")]
    assert len(handles) == 1
    one_file = serialization.dumps([updater.states[7].asnumpy()])
    assert handles[0] == one_file[24:-8]  # the record between an NDArray file's header and name count


def test_mxnet_files_still_load_and_save_again_with_the_same_contents(tmp_path):
    """Every MXNet-made fixture: ember loads it, saves it again, and both files hold the same
    states and optimizer attributes (read by the restricted reader)."""
    cases = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".states"))
    assert cases
    for name in cases:
        raw = open(os.path.join(FIXTURES, name), "rb").read()
        updater = opt.get_updater(opt.create("sgd"))
        updater.set_states(raw)
        again = updater.get_states(dump_optimizer=True)
        (s1, o1), (s2, o2) = mxnet_states.loads(raw), mxnet_states.loads(again)
        assert sorted(s1) == sorted(s2), name
        for k in s1:
            a, b = s1[k], s2[k]
            a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
            assert len(a) == len(b)
            for x, y in zip(a, b):
                assert (x is None) == (y is None)
                if x is not None:
                    assert x.dtype == y.dtype
                    np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
        assert type(o1) is type(o2)
        for key in ("lr", "wd", "rescale_grad", "num_update", "_index_update_count", "clip_gradient",
                    "aggregate_num", "idx2name"):
            assert getattr(o1, key) == getattr(o2, key), (name, key)


def test_a_pickle_naming_other_code_is_still_refused():
    class RunsCode:
        ran = False

        def __reduce__(self):
            return (os.system, ("true",))
    updater = opt.get_updater(opt.create("sgd"))
    with pytest.raises(FormatError, match="refusing to load"):
        updater.set_states(pickle.dumps({0: RunsCode()}))
    assert updater.states == {}


def test_something_mxnet_cannot_hold_is_a_type_error():
    updater = opt.get_updater(opt.create("sgd"))
    updater.optimizer.custom = {1, 2}  # a set: not part of any MXNet optimizer
    with pytest.raises(TypeError, match="cannot save a set in optimizer states"):
        updater.get_states(dump_optimizer=True)
    updater.states = {0: {"a": 1}}
    with pytest.raises(TypeError, match="index 0 is a dict"):
        updater.get_states()


def test_earlier_ember_state_files_still_load():
    updater = opt.get_updater(opt.create("adam", learning_rate=0.01))
    updater(0, nd.ones(3), nd.zeros(3))
    old = opt.state_file.dumps(updater.states, updater.optimizer)  # ember's NDArray-buffer format
    other = opt.get_updater(opt.create("sgd"))
    other.set_states(old)
    assert isinstance(other.optimizer, opt.Adam)
    np.testing.assert_array_equal(other.states[0][1].asnumpy(), updater.states[0][1].asnumpy())


# -- property: any state tree of NDArrays / numbers / None / tuples / lists survives MXNet's format ----------
_DTYPES = ["float32", "float64", "float16", "int32", "int64", "uint8", "int8"]
_arrays = st.builds(lambda shape, dtype, seed: np.random.default_rng(seed).uniform(-9, 9, shape).astype(dtype),
                    st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple), st.sampled_from(_DTYPES),
                    st.integers(0, 99))
_leaves = st.one_of(st.none(), _arrays, st.integers(-2**40, 2**40), st.floats(allow_nan=False), st.booleans())
_trees = st.recursive(_leaves, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                    st.lists(kids, max_size=3).map(tuple)), max_leaves=6)


def _materialise(tree):
    if isinstance(tree, np.ndarray):
        return nd.array(tree, dtype=tree.dtype)
    if isinstance(tree, (list, tuple)):
        return type(tree)(_materialise(t) for t in tree)
    return tree


def _same(a, b):
    if isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif hasattr(a, "asnumpy"):
        assert b.dtype == a.dtype and b.shape == a.shape
        np.testing.assert_array_equal(b.asnumpy(), a.asnumpy())
    else:
        assert type(a) is type(b) and a == b


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.one_of(st.integers(-5, 10**6), st.text(max_size=8)), _trees, max_size=4))
def test_any_state_tree_round_trips(raw):
    updater = opt.get_updater(opt.create("sgd"))
    updater.states = {k: _materialise(v) for k, v in raw.items()}
    loaded, optimizer = mxnet_states.loads(updater.get_states())
    assert optimizer is None and list(loaded) == list(updater.states)
    for k in updater.states:
        _same(updater.states[k], loaded[k])


# -- ParameterDict.zero_grad: one reset_arrays per context -----------------------------------------------
def test_zero_grad_is_one_reset_arrays_per_context():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    pdict = gluon.ParameterDict()
    shapes = {"a": (2, 3), "b": (4,), "c": (3,)}
    for name, shape in shapes.items():
        p = pdict.get(name, shape=shape, grad_req="null" if name == "c" else "add")
        p.initialize(ctx=ctxs)
    for name in ("a", "b"):
        for g in pdict[name].list_grad():
            g[:] = 3.0
    calls = []
    kernel = mx.ops.get("reset_arrays").kernel("cpu")

    def counting(ctx, attrs, inputs, outputs, aux):
        calls.append(len(inputs))
        kernel(ctx, attrs, inputs, outputs, aux)
    mx.ops.override("reset_arrays", "cpu", counting)
    try:
        pdict.zero_grad()
        mx.nd.waitall()
    finally:
        del mx.ops.get("reset_arrays").kernels["cpu"]
    assert calls == [2, 2]  # a and b on each context; c has no gradient
    for name in ("a", "b"):
        for g in pdict[name].list_grad():
            assert not g.asnumpy().any()


# -- a row_sparse Parameter keeps its first Trainer --------------------------------------------------------
def test_a_second_trainer_for_a_row_sparse_parameter_is_refused():
    sparse = gluon.Parameter("emb_weight", shape=(5, 2), stype="row_sparse")
    sparse.initialize()
    first = gluon.Trainer([sparse], "sgd")
    with pytest.raises(RuntimeError, match=r"^Failed to set the trainer for Parameter 'emb_weight' because it "
                                           r"was already set\. More than one trainers for a row_sparse "
                                           r"Parameter is not supported\.$"):
        gluon.Trainer([sparse], "sgd")
    assert sparse._trainer is first
    sparse._set_trainer(first)  # the same one again is fine
    dense = gluon.Parameter("dense_weight", shape=(2,))
    dense.initialize()
    gluon.Trainer([dense], "sgd")
    second = gluon.Trainer([dense], "adam")  # dense parameters may change Trainer
    assert dense._trainer is second


# -- loading values on several contexts resets the Trainer's store --------------------------------------------
def test_values_loaded_on_several_contexts_restart_the_store_from_them(tmp_path):
    ctxs = [mx.cpu(0), mx.cpu(1)]
    pdict = gluon.ParameterDict()
    x = pdict.get("x", shape=(4,))
    pdict.initialize(ctx=ctxs, init="zeros")
    trainer = gluon.Trainer(pdict, "sgd", {"learning_rate": 0.1}, kvstore="device")
    path = str(tmp_path / "x.params")
    pdict.save(path)

    def step():
        with autograd.record():
            for w in x.list_data():
                (w + 1).backward()
        trainer.step(1)
    step()
    np.testing.assert_allclose(x.data(mx.cpu(1)).asnumpy(), -0.2)  # both contexts' gradients summed
    pdict.load(path, ctx=ctxs)  # a value on cpu(0) set into the copies on cpu(0) and cpu(1)
    assert trainer._kvstore is None and not trainer._kv_initialized
    for w in x.list_data():
        assert not w.asnumpy().any()
    x.set_data(nd.array([1.0, 2.0, 3.0, 4.0], ctx=mx.cpu(1)))
    for w in x.list_data():
        np.testing.assert_array_equal(w.asnumpy(), [1, 2, 3, 4])
    step()
    for w in x.list_data():
        np.testing.assert_allclose(w.asnumpy(), np.array([1, 2, 3, 4]) - 0.2, rtol=1e-6)
