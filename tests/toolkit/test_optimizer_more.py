"""The optimizers beyond SGD/Adam/RMSProp/AdaGrad, multi_precision, and the multi-tensor update ops.

Checked three ways: against numpy references of MXNet 1.9.1's formulas over several steps (wd,
rescale_grad, clip_gradient, lr/wd multipliers, an lr schedule), against steps and op results
recorded from real MXNet 1.9.1 (tests/data/make_optimizer_fixtures.py), and for the fused ops
against per-weight numpy.
"""
import json
import os
import warnings

import numpy as np
import pytest

import ember as mx
from ember import nd, ops
from ember import optimizer as opt

pytestmark = pytest.mark.filterwarnings("ignore:learning rate from ``lr_scheduler``")

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "optimizer")
with open(os.path.join(DATA, "steps.json")) as _f:
    META = json.load(_f)
FIX = np.load(os.path.join(DATA, "steps.npz"))

NAMES = ["fc_weight", "fc_bias", "bn_gamma"]
SHAPES = [(3, 4), (4,), (2, 3)]
LR_MULT = {"fc_weight": 0.5}
STEPS = 4


def _inputs(seed_w=21, seed_g=22):
    rw, rg = np.random.RandomState(seed_w), np.random.RandomState(seed_g)
    w0 = [rw.uniform(-1, 1, s) for s in SHAPES]
    grads = [[rg.uniform(-1.5, 1.5, s) for s in SHAPES] for _ in range(STEPS)]
    return w0, grads


def _build(kind, kwargs):
    kwargs = dict(kwargs)
    if "lr_scheduler" in kwargs:
        cls, params = kwargs["lr_scheduler"]
        kwargs["lr_scheduler"] = getattr(mx.lr_scheduler, cls)(**params)
    o = opt.create(kind, param_idx2name=dict(enumerate(NAMES)), **kwargs)
    o.set_lr_mult(dict(LR_MULT))
    return o


def run_ember(kind, kwargs, w0, grads, mode="single", dtype="float32"):
    """The weights after each step, the Updater's calls one index at a time or as one list."""
    updater = opt.get_updater(_build(kind, kwargs))
    weights = [nd.array(w, dtype=dtype) for w in w0]
    out = []
    for gs in grads:
        g_nd = [nd.array(g, dtype=dtype) for g in gs]
        if mode == "list":
            updater(list(range(len(weights))), g_nd, weights)
        else:
            for i in range(len(weights)):
                updater(i, g_nd[i], weights[i])
        out.append([w.asnumpy().astype(np.float64) for w in weights])
    return out, updater


# -- numpy references of MXNet 1.9.1's formulas ------------------------------------------------------
def _clip(g, c):
    return np.clip(g, -c, c) if c is not None else g


def _lr_at(kw, t):
    """The schedule's lr at update t (FactorScheduler: halved every `step` updates)."""
    base = kw.get("learning_rate", DEFAULT_LR[kw["_kind"]])
    if "lr_scheduler" in kw:
        _, p = kw["lr_scheduler"]
        if "learning_rate" not in kw and kw["_kind"] not in OWN_DEFAULT_LR:
            base = p["base_lr"]  # no learning_rate given: the schedule's own base_lr
        return base * p["factor"] ** ((t - 1) // p["step"])
    return base


# optimizers whose learning_rate argument has its own default, which overrides a schedule's base_lr
OWN_DEFAULT_LR = ("adamax", "nadam", "lamb", "signum")


DEFAULT_LR = {"nag": 0.01, "signum": 0.01, "ftml": 0.01, "ftrl": 0.1, "adamax": 0.002, "nadam": 0.001,
              "adadelta": 0.01, "dcasgd": 0.01, "lamb": 0.001, "lars": 0.01, "lbsgd": 0.01, "sgd": 0.01,
              "sgld": 0.01}


def _wd_mult(kind, name):
    if kind == "lars":
        return 1.0 if name.endswith("_weight") else 0.0
    return 1.0 if name.endswith(("_weight", "_gamma")) else 0.0


def reference(kind, kw, w0, grads):
    """Weights after each step by MXNet's formula, in float64."""
    kw = dict(kw, _kind=kind)
    r, c, wd0 = kw.get("rescale_grad", 1.0), kw.get("clip_gradient"), kw.get("wd", 0.0)
    ws = [w.copy() for w in w0]
    st = [dict() for _ in ws]
    out, shared = [], {"m_schedule": 1.0, "last_lr": None}
    for t, gs in enumerate(grads, start=1):
        base_lr = _lr_at(kw, t)
        for i, (name, g) in enumerate(zip(NAMES, gs)):
            lr = base_lr * LR_MULT.get(name, 1.0)
            wd = wd0 * _wd_mult(kind, name)
            ws[i] = STEP[kind](ws[i], g, st[i], lr, wd, t, kw, r, c, name, shared, base_lr)
        out.append([w.copy() for w in ws])
    return out


def _nag(w, g, s, lr, wd, t, kw, r, c, *_):
    m = kw.get("momentum", 0.0)
    clipped = _clip(r * g, c)
    if m == 0:
        return (1 - lr * wd) * w - lr * clipped
    mom = s.get("mom", np.zeros_like(w))
    grad = clipped + wd * w
    new_w = w + m * (m * mom - lr * grad) - lr * grad
    # MXNet's nag_mom_update with out=weight computes the stored momentum from the updated weight
    s["mom"] = m * mom - lr * (clipped + wd * new_w)
    return new_w


def _signum(w, g, s, lr, wd, t, kw, r, c, *_):
    m = kw.get("momentum", 0.9)
    if m == 0:
        return (1 - lr * wd) * w - lr * np.sign(g)
    mom = s.get("mom", np.zeros_like(w))
    s["mom"] = m * mom - (1 - m) * wd * w - (1 - m) * _clip(r * g, c)
    return (1 - lr * kw.get("wd_lh", 0.0)) * w + lr * np.sign(s["mom"])


def _ftml(w, g, s, lr, wd, t, kw, r, c, *_):
    b1, b2, eps = kw.get("beta1", 0.6), kw.get("beta2", 0.999), kw.get("epsilon", 1e-8)
    d, v, z = (s.get(k, np.zeros_like(w)) for k in "dvz")
    grad = _clip(r * g + wd * w, c)
    v = b2 * v + (1 - b2) * grad ** 2
    d_t = (1 - b1 ** t) / lr * (np.sqrt(v / (1 - b2 ** t)) + eps)
    z = b1 * z + (1 - b1) * grad - (d_t - b1 * d) * w
    s.update(d=d_t, v=v, z=z)
    return -z / d_t


def _ftrl(w, g, s, lr, wd, t, kw, r, c, *_):
    l1, beta = kw.get("lamda1", 0.01), kw.get("beta", 1)
    z, n = s.get("z", np.zeros_like(w)), s.get("n", np.zeros_like(w))
    grad = _clip(r * g, c)
    z = z + grad - (np.sqrt(n + grad ** 2) - np.sqrt(n)) * w / lr
    n = n + grad ** 2
    s.update(z=z, n=n)
    return (np.sign(z) * l1 - z) / ((beta + np.sqrt(n)) / lr + wd) * (np.abs(z) > l1)


def _adamax(w, g, s, lr, wd, t, kw, r, c, *_):
    b1, b2 = kw.get("beta1", 0.9), kw.get("beta2", 0.999)
    grad = _clip(r * g + wd * w, c)
    m = b1 * s.get("m", np.zeros_like(w)) + (1 - b1) * grad
    u = np.maximum(b2 * s.get("u", np.zeros_like(w)), np.abs(grad))
    s.update(m=m, u=u)
    return w - lr / (1 - b1 ** t) * m / u


def _nadam(w, g, s, lr, wd, t, kw, r, c, name, shared, _):
    b1, b2, eps, sd = kw.get("beta1", 0.9), kw.get("beta2", 0.999), kw.get("epsilon", 1e-8), \
        kw.get("schedule_decay", 0.004)
    grad = _clip(r * g + wd * w, c)
    mu_t = b1 * (1 - 0.5 * 0.96 ** (t * sd))
    mu_t1 = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * sd))
    shared["m_schedule"] *= mu_t  # one schedule for all weights, advanced by every update
    sched_next = shared["m_schedule"] * mu_t1
    m = b1 * s.get("m", np.zeros_like(w)) + (1 - b1) * grad
    v = b2 * s.get("v", np.zeros_like(w)) + (1 - b2) * grad ** 2
    s.update(m=m, v=v)
    m_bar = (1 - mu_t) * grad / (1 - shared["m_schedule"]) + mu_t1 * m / (1 - sched_next)
    return w - lr * m_bar / (np.sqrt(v / (1 - b2 ** t)) + eps)


def _adadelta(w, g, s, lr, wd, t, kw, r, c, *_):
    rho, eps = kw.get("rho", 0.9), kw.get("epsilon", 1e-5)
    grad = _clip(r * g, c)
    acc_g = rho * s.get("g", np.zeros_like(w)) + (1 - rho) * grad ** 2
    delta = np.sqrt(s.get("d", np.zeros_like(w)) + eps) / np.sqrt(acc_g + eps) * grad
    s.update(g=acc_g, d=rho * s.get("d", np.zeros_like(w)) + (1 - rho) * delta ** 2)
    return w - (delta + wd * w)


def _dcasgd(w, g, s, lr, wd, t, kw, r, c, *_):
    m, lam = kw.get("momentum", 0.0), kw.get("lamda", 0.04)
    prev = s.get("prev", w.copy())
    grad = _clip(r * g, c)
    step = -lr * (grad + wd * w + lam * grad * grad * (w - prev))
    if m:
        step = s["mom"] = m * s.get("mom", np.zeros_like(w)) + step
    s["prev"] = w.copy()
    return w + step


def _lamb(w, g, s, lr, wd, t, kw, r, c, *_):
    b1, b2, eps = kw.get("beta1", 0.9), kw.get("beta2", 0.999), kw.get("epsilon", 1e-6)
    grad = _clip(r * g, c)
    m = b1 * s.get("m", np.zeros_like(w)) + (1 - b1) * grad
    v = b2 * s.get("v", np.zeros_like(w)) + (1 - b2) * grad ** 2
    s.update(m=m, v=v)
    if kw.get("bias_correction", True):
        m, v = m / (1 - b1 ** t), v / (1 - b2 ** t)
    d = m / (np.sqrt(v) + eps) + wd * w
    r1, r2 = np.linalg.norm(w), np.linalg.norm(d)
    if kw.get("lower_bound"):
        r1 = max(r1, kw["lower_bound"])
    if kw.get("upper_bound"):
        r1 = min(r1, kw["upper_bound"])
    ratio = r1 / r2 if r1 and r2 else 1.0
    return w - lr * ratio * d


def _sgd_mom(w, g, s, lr, wd, m, r, c):
    grad = _clip(r * g, c)
    if not m:
        return (1 - lr * wd) * w - lr * grad
    s["mom"] = m * s.get("mom", np.zeros_like(w)) - lr * wd * w - lr * grad
    return w + s["mom"]


def _lars(w, g, s, lr, wd, t, kw, r, c, name, shared, base_lr):
    m, eta, eps = kw.get("momentum", 0.0), kw.get("eta", 0.001), kw.get("eps", 0)
    if name == NAMES[0]:  # the first index of a step: lr moves on for every weight of the step
        shared["prev_lr"], shared["cur_lr"] = shared.get("cur_lr", base_lr), base_lr
    if m and kw.get("momentum_correction", True):
        m = m * shared["cur_lr"] / shared["prev_lr"]
    if not name.endswith(("gamma", "beta", "bias")):
        w_norm, g_norm = np.linalg.norm(w), np.linalg.norm(r * g)
        if w_norm > 0 and g_norm > 0:
            lr = lr * eta * w_norm / (g_norm + wd * w_norm + eps)
    return _sgd_mom(w, g, s, lr, wd, m, r, c)


def _lbsgd(w, g, s, lr, wd, t, kw, r, c, *_):
    scale = kw.get("batch_scale", 1)
    s["cum"] = s.get("cum", 0) + g
    if t % scale:
        return w
    grad = s.pop("cum") / scale
    if kw.get("warmup_strategy") == "lars":
        ww, gg = np.sum(w * w), np.sum(grad * grad)
        mult = min(max(np.sqrt(ww / (gg + wd * ww + 1e-18)), 0.01), 100)
    else:  # linear warm-up over warmup_epochs * updates_per_epoch updates
        nwup = kw.get("warmup_epochs", 5) * kw.get("updates_per_epoch", 32)
        mult = scale if t >= nwup else 1.0 + (scale - 1) * t / nwup
    return _sgd_mom(w, grad, s, lr * mult, wd, kw.get("momentum", 0.0), r, c)


STEP = {"nag": _nag, "signum": _signum, "ftml": _ftml, "ftrl": _ftrl, "adamax": _adamax, "nadam": _nadam,
        "adadelta": _adadelta, "dcasgd": _dcasgd, "lamb": _lamb, "lars": _lars, "lbsgd": _lbsgd}

FACTOR = ["FactorScheduler", {"step": 2, "factor": 0.5, "base_lr": 0.1}]
REFERENCE_CASES = [
    ("nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.6}, "single"),
    ("nag", {"learning_rate": 0.1, "momentum": 0.0, "wd": 0.02, "lr_scheduler": FACTOR}, "list"),
    ("signum", {"learning_rate": 0.05, "momentum": 0.8, "wd": 0.01, "wd_lh": 0.1, "rescale_grad": 0.5,
                "clip_gradient": 0.3}, "single"),
    ("signum", {"learning_rate": 0.05, "momentum": 0.0, "wd": 0.01}, "single"),
    ("ftml", {"learning_rate": 0.05, "wd": 0.01, "rescale_grad": 0.7, "clip_gradient": 0.8}, "single"),
    ("ftml", {"beta1": 0.5, "beta2": 0.99, "lr_scheduler": FACTOR}, "list"),
    ("ftrl", {"learning_rate": 0.2, "lamda1": 0.05, "beta": 0.5, "wd": 0.01, "rescale_grad": 0.6,
              "clip_gradient": 0.9}, "single"),
    ("adamax", {"learning_rate": 0.02, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.6}, "single"),
    ("adamax", {"beta1": 0.8, "beta2": 0.9, "lr_scheduler": FACTOR}, "list"),
    ("nadam", {"learning_rate": 0.02, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.6}, "single"),
    ("nadam", {"schedule_decay": 0.1, "lr_scheduler": FACTOR}, "list"),
    ("adadelta", {"rho": 0.7, "epsilon": 1e-3, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.6}, "single"),
    ("dcasgd", {"learning_rate": 0.1, "lamda": 0.2, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.6},
     "single"),
    ("dcasgd", {"learning_rate": 0.1, "momentum": 0.9, "lamda": 0.2, "lr_scheduler": FACTOR}, "list"),
    ("lamb", {"learning_rate": 0.05, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.6}, "list"),
    ("lamb", {"learning_rate": 0.05, "wd": 0.02, "bias_correction": False, "lower_bound": 0.5, "upper_bound": 1.1,
              "lr_scheduler": FACTOR}, "single"),
    ("lars", {"learning_rate": 0.5, "momentum": 0.9, "wd": 0.01, "eta": 0.05, "eps": 1e-3, "rescale_grad": 0.5,
              "clip_gradient": 0.6, "lr_scheduler": FACTOR}, "list"),
    ("lars", {"learning_rate": 0.5, "wd": 0.01, "eta": 0.05}, "list"),
    ("lbsgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "batch_scale": 2, "warmup_epochs": 1,
               "updates_per_epoch": 3, "rescale_grad": 0.5, "clip_gradient": 0.6}, "single"),
    ("lbsgd", {"learning_rate": 0.1, "wd": 0.01, "warmup_strategy": "lars"}, "single"),
]


@pytest.mark.parametrize("kind,kwargs,mode", REFERENCE_CASES,
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(REFERENCE_CASES)])
def test_against_numpy_formula(kind, kwargs, mode):
    w0, grads = _inputs()
    got, _ = run_ember(kind, kwargs, w0, grads, mode)
    want = reference(kind, kwargs, w0, grads)
    for s in range(STEPS):
        for p, name in enumerate(NAMES):
            np.testing.assert_allclose(got[s][p], want[s][p], rtol=2e-5, atol=2e-6,
                                       err_msg=f"{kind} step {s} {name}")


def test_sgld_is_half_step_plus_seeded_noise():
    w0, grads = _inputs()
    kwargs = {"learning_rate": 0.04, "wd": 0.1, "rescale_grad": 0.5, "clip_gradient": 0.3}
    o = _build("sgld", kwargs)
    assert o.create_state(0, nd.zeros((2,))) is None
    mx.random.seed(7)
    got, _ = run_ember("sgld", kwargs, w0, grads, "single")
    mx.random.seed(7)  # the same draws, in the same order (one per weight per step)
    ws = [w.copy() for w in w0]
    for s, gs in enumerate(grads):
        for p, name in enumerate(NAMES):
            lr = 0.04 * LR_MULT.get(name, 1.0)
            wd = 0.1 * _wd_mult("sgld", name)
            ws[p] = ws[p].astype(np.float32) - lr / 2 * (np.clip(0.5 * gs[p], -0.3, 0.3) + wd * ws[p])
            noise = mx.random.normal(0, np.sqrt(lr), shape=ws[p].shape, dtype="float32").asnumpy()
            ws[p] = ws[p] + noise
            np.testing.assert_allclose(got[s][p], ws[p], rtol=1e-5, atol=1e-6)
    drift = got[-1][0] - w0[0]
    assert np.std(drift) > 0.05  # the noise (std sqrt(0.02) per step) is there


def test_test_optimizer_adds_rescaled_gradient_and_mirrors_weight():
    o = opt.create("test", rescale_grad=0.5)
    w = nd.array([1.0, 2.0])
    state = o.create_state(0, w)
    o.update(0, w, nd.array([2.0, -4.0]), state)
    np.testing.assert_allclose(w.asnumpy(), [2.0, 0.0])
    np.testing.assert_allclose(state.asnumpy(), [2.0, 0.0])


# -- real MXNet 1.9.1 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("k", range(len(META["cases"])), ids=[c["name"] for c in META["cases"]])
def test_matches_mxnet_steps(k):
    case = META["cases"][k]
    w0 = [FIX[f"w0_{n}"] for n in NAMES]
    grads = [[FIX[f"g{s}_{n}"] for n in NAMES] for s in range(META["steps"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, updater = run_ember(case["optimizer"], case["kwargs"], w0, grads, case["mode"], case["dtype"])
    fp16 = case["dtype"] == "float16"
    tol = dict(rtol=1e-3, atol=1e-3) if fp16 else dict(rtol=2e-5, atol=2e-6)
    for s in range(META["steps"]):
        for p, name in enumerate(NAMES):
            np.testing.assert_allclose(got[s][p], FIX[f"c{k}_s{s}_{name}"], err_msg=f"step {s} {name}", **tol)
    for p in range(3):  # the final states, with MXNet's layout (tuples, None, master copies)
        flat = []
        _flatten_state(updater.states[p], flat, case["states"][p])
        for j, arr in enumerate(flat):
            want = FIX[f"c{k}_state{p}_{j}"]
            assert arr.dtype == want.dtype, f"state {p}.{j}: dtype {arr.dtype} vs MXNet's {want.dtype}"
            np.testing.assert_allclose(arr, want, rtol=1e-4, atol=1e-5, err_msg=f"state {p}.{j}")


def _flatten_state(state, out, structure):
    if structure is None:
        assert state is None
    elif isinstance(structure, int):
        assert isinstance(state, nd.NDArray)
        out.append(state.asnumpy())
    else:
        assert isinstance(state, (tuple, list)) and len(state) == len(structure)
        for s, sub in zip(state, structure):
            _flatten_state(s, out, sub)


@pytest.mark.parametrize("k", range(len(META["ops"])), ids=[f"{c['op']}-{i}" for i, c in enumerate(META["ops"])])
def test_fused_op_matches_mxnet(k):
    case = META["ops"][k]
    ins = [nd.array(FIX[f"op{k}_in{j}"], dtype=FIX[f"op{k}_in{j}"].dtype) for j in range(case["n_inputs"])]
    fn = getattr(nd, case["op"])
    if "adamw" in case["op"] and case["n_outputs"] == 1:
        out = ins[0].copy()  # as the fixture: a skipped update leaves out= as it is
        fn(*ins, out=out, **case["attrs"])
        res = [out]
    else:
        res = fn(*ins, **case["attrs"])
        res = res if isinstance(res, list) else [res]
    assert len(res) == case["n_outputs"]
    for j, r in enumerate(res):
        want = FIX[f"op{k}_out{j}"]
        assert r.dtype == want.dtype
        np.testing.assert_allclose(r.asnumpy(), want, rtol=1e-5, atol=1e-6, err_msg=f"output {j}")
    for j in case["mutated"]:
        np.testing.assert_allclose(ins[j].asnumpy(), FIX[f"op{k}_after{j}"], rtol=1e-5, atol=1e-5,
                                   err_msg=f"input {j} after the update")


# -- multi_precision ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind,kwargs,layout", [
    ("sgd", {"momentum": 0.9}, "state_last"), ("sgd", {}, "state_last"), ("nag", {"momentum": 0.9}, "state_last"),
    ("lars", {"momentum": 0.9}, "state_last"), ("adam", {}, "master_first"), ("lamb", {}, "master_first"),
    ("ftml", {}, "master_first"), ("adamax", {}, "master_first"), ("signum", {}, "master_first"),
    ("rmsprop", {"centered": True}, "master_first"), ("adadelta", {}, "master_first")])
def test_multi_precision_master_copy(kind, kwargs, layout):
    """fp16 weights keep a float32 master copy in their state; the update runs on it and the weight
    is its cast, so several steps match the same optimizer on float32 weights."""
    w0, grads = _inputs()
    kwargs = dict(kwargs, learning_rate=0.05, wd=0.01)
    o = _build(kind, dict(kwargs, multi_precision=True))
    w16 = nd.array(w0[0], dtype="float16")
    state = o.create_state_multi_precision(0, w16)
    master = state[-1] if layout == "state_last" else state[0]
    assert master.dtype == np.float32
    np.testing.assert_array_equal(master.asnumpy(), w16.asnumpy().astype(np.float32))
    got16, up16 = run_ember(kind, dict(kwargs, multi_precision=True), [w.astype(np.float16) for w in w0],
                            grads, "list", "float16")
    w0_16 = [w.astype(np.float16).astype(np.float64) for w in w0]
    g_16 = [[g.astype(np.float16).astype(np.float64) for g in gs] for gs in grads]
    got32, _ = run_ember(kind, kwargs, w0_16, g_16, "list", "float32")
    for p in range(3):
        st = up16.states[p]
        master = st[-1] if layout == "state_last" else st[0]
        np.testing.assert_allclose(master.asnumpy(), got32[-1][p], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got16[-1][p], got32[-1][p].astype(np.float16).astype(np.float64))


def test_float16_without_multi_precision_warns():
    with pytest.warns(UserWarning, match="multi_precision=True"):
        opt.SGD(momentum=0.9).create_state_multi_precision(0, nd.zeros((2,), dtype="float16"))
    state = opt.SGD(momentum=0.9).create_state_multi_precision(0, nd.zeros((2,)))
    assert isinstance(state, nd.NDArray) and state.dtype == np.float32  # float32 weights: no copy


# -- registration, arguments, states ------------------------------------------------------------------
@pytest.mark.parametrize("name,klass,defaults", [
    ("nag", opt.NAG, {"momentum": 0.0, "lr": 0.01}),
    ("lamb", opt.LAMB, {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-6, "lower_bound": None, "upper_bound": None,
                        "bias_correction": True, "lr": 0.001}),
    ("sgld", opt.SGLD, {"lr": 0.01}),
    ("ftml", opt.FTML, {"beta1": 0.6, "beta2": 0.999, "epsilon": 1e-8}),
    ("adamax", opt.Adamax, {"beta1": 0.9, "beta2": 0.999, "lr": 0.002}),
    ("nadam", opt.Nadam, {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "schedule_decay": 0.004, "lr": 0.001,
                          "m_schedule": 1.0}),
    ("signum", opt.Signum, {"momentum": 0.9, "wd_lh": 0.0, "lr": 0.01}),
    ("ftrl", opt.Ftrl, {"lamda1": 0.01, "beta": 1, "lr": 0.1}),
    ("adadelta", opt.AdaDelta, {"rho": 0.9, "epsilon": 1e-5}),
    ("dcasgd", opt.DCASGD, {"momentum": 0.0, "lamda": 0.04}),
    ("lars", opt.LARS, {"momentum": 0.0, "eta": 0.001, "eps": 0, "momentum_correction": True,
                        "aggregate_num": 4}),
    ("lbsgd", opt.LBSGD, {"momentum": 0.0, "warmup_strategy": "linear", "warmup_epochs": 5, "batch_scale": 1,
                          "updates_per_epoch": 32, "init_updates": 0, "num_epochs": 60}),
    ("test", opt.Test, {}),
    ("ccsgd", opt.ccSGD, {"momentum": 0.0}),
    ("sgd", opt.SGD, {"aggregate_num": 4}),
])
def test_create_by_name_with_mxnet_defaults(name, klass, defaults):
    o = opt.create(name.upper())  # case-insensitive, as MXNet
    assert type(o) is klass and isinstance(o, opt.Optimizer)
    for attr, value in defaults.items():
        assert getattr(o, attr) == value, attr
    assert opt.create(name, learning_rate=0.3).lr == 0.3


def test_register_a_subclass_of_a_new_optimizer():
    @opt.Optimizer.register
    class HalfNAG(opt.NAG):
        pass
    assert type(opt.create("halfnag", momentum=0.5)) is HalfNAG


@pytest.mark.parametrize("kind,kwargs,shapes_dtypes", [
    ("nag", {"momentum": 0.9}, "mom"), ("nag", {}, None), ("signum", {}, "mom"), ("signum", {"momentum": 0}, None),
    ("ftml", {}, ("f", "f", "f")), ("ftrl", {}, ("f32", "f32")), ("adamax", {}, ("f", "f")),
    ("nadam", {}, ("f", "f")), ("adadelta", {}, ("f32", "f32")), ("lamb", {}, ("f", "f")),
    ("dcasgd", {}, (None, "copy")), ("dcasgd", {"momentum": 0.5}, ("f", "copy")), ("lars", {"momentum": 0.9}, "mom"),
    ("sgld", {}, None), ("lbsgd", {"momentum": 0.9}, "mom"), ("test", {}, "f32")])
def test_state_layout(kind, kwargs, shapes_dtypes):
    w = nd.array(np.arange(6.0).reshape(2, 3), dtype="float64")
    state = opt.create(kind, **kwargs).create_state(0, w)
    if shapes_dtypes is None:
        assert state is None
        return
    entries = (state,) if not isinstance(state, tuple) else state
    specs = (shapes_dtypes,) if isinstance(shapes_dtypes, str) else shapes_dtypes
    assert len(entries) == len(specs)
    for s, spec in zip(entries, specs):
        if spec is None:
            assert s is None
            continue
        assert s.shape == w.shape
        if spec == "copy":
            np.testing.assert_array_equal(s.asnumpy(), w.asnumpy())
            assert s is not w
        else:
            assert s.dtype == (np.float32 if spec == "f32" else w.dtype)
            assert not s.asnumpy().any()


# -- the fused ops against per-weight numpy -------------------------------------------------------------
def _arrays(seed, shapes, dtype="float32", low=-1.0, high=1.0):
    rng = np.random.RandomState(seed)
    return [rng.uniform(low, high, s).astype(dtype) for s in shapes]


@pytest.mark.parametrize("mom", [False, True])
@pytest.mark.parametrize("mp", [False, True])
@pytest.mark.parametrize("preloaded", [False, True])
def test_multi_sgd_ops_against_numpy(mom, mp, preloaded):
    shapes = [(2, 3), (4,), (1, 2, 2)]
    lrs, wds = [0.1, 0.2, 0.05], [0.01, 0.0, 0.1]
    ws32 = _arrays(1, shapes)
    gs = _arrays(2, shapes, low=-2, high=2)
    moms = _arrays(3, shapes, low=-0.1, high=0.1)
    dtype = "float16" if mp else "float32"
    weights = [nd.array(w, dtype=dtype) for w in ws32]
    grads = [nd.array(g, dtype=dtype) for g in gs]
    mom_nd = [nd.array(m) for m in moms]
    master = [nd.array(w.astype(dtype).astype(np.float32)) for w in ws32]
    inputs = []
    for i in range(3):
        inputs += [weights[i], grads[i]] + ([mom_nd[i]] if mom else []) + ([master[i]] if mp else [])
    name = ("preloaded_" if preloaded else "") + "multi_" + ("mp_" if mp else "") + \
        ("sgd_mom_update" if mom else "sgd_update")
    attrs = {"rescale_grad": 0.5, "clip_gradient": 0.4, "num_weights": 3}
    if mom:
        attrs["momentum"] = 0.9
    if preloaded:
        inputs += [nd.array(lrs), nd.array(wds)]
    else:
        attrs.update(lrs=lrs, wds=wds)
    getattr(nd, name)(*inputs, out=weights, **attrs)
    for i in range(3):
        w = ws32[i].astype(dtype).astype(np.float64)
        g = np.clip(0.5 * gs[i].astype(dtype).astype(np.float64), -0.4, 0.4)
        if mom:
            new_mom = 0.9 * moms[i] - lrs[i] * wds[i] * w - lrs[i] * g
            np.testing.assert_allclose(mom_nd[i].asnumpy(), new_mom, rtol=1e-5, atol=1e-6)
            new_w = w + new_mom
        else:
            new_w = (1 - lrs[i] * wds[i]) * w - lrs[i] * g
        if mp:
            np.testing.assert_allclose(master[i].asnumpy(), new_w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(weights[i].asnumpy(), new_w.astype(dtype), rtol=1e-3 if mp else 1e-5,
                                   atol=1e-3 if mp else 1e-6)


def test_multi_sum_sq_and_multi_lars_against_numpy():
    xs = _arrays(4, [(3, 4), (5,), (2, 2, 2)])
    got = nd.multi_sum_sq(*[nd.array(x) for x in xs], num_arrays=3).asnumpy()
    np.testing.assert_allclose(got, [np.sum(x.astype(np.float64) ** 2) for x in xs], rtol=1e-6)
    assert got.dtype == np.float32
    lrs = nd.array([0.1, 0.2, 0.3])
    w_sq, g_sq, wds = np.array([4.0, 0.0, 9.0]), np.array([1.0, 1.0, 4.0]), np.array([0.01, 0.0, 0.5])
    nd.multi_lars(lrs, nd.array(w_sq), nd.array(g_sq), nd.array(wds), eta=0.5, eps=0.1, rescale_grad=2.0, out=lrs)
    w_n, g_n = np.sqrt(w_sq), 2.0 * np.sqrt(g_sq)
    want = np.array([0.1, 0.2, 0.3]) * np.where((w_n > 0) & (g_n > 0), 0.5 * w_n / (g_n + wds * w_n + 0.1), 1.0)
    np.testing.assert_allclose(lrs.asnumpy(), want, rtol=1e-6)


@pytest.mark.parametrize("mp", [False, True])
def test_multi_lamb_against_numpy(mp):
    shapes = [(3, 4), (6,)]
    ws = _arrays(5, shapes)
    gs = _arrays(6, shapes, low=-2, high=2)
    dtype = "float16" if mp else "float32"
    weights = [nd.array(w, dtype=dtype) for w in ws]
    means, vars_ = [nd.zeros(s) for s in shapes], [nd.zeros(s) for s in shapes]
    masters = [nd.array(w.astype(dtype).astype(np.float32)) for w in ws]
    inputs = []
    for i in range(2):
        inputs += [weights[i], nd.array(gs[i], dtype=dtype), means[i], vars_[i]] + ([masters[i]] if mp else [])
    name = "_multi_mp_lamb_update" if mp else "_multi_lamb_update"
    getattr(nd, name)(*inputs, out=weights, learning_rates=[0.1, 0.2], wds=[0.01, 0.0], step_count=[1, 2],
                      num_tensors=2, rescale_grad=0.5, clip_gradient=0.5, upper_bound=0.8)
    for i in range(2):
        w = ws[i].astype(dtype).astype(np.float64)
        g = np.clip(0.5 * gs[i].astype(dtype).astype(np.float64), -0.5, 0.5)
        t = [1, 2][i]
        m, v = 0.1 * g, 0.001 * g * g
        d = (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-6) + [0.01, 0.0][i] * w
        r1 = min(np.linalg.norm(w), 0.8)
        new_w = w - [0.1, 0.2][i] * r1 / np.linalg.norm(d) * d
        np.testing.assert_allclose(means[i].asnumpy(), m, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(vars_[i].asnumpy(), v, rtol=1e-5, atol=1e-8)
        if mp:
            np.testing.assert_allclose(masters[i].asnumpy(), new_w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(weights[i].asnumpy(), new_w.astype(dtype), rtol=1e-3, atol=1e-3 if mp else 1e-6)


def test_mp_lamb_phases_against_numpy():
    w32 = _arrays(7, [(4, 3)])[0]
    g = _arrays(8, [(4, 3)], low=-2, high=2)[0]
    w16 = nd.array(w32, dtype="float16")
    master = nd.array(w16.asnumpy().astype(np.float32))
    mean, var = nd.zeros((4, 3)), nd.zeros((4, 3))
    d = nd.mp_lamb_update_phase1(w16, nd.array(g, dtype="float16"), mean, var, master, t=1, wd=0.1)
    g64 = g.astype(np.float16).astype(np.float64)
    w64 = master.asnumpy().astype(np.float64)
    want_d = g64 / (np.abs(g64) + 1e-6) + 0.1 * w64  # step 1 with bias correction: m/sqrt(v) = sign(g)
    assert d.dtype == np.float32
    np.testing.assert_allclose(d.asnumpy(), want_d, rtol=1e-5, atol=1e-6)
    r1, r2 = master.norm(), d.norm()
    out = nd.mp_lamb_update_phase2(w16, d, r1, r2, master, lr=0.1, lower_bound=5.0)
    ratio = max(np.linalg.norm(w64), 5.0) / np.linalg.norm(want_d)
    np.testing.assert_allclose(out.asnumpy(), (w64 - 0.1 * ratio * want_d).astype(np.float16), rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(master.asnumpy(), w64.astype(np.float32))  # as MXNet: weight32 is only read


@pytest.mark.parametrize("mp", [False, True])
def test_adamw_ops_against_numpy(mp):
    w = _arrays(9, [(5,)])[0]
    g = _arrays(10, [(5,)], low=-2, high=2)[0]
    dtype = "float16" if mp else "float32"
    weight, mean, var = nd.array(w, dtype=dtype), nd.zeros((5,)), nd.zeros((5,))
    master = nd.array(w.astype(dtype).astype(np.float32))
    inputs = [weight, nd.array(g, dtype=dtype), mean, var] + ([master] if mp else [])
    name = "_mp_adamw_update" if mp else "_adamw_update"
    getattr(nd, name)(*inputs, nd.array([0.5]), out=weight, lr=0.1, eta=0.5, wd=0.01, clip_gradient=0.6)
    w64 = w.astype(dtype).astype(np.float64)
    r = np.clip(0.5 * g.astype(dtype).astype(np.float64), -0.6, 0.6)
    m, v = 0.1 * r, 0.001 * r * r
    new_w = w64 - 0.5 * (0.1 * m / (np.sqrt(v) + 1e-8) + 0.01 * w64)
    np.testing.assert_allclose(weight.asnumpy(), new_w.astype(dtype), rtol=1e-3 if mp else 1e-5, atol=1e-6)
    before = weight.asnumpy().copy()
    getattr(nd, name)(*inputs, nd.array([np.inf]), out=weight, lr=0.1, eta=0.5)
    np.testing.assert_array_equal(weight.asnumpy(), before)  # a non-finite rescale skips the update


def test_multi_op_errors():
    w, g = nd.ones((2,)), nd.ones((2,))
    with pytest.raises(mx.base.OperatorError, match="lrs' needs 2 values"):
        nd.multi_sgd_update(w, g, w.copy(), g, lrs=[0.1], wds=[0, 0], num_weights=2, out=[w, w.copy()])
    with pytest.raises(mx.base.ShapeError, match="grad_1 has shape"):
        nd.multi_sgd_update(w, g, w.copy(), nd.ones((3,)), lrs=[0.1, 0.1], wds=[0, 0], num_weights=2)
    with pytest.raises(mx.base.DTypeError, match="mom_0"):
        nd.multi_mp_sgd_mom_update(w.astype("float16"), g.astype("float16"), w.astype("float16"), w,
                                   lrs=[0.1], wds=[0], num_weights=1)
    with pytest.raises(mx.base.ShapeError, match=r"lrs must have shape \(1,\)"):
        nd.preloaded_multi_sgd_update(w, g, nd.ones((2,)), nd.ones((1,)), num_weights=1)
    with pytest.raises(mx.base.OperatorError, match="num_weights must be >= 1"):
        ops.get("multi_sgd_update").input_names({"num_weights": 0})


def test_multi_op_mutates_its_states_for_the_engine():
    op = ops.get("multi_mp_sgd_mom_update")
    attrs = op.parse_attrs({"lrs": "(0.1, 0.2)", "wds": "(0, 0)", "num_weights": 2})
    assert op.mutated_inputs(attrs) == [2, 3, 6, 7]
    assert op.inplace_pairs(attrs) == [(0, 0), (4, 1)]  # out=weights updates each weight in place
    # momenta written by the update are seen by a later read without an explicit wait
    w, g, m = nd.ones((1000,)), nd.ones((1000,)), nd.zeros((1000,))
    for _ in range(3):
        nd.multi_sgd_mom_update(w, g, m, out=[w], lrs=[0.1], wds=[0.0], momentum=0.5, num_weights=1)
    np.testing.assert_allclose(m.asnumpy(), -0.1 * (1 + 0.5 + 0.25), rtol=1e-6)


def test_symbolic_multi_op_in_an_executor():
    names = ["w0", "g0", "m0", "w1", "g1", "m1"]
    s = mx.sym.multi_sgd_mom_update(*[mx.sym.var(n) for n in names], lrs=(0.1, 0.2), wds=(0.0, 0.0),
                                    momentum=0.9, num_weights=2)
    assert s.list_arguments() == names
    args = {n: nd.ones((3,)) for n in names}
    args["m0"], args["m1"] = nd.zeros((3,)), nd.zeros((3,))
    ex = s.bind(mx.cpu(), args)
    outs = ex.forward()
    np.testing.assert_allclose(outs[0].asnumpy(), 0.9)
    np.testing.assert_allclose(outs[1].asnumpy(), 0.8)
    np.testing.assert_allclose(args["m1"].asnumpy(), -0.2)  # the executor updated the momentum in place


# -- the optimizers use the fused ops on every training path ---------------------------------------------
class _Counting:
    """Wraps an op's kernel to count its calls (restored on exit)."""

    def __init__(self, name):
        self.name, self.calls = name, 0

    def __enter__(self):
        self.old = ops.override(self.name, "any", self._kernel)
        return self

    def _kernel(self, *args):
        self.calls += 1
        return self.old(*args)

    def __exit__(self, *exc):
        nd.waitall()  # kernels look the registry up when they run: let pushed updates finish first
        ops.override(self.name, "any", self.old)


def test_trainer_updates_sgd_weights_with_one_multi_op():
    net = mx.gluon.nn.Dense(3, in_units=4)
    net.initialize()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1, "momentum": 0.9},
                               update_on_kvstore=False)
    x = nd.ones((2, 4))
    with _Counting("multi_sgd_mom_update") as fused:
        for _ in range(2):
            with mx.autograd.record():
                loss = net(x).sum()
            loss.backward()
            trainer.step(2)
    assert fused.calls == 2  # weight and bias together, once per step


@pytest.mark.parametrize("kind,op", [("lars", "preloaded_multi_sgd_mom_update"), ("lamb", "_multi_lamb_update"),
                                     ("nag", "nag_mom_update"), ("ftml", "ftml_update"), ("ftrl", "ftrl_update"),
                                     ("signum", "signum_update")])
def test_updater_uses_the_fused_op(kind, op):
    o = opt.create(kind, momentum=0.9) if kind in ("lars", "nag", "signum") else opt.create(kind)
    updater = opt.get_updater(o)
    ws = [nd.ones((2, 2)), nd.ones((3,))]
    with _Counting(op) as fused:
        updater([0, 1], [nd.ones((2, 2)), nd.ones((3,))], ws)
    assert fused.calls == (1 if kind in ("lars", "lamb") else 2)


def test_module_trains_with_fused_nag():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    net = mx.sym.LinearRegressionOutput(net, mx.sym.var("label"), name="out")
    mod = mx.mod.Module(net, data_names=["data"], label_names=["label"])
    mod.bind(data_shapes=[("data", (4, 3))], label_shapes=[("label", (4, 2))])
    mod.init_params(mx.init.Constant(0.1))
    mod.init_optimizer(optimizer="nag", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    batch = mx.io.DataBatch([nd.ones((4, 3))], [nd.zeros((4, 2))])
    with _Counting("nag_mom_update") as fused:
        mod.forward_backward(batch)
        mod.update()
    assert fused.calls == 2  # fc_weight and fc_bias
    assert mod.get_params()[0]["fc_weight"].asnumpy().max() < 0.1


def test_lars_and_lamb_states_survive_get_set_states():
    for kind in ("lars", "lamb", "nadam", "ftml"):
        o = opt.create(kind, momentum=0.9) if kind == "lars" else opt.create(kind)
        updater = opt.get_updater(o)
        w = nd.ones((3,))
        updater(0, nd.ones((3,)), w)
        blob = updater.get_states(dump_optimizer=True)
        other = opt.get_updater(opt.create("sgd"))
        other.set_states(blob)
        assert type(other.optimizer) is type(o)
        w2 = w.copy()
        updater(0, nd.ones((3,)), w)
        other(0, nd.ones((3,)), w2)
        np.testing.assert_allclose(w2.asnumpy(), w.asnumpy(), rtol=1e-6)


# -- lazy updates for row_sparse gradients ------------------------------------------------------------
def _rsp_grad(rows, shape=(5, 3), seed=11):
    values = np.random.RandomState(seed).uniform(-1, 1, (len(rows),) + shape[1:]).astype(np.float32)
    dense = np.zeros(shape, np.float32)
    dense[rows] = values
    return nd.sparse.row_sparse_array((values, rows), shape=shape), dense


@pytest.mark.parametrize("row_sparse_weight", [False, True])
def test_lazy_sgd_momentum_touches_only_gradient_rows(row_sparse_weight):
    rows = [1, 3]
    g, g_dense = _rsp_grad(rows)
    w0 = np.random.RandomState(12).uniform(-1, 1, (5, 3)).astype(np.float32)
    w = nd.sparse.row_sparse_array((w0, np.arange(5)), shape=(5, 3)) if row_sparse_weight else nd.array(w0)
    mom0 = np.full((5, 3), 0.1, np.float32)
    mom = nd.array(mom0)
    nd.sgd_mom_update(w, g, mom, out=w, lr=0.1, wd=0.2, momentum=0.9, rescale_grad=0.5, clip_gradient=0.3)
    want_mom = mom0.copy()
    want_mom[rows] = 0.9 * mom0[rows] - 0.1 * 0.2 * w0[rows] - 0.1 * np.clip(0.5 * g_dense[rows], -0.3, 0.3)
    want_w = w0.copy()
    want_w[rows] += want_mom[rows]
    np.testing.assert_allclose(mom.asnumpy(), want_mom, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(w.asnumpy(), want_w, rtol=1e-6, atol=1e-7)
    assert w.stype == ("row_sparse" if row_sparse_weight else "default")


def test_standard_update_with_lazy_update_off_decays_every_row():
    g, g_dense = _rsp_grad([0, 4])
    w0 = np.ones((5, 3), np.float32)
    lazy, std = nd.array(w0), nd.array(w0)
    nd.sgd_update(lazy, g, out=lazy, lr=0.1, wd=0.5)
    nd.sgd_update(std, g, out=std, lr=0.1, wd=0.5, lazy_update=False)
    np.testing.assert_allclose(std.asnumpy(), (1 - 0.05) * w0 - 0.1 * g_dense, rtol=1e-6)
    np.testing.assert_allclose(lazy.asnumpy()[[1, 2, 3]], 1.0)  # rows without gradient: no decay
    np.testing.assert_allclose(lazy.asnumpy()[[0, 4]], std.asnumpy()[[0, 4]], rtol=1e-6)


def test_lazy_adam_and_ftrl_rows():
    rows = [2]
    g, g_dense = _rsp_grad(rows)
    w0 = np.random.RandomState(13).uniform(-1, 1, (5, 3)).astype(np.float32)
    o = opt.Adam(learning_rate=0.1, wd=0.1)
    w = nd.array(w0)
    state = o.create_state(0, w)
    o.update(0, w, g, state)
    r = g_dense[rows] + 0.1 * w0[rows]
    lr = 0.1 * np.sqrt(1 - 0.999) / (1 - 0.9)
    want = w0.copy()
    want[rows] = w0[rows] - lr * (0.1 * r) / (np.sqrt(0.001 * r * r) + 1e-8)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)
    assert not state[0].asnumpy()[[0, 1, 3, 4]].any()
    # ftrl: sparse rows when weight, states and gradient are all row_sparse
    f = opt.Ftrl(learning_rate=0.1, lamda1=0.01)
    w = nd.sparse.row_sparse_array((w0, np.arange(5)), shape=(5, 3))
    z, n = f.create_state(0, w)
    assert z.stype == "row_sparse" and n.stype == "row_sparse"
    f.update(0, w, g, (z, n))
    gz = g_dense[rows]
    z_want = gz - (np.sqrt(gz * gz) - 0.0) * w0[rows] / 0.1
    want = w0.copy()
    want[rows] = (np.sign(z_want) * 0.01 - z_want) / ((1 + np.sqrt(gz * gz)) / 0.1) * (np.abs(z_want) > 0.01)
    np.testing.assert_allclose(w.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_kvstore_updater_uses_the_fused_op():
    kv = mx.kv.create("local")
    kv.set_optimizer(opt.SGD(learning_rate=0.1, momentum=0.9))
    kv.init([0, 1], [nd.ones((2,)), nd.ones((3,))])
    with _Counting("multi_sgd_mom_update") as fused:
        kv.push([0, 1], [nd.ones((2,)), nd.ones((3,))])
        out = [nd.zeros((2,)), nd.zeros((3,))]
        kv.pull([0, 1], out=out)
    assert fused.calls == 2  # one per key, as MXNet's store calls its updater
    np.testing.assert_allclose(out[1].asnumpy(), 0.9)


# -- mx.optimizer.contrib.GroupAdaGrad ------------------------------------------------------------------
def _group_adagrad_reference(w, g, h, lr, rows, rescale=1.0, clip=None, eps=1e-5):
    w, h = w.astype(np.float64).copy(), h.astype(np.float64).copy()
    r = _clip(rescale * g.astype(np.float64), clip)
    h[rows] += np.mean(r[rows] ** 2, axis=1, keepdims=True)
    w[rows] -= lr * r[rows] / np.sqrt(h[rows] + eps)
    return w, h


def test_group_adagrad_dense_and_lazy():
    w0 = np.random.RandomState(30).uniform(-1, 1, (4, 3)).astype(np.float32)
    g0 = np.random.RandomState(31).uniform(-1, 1, (4, 3)).astype(np.float32)
    o = opt.create("groupadagrad", learning_rate=0.1, rescale_grad=0.5, clip_gradient=0.2, eps=1e-3)
    assert type(o) is opt.contrib.GroupAdaGrad
    w = nd.array(w0)
    h = o.create_state(0, w)
    assert h.shape == (4, 1)
    o.update(0, w, nd.array(g0), h)
    want_w, want_h = _group_adagrad_reference(w0, g0, np.zeros((4, 1)), 0.1, slice(None), 0.5, 0.2, 1e-3)
    np.testing.assert_allclose(w.asnumpy(), want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.asnumpy(), want_h, rtol=1e-5, atol=1e-7)
    # a row_sparse gradient: the fused op, only its rows
    g, g_dense = _rsp_grad([1, 3], shape=(4, 3))
    h0 = h.asnumpy()
    w_before = w.asnumpy()
    o.update(0, w, g, h)
    want_w, want_h = _group_adagrad_reference(w_before, g_dense, h0, 0.1, [1, 3], 0.5, 0.2, 1e-3)
    np.testing.assert_allclose(w.asnumpy(), want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h.asnumpy(), want_h, rtol=1e-5, atol=1e-7)
    with pytest.raises(ValueError, match="Weight decay is not supported"):
        opt.create("groupadagrad", wd=0.1).update(0, w, nd.array(g0), h)
    with pytest.raises(mx.base.ShapeError, match="history must have shape"):
        nd.contrib.group_adagrad_update(w, nd.array(g0), nd.zeros((4, 3)), lr=0.1)


def test_nd_contrib_wrappers_take_lists_and_float_rescale():
    shapes = [(2, 3), (4,)]
    ws = _arrays(40, shapes)
    gs = _arrays(41, shapes)
    weights = [nd.array(w) for w in ws]
    means, vars_ = [nd.zeros(s) for s in shapes], [nd.zeros(s) for s in shapes]
    nd.contrib.multi_adamw_update(weights, [nd.array(g) for g in gs], means, vars_, 0.5, out=weights,
                                  lrs=[0.1, 0.2], wds=[0.0, 0.01], etas=[1.0, 0.5])
    for i, (w, g) in enumerate(zip(ws, gs)):
        r = 0.5 * g.astype(np.float64)
        m, v = 0.1 * r, 0.001 * r * r
        want = w - [1.0, 0.5][i] * ([0.1, 0.2][i] * m / (np.sqrt(v) + 1e-8) + [0.0, 0.01][i] * w)
        np.testing.assert_allclose(weights[i].asnumpy(), want, rtol=1e-5, atol=1e-6)
    before = weights[0].asnumpy().copy()
    nd.contrib.adamw_update(weights[0], nd.array(gs[0]), means[0], vars_[0], float("nan"), lr=0.1, eta=1.0,
                            out=weights[0])
    np.testing.assert_array_equal(weights[0].asnumpy(), before)  # NaN rescale: skipped
    lamb_w = [nd.array(w) for w in ws]
    nd.contrib.multi_lamb_update(lamb_w, [nd.array(g) for g in gs], [nd.zeros(s) for s in shapes],
                                 [nd.zeros(s) for s in shapes], step_count=[1, 1], lrs=[0.1, 0.1], wds=[0, 0],
                                 out=lamb_w)
    d = gs[0] / (np.abs(gs[0]) + 1e-6)  # first step with bias correction: m / sqrt(v) = sign(g)
    want = ws[0] - 0.1 * np.linalg.norm(ws[0]) / np.linalg.norm(d) * d
    np.testing.assert_allclose(lamb_w[0].asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_default_weight_decay_by_name():
    """MXNet 1.9.1: weight decay stays on for *_weight and *_gamma by default; LARS keeps it for *_weight only."""
    names = {0: "fc_weight", 1: "bn_gamma", 2: "fc_bias", 3: "bn_beta"}
    sgd = opt.SGD(param_idx2name=names)
    assert sgd.wd_mult == {"fc_bias": 0.0, "bn_beta": 0.0}
    lars = opt.LARS(param_idx2name=names)
    assert lars.wd_mult == {"bn_gamma": 0.0, "fc_bias": 0.0, "bn_beta": 0.0}
    lars.set_wd_mult({"fc_bias": 0.5})
    assert lars.wd_mult["fc_bias"] == 0.5 and lars.wd_mult["bn_gamma"] == 0.0
