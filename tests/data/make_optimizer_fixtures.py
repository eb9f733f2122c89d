"""Record MXNet 1.9.1 optimizer steps and fused update ops for tests/toolkit/test_optimizer_more.py.

Run with the MXNet venv (see tests/data/README.md):
    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_optimizer_fixtures.py
Writes tests/data/optimizer/steps.npz and steps.json.

Optimizer cases: three parameters named fc_weight (3, 4), fc_bias (4,) and bn_gamma (2, 3)
(indices 0, 1, 2; fc_bias gets wd_mult 0 from its name, fc_weight lr_mult 0.5 through
set_lr_mult) start from `w0_*` (RandomState(3)) and an Updater takes STEPS steps with the
gradients `g{s}_*` (RandomState(4)), called with the three indices as one list ("list", as
gluon.Trainer calls it) or one index at a time ("single").  Recorded: the weights after each
step (`c{k}_s{s}_{p}`) and the flattened final states (`c{k}_state{p}_{j}`; steps.json has the
structure).  float16 cases start from the same values cast to float16.
Op cases: inputs, outputs and in-place states of the multi-tensor / mixed-precision ops.
"""
import json
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizer")
NAMES = ["fc_weight", "fc_bias", "bn_gamma"]
SHAPES = [(3, 4), (4,), (2, 3)]
STEPS = 4

FACTOR = ["FactorScheduler", {"step": 2, "factor": 0.5}]
# (name, optimizer, kwargs, dtype, call mode)
CASES = [
    ("sgd_mom_wd_clip_list", "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "clip_gradient": 0.8,
                                     "rescale_grad": 0.5}, "float32", "list"),
    ("sgd_plain_single", "sgd", {"learning_rate": 0.2, "wd": 0.02}, "float32", "single"),
    ("sgd_mom_mp_list", "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "multi_precision": True},
     "float16", "list"),
    ("sgd_plain_mp_single", "sgd", {"learning_rate": 0.1, "wd": 0.01, "multi_precision": True}, "float16", "single"),
    ("sgd_factor_list", "sgd", {"learning_rate": 0.3, "momentum": 0.5, "lr_scheduler": FACTOR}, "float32", "list"),
    ("nag_mom", "nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "clip_gradient": 0.7,
                        "rescale_grad": 0.8}, "float32", "list"),
    ("nag_plain", "nag", {"learning_rate": 0.1, "wd": 0.01}, "float32", "single"),
    ("nag_mom_mp", "nag", {"learning_rate": 0.1, "momentum": 0.8, "wd": 0.01, "multi_precision": True},
     "float16", "single"),
    ("lamb_list", "lamb", {"learning_rate": 0.01, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 1.5},
     "float32", "list"),
    ("lamb_single_bounds", "lamb", {"learning_rate": 0.02, "wd": 0.02, "lower_bound": 0.5, "upper_bound": 1.2,
                                    "bias_correction": False}, "float32", "single"),
    ("lamb_mp_list", "lamb", {"learning_rate": 0.01, "wd": 0.01, "multi_precision": True}, "float16", "list"),
    ("lamb_mp_single", "lamb", {"learning_rate": 0.01, "wd": 0.01, "multi_precision": True}, "float16", "single"),
    ("lars_mom_list", "lars", {"learning_rate": 0.5, "momentum": 0.9, "wd": 0.01, "eta": 0.02, "eps": 1e-3,
                               "rescale_grad": 0.7, "lr_scheduler": FACTOR}, "float32", "list"),
    ("lars_plain_list", "lars", {"learning_rate": 0.5, "wd": 0.01, "eta": 0.05}, "float32", "list"),
    ("lars_mom_mp_list", "lars", {"learning_rate": 0.5, "momentum": 0.9, "wd": 0.01, "eta": 0.02,
                                  "multi_precision": True}, "float16", "list"),
    ("ftml", "ftml", {"learning_rate": 0.05, "wd": 0.01, "clip_gradient": 0.9, "rescale_grad": 0.8},
     "float32", "single"),
    ("ftrl", "ftrl", {"learning_rate": 0.1, "lamda1": 0.02, "beta": 0.5, "wd": 0.01, "rescale_grad": 0.9},
     "float32", "single"),
    ("adamax", "adamax", {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.9, "rescale_grad": 0.8},
     "float32", "single"),
    ("nadam", "nadam", {"learning_rate": 0.01, "wd": 0.01, "clip_gradient": 0.9, "lr_scheduler": FACTOR},
     "float32", "list"),
    ("signum_mom", "signum", {"learning_rate": 0.01, "momentum": 0.9, "wd": 0.01, "wd_lh": 0.02,
                              "rescale_grad": 0.5}, "float32", "single"),
    ("signsgd", "signum", {"learning_rate": 0.01, "momentum": 0.0, "wd": 0.01}, "float32", "single"),
    ("adadelta", "adadelta", {"rho": 0.8, "epsilon": 1e-4, "wd": 0.01, "clip_gradient": 0.9, "rescale_grad": 0.8},
     "float32", "single"),
    ("dcasgd", "dcasgd", {"learning_rate": 0.1, "lamda": 0.1, "wd": 0.01, "clip_gradient": 0.9}, "float32",
     "single"),
    ("lbsgd_linear", "lbsgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01, "batch_scale": 2,
                               "warmup_epochs": 1, "updates_per_epoch": 3}, "float32", "single"),
    ("lbsgd_lars", "lbsgd", {"learning_rate": 0.1, "wd": 0.01, "warmup_strategy": "lars"}, "float32", "single"),
    ("adam_mp", "adam", {"learning_rate": 0.01, "wd": 0.01, "multi_precision": True}, "float16", "single"),
    ("rmsprop_mp", "rmsprop", {"learning_rate": 0.01, "multi_precision": True}, "float16", "list"),
    ("test", "test", {"rescale_grad": 0.5}, "float32", "single"),
]


def build(kind, kwargs):
    kwargs = dict(kwargs)
    if "lr_scheduler" in kwargs:
        cls, params = kwargs["lr_scheduler"]
        kwargs["lr_scheduler"] = getattr(mx.lr_scheduler, cls)(**params)
    opt = mx.optimizer.create(kind, param_idx2name=dict(enumerate(NAMES)), **kwargs)
    opt.set_lr_mult({"fc_weight": 0.5})
    return opt


def flat_state(state, out, path="s"):
    """Arrays of a state tree in order, and the tree with array positions."""
    if state is None:
        return None
    if isinstance(state, mx.nd.NDArray):
        out.append(state.asnumpy())
        return len(out) - 1
    return [flat_state(s, out, path) for s in state]


def record_case(k, case, arrays, meta):
    name, kind, kwargs, dtype, mode = case
    rw, rg = np.random.RandomState(3), np.random.RandomState(4)
    w0 = [rw.uniform(-1, 1, s).astype(np.float32) for s in SHAPES]
    grads = [[rg.uniform(-1, 1, s).astype(np.float32) for s in SHAPES] for _ in range(STEPS)]
    if k == 0:
        for p, name_p in enumerate(NAMES):
            arrays[f"w0_{name_p}"] = w0[p]
            for s in range(STEPS):
                arrays[f"g{s}_{name_p}"] = grads[s][p]
    updater = mx.optimizer.get_updater(build(kind, kwargs))
    weights = [mx.nd.array(w, dtype=dtype) for w in w0]
    for s in range(STEPS):
        gs = [mx.nd.array(g, dtype=dtype) for g in grads[s]]
        if mode == "list":
            updater(list(range(3)), gs, weights)
        else:
            for p in range(3):
                updater(p, gs[p], weights[p])
        for p, name_p in enumerate(NAMES):
            arrays[f"c{k}_s{s}_{name_p}"] = weights[p].asnumpy()
    structure = []
    for p in range(3):
        flat = []
        structure.append(flat_state(updater.states[p], flat))
        for j, a in enumerate(flat):
            arrays[f"c{k}_state{p}_{j}"] = a
    meta.append({"name": name, "optimizer": kind, "kwargs": kwargs, "dtype": dtype, "mode": mode,
                 "states": structure})


def rand(rng, shape, dtype="float32", low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(dtype)


def op_cases():
    """(op name, input arrays, attrs, number of outputs, indices of inputs updated in place)."""
    rng = np.random.RandomState(5)
    shapes = [(3, 4), (5,)]
    cases = []
    w = [rand(rng, s) for s in shapes]
    g = [rand(rng, s, low=-2, high=2) for s in shapes]
    m = [rand(rng, s, low=-0.1, high=0.1) for s in shapes]
    w16 = [x.astype("float16") for x in w]
    g16 = [x.astype("float16") for x in g]
    common = {"lrs": (0.1, 0.05), "wds": (0.01, 0.0), "rescale_grad": 0.5, "num_weights": 2}
    cases.append(("multi_sgd_update", [w[0], g[0], w[1], g[1]], dict(common, clip_gradient=0.3), 2, []))
    cases.append(("multi_sgd_mom_update", [w[0], g[0], m[0], w[1], g[1], m[1]], dict(common, momentum=0.9), 2,
                  [2, 5]))
    cases.append(("multi_mp_sgd_update", [w16[0], g16[0], w[0], w16[1], g16[1], w[1]], common, 2, [2, 5]))
    cases.append(("multi_mp_sgd_mom_update", [w16[0], g16[0], m[0], w[0], w16[1], g16[1], m[1], w[1]],
                  dict(common, momentum=0.9, clip_gradient=0.4), 2, [2, 3, 6, 7]))
    lrs, wds = np.array([0.1, 0.05], "float32"), np.array([0.01, 0.0], "float32")
    pre = {"rescale_grad": 0.5, "num_weights": 2}
    cases.append(("preloaded_multi_sgd_update", [w[0], g[0], w[1], g[1], lrs, wds], pre, 2, []))
    cases.append(("preloaded_multi_sgd_mom_update", [w[0], g[0], m[0], w[1], g[1], m[1], lrs, wds],
                  dict(pre, momentum=0.8, clip_gradient=0.5), 2, [2, 5]))
    cases.append(("preloaded_multi_mp_sgd_update", [w16[0], g16[0], w[0], w16[1], g16[1], w[1], lrs, wds],
                  pre, 2, [2, 5]))
    cases.append(("preloaded_multi_mp_sgd_mom_update",
                  [w16[0], g16[0], m[0], w[0], w16[1], g16[1], m[1], w[1], lrs, wds], dict(pre, momentum=0.8), 2,
                  [2, 3, 6, 7]))
    cases.append(("multi_sum_sq", [w[0], g[1], m[0]], {"num_arrays": 3}, 1, []))
    cases.append(("multi_lars", [np.array([0.1, 0.2, 0.3, 0.4], "float32"), np.array([4., 0., 9., 16.], "float32"),
                                 np.array([1., 1., 0., 4.], "float32"), np.array([0.01, 0., 0., 0.5], "float32")],
                  {"eta": 0.5, "eps": 0.1, "rescale_grad": 2.0}, 1, []))
    var = [rand(rng, s, low=0.0, high=0.2) for s in shapes]
    cases.append(("mp_lamb_update_phase1", [w16[0], g16[0], m[0], var[0], w[0]],
                  {"t": 3, "wd": 0.01, "rescale_grad": 0.5, "clip_gradient": 0.6}, 1, [2, 3]))
    dir0 = rand(rng, shapes[0])
    cases.append(("mp_lamb_update_phase2", [w16[0], dir0, np.array([2.0], "float32"),
                                            np.array([3.0], "float32"), w[0]],
                  {"lr": 0.1, "lower_bound": 2.5, "upper_bound": 10.0}, 1, [4]))
    lamb = {"learning_rates": (0.1, 0.05), "wds": (0.01, 0.02), "step_count": (1, 3), "num_tensors": 2,
            "rescale_grad": 0.5, "clip_gradient": 0.7}
    cases.append(("_multi_lamb_update", [w[0], g[0], m[0], var[0], w[1], g[1], m[1], var[1]], lamb, 2,
                  [2, 3, 6, 7]))
    cases.append(("_multi_lamb_update", [w[0], g[0], m[0], var[0], w[1], g[1], m[1], var[1]],
                  dict(lamb, bias_correction=False, lower_bound=0.1, upper_bound=0.5), 2, [2, 3, 6, 7]))
    cases.append(("_multi_mp_lamb_update",
                  [w16[0], g16[0], m[0], var[0], w[0], w16[1], g16[1], m[1], var[1], w[1]], lamb, 2,
                  [2, 3, 4, 7, 8, 9]))
    scale = np.array([0.5], "float32")
    adamw = {"lr": 0.1, "eta": 0.5, "wd": 0.01, "clip_gradient": 0.4}
    cases.append(("_adamw_update", [w[0], g[0], m[0], var[0], scale], adamw, 1, [2, 3]))
    cases.append(("_adamw_update", [w[0], g[0], m[0], var[0], np.array([0.0], "float32")], adamw, 1, [2, 3]))
    cases.append(("_mp_adamw_update", [w16[0], g16[0], m[0], var[0], w[0], scale], adamw, 1, [2, 3, 4]))
    madamw = {"lrs": (0.1, 0.05), "wds": (0.01, 0.0), "etas": (0.5, 1.0), "num_weights": 2}
    cases.append(("_multi_adamw_update", [w[0], g[0], m[0], var[0], w[1], g[1], m[1], var[1], scale], madamw, 2,
                  [2, 3, 6, 7]))
    cases.append(("_multi_mp_adamw_update",
                  [w16[0], g16[0], m[0], var[0], w[0], w16[1], g16[1], m[1], var[1], w[1], scale],
                  dict(madamw, clip_gradient=0.3), 2, [2, 3, 4, 7, 8, 9]))
    return cases


def record_ops(arrays, meta):
    for k, (op, inputs, attrs, n_out, mutated) in enumerate(op_cases()):
        nds = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
        fn = getattr(mx.nd._internal if op.startswith("_") else mx.nd, op)
        if n_out > 1:  # MXNet's multi-tensor ops need out= (their output shapes are not inferred without it)
            per = (len(inputs) - (2 if op.startswith("preloaded_") else 1 if "adamw" in op else 0)) // n_out
            outs = [mx.nd.zeros(nds[i * per].shape, dtype=nds[i * per].dtype) for i in range(n_out)]
            fn(*nds, out=outs, **attrs)
            results = [o.asnumpy() for o in outs]
        elif "adamw" in op:  # out= a copy of the weight: a skipped update (rescale_grad 0) leaves it as it is
            out = nds[0].copy()
            fn(*nds, out=out, **attrs)
            results = [out.asnumpy()]
        else:
            results = [fn(*nds, **attrs).asnumpy()]
        for j, x in enumerate(inputs):
            arrays[f"op{k}_in{j}"] = x
        for j, r in enumerate(results):
            arrays[f"op{k}_out{j}"] = r
        for j in mutated:
            arrays[f"op{k}_after{j}"] = nds[j].asnumpy()
        meta.append({"op": op, "attrs": {a: list(v) if isinstance(v, tuple) else v for a, v in attrs.items()},
                     "n_inputs": len(inputs), "n_outputs": len(results), "mutated": mutated})


def main():
    os.makedirs(OUT, exist_ok=True)
    arrays, meta, ops = {}, [], []
    for k, case in enumerate(CASES):
        record_case(k, case, arrays, meta)
    record_ops(arrays, ops)
    np.savez_compressed(os.path.join(OUT, "steps.npz"), **arrays)
    with open(os.path.join(OUT, "steps.json"), "w") as f:
        json.dump({"mxnet": mx.__version__, "names": NAMES, "steps": STEPS, "cases": meta, "ops": ops}, f, indent=1)
    print(f"wrote {len(meta)} optimizer cases and {len(ops)} op cases to {OUT}")


if __name__ == "__main__":
    main()
