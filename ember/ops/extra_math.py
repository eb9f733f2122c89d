"""MXNet 1.x's smaller tensor operators: softmin, softmax_cross_entropy, batch_take, _split_v2,
_onehot_encode, choose_element_0index and fill_element_0index.

Semantics follow MXNet 1.9.1: batch_take clips indices into range and has no gradient;
choose_element_0index/fill_element_0index are the legacy "0-index" ops whose index array shares
the data's dtype; softmax_cross_entropy sums -log softmax(data)[label] over the batch into a (1,)
array.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from ._common import data_like_output, known, same_type
from ._nn_util import backward_via, data_axis, merge
from .nn_softmax import _length_mask, _sm_type, _softmax
from .registry import Attr, OpDef, register


# -- softmin ---------------------------------------------------------------------------------------
_SM_ATTRS = {
    "axis": Attr("int", -1, doc="axis along which to normalise"),
    "temperature": Attr("float_or_none", None, doc="divide the input by this first"),
    "dtype": Attr("dtype_or_none", None, doc="output dtype (default: the input's)"),
    "use_length": Attr("bool", False, doc="mask positions >= length along axis"),
}


def _softmin_shape(attrs, in_shapes):
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None]
    d = tuple(d)
    ax = data_axis("softmin", attrs["axis"], len(d))
    ins = list(in_shapes)
    if attrs["use_length"]:
        ins[1] = merge("softmin", "length", ins[1], d[:ax] + d[ax + 1:])
    return ins, [d]


def _softmin_kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x = inputs[0]
    ax = attrs["axis"] % x.ndim
    work = -(x.astype(np.float32) if x.dtype == np.float16 else x)
    if attrs["use_length"]:
        mask = _length_mask(xp, work, inputs[1], ax)
        res = xp.where(mask, _softmax(xp, xp.where(mask, work, -np.inf), ax, attrs["temperature"]), 0)
    else:
        res = _softmax(xp, work, ax, attrs["temperature"])
    outputs[0][...] = res


def _softmin_backward(ctx, attrs, inputs, outputs, aux):
    dy, y = inputs[0], inputs[1]
    ax = attrs["axis"] % y.ndim
    t = attrs["temperature"] if attrs["temperature"] is not None else 1.0
    # d softmax(-x/T) = -(1/T) * y * (dy - sum(dy * y))
    outputs[0][...] = (y * ((dy * y).sum(axis=ax, keepdims=True) - dy)) / y.dtype.type(t)


register(OpDef(
    name="softmin", attrs=_SM_ATTRS, inputs=lambda a: ["data", "length"] if a["use_length"] else ["data"],
    outputs=["output"], infer_shape=_softmin_shape, infer_type=_sm_type("softmin"),
    infer_shape_backward=data_like_output, kernels={"any": _softmin_kernel}, inplace=[(0, 0)],
    gradient=backward_via("_backward_softmin", lambda a, i, o, g: [g[0], o[0]],
                          lambda a: [True] + ([False] if a["use_length"] else [])),
    doc="softmax(-data / temperature) along `axis`."))
register(OpDef(
    name="_backward_softmin", attrs=_SM_ATTRS, inputs=["out_grad", "output"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[1]]), kernels={"any": _softmin_backward}, inplace=[(0, 0)],
    doc="Gradient of softmin."))


# -- softmax_cross_entropy -------------------------------------------------------------------------
def _sce_shape(attrs, in_shapes):
    d, lab = in_shapes
    if d is not None and len(d) != 2:
        raise ShapeError(f"softmax_cross_entropy: data must be 2-D (batch, classes), got {tuple(d)}")
    if lab is not None and len(lab) != 1:
        raise ShapeError(f"softmax_cross_entropy: label must be 1-D (batch,), got {tuple(lab)}")
    if d is not None:
        lab = merge("softmax_cross_entropy", "label", lab, (d[0],))
    return [d, lab], [(1,)]


def _sce_type(attrs, in_dtypes):
    ins, outs = same_type("softmax_cross_entropy", names=("data", "label"))(attrs, in_dtypes)
    return ins, outs


def _sce_probs(xp, x):
    return _softmax(xp, x.astype(np.float64) if x.dtype != np.float64 else x, 1)


def _sce_kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x, lab = inputs
    p = _sce_probs(xp, x)
    idx = lab.astype(np.int64)
    picked = p[xp.arange(x.shape[0]), xp.clip(idx, 0, x.shape[1] - 1)]
    outputs[0][...] = -xp.log(picked).sum()


def _sce_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, x, lab = inputs
    p = _sce_probs(xp, x)
    hit = xp.arange(x.shape[1])[None, :] == lab.astype(np.int64)[:, None]
    outputs[0][...] = (p - hit) * g.reshape(())


register(OpDef(
    name="softmax_cross_entropy", inputs=["data", "label"], outputs=["output"],
    infer_shape=_sce_shape, infer_type=_sce_type, kernels={"any": _sce_kernel},
    infer_shape_backward=lambda a, ins, outs: [None, None],
    gradient=backward_via("_backward_softmax_cross_entropy", lambda a, i, o, g: [g[0], i[0], i[1]],
                          lambda a: [True, False]),
    doc="sum over the batch of -log(softmax(data)[i, label[i]]), shape (1,)."))
register(OpDef(
    name="_backward_softmax_cross_entropy", inputs=["out_grad", "data", "label"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[1]]), kernels={"any": _sce_backward},
    doc="Gradient of softmax_cross_entropy: (softmax(data) - onehot(label)) * out_grad."))


# -- batch_take ------------------------------------------------------------------------------------
def _bt_shape(attrs, in_shapes):
    a, idx = in_shapes
    if a is not None and len(a) < 1:
        raise ShapeError("batch_take: a must have at least one dimension")
    if idx is None:
        return in_shapes, [None]
    return in_shapes, [tuple(idx)]


def _bt_type(attrs, in_dtypes):
    a, idx = in_dtypes
    if idx is not None and np.dtype(idx) != np.int32:
        raise OperatorError(f"batch_take: indices must be int32, got {np.dtype(idx).name}")
    return [a, np.dtype(np.int32)], [a]


def _bt_kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    a, idx = inputs
    n = idx.size
    if n == 0:
        return
    m = a.size // a.shape[0] if a.shape[0] else 0
    flat = a.reshape(-1)
    j = xp.clip(idx.reshape(-1).astype(np.int64), 0, m - 1)
    outputs[0][...] = flat[xp.arange(n) * m + j].reshape(outputs[0].shape)


register(OpDef(
    name="batch_take", inputs=["a", "indices"], outputs=["output"], infer_shape=_bt_shape, infer_type=_bt_type,
    kernels={"any": _bt_kernel},
    infer_shape_backward=lambda a, ins, outs: [None, outs[0]],
    doc="out[i] = a[i, indices[i]] with indices clipped into range (MXNet: deprecated, use pick); "
        "not differentiable, as in MXNet."))


# -- choose_element_0index / fill_element_0index ----------------------------------------------------
def _choose_shape(attrs, in_shapes):
    lhs, rhs = in_shapes
    if lhs is not None and len(lhs) != 2:
        raise ShapeError(f"choose_element_0index: lhs must be 2-D, got {tuple(lhs)}")
    if rhs is not None and len(rhs) != 1:
        raise ShapeError(f"choose_element_0index: rhs must be 1-D, got {tuple(rhs)}")
    if lhs is None:
        return in_shapes, [None if rhs is None else tuple(rhs)]
    rhs = merge("choose_element_0index", "rhs", rhs, (lhs[0],))
    return [lhs, rhs], [(lhs[0],)]


def _rows(xp, n, idx, m):
    return xp.arange(n), xp.clip(idx.astype(np.int64), 0, m - 1)


def _choose_kernel(ctx, attrs, inputs, outputs, aux):
    lhs, rhs = inputs
    r, c = _rows(ctx.xp, lhs.shape[0], rhs, lhs.shape[1])
    outputs[0][...] = lhs[r, c]


def _choose_backward(ctx, attrs, inputs, outputs, aux):
    g, rhs = inputs[0], inputs[1]
    out = outputs[0]
    out[...] = 0
    r, c = _rows(ctx.xp, out.shape[0], rhs, out.shape[1])
    out[r, c] = g


register(OpDef(
    name="choose_element_0index", inputs=["lhs", "rhs"], outputs=["output"], infer_shape=_choose_shape,
    infer_type=same_type("choose_element_0index", names=("lhs", "rhs")), kernels={"any": _choose_kernel},
    gradient=lambda F, a, i, o, g: [F._backward_choose_element_0index(g[0], i[1], i[0]), None],
    doc="out[i] = lhs[i, rhs[i]] (rhs holds indices in lhs's dtype)."))
register(OpDef(
    name="_backward_choose_element_0index", inputs=["out_grad", "rhs", "lhs"], outputs=["lhs_grad"],
    infer_shape=lambda a, s: (s, [s[2]]), kernels={"any": _choose_backward},
    doc="Gradient of choose_element_0index: out_grad scattered to (i, rhs[i]); lhs is read for its shape."))


def _fill_shape(attrs, in_shapes):
    lhs, mhs, rhs = in_shapes
    if lhs is not None and len(lhs) != 2:
        raise ShapeError(f"fill_element_0index: lhs must be 2-D, got {tuple(lhs)}")
    if lhs is None:
        return in_shapes, [None]
    mhs = merge("fill_element_0index", "mhs", mhs, (lhs[0],))
    rhs = merge("fill_element_0index", "rhs", rhs, (lhs[0],))
    return [lhs, mhs, rhs], [tuple(lhs)]


def _fill_kernel(ctx, attrs, inputs, outputs, aux):
    lhs, mhs, rhs = inputs
    out = outputs[0]
    out[...] = lhs
    r, c = _rows(ctx.xp, lhs.shape[0], rhs, lhs.shape[1])
    out[r, c] = mhs


register(OpDef(
    name="fill_element_0index", inputs=["lhs", "mhs", "rhs"], outputs=["output"], infer_shape=_fill_shape,
    infer_type=same_type("fill_element_0index", names=("lhs", "mhs", "rhs")), kernels={"any": _fill_kernel},
    infer_shape_backward=data_like_output,
    doc="A copy of lhs with lhs[i, rhs[i]] = mhs[i]; not differentiable, as in MXNet."))


# -- _onehot_encode ----------------------------------------------------------------------------------
def _onehot_shape(attrs, in_shapes):
    lhs, rhs = in_shapes
    if rhs is not None and len(rhs) != 2:
        raise ShapeError(f"_onehot_encode: rhs (the output template) must be 2-D, got {tuple(rhs)}")
    if rhs is None:
        return in_shapes, [None]
    return [merge("_onehot_encode", "lhs", lhs, (rhs[0],)), rhs], [tuple(rhs)]


def _onehot_kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    idx = inputs[0].astype(np.int64)
    out = outputs[0]
    out[...] = (xp.arange(out.shape[1])[None, :] == idx[:, None])


register(OpDef(
    name="_onehot_encode", inputs=["lhs", "rhs"], outputs=["output"], infer_shape=_onehot_shape,
    infer_type=same_type("_onehot_encode", names=("lhs", "rhs")), kernels={"any": _onehot_kernel},
    doc="One-hot rows of the indices lhs, shaped like rhs (mx.nd.onehot_encode(indices, out))."))


# -- _split_v2 ---------------------------------------------------------------------------------------
_SPLIT_ATTRS = {
    "indices": Attr("shape", (), doc="start index of every section (the first is 0)"),
    "axis": Attr("int", 1, doc="axis to split along"),
    "squeeze_axis": Attr("bool", False, doc="drop the split axis (each section must have length 1)"),
    "sections": Attr("int", 0, doc="number of equal sections (used when > 0)"),
}


def _n_sections(attrs):
    return attrs["sections"] if attrs["sections"] > 0 else len(attrs["indices"])


def _split_bounds(attrs, length):
    """(start, stop) of every section along an axis of `length`."""
    if attrs["sections"] > 0:
        k = attrs["sections"]
        if length % k:
            raise ShapeError(f"_split_v2: axis of length {length} cannot be split into {k} equal sections")
        step = length // k
        return [(i * step, (i + 1) * step) for i in range(k)]
    idx = list(attrs["indices"])
    if not idx:
        raise OperatorError("_split_v2: indices must not be empty when sections is 0")
    if any(b < a for a, b in zip(idx, idx[1:])) or idx[0] < 0:
        raise ShapeError(f"_split_v2: indices {tuple(idx)} must be ascending and non-negative")
    # an index past the end of the axis gives an empty section, as numpy.split
    starts = [min(i, length) for i in idx]
    return list(zip(starts, starts[1:] + [length]))


def _split_shape(attrs, in_shapes):
    d = in_shapes[0]
    n = _n_sections(attrs)
    if d is None or not known(d):
        return in_shapes, [None] * n
    d = tuple(d)
    ax = data_axis("_split_v2", attrs["axis"], len(d))
    outs = []
    for s, e in _split_bounds(attrs, d[ax]):
        if attrs["squeeze_axis"]:
            if e - s != 1:
                raise ShapeError(f"_split_v2: squeeze_axis needs sections of length 1, got {e - s}")
            outs.append(d[:ax] + d[ax + 1:])
        else:
            outs.append(d[:ax] + (e - s,) + d[ax + 1:])
    return [d], outs


def _split_kernel(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    ax = attrs["axis"] % x.ndim
    for (s, e), out in zip(_split_bounds(attrs, x.shape[ax]), outputs):
        piece = x[(slice(None),) * ax + (slice(s, e),)]
        out[...] = piece.reshape(out.shape)


def _split_backward(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    ax = attrs["axis"] % out.ndim
    for (s, e), g in zip(_split_bounds(attrs, out.shape[ax]), inputs[:-1]):
        target = out[(slice(None),) * ax + (slice(s, e),)]
        target[...] = g.reshape(target.shape)


def _split_gradient(F, attrs, inputs, outputs, out_grads):
    grads = [F.zeros_like(o) if g is None else g for g, o in zip(out_grads, outputs)]
    return [F._split_v2_backward(*grads, inputs[0], **attrs)]


register(OpDef(
    name="_split_v2", attrs=_SPLIT_ATTRS, inputs=["data"],
    outputs=lambda a: [f"output{i}" for i in range(_n_sections(a))],
    infer_shape=_split_shape, infer_type=lambda a, d: (list(d), [d[0]] * _n_sections(a)),
    kernels={"any": _split_kernel}, gradient=_split_gradient,
    doc="Split data along axis at the given start indices, or into `sections` equal parts."))
register(OpDef(
    name="_split_v2_backward", attrs=_SPLIT_ATTRS,
    inputs=lambda a: [f"out_grad{i}" for i in range(_n_sections(a))] + ["data"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[-1]]), infer_type=lambda a, d: (list(d), [d[-1]]),
    kernels={"any": _split_backward},
    doc="Gradient of _split_v2: the section gradients written back in place (data read for its shape)."))
