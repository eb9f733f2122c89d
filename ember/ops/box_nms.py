"""_contrib_box_nms (MXNet's `mx.nd/sym.contrib.box_nms`, alias `box_non_maximum_suppression`):
non-maximum suppression over boxes, per batch.

data (..., n, k): n boxes of k values each, holding a score at `score_index`, four coordinates from
`coord_start` and optionally a class id at `id_index`.  Per batch, as MXNet 1.9.1: boxes scoring
above `valid_thresh` (and, with an id, not of `background_id`, -1 by default) are sorted by descending score
(ties keep input order), the first `topk` kept (-1: all), then each box suppresses the later ones
overlapping it by IOU > `overlap_thresh` (only those of its own class unless `force_suppress` or
id_index = -1).  The kept boxes come first, in score order, coordinates converted to `out_format`;
the other rows are -1.  A hidden second output records each row's source box (-1: none); the
gradient moves out_grad's rows back to their source boxes, zero for the rest.
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from .registry import Attr, OpDef, register

_NAME = "_contrib_box_nms"
_FORMATS = ("center", "corner")
_ATTRS = {
    "overlap_thresh": Attr("float", 0.5), "valid_thresh": Attr("float", 0.0), "topk": Attr("int", -1),
    "coord_start": Attr("int", 2), "score_index": Attr("int", 1), "id_index": Attr("int", -1),
    "background_id": Attr("int", -1), "force_suppress": Attr("bool", False),
    "in_format": Attr("str", "corner", choices=_FORMATS), "out_format": Attr("str", "corner", choices=_FORMATS),
}


def _check(attrs, shape):
    if len(shape) < 2:
        raise ShapeError(f"{_NAME}: data must have at least 2 dimensions (n, k), got shape {tuple(shape)}")
    k = shape[-1]
    cs, si, ii = attrs["coord_start"], attrs["score_index"], attrs["id_index"]
    if k is None:
        return
    if not 0 <= cs <= k - 4:
        raise ShapeError(f"{_NAME}: coord_start {cs} leaves no room for 4 coordinates in width {k}")
    if not 0 <= si < k:
        raise ShapeError(f"{_NAME}: score_index {si} is out of range for width {k}")
    if ii >= k:
        raise ShapeError(f"{_NAME}: id_index {ii} is out of range for width {k}")


def _infer_shape(attrs, in_shapes):
    d = in_shapes[0]
    if d is None:
        return in_shapes, [None, None]
    _check(attrs, d)
    return in_shapes, [tuple(d), tuple(d[:-1])]


def _infer_type(attrs, in_dtypes):
    return in_dtypes, [in_dtypes[0], np.dtype(np.float32) if in_dtypes[0] is None else in_dtypes[0]]


def _to_corner(c):
    x, y, w, h = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
    return np.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], axis=1)


def _to_center(c):
    x0, y0, x1, y1 = c[:, 0], c[:, 1], c[:, 2], c[:, 3]
    return np.stack([(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0], axis=1)


def _iou_matrix(c):
    """IOU of every pair of corner boxes (MXNet's box_iou rules)."""
    x0, y0, x1, y1 = (c[:, i] for i in range(4))
    area = np.where((x1 - x0 < 0) | (y1 - y0 < 0), 0, (x1 - x0) * (y1 - y0))
    iw = np.maximum(np.minimum(x1[:, None], x1) - np.maximum(x0[:, None], x0), 0)
    ih = np.maximum(np.minimum(y1[:, None], y1) - np.maximum(y0[:, None], y0), 0)
    inter = iw * ih
    union = area[:, None] + area - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0)


def _nms_one(attrs, boxes):
    """Source index of each output row (-1: empty) for one batch of boxes (n, k)."""
    n = boxes.shape[0]
    si, ii, cs = attrs["score_index"], attrs["id_index"], attrs["coord_start"]
    scores = boxes[:, si]
    valid = scores > attrs["valid_thresh"]
    if ii >= 0:  # boxes of the background class are dropped (with the default -1 too, as MXNet)
        valid &= boxes[:, ii] != attrs["background_id"]
    order = np.flatnonzero(valid)
    order = order[np.argsort(-scores[order], kind="stable")]
    if attrs["topk"] > 0:
        order = order[:attrs["topk"]]
    coords = boxes[order, cs:cs + 4].astype(np.float64)
    if attrs["in_format"] == "center":
        coords = _to_corner(coords)
    iou = _iou_matrix(coords)
    same_class = np.ones_like(iou, dtype=bool)
    if ii >= 0 and not attrs["force_suppress"]:
        ids = boxes[order, ii]
        same_class = ids[:, None] == ids
    alive = np.ones(order.size, dtype=bool)
    for i in range(order.size):
        if alive[i]:
            alive[i + 1:] &= ~((iou[i, i + 1:] > attrs["overlap_thresh"]) & same_class[i, i + 1:])
    kept = order[alive]
    index = np.full(n, -1, dtype=np.int64)
    index[:kept.size] = kept
    return index


def _kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    data = inputs[0]
    n, k = data.shape[-2], data.shape[-1]
    host = data.reshape(-1, n, k)
    host = host.get() if hasattr(host, "get") else np.asarray(host)  # selection runs on the host
    out = np.full(host.shape, -1, dtype=host.dtype)
    index = np.full(host.shape[:2], -1, dtype=np.int64)
    cs = attrs["coord_start"]
    for b in range(host.shape[0]):
        idx = _nms_one(attrs, host[b])
        index[b] = idx
        kept = idx[idx >= 0]
        rows = host[b, kept].copy()
        if attrs["in_format"] != attrs["out_format"]:
            c = rows[:, cs:cs + 4].astype(np.float64)
            rows[:, cs:cs + 4] = _to_center(c) if attrs["out_format"] == "center" else _to_corner(c)
        out[b, :kept.size] = rows
    outputs[0][...] = xp.asarray(out.reshape(outputs[0].shape))
    outputs[1][...] = xp.asarray(index.reshape(outputs[1].shape).astype(outputs[1].dtype))


def _backward_infer(attrs, in_shapes):
    return in_shapes, [in_shapes[0]]


def _backward_kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    ograd, index = inputs
    n, k = ograd.shape[-2], ograd.shape[-1]
    g = ograd.reshape(-1, n, k)
    idx = index.reshape(-1, n).astype(xp.int64)
    grad = outputs[0].reshape(-1, n, k)
    grad[...] = 0
    for b in range(g.shape[0]):
        rows = xp.flatnonzero(idx[b] >= 0)
        grad[b, idx[b, rows]] = g[b, rows]


def _gradient(F, attrs, inputs, outputs, out_grads):
    return [F._backward_contrib_box_nms(out_grads[0], outputs[1], **attrs)]


register(OpDef(
    name="_backward_contrib_box_nms", attrs=_ATTRS, inputs=["ograd", "index"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[0]]), infer_type=lambda a, d: (d, [d[0]]),
    kernels={"any": _backward_kernel},
    doc="Gradient of _contrib_box_nms: out_grad's rows moved back to their source boxes."))

register(OpDef(
    name=_NAME, aliases=["_contrib_box_non_maximum_suppression"], attrs=_ATTRS,
    inputs=["data"], outputs=["output0", "output1"], num_visible_outputs=lambda a: 1,
    infer_shape=_infer_shape, infer_type=_infer_type, kernels={"any": _kernel}, gradient=_gradient,
    doc="Non-maximum suppression of boxes per batch (see the module docstring)."))
