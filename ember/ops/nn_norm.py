"""BatchNorm (moving statistics as aux states, updated in place while training) and LayerNorm."""
from __future__ import annotations

import numpy as np

from ..base import OperatorError
from ..engine import native
from ._nn_util import backward_via, data_axis, known, merge
from .registry import Attr, OpDef, register
from ._common import data_like_output


def _param_view(p, ndim, axis):
    """A per-channel vector shaped to broadcast along `axis`."""
    shape = [1] * ndim
    shape[axis] = -1
    return p.reshape(shape)


def _types(op, n_out, n_aux=0):
    def infer(attrs, in_dtypes):
        d = in_dtypes[0]
        if d is None:
            d = next((t for t in in_dtypes[1:] if t is not None), None)
            if d is None:
                return in_dtypes, [None] * n_out, [None] * n_aux
        d = np.dtype(d)
        if d.kind != "f":
            raise OperatorError(f"{op}: floating point data expected, got {d.name}")
        p = np.dtype(np.float32) if d == np.float16 else d  # fp16 data keeps fp32 parameters, as in MXNet
        for t in in_dtypes[1:]:
            if t is not None and np.dtype(t) != p:
                raise OperatorError(f"{op}: parameter dtype {np.dtype(t).name} differs from {p.name}")
        return [d] + [p] * (len(in_dtypes) - 1), [d] + [p] * (n_out - 1), [p] * n_aux
    return infer


def _work(x):
    return x.astype(np.float32) if x.dtype == np.float16 else x


# -- BatchNorm ---------------------------------------------------------------------------
_BN_ATTRS = {
    "eps": Attr("float", 1e-3, doc="added to the variance"),
    "momentum": Attr("float", 0.9, doc="moving average decay"),
    "fix_gamma": Attr("bool", True, doc="treat gamma as 1 (and give it no gradient)"),
    "use_global_stats": Attr("bool", False, doc="normalise with the moving statistics even when training"),
    "output_mean_var": Attr("bool", False, doc="also return the batch mean and inverse std"),
    "axis": Attr("int", 1, doc="channel axis"),
    "cudnn_off": Attr("bool", False, doc="accepted for MXNet compatibility"),
    "min_calib_range": Attr("float_or_none", None, doc="accepted for MXNet compatibility (quantisation)"),
    "max_calib_range": Attr("float_or_none", None, doc="accepted for MXNet compatibility (quantisation)"),
}


def _bn_shape(attrs, in_shapes, aux_shapes):
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None, None, None], aux_shapes
    d = tuple(d)
    if attrs["eps"] <= 0:
        raise OperatorError(f"BatchNorm: eps must be > 0, got {attrs['eps']}")
    ax = data_axis("BatchNorm", attrs["axis"], len(d))
    c = (d[ax],)
    ins = [d] + [merge("BatchNorm", name, s, c) for name, s in zip(("gamma", "beta"), in_shapes[1:])]
    aux = [merge("BatchNorm", name, s, c) for name, s in zip(("moving_mean", "moving_var"), aux_shapes)]
    return ins, [d, c, c], aux


def _batch_mode(ctx, attrs):
    return ctx.is_train and not attrs["use_global_stats"]


def _backward_batch_mode(attrs):
    # As in MXNet the backward pass depends on use_global_stats only: after an inference-mode
    # forward the saved mean/invstd are the moving statistics and the batch formula uses them.
    # This also keeps training gradients right whatever is_train the backward op runs with.
    return not attrs["use_global_stats"]


def _native_f32(xp, *arrays) -> bool:
    """Whether BatchNorm's native passes may take these arrays (float32 numpy ones; the entry
    points check the rest and answer False where they do not fit)."""
    return xp is np and all(a.dtype == np.float32 for a in arrays)


def _native_mean_var(xp, x, ax):
    """(mean, biased variance) per channel by the native passes, or None where they do not fit."""
    if not _native_f32(xp, x):
        return None
    mean, var = np.empty(x.shape[ax], np.float32), np.empty(x.shape[ax], np.float32)
    return (mean, var) if native.channel_mean_var_f32(x, ax, mean, var) else None


def _bn_apply(xp, xw, mean, scale, beta, ax, out) -> None:
    """out = (x - mean) * scale + beta per channel (out may be x: the op runs in place)."""
    if _native_f32(xp, out, xw, mean, scale, beta) and native.channel_affine_f32(None, None, xw, mean, scale, beta,
                                                                                 ax, out):
        return  # one pass
    shift = beta - mean * scale
    scale_v, shift_v = _param_view(scale, xw.ndim, ax), _param_view(shift, xw.ndim, ax)
    if out.dtype == xw.dtype == scale.dtype:
        # two in-place passes over the data, no temporaries
        xp.multiply(xw, scale_v, out=out)
        out += shift_v
    else:  # float16 data: computed in float32, rounded once
        out[...] = xw * scale_v + shift_v


def _bn_forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x, gamma, beta = inputs
    out, mean_out, invstd_out = outputs
    moving_mean, moving_var = aux
    ax = attrs["axis"] % x.ndim
    red = tuple(a for a in range(x.ndim) if a != ax)
    xw = _work(x)
    if _batch_mode(ctx, attrs):
        stats = _native_mean_var(xp, xw, ax)
        if stats is not None:
            mean, var = stats
        else:
            mean = xw.mean(axis=red)
            # numpy's var, sharing the mean: the same two-pass arithmetic, one pass fewer
            dev = xw - _param_view(mean, x.ndim, ax)
            xp.multiply(dev, dev, out=dev)
            var = dev.sum(axis=red)
            var /= x.size // x.shape[ax]
            del dev
        m = attrs["momentum"]
        # in place: the aux arrays are the executor's / NDArray's storage
        moving_mean *= m
        moving_mean += (1 - m) * mean.astype(moving_mean.dtype, copy=False)
        moving_var *= m
        moving_var += (1 - m) * var.astype(moving_var.dtype, copy=False)
    else:
        mean, var = moving_mean, moving_var
    invstd = 1.0 / xp.sqrt(var + attrs["eps"])
    scale = invstd if attrs["fix_gamma"] else invstd * gamma
    _bn_apply(xp, xw, mean, scale, beta, ax, out)
    mean_out[...] = mean
    invstd_out[...] = invstd  # MXNet's hidden 'var' output holds the inverse standard deviation


def _bn_grad_sums(xp, dyw, xw, mean, ax):
    """(sum(dy), sum(dy * (x - mean)), x - mean) per channel; the last None when the native pass ran
    (it needs no full-size temporary)."""
    if _native_f32(xp, dyw, xw, mean):
        sum_dy, sum_dy_xc = np.empty_like(mean), np.empty_like(mean)
        if native.channel_grad_sums_f32(dyw, xw, mean, ax, sum_dy, sum_dy_xc):
            return sum_dy, sum_dy_xc, None
    red = tuple(a for a in range(xw.ndim) if a != ax)
    centered = xw - _param_view(mean, xw.ndim, ax)        # the one full-size temporary
    return dyw.sum(axis=red), (dyw * centered).sum(axis=red), centered


def _bn_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    dy, x, gamma, mean, invstd = inputs
    dx, dgamma, dbeta = outputs
    ax = attrs["axis"] % x.ndim
    m = x.size // x.shape[ax]
    dyw, xw = _work(dy), _work(x)
    g = xp.ones_like(gamma) if attrs["fix_gamma"] else gamma
    view = lambda v: _param_view(v, x.ndim, ax)  # noqa: E731
    sum_dy, sum_dy_xc, centered = _bn_grad_sums(xp, dyw, xw, mean, ax)
    sum_dy_xhat = sum_dy_xc * invstd
    # parameter gradients first: dx may share out_grad's buffer (inplace option)
    dgamma[...] = 0 if attrs["fix_gamma"] else sum_dy_xhat
    dbeta[...] = sum_dy
    gs = g * invstd
    if not _backward_batch_mode(attrs):
        dx[...] = dyw * view(gs)
        return
    # dx = g*invstd/m * (m*dy - sum(dy) - xhat*sum(dy*xhat)), as per-channel gs*dy + b*(x-mean) + d
    b, d = -(gs / m) * invstd * sum_dy_xhat, -(gs / m) * sum_dy
    if centered is None:
        if _native_f32(xp, dx, gs, b, d) and native.channel_affine_f32(dyw, gs, xw, mean, b, d, ax, dx):
            return  # one pass (dx may be dy)
        centered = xw - view(mean)
    # in place (a few passes, no further temporaries)
    xp.multiply(centered, view(b).astype(centered.dtype, copy=False), out=centered)
    centered += view(d).astype(centered.dtype, copy=False)
    if dx.dtype == dyw.dtype:
        xp.multiply(dyw, view(gs).astype(dyw.dtype, copy=False), out=dx)
        dx += centered
    else:
        dx[...] = dyw * view(gs) + centered


def _bn_stypes(attrs, in_stypes):
    """Dense outputs (MXNet's storage fallback); fix_gamma=True with any sparse input or aux state is
    refused, as MXNet 1.9.1's BatchNormStorageType does (apache/mxnet#11647: the forward sets gamma to 1
    in its input, which the fallback would not write back to a sparse gamma)."""
    if attrs["fix_gamma"] and any(s != "default" for s in in_stypes):
        raise OperatorError("BatchNorm: fix_gamma=True is not supported for sparse ndarrays "
                         f"(input storage types {list(in_stypes)}); use fix_gamma=False")
    return ["default"] * 3


register(OpDef(
    name="BatchNorm", attrs=_BN_ATTRS, infer_stype=_bn_stypes, inputs=["data", "gamma", "beta"], outputs=["output", "mean", "var"],
    aux=["moving_mean", "moving_var"], num_visible_outputs=lambda a: 3 if a["output_mean_var"] else 1,
    infer_shape_backward=data_like_output,
    aliases=["BatchNorm_v1"],  # MXNet's legacy BatchNorm: the same attributes less axis/cudnn_off, same math
    infer_shape=_bn_shape, infer_type=_types("BatchNorm", 3, 2), kernels={"any": _bn_forward}, inplace=[(0, 0)],
    gradient=backward_via("_backward_BatchNorm", lambda a, i, o, g: [g[0], i[0], i[1], o[1], o[2]],
                          lambda a: [True, True, True]),
    doc="Batch normalisation over every axis but `axis`. While training (and not use_global_stats) it "
        "normalises with the batch statistics and updates moving_mean/moving_var in place "
        "(moving = momentum * moving + (1 - momentum) * batch; biased variance). Hidden outputs: "
        "batch mean and inverse std."))
register(OpDef(
    name="_backward_BatchNorm", attrs=_BN_ATTRS, inputs=["out_grad", "data", "gamma", "mean", "var"],
    outputs=["data_grad", "gamma_grad", "beta_grad"],
    infer_shape=lambda a, s: (s, [s[1], s[2], s[2]]), kernels={"any": _bn_backward}, inplace=[(0, 0)],
    doc="Gradients of BatchNorm: through the saved statistics unless use_global_stats (MXNet's rule)."))


# -- LayerNorm ---------------------------------------------------------------------------
_LN_ATTRS = {
    "axis": Attr("int", -1, doc="normalised axis"),
    "eps": Attr("float", 1e-5, doc="added to the variance"),
    "output_mean_var": Attr("bool", False, doc="also return mean and std"),
}


def _ln_shape(attrs, in_shapes):
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None, None, None]
    d = tuple(d)
    ax = data_axis("LayerNorm", attrs["axis"], len(d))
    c = (d[ax],)
    ins = [d] + [merge("LayerNorm", name, s, c) for name, s in zip(("gamma", "beta"), in_shapes[1:])]
    stat = d[:ax] + (1,) + d[ax + 1:]
    return ins, [d, stat, stat]


def _ln_forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x, gamma, beta = inputs
    out, mean_out, std_out = outputs
    ax = attrs["axis"] % x.ndim
    xw = _work(x)
    mean = xw.mean(axis=ax, keepdims=True)
    std = xp.sqrt(xw.var(axis=ax, keepdims=True) + attrs["eps"])
    out[...] = (xw - mean) / std * _param_view(gamma, x.ndim, ax) + _param_view(beta, x.ndim, ax)
    mean_out[...] = mean
    std_out[...] = std


def _ln_backward(ctx, attrs, inputs, outputs, aux):
    dy, x, gamma, mean, std = inputs
    dx, dgamma, dbeta = outputs
    ax = attrs["axis"] % x.ndim
    red = tuple(a for a in range(x.ndim) if a != ax)
    dyw = _work(dy)
    xhat = (_work(x) - mean) / std
    dxhat = dyw * _param_view(gamma, x.ndim, ax)
    # sums accumulate in float64: the parameter gradients add up every other axis (millions of terms
    # in float32 lose ~1e-4 relative; MXNet's test compares them with a float64 reference at 1e-4)
    acc = np.float64 if dyw.dtype.kind == "f" else None
    # parameter gradients first: dx may share out_grad's buffer (inplace option)
    dgamma[...] = (dyw * xhat).sum(axis=red, dtype=acc)
    dbeta[...] = dyw.sum(axis=red, dtype=acc)
    dx[...] = (dxhat - dxhat.mean(axis=ax, keepdims=True, dtype=acc)
               - xhat * (dxhat * xhat).mean(axis=ax, keepdims=True, dtype=acc)) / std


register(OpDef(
    name="LayerNorm", attrs=_LN_ATTRS, inputs=["data", "gamma", "beta"], outputs=["output", "mean", "std"],
    num_visible_outputs=lambda a: 3 if a["output_mean_var"] else 1,
    infer_shape_backward=data_like_output,
    infer_shape=_ln_shape, infer_type=_types("LayerNorm", 3), kernels={"any": _ln_forward}, inplace=[(0, 0)],
    gradient=backward_via("_backward_LayerNorm", lambda a, i, o, g: [g[0], i[0], i[1], o[1], o[2]],
                          lambda a: [True, True, True]),
    doc="Layer normalisation along `axis` with per-element gamma and beta; hidden outputs mean and std."))
register(OpDef(
    name="_backward_LayerNorm", attrs=_LN_ATTRS, inputs=["out_grad", "data", "gamma", "mean", "std"],
    outputs=["data_grad", "gamma_grad", "beta_grad"],
    infer_shape=lambda a, s: (s, [s[1], s[2], s[2]]), kernels={"any": _ln_backward}, inplace=[(0, 0)],
    doc="Gradients of LayerNorm."))
