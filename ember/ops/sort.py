"""Ordering ops: topk, sort, argsort, cumsum.

Index outputs use `dtype` (float32 by default, as MXNet).  topk with ret_typ='value' and
sort keep the positions of the values they return as a hidden second output, which
their gradients use to route ograd back (MXNet does the same).
"""
from __future__ import annotations

from math import prod

import numpy as np

from ..base import ShapeError
from ._common import no_gradient, norm_axis, with_backward
from .registry import Attr, OpDef, register

_RET_TYPES = ("value", "indices", "mask", "both")


def _axis(op, attrs, ndim):
    return None if attrs["axis"] is None else norm_axis(op, attrs["axis"], ndim)


def _order(xp, x, axis, ascend):
    """Indices sorting x along axis (stable; descending keeps the first of equal values first)."""
    if ascend:
        return xp.argsort(x, axis=axis, kind="stable")
    flipped = xp.argsort(xp.flip(x, axis=axis), axis=axis, kind="stable")
    n = x.shape[axis]
    return xp.flip(n - 1 - flipped, axis=axis)


def _first_k(xp, x, axis, ascend, k):
    """The first k indices of _order(x): a partition then a sort of the k candidates when k is small
    (a top-5 of 300k values need not sort them all), the full sort when a tie or NaN sits at the
    boundary (the partition would not pick the first of equal values) or k is most of the axis."""
    n = x.shape[axis]
    if k * 8 >= n or x.dtype.kind not in "fiu" or (x.dtype.kind == "f" and bool(xp.isnan(x).any())):
        return xp.take(_order(xp, x, axis, ascend), xp.arange(k), axis=axis)
    key = x if ascend else -x if x.dtype.kind == "f" else None
    if key is None:  # integers: negating could overflow, pick the largest from the flipped ordering
        key = xp.iinfo(x.dtype).max - x if x.dtype.kind == "u" else -(x.astype(np.int64))
    part = xp.argpartition(key, k - 1, axis=axis)
    cand = xp.sort(xp.take(part, xp.arange(k), axis=axis), axis=axis)  # index order: equal values stay stable
    cand_keys = xp.take_along_axis(key, cand, axis=axis)
    kth = xp.max(cand_keys, axis=axis, keepdims=True)
    if bool(((key == kth).sum(axis=axis) != (cand_keys == kth).sum(axis=axis)).any()):
        return xp.take(_order(xp, x, axis, ascend), xp.arange(k), axis=axis)
    order = xp.argsort(cand_keys, axis=axis, kind="stable")
    return xp.take_along_axis(cand, order, axis=axis)


# -- topk ------------------------------------------------------------------------------------
_TOPK_ATTRS = {"axis": Attr("int_or_none", -1), "k": Attr("int", 1),
               "ret_typ": Attr("str", "indices", choices=_RET_TYPES), "is_ascend": Attr("bool", False),
               "dtype": Attr("dtype", np.dtype(np.float32))}


def _topk_outputs(attrs):
    return ["output", "indices"] if attrs["ret_typ"] in ("value", "both") else ["output"]


def _topk_k(attrs, n):
    k = attrs["k"]
    k = n if k <= 0 else k  # MXNet: k < 1 means the whole axis
    if k > n:
        raise ShapeError(f"topk: k={attrs['k']} is larger than the axis length {n}")
    return k


def _topk_infer(attrs, in_shapes):
    x = in_shapes[0]
    n_out = len(_topk_outputs(attrs))
    if x is None:
        return in_shapes, [None] * n_out
    ax = _axis("topk", attrs, len(x))
    if ax is None:
        part = (_topk_k(attrs, prod(x)),)
    else:
        part = tuple(_topk_k(attrs, x[ax]) if i == ax else d for i, d in enumerate(x))
    if attrs["ret_typ"] == "mask":
        return in_shapes, [tuple(x)]
    return in_shapes, [part] * n_out


def _topk_type(attrs, in_dtypes):
    ret = attrs["ret_typ"]
    if ret == "value":
        return list(in_dtypes), [in_dtypes[0], attrs["dtype"]]
    if ret == "both":
        return list(in_dtypes), [in_dtypes[0], attrs["dtype"]]
    if ret == "mask":
        return list(in_dtypes), [in_dtypes[0]]
    return list(in_dtypes), [attrs["dtype"]]


def _topk(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x = inputs[0]
    ax = _axis("topk", attrs, x.ndim)
    data = x.reshape(-1) if ax is None else x
    axis = 0 if ax is None else ax
    k = _topk_k(attrs, data.shape[axis])
    idx = _first_k(xp, data, axis, attrs["is_ascend"], k)
    ret = attrs["ret_typ"]
    if ret == "mask":
        mask = xp.zeros(data.shape, dtype=x.dtype)
        xp.put_along_axis(mask, idx, 1, axis=axis)
        outputs[0][...] = mask.reshape(x.shape)
    elif ret == "indices":
        outputs[0][...] = idx
    else:
        outputs[0][...] = xp.take_along_axis(data, idx, axis=axis)
        outputs[1][...] = idx


def _scatter_back(op):
    def kernel(ctx, attrs, inputs, outputs, aux):
        g, x, idx = inputs
        xp = ctx.xp
        ax = _axis(op, attrs, x.ndim)
        res = xp.zeros((x.size,) if ax is None else x.shape, dtype=outputs[0].dtype)
        xp.put_along_axis(res, idx.astype(np.int64), g, axis=0 if ax is None else ax)
        outputs[0][...] = res.reshape(x.shape)
    return kernel


register(OpDef(name="_backward_topk", attrs=_TOPK_ATTRS, inputs=["ograd", "data", "indices"],
               outputs=["data_grad"], infer_shape=lambda a, s: (s, [s[1]]),
               infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _scatter_back("_backward_topk")},
               doc="Gradient of topk: ograd placed at the positions of the top values."))


def _topk_grad(F, attrs, inputs, outputs, out_grads):
    if attrs["ret_typ"] in ("indices", "mask"):
        return [F.zeros_like(inputs[0])]
    return [F._backward_topk(out_grads[0], inputs[0], outputs[1], **attrs)]


register(OpDef(name="topk", attrs=_TOPK_ATTRS, outputs=_topk_outputs, infer_shape=_topk_infer,
               infer_type=_topk_type, kernels={"any": _topk}, gradient=_topk_grad,
               num_visible_outputs=lambda a: 2 if a["ret_typ"] == "both" else 1,
               doc="The k largest (smallest with is_ascend) entries along `axis`: values, indices, "
                   "a 0/1 mask, or both values and indices."))


# -- sort / argsort --------------------------------------------------------------------------
_SORT_ATTRS = {"axis": Attr("int_or_none", -1), "is_ascend": Attr("bool", True)}


def _sort_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None, None]
    ax = _axis("sort", attrs, len(x))
    out = tuple(x) if ax is not None else (int(np.prod(x)),)
    return in_shapes, [out, out]


def _sort(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x = inputs[0]
    ax = _axis("sort", attrs, x.ndim)
    data = x.reshape(-1) if ax is None else x
    axis = 0 if ax is None else ax
    idx = _order(xp, data, axis, attrs["is_ascend"])
    outputs[0][...] = xp.take_along_axis(data, idx, axis=axis)
    outputs[1][...] = idx


register(OpDef(name="_backward_sort", attrs=_SORT_ATTRS, inputs=["ograd", "data", "indices"],
               outputs=["data_grad"], infer_shape=lambda a, s: (s, [s[1]]),
               infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _scatter_back("_backward_sort")},
               doc="Gradient of sort: ograd moved back to the unsorted positions."))
register(OpDef(name="sort", attrs=_SORT_ATTRS, outputs=["output", "indices"], infer_shape=_sort_infer,
               infer_type=lambda a, d: (list(d), [d[0], np.dtype(np.float32)]), kernels={"any": _sort},
               gradient=lambda F, a, i, o, g: [F._backward_sort(g[0], i[0], o[1], **a)],
               num_visible_outputs=lambda a: 1, doc="Sorted values along `axis` (flattened when None)."))

_ARGSORT_ATTRS = dict(_SORT_ATTRS, dtype=Attr("dtype", np.dtype(np.float32)))


def _argsort(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x = inputs[0]
    ax = _axis("argsort", attrs, x.ndim)
    data = x.reshape(-1) if ax is None else x
    outputs[0][...] = _order(xp, data, 0 if ax is None else ax, attrs["is_ascend"])


register(OpDef(name="argsort", attrs=_ARGSORT_ATTRS, infer_shape=lambda a, s: (s, _sort_infer(a, s)[1][:1]),
               infer_type=lambda a, d: (list(d), [a["dtype"]]), kernels={"any": _argsort},
               gradient=no_gradient(1), doc="Indices that sort data along `axis`."))


# -- cumsum ------------------------------------------------------------------------------------
_CUMSUM_ATTRS = {"axis": Attr("int_or_none", None), "dtype": Attr("str", "None")}


def _cumsum_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    if attrs["axis"] is None:
        return in_shapes, [(int(np.prod(x)),)]
    norm_axis("cumsum", attrs["axis"], len(x))
    return in_shapes, [tuple(x)]


def _cumsum_type(attrs, in_dtypes):
    d = attrs["dtype"]
    return list(in_dtypes), [in_dtypes[0] if d in ("None", "") else np.dtype(d)]


def _cumsum(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    ax = attrs["axis"]
    outputs[0][...] = ctx.xp.cumsum(x.reshape(-1) if ax is None else x, axis=0 if ax is None else ax)


def _cumsum_backward(ctx, attrs, inputs, outputs, aux):
    g, x = inputs
    xp = ctx.xp
    ax = 0 if attrs["axis"] is None else attrs["axis"]
    rev = xp.flip(xp.cumsum(xp.flip(g, axis=ax), axis=ax), axis=ax)
    outputs[0][...] = rev.reshape(x.shape)


with_backward(OpDef(name="cumsum", attrs=_CUMSUM_ATTRS, infer_shape=_cumsum_infer, infer_type=_cumsum_type,
                     kernels={"any": _cumsum}, doc="Cumulative sum along `axis` (of the flattened array when None)."),
              _cumsum_backward, "Gradient of cumsum: reversed cumulative sum.")
