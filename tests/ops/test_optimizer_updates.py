"""Optimizer update ops against results recorded from MXNet 1.9.1 (fixtures/make_optimizer_fixtures.py)."""
import json
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import run  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import DTypeError, OperatorError, ShapeError  # noqa: E402

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
with open(os.path.join(HERE, "optimizer_updates.json")) as _f:
    CASES = json.load(_f)["cases"]
DATA = np.load(os.path.join(HERE, "optimizer_updates.npz"))


@pytest.mark.parametrize("k", range(len(CASES)), ids=[f"{c['op']}-{i}" for i, c in enumerate(CASES)])
def test_matches_mxnet(k):
    case = CASES[k]
    n_in = case.get("n_inputs", 2 + case["n_states"])
    ins = [DATA[f"c{k}_in{j}"].copy() for j in range(n_in)]
    weight_before = ins[0].copy()
    if case.get("in_place"):  # out=weight, as MXNet's optimizers call it
        op = ops.get(case["op"])
        op.kernel("cpu")(ops.OpContext(np), op.parse_attrs(case["attrs"]), ins, [ins[0]], [])
        out = ins[0]
    else:
        out = run(case["op"], ins, case["attrs"])
    np.testing.assert_allclose(out, DATA[f"c{k}_out"], rtol=2e-5, atol=2e-6)
    for j in range(case["n_states"]):  # states updated in place
        np.testing.assert_allclose(ins[2 + j], DATA[f"c{k}_state{j}"], rtol=2e-5, atol=2e-6,
                                   err_msg=f"state {j}")
    if not case.get("in_place"):
        np.testing.assert_array_equal(ins[0], weight_before)  # without out=weight the weight is untouched


def test_in_place_on_weight():
    op = ops.get("sgd_mom_update")
    assert (0, 0) in op.inplace and list(op.mutates) == [2]
    w = np.ones(3, np.float32)
    g = np.full(3, 2.0, np.float32)
    mom = np.zeros(3, np.float32)
    a = op.parse_attrs({"lr": 0.1, "momentum": 0.9})
    op.kernel("cpu")(ops.OpContext(np), a, [w, g, mom], [w], [])
    np.testing.assert_allclose(w, 0.8)
    np.testing.assert_allclose(mom, -0.2)


@pytest.mark.parametrize("op_name", ["sgd_update", "sgd_mom_update"])
@pytest.mark.parametrize("attrs", [{"lr": 0.01, "rescale_grad": 1 / 128}, {"lr": 0.1},
                                   {"lr": 0.05, "wd": 1e-3, "rescale_grad": 0.3, "clip_gradient": 0.2}])
@pytest.mark.parametrize("in_place", [True, False])
def test_large_weights_updated_in_chunks_give_the_same_numbers(op_name, attrs, in_place):
    """Weights above the kernels' chunk size run chunk by chunk: every element gets exactly the
    operations, in the order, of the whole-array formula."""
    from ember.ops import optimizer_updates as ou
    n = 3 * ou._CHUNK + 123
    rng = np.random.RandomState(0)
    w, g, mom = (rng.randn(n // 3 + 1, 3).astype(np.float32)[: n // 3] for _ in range(3))
    mom_before = mom.copy()
    attrs = dict(attrs, momentum=0.9) if op_name == "sgd_mom_update" else attrs
    op = ops.get(op_name)
    a = op.parse_attrs(attrs)
    ins = [w.copy(), g.copy()] + ([mom] if op_name == "sgd_mom_update" else [])
    out = ins[0] if in_place else np.empty_like(w)
    assert ou._chunkable(np, out, *ins)
    op.kernel("cpu")(ops.OpContext(np), a, ins, [out], [])
    lr, wd, r, c = a["lr"], a["wd"], a["rescale_grad"], a["clip_gradient"]
    step = r * g
    if c >= 0:
        step = np.clip(step, -c, c)
    step = step * lr
    if op_name == "sgd_update":
        want = w * (1 - lr * wd) - step
    else:
        want_mom = mom_before * a["momentum"] - w * (lr * wd) - step
        np.testing.assert_array_equal(mom, want_mom)
        want = w + want_mom
    np.testing.assert_array_equal(out, want)


def test_mp_sgd_updates_master_copy():
    w = np.ones(4, np.float16)
    g = np.full(4, 0.5, np.float16)
    w32 = np.ones(4, np.float32)
    out = run("mp_sgd_update", [w, g, w32], {"lr": 0.1, "wd": 0.01})
    want = (1 - 0.1 * 0.01) * 1.0 - 0.1 * 0.5
    np.testing.assert_allclose(w32, want, rtol=1e-7)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, np.float16(want))
    mom = np.zeros(4, np.float32)
    run("mp_sgd_mom_update", [w, g, mom, w32], {"lr": 0.1, "momentum": 0.9})
    np.testing.assert_allclose(mom, -0.05, rtol=1e-6)
    with pytest.raises(DTypeError, match="mp_sgd_update: weight32 must be float32"):
        ops.get("mp_sgd_update").dtypes({}, [np.dtype("float16"), None, np.dtype("float16")])


def test_errors():
    with pytest.raises(OperatorError, match="sgd_update: required attribute 'lr'"):
        ops.get("sgd_update").parse_attrs({})
    op = ops.get("adam_update")
    with pytest.raises(ShapeError, match=r"adam_update: shapes must be equal, but weight has shape \(3,\) and var"):
        op.shapes(op.parse_attrs({"lr": 0.1}), [(3,), (3,), (3,), (4,)])
    with pytest.raises(DTypeError, match="adam_update: floating point weights expected"):
        op.dtypes({}, [np.dtype("int32")] * 4)
