"""Breadth operators against outputs and gradients recorded from MXNet 1.9.1
(tests/data/make_breadth_fixtures.py)."""
import json
import os

import numpy as np
import pytest

import ember as mx
from ember import autograd

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "breadth")
with open(os.path.join(HERE, "ops.json")) as _f:
    CASES = json.load(_f)["cases"]
DATA = np.load(os.path.join(HERE, "ops.npz"))


def _resolve(path):
    fn = mx.nd
    for part in path.split("."):
        fn = getattr(fn, part)
    return fn


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_matches_mxnet(case):
    name = case["case"]
    nds = [mx.nd.array(DATA[f"{name}/in{i}"]) for i in range(case["n_inputs"])]
    for i in case["wrt"]:
        nds[i].attach_grad()
    with autograd.record():
        out = _resolve(case["path"])(*nds, **case["attrs"])
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    assert len(outs) == case["n_outputs"]
    for k, o in enumerate(outs):
        want = DATA[f"{name}/out{k}"]
        assert o.shape == want.shape
        np.testing.assert_allclose(o.asnumpy(), want, rtol=1e-5, atol=1e-5, err_msg=f"{name}: output {k}")
    if case["wrt"]:
        autograd.backward(outs, [mx.nd.array(DATA[f"{name}/og{k}"]) for k in range(len(outs))])
        for i in case["wrt"]:
            np.testing.assert_allclose(nds[i].grad.asnumpy(), DATA[f"{name}/grad{i}"], rtol=1e-4, atol=1e-5,
                                       err_msg=f"{name}: gradient of input {i}")
