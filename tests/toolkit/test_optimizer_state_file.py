"""Optimizer state files: round trips (states, optimizer, schedule) and bad files.

Updater.get_states writes MXNet 1.9.1's pickle (tests/gluon/test_trainer_states.py checks real
MXNet loads it); ember's earlier format (ember/optimizer/state_file.py: an MXNet NDArray buffer
with a JSON header) is still read, and these tests write it with state_file.dumps.  Every
malformed input must raise base.FormatError, and no file content may run code.
"""
import json
import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ember import nd
from ember import optimizer as opt
from ember.base import FormatError
from ember.imperative import serialization
from ember.kvstore import create
from ember.optimizer import mxnet_states, state_file

rs = np.random.RandomState(4)
GRADS = rs.randn(6, 5).astype(np.float32)
W0 = rs.randn(5).astype(np.float32)

CONFIGS = [
    ("sgd", dict(learning_rate=0.1, momentum=0.9, wd=0.01)),
    ("sgd", dict(learning_rate=0.1)),  # no state: None
    ("adam", dict(learning_rate=0.01, clip_gradient=0.5)),
    ("rmsprop", dict(learning_rate=0.01, centered=True)),
    ("adagrad", dict(learning_rate=0.1)),
]


def _make(name, kw, sched=False):
    if sched:
        kw = dict(kw, lr_scheduler=opt.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=kw["learning_rate"]))
    return opt.create(name, param_idx2name={0: "fc_weight", "b": "fc_bias"}, **kw)


def _steps(updater, ws, grads):
    for g in grads:
        updater(0, nd.array(g), ws[0])
        updater("b", nd.array(g[:2]), ws[1])


@pytest.mark.parametrize("name,kw", CONFIGS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CONFIGS)])
@pytest.mark.parametrize("sched", [False, True], ids=["fixed-lr", "factor-schedule"])
def test_resumed_training_equals_uninterrupted(name, kw, sched):
    full = opt.get_updater(_make(name, kw, sched))
    wf = [nd.array(W0), nd.array(W0[:2])]
    _steps(full, wf, GRADS)
    first = opt.get_updater(_make(name, kw, sched))
    w = [nd.array(W0), nd.array(W0[:2])]
    _steps(first, w, GRADS[:3])
    blob = first.get_states(dump_optimizer=True)
    resumed = opt.get_updater(opt.create("sgd"))  # a different optimizer, replaced by the saved one
    resumed.set_states(blob)
    assert type(resumed.optimizer) is type(first.optimizer)
    assert resumed.optimizer._index_update_count == {0: 3, "b": 3} and resumed.optimizer.num_update == 3
    _steps(resumed, w, GRADS[3:])
    np.testing.assert_allclose(w[0].asnumpy(), wf[0].asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(w[1].asnumpy(), wf[1].asnumpy(), rtol=1e-6)


def test_states_only_keep_the_current_optimizer():
    u = opt.get_updater(opt.create("adam", learning_rate=0.01))
    w = nd.array(W0)
    u(3, nd.array(GRADS[0]), w)
    other = opt.create("adam", learning_rate=0.5)
    v = opt.get_updater(other)
    v.set_states(u.get_states())
    assert v.optimizer is other and set(v.states) == {3}
    mean, var = v.states[3]
    np.testing.assert_allclose(mean.asnumpy(), u.states[3][0].asnumpy())
    np.testing.assert_allclose(var.asnumpy(), u.states[3][1].asnumpy())


def test_ember_format_bytes_are_an_mxnet_ndarray_file_not_a_pickle(tmp_path):
    u = opt.get_updater(opt.create("sgd", momentum=0.9))
    u(0, nd.array(GRADS[0]), nd.array(W0))
    blob = state_file.dumps(u.states, u.optimizer)
    with pytest.raises(Exception):
        pickle.loads(blob)
    arrays = serialization.loads(blob)  # any NDArray-file reader sees the header and the arrays
    header = json.loads(arrays[state_file.HEADER_KEY].tobytes())
    assert header["format"] == "ember-optimizer-states" and header["optimizer"]["name"] == "sgd"
    assert header["states"] == [[0, {"array": "s0"}]]
    np.testing.assert_allclose(arrays["s0"], u.states[0].asnumpy())


def test_unsaveable_state_and_index_are_type_errors():
    u = opt.get_updater(opt.create("sgd"))
    u.states = {0: {"not": "a tuple"}}
    with pytest.raises(TypeError, match="index 0 is a dict"):
        u.get_states()
    u.states = {(1, 2): None}
    with pytest.raises(TypeError, match=r"index \(1, 2\) is a tuple"):
        u.get_states()
    with pytest.raises(TypeError, match="must be bytes"):
        u.set_states("text")


def _blob_with_header(edit):
    sched = opt.lr_scheduler.FactorScheduler(step=3, base_lr=0.01)
    u = opt.get_updater(opt.create("adam", learning_rate=0.01, lr_scheduler=sched))
    u(0, nd.array(GRADS[0]), nd.array(W0))
    arrays = serialization.loads(state_file.dumps(u.states, u.optimizer))
    header = json.loads(arrays[state_file.HEADER_KEY].tobytes())
    edit(header, arrays)
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    arrays[state_file.HEADER_KEY] = np.frombuffer(text, dtype=np.uint8)
    return serialization.dumps(arrays)


def _set(path, value):
    def edit(header, arrays):
        node = header
        for k in path[:-1]:
            node = node[k]
        node[path[-1]] = value
    return edit


BAD_HEADERS = {
    "wrong format tag": (_set(["format"], "something-else"), "wrong header format tag"),
    "future version": (_set(["version"], 99), "unsupported version 99"),
    "no state list": (_set(["states"], {"0": 1}), "no state list"),
    "bad entry": (_set(["states"], [[0]]), "malformed entry"),
    "float index": (_set(["states"], [[1.5, None]]), "malformed entry"),
    "missing array": (_set(["states"], [[0, {"array": "s99"}]]), "refers to array 's99'"),
    "unknown tree kind": (_set(["states"], [[0, {"code": "import os"}]]), "malformed state entry"),
    "unknown optimizer": (_set(["optimizer", "name"], "evil"), "unknown optimizer 'evil'"),
    "unknown scheduler": (lambda h, a: h["optimizer"]["attrs"]["lr_scheduler"].update(__lr_scheduler__="os"),
                          "unknown lr scheduler 'os'"),
    "malformed optimizer": (_set(["optimizer"], [1, 2]), "malformed optimizer section"),
    "bad attribute value": (_set(["optimizer", "attrs", "lr"], {"x": 1}), "malformed value"),
}


@pytest.mark.parametrize("case", list(BAD_HEADERS))
def test_malformed_header_is_a_format_error(case):
    edit, message = BAD_HEADERS[case]
    u = opt.get_updater(opt.create("sgd"))
    with pytest.raises(FormatError, match=message):
        u.set_states(_blob_with_header(edit))
    assert u.states == {}  # unchanged


def test_header_that_is_not_json_or_missing():
    arrays = {state_file.HEADER_KEY: np.frombuffer(b"{not json", dtype=np.uint8)}
    with pytest.raises(FormatError, match="not valid JSON"):
        state_file.loads(serialization.dumps(arrays))
    with pytest.raises(FormatError, match="no optimizer-states header"):
        state_file.loads(serialization.dumps({"w": np.zeros(2)}))
    with pytest.raises(FormatError, match="no optimizer-states header"):
        state_file.loads(serialization.dumps([np.zeros(2)]))


def test_truncated_and_garbage_bytes_are_format_errors():
    u = opt.get_updater(opt.create("rmsprop", centered=True))
    u(0, nd.array(GRADS[0]), nd.array(W0))
    for blob in (u.get_states(dump_optimizer=True), state_file.dumps(u.states, u.optimizer)):  # both formats
        for cut in range(0, len(blob), max(1, len(blob) // 40)):
            with pytest.raises(FormatError):
                u.set_states(blob[:cut])
    with pytest.raises(FormatError):
        u.set_states(b"\x00" * 64)


class _Boom:
    ran = False

    def __reduce__(self):
        return (_mark_ran, ())


def _mark_ran():
    _Boom.ran = True


def test_a_pickle_is_rejected_without_running_it():
    u = opt.get_updater(opt.create("sgd"))
    with pytest.raises(FormatError):
        u.set_states(pickle.dumps({0: _Boom()}))
    assert not _Boom.ran


def test_kvstore_state_file_round_trip_and_corrupt_file(tmp_path):
    kv = create("local")
    kv.init(0, nd.array(np.ones(4)))
    kv.set_optimizer(opt.create("adam", learning_rate=0.1))
    kv.push(0, nd.array(np.full(4, 2.0)))
    path = str(tmp_path / "kv.states")
    kv.save_optimizer_states(path, dump_optimizer=True)
    states, optimizer = mxnet_states.loads(open(path, "rb").read())  # MXNet's pickled (states, optimizer)
    assert isinstance(optimizer, opt.Adam) and len(states[0]) == 2
    kv2 = create("local")
    kv2.init(0, nd.array(np.ones(4)))
    kv2.set_optimizer(opt.create("sgd"))
    kv2.load_optimizer_states(path)
    assert isinstance(kv2._updater.optimizer, opt.Adam)
    data = open(path, "rb").read()
    bad = tmp_path / "bad.states"
    bad.write_bytes(data[: len(data) - 7])
    with pytest.raises(FormatError, match="bad.states.*does not hold optimizer states"):
        kv2.load_optimizer_states(str(bad))


def test_state_parts_round_trip_and_errors():
    parts = [b"", b"abc", bytes(range(256))]
    assert state_file.loads_parts(state_file.dumps_parts(parts)) == parts
    blob = state_file.dumps_parts(parts)
    with pytest.raises(FormatError):
        state_file.loads_parts(blob[:-3])
    with pytest.raises(FormatError, match="no part count"):
        state_file.loads_parts(serialization.dumps({"part0": np.zeros(3, np.uint8)}))
    with pytest.raises(FormatError, match="part 1 of 2 is missing"):
        state_file.loads_parts(serialization.dumps({state_file.PARTS_KEY: np.array([2], np.int64),
                                                    "part0": np.zeros(3, np.uint8)}))
    with pytest.raises(TypeError, match="state part 0 must be bytes"):
        state_file.dumps_parts(["text"])


# -- property: any state tree of NDArrays / numbers / None / tuples / lists round-trips exactly ------
_DTYPES = ["float32", "float64", "int32", "uint8", "float16"]
_arrays = st.builds(lambda shape, dtype, seed: np.random.default_rng(seed).uniform(-9, 9, shape).astype(dtype),
                    st.lists(st.integers(0, 3), max_size=3).map(tuple), st.sampled_from(_DTYPES), st.integers(0, 99))
_leaves = st.one_of(st.none(), _arrays, st.integers(-2**40, 2**40), st.floats(allow_nan=False), st.booleans())
_trees = st.recursive(_leaves, lambda kids: st.one_of(st.lists(kids, max_size=3), st.lists(kids, max_size=3).map(tuple)),
                      max_leaves=6)
_indices = st.one_of(st.integers(-5, 10**6), st.text(max_size=8))


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
@given(st.dictionaries(_indices, _trees, max_size=4))
def test_any_state_tree_round_trips(raw):
    states = {k: _materialise(v) for k, v in raw.items()}
    loaded, optimizer = state_file.loads(state_file.dumps(states))
    assert optimizer is None and list(loaded) == list(states)
    for k in states:
        _same(states[k], loaded[k])
