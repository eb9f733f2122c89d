"""_fused_conv_bn_act: Convolution -> BatchNorm (-> relu Activation) as one node.

The graph pass `fuse_conv_bn` (ember/symbolic/passes.py) builds it in forward-only graphs (an
inference executor, a hybridized Gluon block called outside `autograd.record`), where no
gradient needs the intermediate results.  Hand-written graphs may use it too; it has no gradient.

In inference (not ctx.is_train, or use_global_stats) BatchNorm is a per-channel scale and shift:
the scale is folded into the convolution's weights (or applied to its output where the weights
are the bigger array), the shift (with the convolution's bias) is added while the GEMM's result
is stored, and relu runs in place: one node, one pass over the output after the GEMM instead of
three ops' several.  While training, and for float16 or 3-D data, the node runs the three
registered kernels one after another on its output (the batch statistics and the in-place
update of the moving statistics are BatchNorm's own), so it computes exactly what they do.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError
from . import nn_conv
from ._nn_util import float_type_rule
from .nn_norm import _bn_shape, _types as _norm_types
from .registry import Attr, OpDef, get, register

_BN_KEYS = ("eps", "momentum", "fix_gamma", "use_global_stats")
_FUSED_ATTRS = dict(nn_conv._CONV_ATTRS,
                    eps=Attr("float", 1e-3, doc="BatchNorm's eps"),
                    momentum=Attr("float", 0.9, doc="BatchNorm's momentum"),
                    fix_gamma=Attr("bool", True, doc="BatchNorm's fix_gamma"),
                    use_global_stats=Attr("bool", False, doc="BatchNorm's use_global_stats"),
                    act_type=Attr("str", "none", choices=("none", "relu"),
                                  doc="activation applied after the BatchNorm"))


def conv_part(attrs: dict) -> dict:
    """The Convolution attributes of a fused node's (parsed) attributes."""
    return {k: attrs[k] for k in nn_conv._CONV_ATTRS}


def bn_part(attrs: dict) -> dict:
    """BatchNorm's parsed attributes for a fused node (channel axis 1, no visible statistics)."""
    return dict({k: attrs[k] for k in _BN_KEYS}, axis=1, output_mean_var=False, cudnn_off=False,
                min_calib_range=None, max_calib_range=None)


def _inputs(attrs):
    return nn_conv._inputs(attrs) + ["gamma", "beta"]


def _shape(attrs, in_shapes, aux_shapes):
    k = len(nn_conv._inputs(attrs))
    conv_ins, conv_outs = nn_conv._conv_shape(attrs, list(in_shapes[:k]))
    out = conv_outs[0]
    if out is None:
        return conv_ins + list(in_shapes[k:]), [None], aux_shapes
    bn_ins, _, aux = _bn_shape(bn_part(attrs), [out] + list(in_shapes[k:]), aux_shapes)
    return conv_ins + bn_ins[1:], [out], aux


def _types(attrs, in_dtypes):
    k = len(nn_conv._inputs(attrs))
    conv_ins, conv_outs = float_type_rule("_fused_conv_bn_act")(attrs, list(in_dtypes[:k]))
    d = conv_outs[0]
    bn_ins, _, aux = _norm_types("_fused_conv_bn_act", 3, 2)(attrs, [d] + list(in_dtypes[k:]))
    return conv_ins[:k] + bn_ins[1:], [bn_ins[0]], aux


def _fast(xp, attrs, inputs, out, aux) -> bool:
    """The inference form: True when it applied (2-D/1-D, channel-first, one float dtype)."""
    depth, geo = nn_conv.conv_geometries(attrs)
    dt = out.dtype
    if depth is not None or dt == np.float16 or any(a.dtype != dt for a in list(inputs) + list(aux)):
        return False
    k = len(nn_conv._inputs(attrs))
    x, w = inputs[0], inputs[1]
    gamma, beta = inputs[k], inputs[k + 1]
    moving_mean, moving_var = aux
    scale = 1.0 / xp.sqrt(moving_var + attrs["eps"])
    if not attrs["fix_gamma"]:
        scale *= gamma
    shift = beta - moving_mean * scale
    if not attrs["no_bias"]:
        shift += inputs[2] * scale
    relu = attrs["act_type"] == "relu"
    fold = w.size <= out.size  # scaling the weights costs less than a pass over the output
    w4, out4 = nn_conv._as4d(w), nn_conv._as4d(out)
    if fold:
        w4 = w4 * scale.reshape(-1, 1, 1, 1)
        nn_conv.conv_forward(xp, nn_conv._as4d(x), w4, geo, out4, shift, relu)
    else:
        nn_conv.conv_forward(xp, nn_conv._as4d(x), w4, geo, out4)
        out4 *= scale.reshape(1, -1, 1, 1)
        out4 += shift.reshape(1, -1, 1, 1)
        if relu:
            xp.maximum(out, 0, out=out)
    return True


def _forward(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    xp = ctx.xp
    if attrs["layout"] not in (None, "NCW", "NCHW", "NCDHW"):
        raise OperatorError(f"_fused_conv_bn_act: channel-first layouts only, got {attrs['layout']}")
    batch_stats = ctx.is_train and not attrs["use_global_stats"]
    if batch_stats or not _fast(xp, attrs, inputs, out, aux):
        k = len(nn_conv._inputs(attrs))
        dev = "cpu" if xp is np else "gpu"
        get("Convolution").kernel(dev)(ctx, conv_part(attrs), list(inputs[:k]), [out], [])
        pdt = inputs[k].dtype
        stats = [xp.empty(out.shape[1:2], dtype=pdt), xp.empty(out.shape[1:2], dtype=pdt)]
        # in place on the convolution's output (BatchNorm's kernel is alias-safe: inplace (0, 0))
        get("BatchNorm").kernel(dev)(ctx, bn_part(attrs), [out] + list(inputs[k:k + 2]), [out] + stats, aux)
        if attrs["act_type"] == "relu":
            xp.maximum(out, 0, out=out)


register(OpDef(
    name="_fused_conv_bn_act", attrs=_FUSED_ATTRS, inputs=_inputs, outputs=["output"],
    aux=["moving_mean", "moving_var"], infer_shape=_shape, infer_type=_types,
    kernels={"any": _forward}, expensive=True,
    doc="Convolution, then BatchNorm over channel axis 1, then (act_type='relu') relu, as one node: "
        "in inference the BatchNorm folds into the convolution; while training the batch statistics "
        "are used and the moving statistics updated in place, as BatchNorm does. Built by the graph "
        "pass fuse_conv_bn in forward-only graphs; no gradient."))
