"""Multi-tensor and mixed-precision optimizer updates with MXNet 1.9.1's names and formulas.

- ``multi_sgd_update``, ``multi_sgd_mom_update``, ``multi_mp_sgd_update``, ``multi_mp_sgd_mom_update``:
  sgd_update / sgd_mom_update / mp_* on ``num_weights`` weights at once.  Inputs are interleaved per
  weight as MXNet takes them: (weight_i, grad_i[, mom_i][, weight32_i]) for i in 0..n-1; ``lrs`` and
  ``wds`` are tuples with one entry per weight.  Outputs: one updated weight per weight (call with
  ``out=weights``); momenta and float32 master weights are updated in place.
- ``preloaded_multi_*``: the same with the learning rates and weight decays as two trailing
  NDArray inputs (``lrs``, ``wds``, shape (n,)), so LARS can compute them on the device.
- ``multi_sum_sq``: the sums of squares of ``num_arrays`` arrays (float32, shape (n,)).
- ``multi_lars``: lrs scaled by eta * |w| / (|g| + wd * |w| + eps) where both norms are positive
  (|g| taken of rescale_grad * grad), from the sums of squares.
- ``mp_lamb_update_phase1/2``: lamb_update_phase1/2 on float32 master weights (phase 2 returns the
  new weight cast to the weight's dtype and leaves weight32 as it is, as MXNet 1.9.1 does).
- ``_multi_lamb_update``, ``_multi_mp_lamb_update``: both LAMB phases on ``num_tensors`` tensors
  (inputs weight_i, grad_i, mean_i, var_i[, weight32_i]; per-tensor ``step_count``, ``learning_rates``,
  ``wds``).
- ``_adamw_update``, ``_mp_adamw_update``, ``_multi_adamw_update``, ``_multi_mp_adamw_update``:
  AdamW (decoupled weight decay) with ``rescale_grad`` as a trailing (1,)-shaped NDArray input; the
  update is skipped when it is 0, NaN or infinite, as in MXNet.

Clipping follows the single-tensor ops: clip_gradient >= 0 clips (0 clips to zero), negative does not.
"""
from __future__ import annotations

import ast
from typing import Callable, List, Sequence, Tuple

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from .optimizer_updates import _clip, _sgd, _sgd_kernel, _sgd_mom, _sgd_mom_kernel
from .registry import Attr, OpDef, register

_F32 = np.dtype(np.float32)


def _floats(value, op: str, name: str, n: int) -> Tuple[float, ...]:
    """A per-weight tuple attribute (MXNet's tuple of <float>), given as a sequence or its string."""
    bad = f"{op}: invalid value {value!r} for attribute '{name}' (tuple of floats expected)"
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise OperatorError(bad) from None
    if isinstance(value, (int, float, np.number)):
        value = (value,)
    try:
        out = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise OperatorError(bad) from None
    if len(out) != n:
        raise OperatorError(f"{op}: attribute '{name}' needs {n} values (one per weight), got {len(out)}")
    return out


def _check_count(op: str, key: str):
    def count(attrs) -> int:
        n = attrs[key]
        if n < 1:
            raise OperatorError(f"{op}: {key} must be >= 1, got {n}")
        return n
    return count


def _names_for(per: Sequence[str], tail: Sequence[str], count: Callable) -> Callable:
    def names(attrs) -> List[str]:
        return [f"{p}_{i}" for i in range(count(attrs)) for p in per] + list(tail)
    return names


def _group_shapes(op: str, per: Sequence[str], tail: Sequence[str], count: Callable, lists: Sequence[str] = ()):
    """Every array of weight i has weight i's shape; trailing per-weight vectors have shape (n,).
    The per-weight tuple attributes named in `lists` are checked here, before the op is pushed."""
    k = len(per)

    def infer(attrs, in_shapes):
        n = count(attrs)
        for name in lists:
            if name == "step_count":
                if len(attrs[name]) != n:
                    raise OperatorError(f"{op}: attribute 'step_count' needs {n} values (one per tensor), "
                                        f"got {len(attrs[name])}")
            else:
                _floats(attrs[name], op, name, n)
        ins = list(in_shapes)
        outs = []
        for i in range(n):
            group = ins[i * k:(i + 1) * k]
            known = next((s for s in group if s is not None), None)
            for j, s in enumerate(group):
                if s is not None and known is not None and tuple(s) != tuple(known):
                    raise ShapeError(f"{op}: {per[j]}_{i} has shape {tuple(s)} but {per[0]}_{i} "
                                     f"has shape {tuple(known)}")
            ins[i * k:(i + 1) * k] = [known] * k
            outs.append(known)
        for j, name in enumerate(tail):
            s, want = ins[n * k + j], _tail_shape(name, n)
            if s is not None and tuple(s) != want:
                raise ShapeError(f"{op}: {name} must have shape {want}, got {tuple(s)}")
            ins[n * k + j] = want
        return ins, outs
    return infer


def _tail_shape(name: str, n: int) -> Tuple[int, ...]:
    return (1,) if name == "rescale_grad" else (n,)


def _group_types(op: str, per: Sequence[str], tail: Sequence[str], count: Callable, fp32: Sequence[str] = ()):
    """Weights and gradients share a floating dtype; names in fp32 (master weights, their momenta) are float32."""
    k = len(per)

    def infer(attrs, in_dtypes):
        n = count(attrs)
        ins = list(in_dtypes)
        outs = []
        for i in range(n):
            w = next((ins[i * k + j] for j, p in enumerate(per) if p not in fp32 and ins[i * k + j] is not None), None)
            for j, p in enumerate(per):
                d = ins[i * k + j]
                want = _F32 if p in fp32 else w
                if d is not None and want is not None and np.dtype(d) != np.dtype(want):
                    expected = "float32 is required" if p in fp32 else f"{per[0]}_{i} is {np.dtype(w).name}"
                    raise DTypeError(f"{op}: {p}_{i} has dtype {np.dtype(d).name} but {expected}")
                ins[i * k + j] = want if d is None else d
            if w is not None and np.dtype(w).kind != "f":
                raise DTypeError(f"{op}: floating point weights expected, got {np.dtype(w).name}")
            outs.append(w)
        for j, name in enumerate(tail):
            d = ins[n * k + j]
            if d is not None and np.dtype(d).kind != "f":
                raise DTypeError(f"{op}: {name} must be floating point, got {np.dtype(d).name}")
            if d is None:  # rescale_grad and the master-weight ops' lrs/wds are float32, others the weights'
                ins[n * k + j] = _F32 if fp32 or name == "rescale_grad" else outs[0] if outs else None
        return ins, outs
    return infer


def _every(slots: Sequence[int], k: int, count: Callable) -> Callable:
    """Inputs i*k + slot for every weight i and slot: the states this op writes in place."""
    def mutated(attrs) -> List[int]:
        return [i * k + s for i in range(count(attrs)) for s in slots]
    return mutated


def _register_multi(name: str, per: Sequence[str], tail: Sequence[str], attrs: dict, kernel: Callable,
                    mutated_slots: Sequence[int], fp32: Sequence[str], count_key: str, doc: str) -> None:
    count = _check_count(name, count_key)
    lists = [a for a in ("lrs", "wds", "etas", "learning_rates", "step_count") if a in attrs]
    register(OpDef(
        name=name, attrs=attrs, inputs=_names_for(per, tail, count),
        outputs=lambda a: [f"output{i}" for i in range(count(a))],
        infer_shape=_group_shapes(name, per, tail, count, lists), infer_type=_group_types(name, per, tail, count, fp32),
        kernels={"any": kernel},  # count_key defaults to 1 and is never inferred from the inputs, as MXNet
        inplace=lambda a: [(i * len(per), i) for i in range(count(a))],  # weight i -> output i
        mutates=_every(tuple(mutated_slots), len(per), count) if mutated_slots else (), doc=doc))


# -- multi SGD ---------------------------------------------------------------------------------------
_MULTI_COMMON = {
    "rescale_grad": Attr("float", 1.0, doc="gradient multiplier"),
    "clip_gradient": Attr("float", -1.0, doc="clip the rescaled gradient to [-c, c] when c >= 0"),
    "num_weights": Attr("int", 1, doc="number of weights updated"),
}
_LISTED = {"lrs": Attr("any", doc="learning rates, one per weight"),
           "wds": Attr("any", doc="weight decays, one per weight")}
_MOM = {"momentum": Attr("float", 0.0, doc="momentum")}


def _multi_sgd_kernel(name: str, k: int, mom: bool, mp: bool, preloaded: bool) -> Callable:
    formula = _sgd_mom if mom else _sgd
    one = _sgd_mom_kernel if mom else _sgd_kernel  # the single-weight kernels, in place and lean

    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        n = attrs["num_weights"]
        if preloaded:
            lrs, wds = inputs[n * k].tolist(), inputs[n * k + 1].tolist()
        else:
            lrs = _floats(attrs["lrs"], name, "lrs", n)
            wds = _floats(attrs["wds"], name, "wds", n)
        a = dict(attrs)
        for i in range(n):
            group = inputs[i * k:(i + 1) * k]
            a["lr"], a["wd"] = float(lrs[i]), float(wds[i])
            w, g = group[0], group[1]
            states = group[2:3] if mom else []
            if mp:
                w32 = group[-1]
                w32[...] = formula(xp, a, w32, g.astype(np.float32), states)
                outputs[i][...] = w32
            else:
                one(ctx, a, group, [outputs[i]], aux)
    return kernel


for _pre in (False, True):
    for _mp in (False, True):
        for _mom in (False, True):
            _name = ("preloaded_" if _pre else "") + "multi_" + ("mp_" if _mp else "") + \
                ("sgd_mom_update" if _mom else "sgd_update")
            _per = ["weight", "grad"] + (["mom"] if _mom else []) + (["weight32"] if _mp else [])
            _tail = ["lrs", "wds"] if _pre else []
            _attrs = dict(_MULTI_COMMON, **({} if _pre else _LISTED), **(_MOM if _mom else {}))
            _slots = ([2] if _mom else []) + ([len(_per) - 1] if _mp else [])
            _register_multi(_name, _per, _tail, _attrs, _multi_sgd_kernel(_name, len(_per), _mom, _mp, _pre),
                            _slots, ["mom", "weight32"] if _mp else [], "num_weights",
                            f"{'mp_' if _mp else ''}{'sgd_mom_update' if _mom else 'sgd_update'} on num_weights "
                            "weights (inputs " + ", ".join(f"{p}_i" for p in _per) + (", lrs, wds" if _pre else "")
                            + "); returns the updated weights.")


# -- LARS helpers ------------------------------------------------------------------------------------
def _multi_sum_sq(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    for i, x in enumerate(inputs):
        x32 = x.astype(np.float32, copy=False).reshape(-1)
        outputs[0][i] = xp.dot(x32, x32)


def _multi_sum_sq_types(attrs, in_dtypes):
    known = next((d for d in in_dtypes if d is not None), None)
    for i, d in enumerate(in_dtypes):
        if d is not None and np.dtype(d) != np.dtype(known):
            raise DTypeError(f"multi_sum_sq: every array must have one dtype; array_{i} is {np.dtype(d).name} "
                             f"but array_0 is {np.dtype(known).name}")
    return [known] * len(in_dtypes), [_F32]


_count_arrays = _check_count("multi_sum_sq", "num_arrays")
register(OpDef(name="multi_sum_sq", attrs={"num_arrays": Attr("int", doc="number of input arrays")},
               inputs=lambda a: [f"array_{i}" for i in range(_count_arrays(a))], outputs=["output"],
               infer_shape=lambda a, s: (list(s), [(_count_arrays(a),)]), infer_type=_multi_sum_sq_types,
               kernels={"any": _multi_sum_sq}, key_var_num_args="num_arrays",
               doc="The sum of squares of each input array, as a float32 vector of num_arrays entries."))


def _multi_lars(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    lrs, w_sq, g_sq, wds = inputs
    w_norm = xp.sqrt(w_sq)
    g_norm = xp.sqrt(g_sq) * attrs["rescale_grad"]
    valid = (w_norm > 0) & (g_norm > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        lars = attrs["eta"] * w_norm / (g_norm + wds * w_norm + attrs["eps"])
    outputs[0][...] = lrs * xp.where(valid, lars, 1.0)


def _multi_lars_shapes(attrs, in_shapes):
    known = next((s for s in in_shapes if s is not None), None)
    names = ("lrs", "weights_sum_sq", "grads_sum_sq", "wds")
    for name, s in zip(names, in_shapes):
        if s is not None and (len(s) != 1 or tuple(s) != tuple(known)):
            raise ShapeError(f"multi_lars: {name} must be a vector like lrs {tuple(known)}, got {tuple(s)}")
    return [known] * 4, [known]


register(OpDef(name="multi_lars", attrs={"eta": Attr("float"), "eps": Attr("float"),
                                         "rescale_grad": Attr("float", 1.0)},
               inputs=["lrs", "weights_sum_sq", "grads_sum_sq", "wds"], outputs=["output"],
               infer_shape=_multi_lars_shapes, kernels={"any": _multi_lars}, inplace=[(0, 0)],
               doc="LARS learning rates: lrs * eta*|w| / (|g|*rescale_grad + wd*|w| + eps) where |w|, |g| > 0."))


# -- mixed-precision LAMB phases ----------------------------------------------------------------------
def _lamb_direction(xp, a, w32, g32, mean, var, t):
    r = _clip(xp, a["rescale_grad"] * g32, a["clip_gradient"])
    mean[...] = a["beta1"] * mean + (1 - a["beta1"]) * r
    var[...] = a["beta2"] * var + (1 - a["beta2"]) * r * r
    m, v = mean, var
    if a["bias_correction"]:
        m = mean / (1 - a["beta1"] ** t)
        v = var / (1 - a["beta2"] ** t)
    return m / (xp.sqrt(v) + a["epsilon"]) + a["wd"] * w32


def _trust_ratio(a, r1: float, r2: float) -> float:
    if a["lower_bound"] >= 0:
        r1 = max(r1, a["lower_bound"])
    if a["upper_bound"] >= 0:
        r1 = min(r1, a["upper_bound"])
    return r1 / r2 if r1 != 0 and r2 != 0 else 1.0


def _mp_lamb1(ctx, attrs, inputs, outputs, aux):
    w, g, mean, var, w32 = inputs
    outputs[0][...] = _lamb_direction(ctx.xp, attrs, w32, g.astype(np.float32), mean, var, attrs["t"])


def _mp_lamb_types(op: str, n_in: int, out_f32: bool):
    def infer(attrs, in_dtypes):
        ins = list(in_dtypes)
        for i in range(2, n_in):
            if ins[i] is not None and np.dtype(ins[i]) != _F32:
                raise DTypeError(f"{op}: input {i} must be float32, got {np.dtype(ins[i]).name}")
            ins[i] = _F32
        if ins[1] is None:
            ins[1] = ins[0] if not out_f32 or op.endswith("phase1") else _F32
        return ins, [_F32 if out_f32 else ins[0]]
    return infer


_mp1_in = ["weight", "grad", "mean", "var", "weight32"]
_MP_LAMB1 = {"beta1": Attr("float", 0.9), "beta2": Attr("float", 0.999), "epsilon": Attr("float", 1e-6),
             "t": Attr("int"), "bias_correction": Attr("bool", True), "wd": Attr("float"),
             "rescale_grad": Attr("float", 1.0), "clip_gradient": Attr("float", -1.0)}


def _same_shapes(op: str, names: Sequence[str], scalars: Sequence[int] = ()):
    def infer(attrs, in_shapes):
        known = next((s for i, s in enumerate(in_shapes) if s is not None and i not in scalars), None)
        ins = list(in_shapes)
        for i, (name, s) in enumerate(zip(names, in_shapes)):
            want = (1,) if i in scalars else known
            if s is not None and want is not None and tuple(s) != tuple(want):
                raise ShapeError(f"{op}: {name} must have shape {tuple(want)}, got {tuple(s)}")
            ins[i] = want
        return ins, [known]
    return infer


register(OpDef(name="mp_lamb_update_phase1", attrs=_MP_LAMB1, inputs=_mp1_in, outputs=["output"],
               infer_shape=_same_shapes("mp_lamb_update_phase1", _mp1_in),
               infer_type=_mp_lamb_types("mp_lamb_update_phase1", 5, True), kernels={"any": _mp_lamb1},
               mutates=[2, 3], doc="lamb_update_phase1 on the float32 master weights: the float32 step direction."))


def _mp_lamb2(ctx, attrs, inputs, outputs, aux):
    # as MXNet 1.9.1: the result is written to the output only; weight32 is read, not updated
    w, g, r1, r2, w32 = inputs
    ratio = _trust_ratio(attrs, float(r1.reshape(-1)[0]), float(r2.reshape(-1)[0]))
    outputs[0][...] = w32 - attrs["lr"] * ratio * g


_mp2_in = ["weight", "g", "r1", "r2", "weight32"]
register(OpDef(name="mp_lamb_update_phase2", attrs={"lr": Attr("float"), "lower_bound": Attr("float", -1.0),
                                                    "upper_bound": Attr("float", -1.0)},
               inputs=_mp2_in, outputs=["output"], infer_shape=_same_shapes("mp_lamb_update_phase2", _mp2_in, (2, 3)),
               infer_type=_mp_lamb_types("mp_lamb_update_phase2", 5, False), kernels={"any": _mp_lamb2},
               inplace=[(0, 0)],
               doc="weight32 - lr * ratio * g cast to weight's dtype (weight32 itself is not updated, as in "
                   "MXNet 1.9.1)."))


# -- multi-tensor LAMB --------------------------------------------------------------------------------
_MULTI_LAMB = {"learning_rates": Attr("any"), "wds": Attr("any"), "beta1": Attr("float", 0.9),
               "beta2": Attr("float", 0.999), "epsilon": Attr("float", 1e-6), "rescale_grad": Attr("float", 1.0),
               "lower_bound": Attr("float", -1.0), "upper_bound": Attr("float", -1.0),
               "clip_gradient": Attr("float", -1.0), "bias_correction": Attr("bool", True),
               "step_count": Attr("shape"), "num_tensors": Attr("int", 1)}


def _multi_lamb_kernel(name: str, mp: bool) -> Callable:
    k = 5 if mp else 4

    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        n = attrs["num_tensors"]
        lrs = _floats(attrs["learning_rates"], name, "learning_rates", n)
        wds = _floats(attrs["wds"], name, "wds", n)
        steps = attrs["step_count"]
        if len(steps) != n:
            raise OperatorError(f"{name}: step_count needs {n} values (one per tensor), got {len(steps)}")
        a = dict(attrs)
        for i in range(n):
            w, g, mean, var = inputs[i * k:i * k + 4]
            master = inputs[i * k + 4] if mp else w
            a["wd"] = wds[i]
            d = _lamb_direction(xp, a, master, g.astype(np.float32) if mp else g, mean, var, steps[i])
            ratio = _trust_ratio(a, float(xp.sqrt(xp.sum(xp.square(master, dtype=np.float32)))),
                                 float(xp.sqrt(xp.sum(xp.square(d, dtype=np.float32)))))
            new = master - lrs[i] * ratio * d
            if mp:
                master[...] = new
            outputs[i][...] = new
    return kernel


for _mp in (False, True):
    _name = "_multi_mp_lamb_update" if _mp else "_multi_lamb_update"
    _per = ["weight", "grad", "mean", "var"] + (["weight32"] if _mp else [])
    _register_multi(_name, _per, [], _MULTI_LAMB, _multi_lamb_kernel(_name, _mp), [2, 3] + ([4] if _mp else []),
                    ["mean", "var", "weight32"] if _mp else [], "num_tensors",
                    f"Both LAMB phases on num_tensors tensors (inputs {', '.join(p + '_i' for p in _per)}); "
                    "returns the updated weights.")


# -- AdamW --------------------------------------------------------------------------------------------
def _adamw_step(xp, a, w, g, mean, var, scale: float, lr: float, wd: float, eta: float):
    r = _clip(xp, scale * g, a["clip_gradient"])
    mean[...] = a["beta1"] * mean + (1 - a["beta1"]) * r
    var[...] = a["beta2"] * var + (1 - a["beta2"]) * r * r
    return w - eta * (lr * mean / (xp.sqrt(var) + a["epsilon"]) + wd * w)


def _usable_scale(x) -> Tuple[bool, float]:
    s = float(x.reshape(-1)[0])
    return (s != 0 and np.isfinite(s)), s


def _adamw_kernel(mp: bool) -> Callable:
    def kernel(ctx, attrs, inputs, outputs, aux):
        w, g, mean, var = inputs[:4]
        master = inputs[4] if mp else w
        ok, scale = _usable_scale(inputs[-1])
        if not ok:  # MXNet skips the whole update (a loss-scaling overflow): out=weight stays as it is
            outputs[0][...] = w
            return
        new = _adamw_step(ctx.xp, attrs, master, g.astype(np.float32) if mp else g, mean, var, scale,
                          attrs["lr"], attrs["wd"], attrs["eta"])
        if mp:
            master[...] = new
        outputs[0][...] = new
    return kernel


_ADAMW = {"lr": Attr("float"), "beta1": Attr("float", 0.9), "beta2": Attr("float", 0.999),
          "epsilon": Attr("float", 1e-8), "wd": Attr("float", 0.0), "eta": Attr("float"),
          "clip_gradient": Attr("float", -1.0)}
for _mp in (False, True):
    _name = "_mp_adamw_update" if _mp else "_adamw_update"
    _ins = ["weight", "grad", "mean", "var"] + (["weight32"] if _mp else []) + ["rescale_grad"]
    register(OpDef(name=_name, attrs=_ADAMW, inputs=_ins, outputs=["output"],
                   infer_shape=_same_shapes(_name, _ins, (len(_ins) - 1,)),
                   infer_type=_group_types(_name, _ins[:-1], ["rescale_grad"], lambda a: 1,
                                           ["mean", "var", "weight32"] if _mp else []),
                   kernels={"any": _adamw_kernel(_mp)}, inplace=[(0, 0)],
                   mutates=[2, 3] + ([4] if _mp else []),
                   doc="AdamW: w -= eta * (lr * m / (sqrt(v) + epsilon) + wd * w); skipped when rescale_grad "
                       "is 0, NaN or infinite."))


def _multi_adamw_kernel(name: str, mp: bool) -> Callable:
    k = 5 if mp else 4

    def kernel(ctx, attrs, inputs, outputs, aux):
        n = attrs["num_weights"]
        lrs = _floats(attrs["lrs"], name, "lrs", n)
        wds = _floats(attrs["wds"], name, "wds", n)
        etas = _floats(attrs["etas"], name, "etas", n)
        ok, scale = _usable_scale(inputs[-1])
        for i in range(n):
            w, g, mean, var = inputs[i * k:i * k + 4]
            master = inputs[i * k + 4] if mp else w
            if not ok:
                outputs[i][...] = w
                continue
            new = _adamw_step(ctx.xp, attrs, master, g.astype(np.float32) if mp else g, mean, var, scale,
                              lrs[i], wds[i], etas[i])
            if mp:
                master[...] = new
            outputs[i][...] = new
    return kernel


_MULTI_ADAMW = {"lrs": Attr("any"), "wds": Attr("any"), "etas": Attr("any"), "beta1": Attr("float", 0.9),
                "beta2": Attr("float", 0.999), "epsilon": Attr("float", 1e-8),
                "clip_gradient": Attr("float", -1.0), "num_weights": Attr("int", 1)}
for _mp in (False, True):
    _name = "_multi_mp_adamw_update" if _mp else "_multi_adamw_update"
    _per = ["weight", "grad", "mean", "var"] + (["weight32"] if _mp else [])
    _register_multi(_name, _per, ["rescale_grad"], _MULTI_ADAMW, _multi_adamw_kernel(_name, _mp),
                    [2, 3] + ([4] if _mp else []), ["mean", "var", "weight32"] if _mp else [], "num_weights",
                    f"AdamW on num_weights weights (inputs {', '.join(p + '_i' for p in _per)}, rescale_grad); "
                    "returns the updated weights.")
