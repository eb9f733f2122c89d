"""Dropout: random masking from the op's RNG resource, with the mask kept as a hidden output."""
from __future__ import annotations

import numpy as np

from ..base import OperatorError
from ._nn_util import backward_via, float_type_rule, known
from .registry import Attr, OpDef, register
from ._common import data_like_output

_ATTRS = {
    "p": Attr("float", 0.5, doc="fraction of the input dropped"),
    "mode": Attr("str", "training", choices=("always", "training"),
                 doc="training: only while training; always: in inference too"),
    "axes": Attr("shape", (), doc="axes along which one mask value is shared"),
    "cudnn_off": Attr("any", False, doc="accepted for MXNet compatibility; no effect"),
}


def _check(attrs, ndim=None):
    p = attrs["p"]
    if not 0.0 <= p <= 1.0:
        raise OperatorError(f"Dropout: p must be in [0, 1], got {p}")
    if ndim is not None:
        for a in attrs["axes"]:
            if not -ndim <= a < ndim:
                raise OperatorError(f"Dropout: axis {a} in 'axes' is out of range for {ndim}-D data")


def _infer_shape(attrs, in_shapes):
    _check(attrs)
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None, None]
    _check(attrs, len(d))
    return in_shapes, [tuple(d), tuple(d)]


def _forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x = inputs[0]
    out, mask = outputs
    p = attrs["p"]
    active = (ctx.is_train or attrs["mode"] == "always") and p > 0
    if not active:
        mask[...] = 1
        if out is not x:
            out[...] = x
        return
    if ctx.rng is None:
        raise OperatorError("Dropout: the 'rng' resource was not provided")
    shape = list(x.shape)
    for a in attrs["axes"]:
        shape[a % x.ndim] = 1
    if p >= 1.0:
        # MXNet's mask is keep * (1 / (1 - p)) = 0 * inf: NaN, so output and gradient are NaN
        mask[...] = np.nan
    else:
        keep = ctx.rng.random(tuple(shape), dtype=np.float32) >= np.float32(p)
        mask[...] = xp.asarray(keep, dtype=mask.dtype) * mask.dtype.type(1.0 / (1.0 - p))
    xp.multiply(x, mask, out=out)


def _backward(ctx, attrs, inputs, outputs, aux):
    dy, mask = inputs
    ctx.xp.multiply(dy, mask, out=outputs[0])


register(OpDef(
    name="Dropout", attrs=_ATTRS, inputs=["data"], outputs=["output", "mask"],
    num_visible_outputs=lambda a: 1,
    infer_shape_backward=data_like_output,
    infer_shape=_infer_shape, infer_type=float_type_rule("Dropout", 2),
    kernels={"any": _forward}, resources=("rng",), inplace=[(0, 0)],
    gradient=backward_via("_backward_Dropout", lambda a, i, o, g: [g[0], o[1]], lambda a: [True]),
    doc="Zeroes each element with probability p and scales the rest by 1/(1-p) while training "
        "(or always with mode='always'); identity otherwise. The scaled mask is a hidden second output."))

register(OpDef(
    name="_backward_Dropout", attrs=_ATTRS, inputs=["out_grad", "mask"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[0]]), kernels={"any": _backward}, inplace=[(0, 0)],
    # linear in out_grad; the mask is a constant of the forward's draw (second order: zero through it)
    gradient=lambda F, attrs, inputs, outputs, out_grads: [out_grads[0] * inputs[1], None],
    doc="Gradient of Dropout: out_grad times the saved mask."))
