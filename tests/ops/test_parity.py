"""Outputs, output dtypes and gradients against results recorded from MXNet 1.9.1.

The fixtures come from tests/ops/fixtures/make_parity_fixtures.py (run with real MXNet);
gradients are of sum(output_i * w_i) for the recorded weights w_i.
"""
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import grads, run  # noqa: E402

from ember import ops  # noqa: E402

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
with open(os.path.join(HERE, "parity.json")) as _f:
    CASES = json.load(_f)["cases"]
DATA = np.load(os.path.join(HERE, "parity.npz"))


def _attrs(case):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in case["attrs"].items()}


@pytest.mark.parametrize("k", range(len(CASES)), ids=[f"{i}-{c['op']}" for i, c in enumerate(CASES)])
def test_matches_mxnet(k):
    case = CASES[k]
    name, attrs = case["op"], _attrs(case)
    inputs = [DATA[f"c{k}_in{i}"] for i in range(case["n_in"])]
    op = ops.get(name)
    outs = run(name, inputs, attrs, all_outputs=True)
    n_vis = op.visible_outputs(op.parse_attrs(attrs))
    assert n_vis == case["n_out"], f"{name}: {n_vis} visible outputs, MXNet has {case['n_out']}"
    for i in range(n_vis):
        want = DATA[f"c{k}_out{i}"]
        assert outs[i].dtype == want.dtype, f"{name}: output {i} dtype {outs[i].dtype}, MXNet {want.dtype}"
        assert outs[i].shape == want.shape, f"{name}: output {i} shape {outs[i].shape}, MXNet {want.shape}"
        tol = 2e-3 if want.dtype == np.float16 else 1e-5  # float16 sums may differ in the last bit
        np.testing.assert_allclose(outs[i], want, rtol=tol, atol=tol, err_msg=f"{name}: output {i}")
    if not case["wrt"]:
        return
    weights = [DATA[f"c{k}_w{i}"] for i in range(n_vis)] + [np.zeros_like(o) for o in outs[n_vis:]]
    got = grads(name, inputs, attrs, weights)
    for i in case["wrt"]:
        assert got[i] is not None, f"{name}: no gradient for input {i}"
        np.testing.assert_allclose(np.asarray(got[i]), DATA[f"c{k}_grad{i}"], rtol=1e-4, atol=1e-5,
                                   err_msg=f"{name}: gradient of input {i}")
