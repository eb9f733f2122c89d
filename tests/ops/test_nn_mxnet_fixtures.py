"""Replay the fixtures recorded from MXNet 1.9.1 (tests/data/make_op_fixtures.py) through the registry:
forward outputs, aux-state updates and input gradients must match MXNet's."""
from __future__ import annotations

import glob
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import analytic_grads, run_op  # noqa: E402

from ember import ops  # noqa: E402

FIXTURES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "data", "ops", "*.npz")))
TOL = {"rtol": 2e-4, "atol": 2e-5}
# Cases where MXNet 1.9.1's gradient is not the derivative of its own forward; ember's is checked by
# finite differences in test_nn_gradients.py instead.
MXNET_GRAD_BUGS = {
    "leaky_selu": "MXNet's selu backward uses lambda*(y + alpha) for x <= 0, not lambda*alpha*exp(x)",
    "leaky_rrelu": "MXNet's inference-mode rrelu backward reads its (zero) mask",
}


def _load(path):
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    n_in = sum(1 for k in data if k.startswith("in_"))
    n_aux = sum(1 for k in data if k.startswith("aux_") and not k.startswith("aux_after"))
    n_out = sum(1 for k in data if k.startswith("out_"))
    return dict(op=str(data["op"]), attrs=json.loads(str(data["attrs"])), is_train=bool(data["is_train"]),
                inputs=[data[f"in_{k}"] for k in range(n_in)], aux=[data[f"aux_{k}"] for k in range(n_aux)],
                aux_after=[data[f"aux_after_{k}"] for k in range(n_aux)],
                outputs=[data[f"out_{k}"] for k in range(n_out)], heads=[data[f"head_{k}"] for k in range(n_out)],
                grads={int(k): data[f"grad_{k}"] for k in data["grad_idx"]})


def test_fixtures_present():
    assert len(FIXTURES) >= 50, "run tests/data/make_op_fixtures.py with the MXNet venv (see tests/data/README.md)"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: os.path.basename(p)[:-4])
def test_matches_mxnet(path):
    fx = _load(path)
    name = fx["op"]
    tol = dict(rtol=1e-3, atol=1e-4) if name == "RNN" else TOL
    aux = [a.copy() for a in fx["aux"]]
    outs = run_op(name, fx["inputs"], fx["attrs"], aux=aux or None, is_train=fx["is_train"])
    op = ops.get(name)
    nvis = op.visible_outputs(op.parse_attrs(fx["attrs"]))
    assert nvis == len(fx["outputs"]), f"{name}: {nvis} visible outputs, MXNet returned {len(fx['outputs'])}"
    for k, (mine, ref) in enumerate(zip(outs, fx["outputs"])):
        assert mine.dtype == ref.dtype, f"{name}: output {k} dtype {mine.dtype} != MXNet's {ref.dtype}"
        np.testing.assert_allclose(mine, ref, err_msg=f"{name}: output {k}", **tol)
    for k, (mine, ref) in enumerate(zip(aux, fx["aux_after"])):
        np.testing.assert_allclose(mine, ref, err_msg=f"{name}: aux {k} after one step", **tol)
    if os.path.basename(path)[:-4] in MXNET_GRAD_BUGS:
        return
    grads = analytic_grads(name, fx["inputs"], fx["attrs"], fx["heads"], is_train=fx["is_train"],
                           aux=[a.copy() for a in fx["aux"]] or None)
    for k, ref in fx["grads"].items():
        if grads[k] is None:
            assert not np.any(ref), f"{name}: ember gives no gradient for input {k} but MXNet's is non-zero"
            continue
        np.testing.assert_allclose(grads[k], ref, err_msg=f"{name}: gradient of input {k}", **tol)
