"""_sparse_retain (MXNet's `mx.nd/sym.sparse.retain`): the rows of `data` listed in `indices`,
every other row zero.

On a row_sparse array the imperative call keeps sparse storage (its sparse kernel,
`ember/imperative/sparse_ops.retain`, stores exactly the listed rows); this dense kernel is what
symbolic executors and the storage fallback run.  The gradient passes out_grad's listed rows back.
"""
from __future__ import annotations

from ..base import IndexRangeError, ShapeError
from ._common import via
from . import stype
from .registry import OpDef, register

_NAME = "_sparse_retain"


def _infer_shape(attrs, in_shapes):
    data, indices = in_shapes
    if indices is not None and len(indices) != 1:
        raise ShapeError(f"{_NAME}: indices must be 1-D, got shape {tuple(indices)}")
    if data is None:
        return in_shapes, [None]
    if len(data) < 1:
        raise ShapeError(f"{_NAME}: data must have at least one dimension, got shape {tuple(data)}")
    return in_shapes, [tuple(data)]


def _keep_rows(xp, src, indices, out) -> None:
    """out = src at the rows listed in `indices`, zero elsewhere."""
    rows = indices.astype(xp.int64)
    n = src.shape[0]
    if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= n):
        raise IndexRangeError(f"{_NAME}: row indices must be in [0, {n}), got {rows.tolist()}")
    out[...] = 0
    out[rows] = src[rows]


def _kernel(ctx, attrs, inputs, outputs, aux):
    _keep_rows(ctx.xp, inputs[0], inputs[1], outputs[0])


def _backward_infer(attrs, in_shapes):
    return in_shapes, [in_shapes[0], in_shapes[1]]


def _backward_kernel(ctx, attrs, inputs, outputs, aux):
    _keep_rows(ctx.xp, inputs[0], inputs[1], outputs[0])
    outputs[1][...] = 0


register(OpDef(
    name="_backward_sparse_retain", inputs=["ograd", "indices"], outputs=["data_grad", "indices_grad"],
    infer_shape=_backward_infer, infer_type=lambda a, d: (d, [d[0], d[1]]), kernels={"any": _backward_kernel},
    doc="Gradient of _sparse_retain: out_grad at the listed rows, zero elsewhere."))

register(OpDef(
    name=_NAME, inputs=["data", "indices"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=lambda a, d: (d, [d[0]]), kernels={"any": _kernel},
    infer_stype=stype.lhs_row_sparse,
    gradient=via("_backward_sparse_retain", lambda ins, outs, og: [og[0], ins[1]], 2),
    doc="The rows of data listed in indices, every other row zero (row_sparse in, row_sparse out)."))
