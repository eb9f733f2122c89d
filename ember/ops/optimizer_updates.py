"""Fused optimizer updates with MXNet 1.9's names, attributes and formulas.

Each op returns the updated weight (call it with ``out=weight`` to update in place, as
MXNet's optimizers do: in-place pair (0, 0)) and updates its state inputs (momentum,
mean/var, ...) in place (`mutates`).  Common attributes: lr, wd, rescale_grad and
clip_gradient (>= 0 clips the rescaled gradient to [-c, c]; negative means no clipping;
note that 0 clips everything to 0, as in MXNet).  adam_update does no bias correction:
the Python optimizer folds it into lr.

Verified against MXNet 1.9.1 results (tests/ops/fixtures), including one of its quirks: when
the weight is updated in place (nag_mom_update with out=weight, and mp_nag_mom_update whose
weight32 always is), MXNet computes the new momentum from the *updated* weight; so does ember.
"""
from __future__ import annotations

import math
from functools import lru_cache

from typing import Callable, Dict, List, Sequence

import numpy as np

from ..base import DTypeError, ShapeError
from ..engine import native
from ._common import same_shape, unify
from .registry import Attr, OpDef, register

_COMMON = {
    "lr": Attr("float", doc="learning rate"),
    "wd": Attr("float", 0.0, doc="weight decay"),
    "rescale_grad": Attr("float", 1.0, doc="gradient multiplier"),
    "clip_gradient": Attr("float", -1.0, doc="clip the rescaled gradient to [-c, c] when c >= 0"),
}


def _clip(xp, g, c):
    return xp.clip(g, -c, c) if c >= 0 else g


def _grad(xp, a, g, w=None, wd_in_grad=False):
    """rescale_grad * g (+ wd * w when wd joins the gradient before clipping), then clipped."""
    r = a["rescale_grad"] * g
    if wd_in_grad:
        r = r + a["wd"] * w
    return _clip(xp, r, a["clip_gradient"])


def _sgd(xp, a, w, g, states):
    return (1 - a["lr"] * a["wd"]) * w - a["lr"] * _grad(xp, a, g)


def _sgd_mom(xp, a, w, g, states):
    (mom,) = states
    new_mom = a["momentum"] * mom - a["lr"] * a["wd"] * w - a["lr"] * _grad(xp, a, g)
    mom[...] = new_mom
    return w + new_mom


def _nag_mom(xp, a, w, g, states, in_place=False):
    (mom,) = states
    clipped = _clip(xp, a["rescale_grad"] * g, a["clip_gradient"])
    r = clipped + a["wd"] * w
    new_mom = a["momentum"] * mom - a["lr"] * r
    new_w = w + a["momentum"] * new_mom - a["lr"] * r
    if in_place:  # MXNet 1.9 writes the weight first, then computes mom from the *updated* weight
        new_mom = a["momentum"] * mom - a["lr"] * (clipped + a["wd"] * new_w)
    mom[...] = new_mom
    return new_w


def _adam(xp, a, w, g, states):
    mean, var = states
    r = _grad(xp, a, g, w, wd_in_grad=True)
    mean[...] = a["beta1"] * mean + (1 - a["beta1"]) * r
    var[...] = a["beta2"] * var + (1 - a["beta2"]) * r * r
    return w - a["lr"] * mean / (xp.sqrt(var) + a["epsilon"])


def _clip_weights(xp, a, w):
    c = a["clip_weights"]
    return xp.clip(w, -c, c) if c >= 0 else w


def _rmsprop(xp, a, w, g, states):
    (n,) = states
    r = _grad(xp, a, g, w, wd_in_grad=True)
    n[...] = (1 - a["gamma1"]) * r * r + a["gamma1"] * n
    return _clip_weights(xp, a, w - a["lr"] * r / xp.sqrt(n + a["epsilon"]))


def _rmspropalex(xp, a, w, g, states):
    n, gs, delta = states
    r = _grad(xp, a, g, w, wd_in_grad=True)
    n[...] = (1 - a["gamma1"]) * r * r + a["gamma1"] * n
    gs[...] = (1 - a["gamma1"]) * r + a["gamma1"] * gs
    delta[...] = a["gamma2"] * delta - a["lr"] * r / xp.sqrt(n - gs * gs + a["epsilon"])
    return _clip_weights(xp, a, w + delta)


def _adagrad(xp, a, w, g, states):
    (hist,) = states
    r = _grad(xp, a, g)
    hist += r * r
    # MXNet: sqrt(history + epsilon); wd (rejected by MXNet's sparse kernel) as its Python AdaGrad applies it
    return w - a["lr"] * (r / xp.sqrt(hist + a["epsilon"]) + a["wd"] * w)


def _ftrl(xp, a, w, g, states):
    z, n = states
    r = _grad(xp, a, g)
    z += r - (xp.sqrt(n + r * r) - xp.sqrt(n)) * w / a["lr"]
    n += r * r
    l1 = a["lamda1"]
    return (xp.sign(z) * l1 - z) / ((a["beta"] + xp.sqrt(n)) / a["lr"] + a["wd"]) * (xp.abs(z) > l1)


def _signsgd(xp, a, w, g, states):
    return (1 - a["lr"] * a["wd"]) * w - a["lr"] * xp.sign(g)


def _signum(xp, a, w, g, states):
    (mom,) = states
    m = a["momentum"]
    mom[...] = m * mom - (1 - m) * a["wd"] * w - (1 - m) * _grad(xp, a, g)
    return (1 - a["lr"] * a["wd_lh"]) * w + a["lr"] * xp.sign(mom)


def _ftml(xp, a, w, g, states):
    d, v, z = states
    t, b1, b2 = a["t"], a["beta1"], a["beta2"]
    r = _clip(xp, a["rescale_grad"] * g + a["wd"] * w, a["clip_grad"])
    v[...] = b2 * v + (1 - b2) * r * r
    d_t = (1 - b1 ** t) / a["lr"] * (xp.sqrt(v / (1 - b2 ** t)) + a["epsilon"])
    z[...] = b1 * z + (1 - b1) * r - (d_t - b1 * d) * w
    d[...] = d_t
    return -z / d_t


# name: (formula, state input names, extra attributes, aliases)
_UPDATES: Dict[str, tuple] = {
    "sgd_update": (_sgd, [], {"lazy_update": Attr("bool", True)}, []),
    "sgd_mom_update": (_sgd_mom, ["mom"], {"momentum": Attr("float", 0.0), "lazy_update": Attr("bool", True)}, []),
    "nag_mom_update": (_nag_mom, ["mom"], {"momentum": Attr("float", 0.0)}, []),
    "adam_update": (_adam, ["mean", "var"], {"beta1": Attr("float", 0.9), "beta2": Attr("float", 0.999),
                                             "epsilon": Attr("float", 1e-8), "lazy_update": Attr("bool", True)}, []),
    "rmsprop_update": (_rmsprop, ["n"], {"gamma1": Attr("float", 0.95), "epsilon": Attr("float", 1e-8),
                                         "clip_weights": Attr("float", -1.0)}, []),
    "rmspropalex_update": (_rmspropalex, ["n", "g", "delta"],
                           {"gamma1": Attr("float", 0.95), "gamma2": Attr("float", 0.9),
                            "epsilon": Attr("float", 1e-8), "clip_weights": Attr("float", -1.0)}, []),
    "_sparse_adagrad_update": (_adagrad, ["history"], {"epsilon": Attr("float", 1e-7)}, ["adagrad_update"]),
    "ftrl_update": (_ftrl, ["z", "n"], {"lamda1": Attr("float", 0.01), "beta": Attr("float", 1.0)}, []),
    "signsgd_update": (_signsgd, [], {}, []),
    "signum_update": (_signum, ["mom"], {"momentum": Attr("float", 0.0), "wd_lh": Attr("float", 0.0)}, []),
    "ftml_update": (_ftml, ["d", "v", "z"], {"beta1": Attr("float", 0.6), "beta2": Attr("float", 0.999),
                                             "epsilon": Attr("float", 1e-8), "t": Attr("int"),
                                             "clip_grad": Attr("float", -1.0)}, []),
}


def _same_buffer(xp, a, b) -> bool:
    return a is b or (xp is np and np.may_share_memory(a, b))


# The CPU SGD kernels run a large weight chunk by chunk: one chunk's step (and weight-decay term)
# stays in cache, so the update reads weight, gradient (and momentum) once and writes them once,
# instead of one pass over memory per operation and full-size temporaries.  Same operations in the
# same order per element: the same numbers as the whole-array form.
_CHUNK = 1 << 16


def _chunkable(xp, out, *inputs) -> bool:
    """Large C-contiguous numpy arrays of one shape and dtype, `out` being the first input or
    sharing memory with none of them (an element's inputs are all read before it is written)."""
    a = inputs[0]
    if xp is not np or a.size <= _CHUNK:
        return False
    for x in (out,) + inputs:
        if not x.flags.c_contiguous or x.dtype != a.dtype or x.shape != a.shape:
            return False
    others = inputs if out is not a else inputs[1:]
    if any(np.may_share_memory(out, x) for x in others):
        return False
    return all(not np.may_share_memory(x, y) for i, x in enumerate(inputs) for y in inputs[i + 1:])


def _by_chunks(apply, arrays, temporaries: int) -> None:
    """apply(*chunks of arrays, *temporaries) over flat chunks of the (chunkable) arrays."""
    flat = [x.reshape(-1) for x in arrays]
    size = flat[0].size
    tmps = [np.empty(_CHUNK, flat[0].dtype) for _ in range(temporaries)]
    for lo in range(0, size, _CHUNK):
        n = min(_CHUNK, size - lo)
        apply(*[x[lo:lo + n] for x in flat], *[t[:n] for t in tmps])


def _exact_scale(g, rescale: float, lr: float):
    """rescale * lr as one float32 factor when `(g * rescale) * lr` == `g * factor` for every float32
    g: rescale a power of two (1/batch_size for the usual batch sizes), so g * rescale is exact
    (short of the subnormal range) and so is the product of the two factors; else None."""
    return _exact_factor(rescale, lr) if g.dtype == np.float32 else None


@lru_cache(maxsize=256)  # a training loop asks for the same few (rescale, lr) pairs every step
def _exact_factor(rescale: float, lr: float):
    if not 0 < rescale <= 1 or math.frexp(rescale)[0] != 0.5:
        return None
    r32, lr32 = np.float32(rescale), np.float32(lr)
    if float(r32) != rescale:
        return None
    factor = lr32 * r32
    if not np.isfinite(factor) or abs(factor) < np.finfo(np.float32).tiny or factor / r32 != lr32:
        return None
    return factor


def _step_factors(attrs, g, lr: float):
    """(a, b) such that the step lr * clip(rescale_grad * g), rounded as `_grad(xp, attrs, g) * lr`,
    is g * a when b is None (one factor: one pass instead of two, the same numbers) and
    clip(g * a) * b otherwise."""
    rescale, clip = attrs["rescale_grad"], attrs["clip_gradient"]
    if clip < 0 and rescale != 1:
        factor = _exact_scale(g, rescale, lr)
        if factor is not None:
            return factor, None
    if rescale != 1 or clip >= 0:
        return rescale, lr
    return lr, None


def _sgd_step(xp, attrs, g, lr, out=None):
    """lr * clip(rescale_grad * g), rounded as `_grad(xp, attrs, g) * lr`; into `out` if given."""
    a, b = _step_factors(attrs, g, lr)
    s = xp.multiply(g, a, out=out)
    if b is None:
        return s
    clip = attrs["clip_gradient"]
    if clip >= 0:
        xp.clip(s, -clip, clip, out=s)
    return xp.multiply(s, b, out=s)


_F32 = np.dtype(np.float32)


def _native_sgd(attrs, w, g, out, lr: float, wd: float) -> bool:
    """The step by the native one-pass kernel (float32 numpy arrays that fit it), the numbers of
    the numpy code above; False when it does not apply."""
    clip = attrs["clip_gradient"]
    if w.dtype != _F32 or g.dtype != _F32 or out.dtype != _F32 or clip == 0:
        return False  # (clipping to 0: numpy's minimum picks between -0 and +0 its own way)
    a, b = _step_factors(attrs, g, lr)
    keep = 1 - lr * wd if wd else 1.0
    return native.sgd_f32(w, g, out, a, 1.0 if b is None else b, clip if clip >= 0 else -1.0, keep)


def _sgd_kernel(ctx, attrs, inputs, outputs, aux):
    # the common case written with in-place ufuncs: fewer temporaries on the per-parameter hot path
    xp = ctx.xp
    w, g = inputs[0], inputs[1]
    out = outputs[0]
    lr, wd = attrs["lr"], attrs["wd"]
    if xp is np and w.shape == g.shape == out.shape and _native_sgd(attrs, w, g, out, lr, wd):
        return

    def apply(w, g, out, tmp=None):
        step = _sgd_step(xp, attrs, g, lr, tmp)
        if wd:
            xp.multiply(w, 1 - lr * wd, out=out)
            xp.subtract(out, step, out=out)
        else:
            xp.subtract(w, step, out=out)
    if _chunkable(xp, out, w, g):
        _by_chunks(apply, (w, g, out), 1)
    else:
        apply(w, g, out)


def _sgd_mom_kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    w, g, mom = inputs
    out = outputs[0]
    lr, wd = attrs["lr"], attrs["wd"]

    def apply(w, g, mom, out, tmp=None, decay=None):
        step = _sgd_step(xp, attrs, g, lr, tmp)
        xp.multiply(mom, attrs["momentum"], out=mom)
        if wd:
            xp.subtract(mom, xp.multiply(w, lr * wd, out=decay), out=mom)
        xp.subtract(mom, step, out=mom)
        xp.add(w, mom, out=out)
    if _chunkable(xp, out, w, g, mom):
        _by_chunks(apply, (w, g, mom, out), 2)
    else:
        apply(w, g, mom, out)


def _kernel(formula: Callable) -> Callable:
    if formula is _sgd:
        return _sgd_kernel
    if formula is _sgd_mom:
        return _sgd_mom_kernel

    def kernel(ctx, attrs, inputs, outputs, aux):
        w, g = inputs[0], inputs[1]
        if formula is _nag_mom:
            new_w = _nag_mom(ctx.xp, attrs, w, g, inputs[2:], in_place=_same_buffer(ctx.xp, w, outputs[0]))
        else:
            new_w = formula(ctx.xp, attrs, w, g, inputs[2:])  # states are updated in place by the formula
        outputs[0][...] = new_w
    return kernel


def _attrs_for(name: str, extra: Dict[str, Attr]) -> Dict[str, Attr]:
    attrs = dict(_COMMON)
    if name == "ftml_update":  # ftml names its clipping attribute clip_grad
        attrs.pop("clip_gradient")
    attrs.update(extra)
    return attrs


def _float_weights(op: str, names: Sequence[str]):
    def infer(attrs, in_dtypes):
        dt = next((d for d in in_dtypes if d is not None), None)
        for n, d in zip(names, in_dtypes):
            if d is not None and np.dtype(d) != np.dtype(dt):
                raise DTypeError(f"{op}: {n} has dtype {np.dtype(d).name} but {names[0]} is {np.dtype(dt).name}")
        if dt is not None and np.dtype(dt).kind != "f":
            raise DTypeError(f"{op}: floating point weights expected, got {np.dtype(dt).name}")
        return [dt] * len(in_dtypes), [dt]
    return infer


for _name, (_formula, _states, _extra, _aliases) in _UPDATES.items():
    _inputs = ["weight", "grad"] + _states
    register(OpDef(name=_name, attrs=_attrs_for(_name, _extra), inputs=_inputs, outputs=["output"],
                   infer_shape=same_shape(_name, names=_inputs), infer_type=_float_weights(_name, _inputs),
                   kernels={"any": _kernel(_formula)}, inplace=[(0, 0)],
                   mutates=list(range(2, len(_inputs))), aliases=_aliases,
                   doc=f"{_name}: the updated weight; states ({', '.join(_states) or 'none'}) updated in place."))


# -- multi-precision SGD: the master copy weight32 (float32) is updated, weight gets its cast ----------
def _mp_types(op: str, names: List[str]):
    def infer(attrs, in_dtypes):
        w = in_dtypes[0]
        ins = list(in_dtypes)
        for i, n in enumerate(names[2:], start=2):
            if ins[i] is not None and np.dtype(ins[i]) != np.float32:
                raise DTypeError(f"{op}: {n} must be float32, got {np.dtype(ins[i]).name}")
            ins[i] = np.dtype(np.float32)
        if w is not None and ins[1] is None:
            ins[1] = w
        return ins, [w]
    return infer


def _mp_kernel(formula: Callable) -> Callable:
    def kernel(ctx, attrs, inputs, outputs, aux):
        g = inputs[1].astype(np.float32)
        w32 = inputs[-1]
        if formula is _nag_mom:  # weight32 is always updated in place, so MXNet's ordering always applies
            w32[...] = _nag_mom(ctx.xp, attrs, w32, g, inputs[2:-1], in_place=True)
        else:
            w32[...] = formula(ctx.xp, attrs, w32, g, inputs[2:-1])
        outputs[0][...] = w32
    return kernel


for _name, _formula, _states, _extra, _doc in (
        ("mp_sgd_update", _sgd, [], {"lazy_update": Attr("bool", True)},
         "mp_sgd_update: float32 master weights updated in place; returns them cast to weight's dtype."),
        ("mp_sgd_mom_update", _sgd_mom, ["mom"], {"momentum": Attr("float", 0.0), "lazy_update": Attr("bool", True)},
         "mp_sgd_mom_update: float32 master weights updated in place; returns them cast to weight's dtype."),
        ("mp_nag_mom_update", _nag_mom, ["mom"], {"momentum": Attr("float", 0.0)},
         "nag_mom_update on the float32 master weights weight32; returns them cast to weight's dtype.")):
    _inputs = ["weight", "grad"] + _states + ["weight32"]
    register(OpDef(name=_name, attrs=_attrs_for(_name, _extra), inputs=_inputs, outputs=["output"],
                   infer_shape=same_shape(_name, names=_inputs), infer_type=_mp_types(_name, _inputs),
                   kernels={"any": _mp_kernel(_formula)}, inplace=[(0, 0)],
                   mutates=list(range(2, len(_inputs))), doc=_doc))


# -- LAMB (two phases: the Adam-style direction, then the trust-ratio step) -------------------------------
_LAMB1 = {"beta1": Attr("float", 0.9), "beta2": Attr("float", 0.999), "epsilon": Attr("float", 1e-6),
          "t": Attr("int"), "bias_correction": Attr("bool", True), "wd": Attr("float"),
          "rescale_grad": Attr("float", 1.0), "clip_gradient": Attr("float", -1.0)}


def _lamb1(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    w, g, mean, var = inputs
    a = attrs
    r = _clip(xp, a["rescale_grad"] * g, a["clip_gradient"])
    mean[...] = a["beta1"] * mean + (1 - a["beta1"]) * r
    var[...] = a["beta2"] * var + (1 - a["beta2"]) * r * r
    m, v = mean, var
    if a["bias_correction"]:
        m = mean / (1 - a["beta1"] ** a["t"])
        v = var / (1 - a["beta2"] ** a["t"])
    outputs[0][...] = m / (xp.sqrt(v) + a["epsilon"]) + a["wd"] * w


_inputs = ["weight", "grad", "mean", "var"]
register(OpDef(name="lamb_update_phase1", attrs=_LAMB1, inputs=_inputs, outputs=["output"],
               infer_shape=same_shape("lamb_update_phase1", names=_inputs),
               infer_type=_float_weights("lamb_update_phase1", _inputs), kernels={"any": _lamb1}, mutates=[2, 3],
               doc="LAMB phase 1: updates mean/var in place and returns the step direction g."))


def _lamb2_infer(attrs, in_shapes):
    w, g, r1, r2 = in_shapes
    s = unify("lamb_update_phase2", [w, g], ["weight", "g"])
    for name, r in (("r1", r1), ("r2", r2)):
        if r is not None and tuple(r) != (1,):
            raise ShapeError(f"lamb_update_phase2: {name} must have shape (1,), got {tuple(r)}")
    return [s, s, (1,), (1,)], [s]


def _lamb2(ctx, attrs, inputs, outputs, aux):
    w, g, r1, r2 = inputs
    n1, n2 = float(r1.reshape(-1)[0]), float(r2.reshape(-1)[0])
    if attrs["lower_bound"] >= 0:
        n1 = max(n1, attrs["lower_bound"])
    if attrs["upper_bound"] >= 0:
        n1 = min(n1, attrs["upper_bound"])
    ratio = n1 / n2 if n1 != 0 and n2 != 0 else 1.0
    outputs[0][...] = w - attrs["lr"] * ratio * g


register(OpDef(name="lamb_update_phase2", attrs={"lr": Attr("float"), "lower_bound": Attr("float", -1.0),
                                                 "upper_bound": Attr("float", -1.0)},
               inputs=["weight", "g", "r1", "r2"], outputs=["output"], infer_shape=_lamb2_infer,
               infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _lamb2}, inplace=[(0, 0)],
               doc="LAMB phase 2: weight - lr * (|weight| / |g|, clamped) * g, with r1 = |weight|, r2 = |g|."))


# -- Group AdaGrad (one adaptive rate per row) --------------------------------------------------------
def _group_adagrad(xp, a, w, g, states):
    (hist,) = states
    r = _grad(xp, a, g)
    hist += xp.mean(r * r, axis=1, keepdims=True)
    return w - a["lr"] * r / xp.sqrt(hist + a["epsilon"])


def _group_adagrad_shapes(attrs, in_shapes):
    w, g, h = in_shapes
    s = unify("_contrib_group_adagrad_update", [w, g], ["weight", "grad"])
    if s is not None and len(s) != 2:
        raise ShapeError(f"_contrib_group_adagrad_update: weight must be 2-D, got shape {tuple(s)}")
    want = (s[0], 1) if s is not None else None
    if h is not None and want is not None and tuple(h) != want:
        raise ShapeError(f"_contrib_group_adagrad_update: history must have shape {want}, got {tuple(h)}")
    return [s, s, want], [s]


register(OpDef(name="_contrib_group_adagrad_update",
               attrs={"lr": Attr("float"), "rescale_grad": Attr("float", 1.0), "clip_gradient": Attr("float", -1.0),
                      "epsilon": Attr("float", 1e-5)},
               inputs=["weight", "grad", "history"], outputs=["output"], infer_shape=_group_adagrad_shapes,
               infer_type=_float_weights("_contrib_group_adagrad_update", ["weight", "grad", "history"]),
               kernels={"any": _kernel(_group_adagrad)}, inplace=[(0, 0)], mutates=[2],
               doc="Group AdaGrad: history (rows, 1) += row means of g^2; w -= lr * g / sqrt(history + epsilon)."))
