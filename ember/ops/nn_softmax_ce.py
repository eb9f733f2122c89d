"""_softmax_ce_per_sample: Gluon's SoftmaxCrossEntropyLoss on (batch, classes) scores as one node.

`gluon.loss.SoftmaxCrossEntropyLoss` is written as log_softmax -> pick -> negative -> mean, four
imperative ops forward and four backward, each a dispatch and a taped node for a (batch, classes)
array that takes microseconds to compute.  Called imperatively in its common form (class indices,
scores not yet normalised, no weights, classes on axis 1 of 2-D scores) the loss calls this op
instead: one node forward, one backward.  It runs the registered log_softmax and pick kernels
(looked up at each call, so `ember.ops.override` of either applies here too) and the backward
runs pick's and log_softmax's gradient kernels, so its numbers are those of the four ops, bit for
bit.  On float32 CPU arrays, while neither kernel is overridden, one native pass per row does the same
(native.softmax_ce_rows_f32: the row code of the log_softmax kernel, then the pick).  The
log-probabilities are a hidden second output the backward reads.  Traced graphs keep the four ops
(files exported for MXNet name only MXNet's operators).
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from ..engine import native
from ._nn_util import backward_via
from .registry import OpDef, get, register

_LAST_AXIS = {"axis": -1, "temperature": None, "dtype": None, "use_length": False}
_PICK_CLIP = {"axis": -1, "keepdims": False, "mode": "clip"}


def _infer_shape(attrs, in_shapes):
    x, label = in_shapes
    if x is None:
        return in_shapes, [None, None]
    if len(x) != 2:
        raise ShapeError(f"_softmax_ce_per_sample: scores must be 2-D (batch, classes), got {tuple(x)}")
    if label is not None and tuple(label) not in ((x[0],), (x[0], 1)):
        raise ShapeError(f"_softmax_ce_per_sample: label has shape {tuple(label)} but scores {tuple(x)} "
                         f"need ({x[0]},) or ({x[0]}, 1)")
    return [x, label if label is not None else (x[0],)], [(x[0],), tuple(x)]


def _infer_type(attrs, in_dtypes):
    x, label = in_dtypes
    return [x, label if label is not None else x], [x, x]


def _device(xp) -> str:
    return "cpu" if xp is np else "gpu"


def _registered(*names: str) -> tuple:
    """The CPU kernels of `names` as registered now (override() replaces them)."""
    return tuple(get(n).kernel("cpu") for n in names)


_FORWARD_OPS, _BACKWARD_OPS = ("log_softmax", "pick"), ("_backward_log_softmax", "_backward_pick")
_NATIVE_FORWARD, _NATIVE_BACKWARD = _registered(*_FORWARD_OPS), _registered(*_BACKWARD_OPS)


def _native_fits(xp, ops: tuple, kernels: tuple, *arrays) -> bool:
    """Whether the native row kernels may run: numpy float32 arrays, the registered kernels unchanged."""
    return xp is np and all(a.dtype == np.float32 for a in arrays) and _registered(*ops) == kernels


def _forward(ctx, attrs, inputs, outputs, aux):
    x, label = inputs
    loss, logp = outputs
    if _native_fits(ctx.xp, _FORWARD_OPS, _NATIVE_FORWARD, x, label) \
            and native.softmax_ce_rows_f32(x, label, logp, loss):
        return
    dev = _device(ctx.xp)
    get("log_softmax").kernel(dev)(ctx, _LAST_AXIS, [x], [logp], [])
    get("pick").kernel(dev)(ctx, _PICK_CLIP, [logp, label.reshape(-1)], [loss], [])
    ctx.xp.negative(loss, out=loss)


def _backward(ctx, attrs, inputs, outputs, aux):
    g, logp, label = inputs
    dx = outputs[0]
    xp = ctx.xp
    if _native_fits(xp, _BACKWARD_OPS, _NATIVE_BACKWARD, g, logp, label) \
            and native.softmax_ce_rows_backward_f32(g, logp, label, dx):
        return
    dev = _device(xp)
    # the four ops' chain: mean's gradient is g itself (one element per sample), negative's -g,
    # pick's scatters it into zeros at each label, log_softmax's runs in place on that
    get("_backward_pick").kernel(dev)(ctx, _PICK_CLIP, [xp.negative(g), logp, label.reshape(-1)], [dx], [])
    get("_backward_log_softmax").kernel(dev)(ctx, _LAST_AXIS, [dx, logp], [dx], [])


register(OpDef(
    name="_softmax_ce_per_sample", inputs=["data", "label"], outputs=["loss", "log_prob"],
    num_visible_outputs=lambda a: 1, infer_shape=_infer_shape, infer_type=_infer_type,
    kernels={"any": _forward},
    gradient=backward_via("_backward_softmax_ce_per_sample", lambda a, i, o, g: [g[0], o[1], i[1]],
                          lambda a: [True, False]),
    doc="Per-sample softmax cross-entropy of (batch, classes) scores against class indices: "
        "-log_softmax(data)[i, label[i]] (indices clipped to the classes, as pick's); the "
        "log-probabilities are a hidden second output."))

register(OpDef(
    name="_backward_softmax_ce_per_sample", inputs=["out_grad", "log_prob", "label"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[1]]), kernels={"any": _backward},
    doc="Gradient of _softmax_ce_per_sample w.r.t. its scores."))
