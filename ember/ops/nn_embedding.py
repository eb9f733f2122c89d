"""Embedding: row lookup in a (input_dim, output_dim) weight table."""
from __future__ import annotations

import numpy as np

from ..base import OperatorError
from ._nn_util import backward_via, known, merge, scatter_add
from .registry import Attr, OpDef, as_dtype, register

_ATTRS = {
    "input_dim": Attr("int", doc="vocabulary size (rows of weight)"),
    "output_dim": Attr("int", doc="embedding size (columns of weight)"),
    "dtype": Attr("dtype", np.dtype(np.float32), doc="dtype of weight and output"),
    "sparse_grad": Attr("bool", False, doc="imperative gradient w.r.t. weight is row_sparse: the rows indexed"),
}


def _check(attrs):
    for key in ("input_dim", "output_dim"):
        if attrs[key] <= 0:
            raise OperatorError(f"Embedding: {key} must be > 0, got {attrs[key]}")


def _infer_shape(attrs, in_shapes):
    _check(attrs)
    d, w = in_shapes
    w = merge("Embedding", "weight", w, (attrs["input_dim"], attrs["output_dim"]))
    if not known(d) and not (d is not None and len(d) == 0):
        return [d, w], [None]
    return [tuple(d), w], [tuple(d) + (attrs["output_dim"],)]


def _infer_type(attrs, in_dtypes):
    dt = as_dtype(attrs["dtype"])
    d, w = in_dtypes
    if w is not None and np.dtype(w) != dt:
        raise OperatorError(f"Embedding: weight dtype {np.dtype(w).name} differs from dtype={dt.name}")
    return [d if d is not None else dt, dt], [dt]


def _indices(xp, data, input_dim):
    # MXNet clips out-of-range indices to the table instead of failing
    return xp.clip(data.astype(np.int64), 0, input_dim - 1)


def _forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    data, weight = inputs
    idx = _indices(xp, data, attrs["input_dim"])
    outputs[0][...] = xp.take(weight, idx, axis=0)


def _backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    dy, data = inputs
    dw = outputs[0]
    dw[...] = 0
    idx = _indices(xp, data, attrs["input_dim"]).reshape(-1)
    scatter_add(xp, dw, idx, dy.reshape(-1, attrs["output_dim"]).astype(dw.dtype, copy=False))


_dense_gradient = backward_via("_backward_Embedding", lambda a, i, o, g: [g[0], i[0]], lambda a: [False, True])


def _gradient(F, attrs, inputs, outputs, out_grads):
    """The weight's gradient; with sparse_grad (imperatively) a row_sparse array storing exactly the
    rows the data indexes, zero-valued ones included, as MXNet's sparse Embedding backward."""
    grads = _dense_gradient(F, attrs, inputs, outputs, out_grads)
    data = inputs[0]
    if attrs["sparse_grad"] and hasattr(data, "asnumpy") and grads[1] is not None:
        rows = np.unique(_indices(np, data.asnumpy(), attrs["input_dim"]))
        weight_grad = F.cast_storage(grads[1], stype="row_sparse")
        grads[1] = F.sparse.retain(weight_grad, F.array(rows, ctx=data.context, dtype=np.int64))
    return grads


register(OpDef(
    name="Embedding", attrs=_ATTRS, inputs=["data", "weight"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=_infer_type, kernels={"any": _forward}, expensive=True,
    gradient=_gradient,
    doc="Maps integer indices (any shape) to rows of weight: output shape data.shape + (output_dim,)."))

register(OpDef(
    name="_backward_Embedding", attrs=_ATTRS, inputs=["out_grad", "data"], outputs=["weight_grad"],
    infer_shape=lambda a, s: (s, [(a["input_dim"], a["output_dim"])]),
    infer_type=lambda a, d: (d, [as_dtype(a["dtype"])]),
    # MXNet's EmbeddingOpBackwardStorageType: with sparse_grad the weight's gradient is row_sparse
    infer_stype=lambda a, s: ["row_sparse" if a["sparse_grad"] else "default"],
    kernels={"any": _backward}, doc="Gradient of Embedding w.r.t. weight (scatter-add of out_grad rows)."))


def _sparse_embedding_gradient(F, attrs, inputs, outputs, out_grads):
    """Embedding's gradient, always row_sparse imperatively (sparse_grad is ignored, as MXNet's)."""
    plain = {k: v for k, v in attrs.items() if k != "deterministic"}
    return _gradient(F, {**plain, "sparse_grad": True}, inputs, outputs, out_grads)


_SPARSE_ATTRS = dict(_ATTRS, deterministic=Attr(
    "bool", False, doc="MXNet: a deterministic order for the gradient's sums (ember's always is)"))

register(OpDef(
    name="_contrib_SparseEmbedding", attrs=_SPARSE_ATTRS, inputs=["data", "weight"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=_infer_type, kernels={"any": _forward}, expensive=True,
    gradient=_sparse_embedding_gradient,
    doc="MXNet's deprecated contrib.SparseEmbedding: Embedding whose weight gradient is row_sparse "
        "(the rows the data indexes)."))
