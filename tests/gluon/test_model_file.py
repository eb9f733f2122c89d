"""Block.save / Block.load (MXNet 1.9.1's `<prefix>-model.json` + `<prefix>-model.params`), against
a model MXNet saved (tests/data/gluon/saved-model-*, made by tests/data/make_gluon_save_fixture.py)."""
import json
import os
import subprocess

import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon, nd

from core_blocks import define

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "data", "gluon")
MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")
BLOCKS = define(gluon)


@pytest.fixture(scope="module")
def ref():
    return np.load(os.path.join(FIX, "saved-model.npz"))


def _names(block):
    out = [block.name]
    for child in block._children.values():
        out.extend(_names(child))
    return out


def _renamed_model():
    """saved_model() built after other blocks, so every auto-generated name differs from the file's."""
    with mx.name.NameManager():
        BLOCKS["saved_model"]()
        return BLOCKS["saved_model"]()


def _fresh_hybridized_model(x):
    """saved_model() as the first blocks of a program (the fixture's names), initialized, its children
    hybridized, and its output for `x` (the Net inside traces its graph)."""
    with mx.name.NameManager():
        net = BLOCKS["saved_model"]()
    net.initialize(mx.init.Xavier())
    for child in net._children.values():
        child.hybridize()
    return net, net(nd.array(x)).asnumpy()


def _structure(entry):
    """A model file's dictionary without the graphs' JSON text (compared across frameworks)."""
    return {k: (_structure(v) if isinstance(v, dict) else v) for k, v in entry.items()
            if k not in ("symbol", "inputs")}


def test_load_of_an_mxnet_saved_model_restores_names_graphs_and_weights(ref):
    net = _renamed_model()
    assert _names(net) != list(ref["names"])
    net.load(os.path.join(FIX, "saved-model"))
    assert _names(net) == list(ref["names"])
    assert list(net.collect_params().keys()) == list(ref["keys"])
    inner_net = list(list(net._children.values())[0]._children.values())[0]
    assert inner_net._active and inner_net._cached_graph   # MXNet's traced graph, not a new trace
    assert list(net._children) == ["chain00", "tinydense01"]
    np.testing.assert_allclose(net(nd.array(ref["x"])).asnumpy(), ref["out"], rtol=1e-5, atol=1e-6)


def test_a_loaded_model_trains(ref):
    net = _renamed_model()
    net.load(os.path.join(FIX, "saved-model"))
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    x = nd.array(ref["x"])
    with autograd.record():
        loss = (net(x) ** 2).sum()
    loss.backward()
    trainer.step(1)
    grads = {k: p.grad().asnumpy() for k, p in net.collect_params().items() if p.grad_req != "null"}
    assert all(np.abs(g).sum() > 0 for g in grads.values())
    assert float((net(x) ** 2).sum().asscalar()) < float(loss.asscalar())


def test_save_writes_mxnets_structure_and_load_round_trips(ref, tmp_path):
    net, want = _fresh_hybridized_model(ref["x"])
    x = nd.array(ref["x"])
    prefix = str(tmp_path / "m")
    net.save(prefix)
    with open(prefix + "-model.json") as f:
        ours = json.load(f)
    with open(os.path.join(FIX, "saved-model-model.json")) as f:
        theirs = json.load(f)
    # MXNet's file came from a fresh program too: the same keys, names, children and formats
    assert _structure(ours) == _structure(theirs)
    back = _renamed_model()
    back.load(prefix)
    np.testing.assert_allclose(back(x).asnumpy(), want, rtol=1e-6)
    assert list(back.collect_params().keys()) == list(net.collect_params().keys())


def test_load_into_a_different_model_raises_keyerror_and_changes_nothing(tmp_path):
    with mx.name.NameManager():
        net = BLOCKS["saved_model"]()
    net.initialize()
    net(nd.ones((2, 6)))
    net.save(str(tmp_path / "m"))
    other = BLOCKS["Chain"]()
    other.add(BLOCKS["TinyDense"](4, in_units=6))
    other.initialize()
    names, before = _names(other), other.collect_params()
    values = {k: p.data().asnumpy().copy() for k, p in before.items()}
    with pytest.raises(KeyError, match="tinydense"):
        other.load(str(tmp_path / "m"))
    assert _names(other) == names
    for k, p in other.collect_params().items():
        np.testing.assert_array_equal(p.data().asnumpy(), values[k])
    with pytest.raises(FileNotFoundError):
        net.load(str(tmp_path / "absent"))


@pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="MXNet 1.9.1 venv not installed")
def test_mxnet_loads_embers_save(ref, tmp_path):
    net, want = _fresh_hybridized_model(ref["x"])
    net.save(str(tmp_path / "m"))
    np.save(tmp_path / "x.npy", ref["x"])
    code = ("import sys, numpy as np, mxnet as mx; sys.path.insert(0, sys.argv[2]); "
            "from core_blocks import define; d = sys.argv[1]; b = define(mx.gluon); "
            "b['saved_model'](); net = b['saved_model'](); net.load(d + '/m'); "
            "np.save(d + '/out.npy', net(mx.nd.array(np.load(d + '/x.npy'))).asnumpy())")
    subprocess.run([MXNET_PYTHON, "-c", code, str(tmp_path), HERE], check=True, capture_output=True, timeout=120)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-4, atol=1e-6)
