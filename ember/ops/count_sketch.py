"""_contrib_count_sketch (MXNet 1.x contrib; GPU-only in MXNet 1.9.1, here on every device).

out[n, h[i]] += s[i] * data[n, i] for the rows n of data flattened to (rows, in_dim) ((N, in_dim) or
(N1, N2, N3, in_dim)); h (1, in_dim) holds output positions in [0, out_dim), s (1, in_dim) signs (any
values).  The data gradient is s[i] * out_grad[n, h[i]]; h and s get zero gradients (MXNet computes only
the data's).  `processing_batch_size` (MXNet's CUDA batching) is accepted and checked, not needed."""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from ._nn_util import float_type_rule, scatter_add
from .registry import Attr, OpDef, register

_OP = "_contrib_count_sketch"
_ATTRS = {
    "out_dim": Attr("int", doc="the sketch's length"),
    "processing_batch_size": Attr("int", 32, doc="rows per CUDA batch in MXNet (accepted, not needed)"),
}


def _infer_shape(attrs, in_shapes):
    d, h, s = in_shapes
    if attrs["out_dim"] <= 0 or attrs["processing_batch_size"] <= 0:
        raise OperatorError(f"{_OP}: out_dim and processing_batch_size must be positive, got "
                            f"{attrs['out_dim']} and {attrs['processing_batch_size']}")
    if d is not None and len(d) not in (2, 4):
        raise ShapeError(f"{_OP}: data must be 2-D (N, in_dim) or 4-D (N1, N2, N3, in_dim), got {tuple(d)}")
    n_in = None if d is None else d[-1]
    for name, v in (("h", h), ("s", s)):
        if v is not None and (len(v) != 2 or v[0] not in (1, None) or
                              (None not in (v[1], n_in) and v[1] != n_in)):
            raise ShapeError(f"{_OP}: {name} must be (1, {n_in if n_in is not None else 'in_dim'}) for data "
                             f"{None if d is None else tuple(d)}, got {tuple(v)}")
    if d is None or n_in is None:
        return in_shapes, [None]
    return [tuple(d), (1, n_in), (1, n_in)], [tuple(d[:-1]) + (attrs["out_dim"],)]


def _positions(xp, h, out_dim: int):
    pos = h.reshape(-1)
    idx = pos.astype(np.int64)
    bad = (idx != pos) | (idx < 0) | (idx >= out_dim)
    if bad.any():
        at = int(xp.argmax(bad))
        raise OperatorError(f"{_OP}: h[{at}] = {float(pos[at]):g} is not an output position in [0, {out_dim})")
    return idx


def _forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    data, h, s = inputs
    rows = data.reshape(-1, data.shape[-1])
    idx = _positions(xp, h, attrs["out_dim"])
    out = xp.zeros((rows.shape[0], attrs["out_dim"]), dtype=data.dtype)
    scatter_add(xp, out, (slice(None), idx), rows * s.reshape(1, -1))
    outputs[0][...] = out.reshape(outputs[0].shape)


def _backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, data, h, s = inputs
    idx = _positions(xp, h, attrs["out_dim"])
    grows = g.reshape(-1, attrs["out_dim"])
    outputs[0][...] = (grows[:, idx] * s.reshape(1, -1)).reshape(data.shape)
    outputs[1][...] = 0
    outputs[2][...] = 0


register(OpDef(
    name="_backward" + _OP, attrs=_ATTRS, inputs=["out_grad", "data", "h", "s"],
    outputs=["data_grad", "h_grad", "s_grad"], shape_only_inputs=(1,),
    infer_shape=lambda a, sh: (sh, [sh[1], sh[2], sh[3]]), infer_type=float_type_rule(_OP, 3),
    kernels={"any": _backward},
    doc="Gradient of count_sketch: s[i] * out_grad[n, h[i]] for the data; zeros for h and s."))
register(OpDef(
    name=_OP, attrs=_ATTRS, inputs=["data", "h", "s"], outputs=["output"], infer_shape=_infer_shape,
    infer_type=float_type_rule(_OP), kernels={"any": _forward},
    gradient=lambda F, a, i, o, g: list(getattr(F, "_backward" + _OP)(g[0], i[0], i[1], i[2], **a)),
    doc="Count sketch of the rows of data: out[n, h[i]] += s[i] * data[n, i] (MXNet's GPU-only op, on any "
        "device)."))
