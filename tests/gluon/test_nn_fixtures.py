"""Every gluon.nn / gluon.contrib.nn layer against MXNet 1.9.1 (tests/data/make_gluon_nn_fixtures.py):
repr before and after the first call, parameter names/shapes/grad_reqs, predict-mode output,
one training step's output, input and parameter gradients and running statistics — imperatively
and hybridized; and networks of these layers exported by MXNet, loaded with SymbolBlock.imports."""
from __future__ import annotations

import glob
import json
import os

import numpy as np
import pytest

import ember as mx
from ember.gluon import nn  # noqa: F401  (used by the fixtures' expressions)
from ember.gluon.contrib import nn as cnn  # noqa: F401

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "gluon_nn")
FIXTURES = sorted(p for p in glob.glob(os.path.join(DATA, "*.npz")) if not os.path.basename(p).startswith("export-"))
EXPORTS = sorted(os.path.basename(p)[len("export-"):-len("-io.npz")]
                 for p in glob.glob(os.path.join(DATA, "export-*-io.npz")))
TOL = dict(rtol=2e-4, atol=2e-5)
# Cases whose MXNet gradients are not the derivative of MXNet's own forward (ember's are checked by
# finite differences in tests/ops)
MXNET_GRAD_BUGS = {
    "selu": "MXNet's selu backward uses lambda*(y + alpha) for x <= 0 (docs/nn_ops.md)",
}


def _mxnet_overwrites(name: str, grad_req: str) -> bool:
    """MXNet's CPU BatchNorm writes 1 into a fixed gamma (scale=False) during some training steps
    (depending on axis and on which inputs need gradients); the value never affects the output."""
    return grad_req == "null" and name.endswith("_gamma")


def stack(container, make_children):
    """container with make_children()'s layers added inside its name scope (as the generator does)."""
    with container.name_scope():
        container.add(*make_children())
    return container


def _load(path):
    with np.load(path) as z:
        fx = {k: z[k] for k in z.files}
    for key in ("expr", "repr_before", "repr_after"):
        fx[key] = str(fx[key])
    fx["names"] = json.loads(str(fx["names"]))
    fx["grad_reqs"] = json.loads(str(fx["grad_reqs"]))
    fx["deterministic"] = bool(fx["deterministic"])
    return fx


def _build(fx):
    with mx.name.NameManager():
        net = eval(fx["expr"])
    return net


def _check_step(net, fx, case):
    x = mx.nd.array(fx["x"])
    params = net.collect_params()
    np.testing.assert_allclose(net(x).asnumpy(), fx["y_pred"], err_msg=f"{case}: predict output", **TOL)
    takes_grad = fx["x_grad"].size > 0
    if takes_grad:
        x.attach_grad()
    with mx.autograd.record():
        y = net(x)
    y.backward(mx.nd.array(fx["head"]))
    if not fx["deterministic"]:
        return
    np.testing.assert_allclose(y.asnumpy(), fx["y_train"], err_msg=f"{case}: training output", **TOL)
    if case in MXNET_GRAD_BUGS:
        return
    if takes_grad:
        np.testing.assert_allclose(x.grad.asnumpy(), fx["x_grad"], err_msg=f"{case}: input gradient", **TOL)
    for i, name in enumerate(fx["names"]):
        if _mxnet_overwrites(name, fx["grad_reqs"][i]):
            continue
        np.testing.assert_allclose(params[name].data().asnumpy(), fx[f"param_after_{i}"],
                                   err_msg=f"{case}: {name} after one step", **TOL)
        if f"grad_{i}" in fx:
            np.testing.assert_allclose(params[name].grad().asnumpy(), fx[f"grad_{i}"],
                                       err_msg=f"{case}: gradient of {name}", **TOL)


def _prepared(fx):
    net = _build(fx)
    net.initialize()
    net(mx.nd.array(fx["x"]))  # finishes deferred initialization
    params = net.collect_params()
    for i, name in enumerate(fx["names"]):
        params[name].set_data(mx.nd.array(fx[f"param_{i}"]))
    return net


def test_fixtures_present():
    assert len(FIXTURES) >= 50, "run tests/data/make_gluon_nn_fixtures.py with the MXNet venv"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: os.path.basename(p)[:-4])
def test_layer_matches_mxnet(path):
    fx = _load(path)
    case = os.path.basename(path)[:-4]
    net = _build(fx)
    assert repr(net) == fx["repr_before"]
    net.initialize()
    x = mx.nd.array(fx["x"])
    net(x)
    params = net.collect_params()
    assert list(params.keys()) == fx["names"]
    assert [params[n].grad_req for n in fx["names"]] == fx["grad_reqs"]
    for i, name in enumerate(fx["names"]):
        assert params[name].shape == fx[f"param_{i}"].shape, name
    assert repr(net) == fx["repr_after"]
    _check_step(_prepared(fx), fx, case)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: os.path.basename(p)[:-4])
def test_hybridized_layer_matches_mxnet(path):
    fx = _load(path)
    case = os.path.basename(path)[:-4]
    net = _prepared(fx)
    if not isinstance(net, mx.gluon.HybridBlock):
        pytest.skip("not a HybridBlock")
    net.hybridize(inline_limit=0)  # the cached graph itself, even for one-operator layers
    _check_step(net, fx, case)


def test_exports_present():
    assert len(EXPORTS) >= 3, "run tests/data/make_gluon_nn_fixtures.py with the MXNet venv"


@pytest.mark.parametrize("name", EXPORTS)
def test_imports_mxnet_exported_network(name):
    prefix = os.path.join(DATA, f"export-{name}")
    net = mx.gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    with np.load(prefix + "-io.npz") as io:
        x, want = io["x"], io["y"]
    np.testing.assert_allclose(net(mx.nd.array(x)).asnumpy(), want, rtol=1e-4, atol=1e-5)
    net.hybridize(inline_limit=0)  # the cached graph itself, even for one-operator layers
    np.testing.assert_allclose(net(mx.nd.array(x)).asnumpy(), want, rtol=1e-4, atol=1e-5)
