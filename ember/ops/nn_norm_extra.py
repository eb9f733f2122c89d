"""InstanceNorm, GroupNorm and the BatchNorm variants Gluon layers call (MXNet 1.9.1 names).

InstanceNorm and GroupNorm share one kernel: the data is viewed as (N, G, M) — G groups of
M values per sample — normalised per (sample, group) and scaled/shifted per group
(InstanceNorm: G = channels; GroupNorm 1.9.1: gamma/beta hold one value per group).
`_contrib_SyncBatchNorm` (one device: plain batch norm over axis 1) and
`_contrib_BatchNormWithReLU` run BatchNorm's registered kernels, so an override of
BatchNorm reaches them too.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from .nn_norm import _work  # float16 data normalised in float32 (importing nn_norm registers BatchNorm too)
from ._common import data_like_output
from ._nn_util import backward_via, float_types, known, merge
from .registry import Attr, OpDef, get, register


def _norm_types(op, n_out):
    def infer(attrs, in_dtypes):  # every input and output takes the one (float) dtype
        outs = float_types(op, attrs, in_dtypes, n_out, what="data")[1]
        return [outs[0]] * len(in_dtypes), outs
    return infer


def _grouped(x, groups):
    """x (N, C, ...) viewed as (N, G, M)."""
    return x.reshape(x.shape[0], groups, -1)


def _group_forward(xp, x, gamma, beta, groups, eps, out):
    """Normalise x per (sample, group); returns (mean, var) shaped (N, G)."""
    xg = _grouped(_work(x), groups)
    mean = xg.mean(axis=2)
    var = xg.var(axis=2)
    invstd = 1.0 / xp.sqrt(var + eps)
    xhat = (xg - mean[:, :, None]) * invstd[:, :, None]
    y = xhat * gamma.reshape(1, -1, 1) + beta.reshape(1, -1, 1)
    out[...] = y.reshape(x.shape)
    return mean, var


def _group_backward(x, dy, gamma, mean, invstd, groups, dx, dgamma, dbeta):
    """Gradients of the grouped normalisation given the saved mean and inverse std (N, G)."""
    xg = _grouped(_work(x), groups)
    dyg = _grouped(_work(dy), groups)
    xhat = (xg - mean[:, :, None]) * invstd[:, :, None]
    # parameter gradients first: dx may share out_grad's storage
    dgamma[...] = (dyg * xhat).sum(axis=(0, 2))
    dbeta[...] = dyg.sum(axis=(0, 2))
    dxhat = dyg * gamma.reshape(1, -1, 1)
    res = (dxhat - dxhat.mean(axis=2, keepdims=True)
           - xhat * (dxhat * xhat).mean(axis=2, keepdims=True)) * invstd[:, :, None]
    dx[...] = res.reshape(x.shape)


# -- InstanceNorm ---------------------------------------------------------------------------
_IN_ATTRS = {"eps": Attr("float", 1e-3, doc="added to the variance")}


def _in_shape(attrs, in_shapes):
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None, None, None]
    d = tuple(d)
    if len(d) < 3:
        raise ShapeError(f"InstanceNorm: only supports input tensors of rank >= 3, got shape {d}")
    c = (d[1],)
    ins = [d] + [merge("InstanceNorm", name, s, c) for name, s in zip(("gamma", "beta"), in_shapes[1:])]
    return ins, [d, d[:2], d[:2]]


def _in_forward(ctx, attrs, inputs, outputs, aux):
    x, gamma, beta = inputs
    out, mean_out, var_out = outputs
    mean, var = _group_forward(ctx.xp, x, gamma, beta, x.shape[1], attrs["eps"], out)
    mean_out[...] = mean
    var_out[...] = var


def _in_backward(ctx, attrs, inputs, outputs, aux):
    dy, x, gamma, mean, var = inputs
    invstd = 1.0 / ctx.xp.sqrt(var + attrs["eps"])
    _group_backward(x, dy, gamma, mean, invstd, x.shape[1], *outputs)


register(OpDef(
    name="InstanceNorm", attrs=_IN_ATTRS, inputs=["data", "gamma", "beta"], outputs=["output", "mean", "var"],
    num_visible_outputs=lambda a: 1, infer_shape=_in_shape, infer_shape_backward=data_like_output,
    infer_type=_norm_types("InstanceNorm", 3),
    kernels={"any": _in_forward}, inplace=[(0, 0)],
    gradient=backward_via("_backward_InstanceNorm", lambda a, i, o, g: [g[0], i[0], i[1], o[1], o[2]],
                          lambda a: [True, True, True]),
    doc="Instance normalisation: each (sample, channel) normalised over its spatial axes, then scaled "
        "by gamma and shifted by beta per channel. Hidden outputs: mean and variance (N, C)."))
register(OpDef(
    name="_backward_InstanceNorm", attrs=_IN_ATTRS, inputs=["out_grad", "data", "gamma", "mean", "var"],
    outputs=["data_grad", "gamma_grad", "beta_grad"], infer_shape=lambda a, s: (s, [s[1], s[2], s[2]]),
    kernels={"any": _in_backward}, inplace=[(0, 0)], doc="Gradients of InstanceNorm."))


# -- GroupNorm ------------------------------------------------------------------------------
_GN_ATTRS = {
    "num_groups": Attr("int", 1, doc="number of channel groups"),
    "eps": Attr("float", 1e-5, doc="added to the variance"),
    "output_mean_var": Attr("bool", False, doc="also return the mean and std (N, num_groups)"),
}


def _gn_shape(attrs, in_shapes):
    g = attrs["num_groups"]
    if g <= 0:
        raise OperatorError(f"GroupNorm: num_groups must be > 0, got {g}")
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None, None, None]
    d = tuple(d)
    if len(d) < 3:
        raise ShapeError(f"GroupNorm: data must have at least 3 dimensions (N, C, ...), got shape {d}")
    if d[1] % g:
        raise ShapeError(f"GroupNorm: the number of channels ({d[1]}) must be divisible by num_groups ({g})")
    ins = [d] + [merge("GroupNorm", name, s, (g,)) for name, s in zip(("gamma", "beta"), in_shapes[1:])]
    return ins, [d, (d[0], g), (d[0], g)]


def _gn_forward(ctx, attrs, inputs, outputs, aux):
    x, gamma, beta = inputs
    out, mean_out, std_out = outputs
    mean, var = _group_forward(ctx.xp, x, gamma, beta, attrs["num_groups"], attrs["eps"], out)
    mean_out[...] = mean
    std_out[...] = ctx.xp.sqrt(var + attrs["eps"])


def _gn_backward(ctx, attrs, inputs, outputs, aux):
    dy, x, gamma, mean, std = inputs
    _group_backward(x, dy, gamma, mean, 1.0 / std, attrs["num_groups"], *outputs)


register(OpDef(
    name="GroupNorm", attrs=_GN_ATTRS, inputs=["data", "gamma", "beta"], outputs=["output", "mean", "std"],
    num_visible_outputs=lambda a: 3 if a["output_mean_var"] else 1, infer_shape=_gn_shape,
    infer_shape_backward=data_like_output,
    infer_type=_norm_types("GroupNorm", 3), kernels={"any": _gn_forward}, inplace=[(0, 0)],
    gradient=backward_via("_backward_GroupNorm", lambda a, i, o, g: [g[0], i[0], i[1], o[1], o[2]],
                          lambda a: [True, True, True]),
    doc="Group normalisation: channels split into num_groups groups, each (sample, group) normalised; "
        "gamma and beta hold one value per group (MXNet 1.9.1). Hidden outputs: mean and std."))
register(OpDef(
    name="_backward_GroupNorm", attrs=_GN_ATTRS, inputs=["out_grad", "data", "gamma", "mean", "std"],
    outputs=["data_grad", "gamma_grad", "beta_grad"], infer_shape=lambda a, s: (s, [s[1], s[2], s[2]]),
    kernels={"any": _gn_backward}, inplace=[(0, 0)], doc="Gradients of GroupNorm."))


# -- BatchNorm variants -----------------------------------------------------------------------
_BN = get("BatchNorm")
_BN_KEYS = ("eps", "momentum", "fix_gamma", "use_global_stats", "output_mean_var")
_SYNC_ATTRS = dict({k: _BN.attrs[k] for k in _BN_KEYS},
                   ndev=Attr("int", 1, doc="number of devices sharing the batch statistics"),
                   key=Attr("str", doc="name shared by the layer's copies on every device"))


def _as_batchnorm(attrs):
    """The BatchNorm attributes a variant's attributes stand for (SyncBatchNorm normalises axis 1)."""
    return _BN.parse_attrs({k: attrs[k] for k in _BN.attrs if k in attrs})


def _bn_kernel(ctx, attrs, inputs, outputs, aux):
    _BN.kernel("cpu" if ctx.xp is np else "gpu")(ctx, _as_batchnorm(attrs), inputs, outputs, aux)


def _sync_forward(ctx, attrs, inputs, outputs, aux):
    if attrs["ndev"] != 1:
        raise OperatorError(f"_contrib_SyncBatchNorm: ndev={attrs['ndev']} needs a multi-device run; "
                            "ember runs SyncBatchNorm on one device only (ndev=1)")
    _bn_kernel(ctx, attrs, inputs, outputs, aux)
    # MXNet's SyncBatchNorm reports the variance where BatchNorm reports the inverse std
    var = outputs[2]
    var[...] = 1.0 / (var * var) - var.dtype.type(attrs["eps"])


def _bn_gradient(relu: bool, var_output: bool = False):
    def gradient(F, attrs, inputs, outputs, out_grads):
        dy = out_grads[0]
        if relu:  # through the ReLU first: zero where the output was clipped
            dy = F._backward_relu(dy, outputs[0])
        inv_std = F.rsqrt(F._plus_scalar(outputs[2], scalar=attrs["eps"])) if var_output else outputs[2]
        res = F._backward_BatchNorm(dy, inputs[0], inputs[1], outputs[1], inv_std, **_as_batchnorm(attrs))
        return [res[0], res[1], res[2]]
    gradient.__doc__ = "Gradient through _backward_BatchNorm" + (" after the ReLU mask." if relu else ".")
    return gradient


def _bn_infer_shape(attrs, in_shapes, aux_shapes):
    return _BN.infer_shape(_as_batchnorm(attrs), in_shapes, aux_shapes)


def _bn_infer_type(attrs, in_dtypes):
    return _BN.infer_type(_as_batchnorm(attrs), in_dtypes)


register(OpDef(
    name="_contrib_SyncBatchNorm", attrs=_SYNC_ATTRS,
    inputs=["data", "gamma", "beta"], outputs=["output", "mean", "var"], aux=["moving_mean", "moving_var"],
    num_visible_outputs=lambda a: 3 if a["output_mean_var"] else 1, infer_shape=_bn_infer_shape,
    infer_shape_backward=data_like_output,
    infer_type=_bn_infer_type, kernels={"any": _sync_forward}, gradient=_bn_gradient(False, var_output=True),
    doc="Synchronized batch norm over axis 1; on one device (ndev=1) it is BatchNorm, except that the hidden "
        "output var is the variance (BatchNorm's is the inverse std), as MXNet."))


def _bn_relu_forward(ctx, attrs, inputs, outputs, aux):
    _bn_kernel(ctx, attrs, inputs, outputs, aux)
    ctx.xp.maximum(outputs[0], 0, out=outputs[0])


register(OpDef(
    name="_contrib_BatchNormWithReLU", attrs=dict(_BN.attrs), inputs=["data", "gamma", "beta"],
    outputs=["output", "mean", "var"], aux=["moving_mean", "moving_var"],
    num_visible_outputs=lambda a: 3 if a["output_mean_var"] else 1, infer_shape=_bn_infer_shape,
    infer_shape_backward=data_like_output,
    infer_type=_bn_infer_type, kernels={"any": _bn_relu_forward}, gradient=_bn_gradient(True),
    doc="BatchNorm followed by ReLU (same attributes, aux states and hidden outputs as BatchNorm)."))
