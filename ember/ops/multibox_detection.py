"""_contrib_MultiBoxDetection (MXNet's `mx.nd/sym.contrib.MultiBoxDetection`): SSD detections from
class probabilities, box regressions and anchors.

cls_prob (B, C, N), loc_pred (B, N * 4), anchor (1, N, 4) give (B, N, 6) rows
[class id, score, xmin, ymin, xmax, ymax].  Per batch, as MXNet 1.9.1's CPU kernel: each anchor takes
its most probable class other than class 0 (the background: `background_id` is accepted but, as
there, not read); anchors scoring below `threshold` are dropped; the others are decoded (center
offsets scaled by `variances`, log-sizes; `clip` limits boxes to [0, 1]) and sorted by descending
score (ties keep anchor order); the first `nms_topk` go through NMS, where a box overlapping a
higher-scored one of its class (any class with `force_suppress`) by IOU >= `nms_threshold` gets id
-1.  Ids count from the first non-background class.  Past `nms_topk` the rows are the remaining
detections in anchor order with id -1 (what MXNet's buffer holds); past the detections, -1.
Zero gradient.
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from ._common import no_gradient
from .box_nms import _iou_matrix
from .registry import Attr, OpDef, register

_NAME = "_contrib_MultiBoxDetection"
_ATTRS = {"clip": Attr("bool", True), "threshold": Attr("float", 0.01), "background_id": Attr("int", 0),
          "nms_threshold": Attr("float", 0.5), "force_suppress": Attr("bool", False),
          "variances": Attr("any", (0.1, 0.1, 0.2, 0.2)), "nms_topk": Attr("int", -1)}


def _variances(attrs):
    v = attrs["variances"]
    if isinstance(v, str):
        import ast
        v = ast.literal_eval(v.strip())
    v = tuple(float(x) for x in v)
    if len(v) != 4:
        raise ShapeError(f"{_NAME}: variances takes 4 values, got {v}")
    return v


def _infer_shape(attrs, in_shapes):
    cls, loc, anchor = in_shapes
    _variances(attrs)
    if cls is None:
        return in_shapes, [None]
    if len(cls) != 3:
        raise ShapeError(f"{_NAME}: cls_prob must be (batch, classes, anchors), got {tuple(cls)}")
    b, _, n = cls
    want = [tuple(cls), (b, n * 4), (1, n, 4)]
    for name, got, w in (("loc_pred", loc, want[1]), ("anchor", anchor, want[2])):
        if got is not None and tuple(got) != w:
            raise ShapeError(f"{_NAME}: {name} must have shape {w}, got {tuple(got)}")
    return want, [(b, n, 6)]


def decode(anchors: np.ndarray, loc: np.ndarray, variances, clip: bool) -> np.ndarray:
    """Corner boxes (N, 4) from anchors (N, 4) and regressions (N, 4)."""
    vx, vy, vw, vh = variances
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = (anchors[:, 0] + anchors[:, 2]) / 2, (anchors[:, 1] + anchors[:, 3]) / 2
    ox, oy = loc[:, 0] * vx * aw + ax, loc[:, 1] * vy * ah + ay
    ow, oh = np.exp(loc[:, 2] * vw) * aw / 2, np.exp(loc[:, 3] * vh) * ah / 2
    boxes = np.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=1)
    return np.clip(boxes, 0, 1) if clip else boxes


def _detect(attrs, prob, loc, anchors, variances):
    c, n = prob.shape
    out = np.full((n, 6), -1, dtype=prob.dtype)
    if c < 2:
        return out
    # class 0 is the background (MXNet 1.9.1's CPU kernel does not read background_id)
    cls = np.argmax(prob[1:], axis=0) + 1             # first of equal maxima, as MXNet's strict '>'
    score = prob[cls, np.arange(n)]
    valid = np.flatnonzero(score >= attrs["threshold"])
    if valid.size == 0:
        return out
    ids = (cls[valid] - 1).astype(np.float64)
    boxes = decode(anchors[valid], loc[valid], variances, attrs["clip"])
    rows = np.concatenate([ids[:, None], score[valid, None], boxes], axis=1)  # in anchor order
    order = np.argsort(-score[valid], kind="stable")
    keep = order if attrs["nms_topk"] <= 0 else order[:attrs["nms_topk"]]
    kept = rows[keep]
    iou = _iou_matrix(kept[:, 2:].astype(np.float64))
    for i in range(keep.size):
        if kept[i, 0] < 0:
            continue
        later = np.arange(i + 1, keep.size)
        hit = iou[i, later] >= attrs["nms_threshold"]
        if not attrs["force_suppress"]:
            hit &= kept[later, 0] == kept[i, 0]
        kept[later[hit], 0] = -1
    out[:valid.size] = rows        # past nms_topk MXNet leaves the unsorted detections, with id -1
    out[keep.size:valid.size, 0] = -1
    out[:keep.size] = kept
    return out


def _kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    host = [x.get() if hasattr(x, "get") else np.asarray(x) for x in inputs]  # selection runs on the host
    prob, loc, anchor = host
    b, _, n = prob.shape
    variances = _variances(attrs)
    out = np.stack([_detect(attrs, prob[i], loc[i].reshape(n, 4), anchor.reshape(n, 4), variances)
                    for i in range(b)])
    outputs[0][...] = xp.asarray(out.astype(outputs[0].dtype))


register(OpDef(
    name=_NAME, attrs=_ATTRS, inputs=["cls_prob", "loc_pred", "anchor"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=lambda a, d: (d, [d[0]]), kernels={"any": _kernel},
    gradient=no_gradient(3),
    doc="SSD detections: best class, decoded boxes, per-class NMS (see the module docstring)."))
