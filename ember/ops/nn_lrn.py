"""LRN: local response normalization across channels (MXNet 1.x), with its hidden tmp_norm output.

tmp_norm = knorm + alpha / nsize * sum of data^2 over the channels c - h .. c + h, h = (nsize - 1) // 2
(clipped at the edges; an even nsize sums nsize - 1 channels, as MXNet 1.9.1 does), output =
data * tmp_norm^-beta.  The gradient reads data and tmp_norm:
d data = g * norm^-beta - 2 alpha beta / nsize * data * window_sum(g * data * norm^(-beta - 1))."""
from __future__ import annotations

from ..base import OperatorError, ShapeError
from ._common import data_like_output, known
from ._nn_util import backward_via, float_type_rule
from .registry import Attr, OpDef, register

_ATTRS = {
    "alpha": Attr("float", 1e-4, doc="scale of the squared sum"),
    "beta": Attr("float", 0.75, doc="exponent"),
    "knorm": Attr("float", 2.0, doc="additive constant"),
    "nsize": Attr("int", doc="window width in channels"),
}


def _infer_shape(attrs, in_shapes):
    if attrs["nsize"] < 1:
        raise OperatorError(f"LRN: nsize must be >= 1, got {attrs['nsize']}")
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None, None]
    if len(d) != 4:
        raise ShapeError(f"LRN: input must be 4-D (N, C, H, W), got {tuple(d)}")
    return in_shapes, [tuple(d), tuple(d)]


def _window_sum(xp, v, half: int):
    """Per channel c: the sum of v over channels [c - half, c + half] that exist."""
    c = v.shape[1]
    csum = xp.cumsum(v, axis=1, dtype=v.dtype)
    zero = xp.zeros_like(v[:, :1])
    csum = xp.concatenate([zero, csum], axis=1)  # csum[:, k] = sum of channels < k
    idx = xp.arange(c)
    hi = xp.minimum(idx + half + 1, c)
    lo = xp.maximum(idx - half, 0)
    return csum[:, hi] - csum[:, lo]


def _forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x = inputs[0]
    norm = outputs[1]
    norm[...] = _window_sum(xp, x * x, (attrs["nsize"] - 1) // 2) * x.dtype.type(attrs["alpha"] / attrs["nsize"])
    norm += x.dtype.type(attrs["knorm"])
    outputs[0][...] = x * norm ** x.dtype.type(-attrs["beta"])


def _backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, x, norm = inputs
    beta = attrs["beta"]
    scaled = norm ** x.dtype.type(-beta)
    inner = _window_sum(xp, g * x * scaled / norm, (attrs["nsize"] - 1) // 2)
    outputs[0][...] = g * scaled - x.dtype.type(2.0 * attrs["alpha"] * beta / attrs["nsize"]) * x * inner


register(OpDef(
    name="LRN", attrs=_ATTRS, inputs=["data"], outputs=["output", "tmp_norm"],
    num_visible_outputs=lambda a: 1, infer_shape=_infer_shape, infer_shape_backward=data_like_output,
    infer_type=float_type_rule("LRN", 2), kernels={"any": _forward},
    gradient=backward_via("_backward_LRN", lambda a, i, o, g: [g[0], i[0], o[1]], lambda a: [True]),
    doc="Local response normalization across channels; hidden output tmp_norm."))
register(OpDef(
    name="_backward_LRN", attrs=_ATTRS, inputs=["out_grad", "data", "tmp_norm"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[1]]), kernels={"any": _backward},
    doc="Gradient of LRN from data and tmp_norm."))
