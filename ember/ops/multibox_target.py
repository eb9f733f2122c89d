"""_contrib_MultiBoxTarget (MXNet's `mx.nd/sym.contrib.MultiBoxTarget`): SSD training targets.

anchor (1, N, 4), label (B, M, 5+) rows [class, xmin, ymin, xmax, ymax] (class -1 ends the valid
rows), cls_pred (B, C, N) give loc_target (B, N * 4), loc_mask (B, N * 4) and cls_target (B, N).
Per batch, as MXNet 1.9.1's CPU kernel: each ground truth first takes its best free anchor, best
pair first (bipartite stage, IOU > 1e-6); every other anchor whose best IOU exceeds
`overlap_threshold` takes that ground truth.  Matched anchors get class + 1 and the encoded offsets
((gx - ax) / aw / v0, (gy - ay) / ah / v1, log(gw / aw) / v2, log(gh / ah) / v3) with mask 1.
Without negative mining (`negative_mining_ratio` <= 0) every other anchor is background (0);
with it, the unmatched anchors whose best IOU is below `negative_mining_thresh` are ranked by
the background's negative log-softmax of cls_pred and the hardest int(positives * ratio) (at most
the candidates) are background, the rest get `ignore_label` (`minimum_negative_samples` is
accepted and, as in MXNet's CPU kernel, not read).  A batch without ground truth is all
`ignore_label`.  Zero gradient.
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from ._common import no_gradient
from .box_nms import _iou_matrix
from .multibox_detection import _variances
from .registry import Attr, OpDef, register

_NAME = "_contrib_MultiBoxTarget"
_ATTRS = {"overlap_threshold": Attr("float", 0.5), "ignore_label": Attr("float", -1.0),
          "negative_mining_ratio": Attr("float", -1.0), "negative_mining_thresh": Attr("float", 0.5),
          "minimum_negative_samples": Attr("int", 0), "variances": Attr("any", (0.1, 0.1, 0.2, 0.2))}


def _infer_shape(attrs, in_shapes):
    anchor, label, cls = in_shapes
    _variances(attrs)
    if anchor is None or label is None:
        return in_shapes, [None, None, None]
    if len(anchor) != 3 or anchor[0] != 1 or anchor[2] != 4:
        raise ShapeError(f"{_NAME}: anchor must have shape (1, N, 4), got {tuple(anchor)}")
    if len(label) != 3 or label[2] < 5:
        raise ShapeError(f"{_NAME}: label must have shape (B, M, 5+), got {tuple(label)}")
    b, n = label[0], anchor[1]
    if cls is not None and (len(cls) != 3 or cls[0] != b or cls[2] != n):
        raise ShapeError(f"{_NAME}: cls_pred must have shape (B, classes, {n}), got {tuple(cls)}")
    return in_shapes, [(b, n * 4), (b, n * 4), (b, n)]


def _targets(attrs, anchors, label, cls_pred, variances):
    n = anchors.shape[0]
    loc = np.zeros((n, 4))
    mask = np.zeros((n, 4))
    cls_t = np.zeros(n)
    rows = label[:, 0]
    n_gt = int(np.argmax(rows == -1)) if (rows == -1).any() else label.shape[0]
    if n_gt == 0:  # nothing to match: every anchor is ignored, as MXNet
        cls_t[:] = attrs["ignore_label"]
        return loc, mask, cls_t
    gt = label[:n_gt].astype(np.float64)
    iou = _iou_matrix(np.concatenate([anchors.astype(np.float64), gt[:, 1:5]]))[:n, n:]  # (N, n_gt)
    match = np.full(n, -1)
    free = iou.copy()
    for _ in range(n_gt):  # bipartite stage: best remaining pair first
        i, j = np.unravel_index(np.argmax(free), free.shape)
        if free[i, j] <= 1e-6:
            break
        match[i] = j
        free[i, :] = -1
        free[:, j] = -1
    best = iou.argmax(axis=1)
    best_iou = iou[np.arange(n), best]
    if attrs["overlap_threshold"] > 0:
        extra = (match < 0) & (best_iou > attrs["overlap_threshold"])
        match[extra] = best[extra]
    positive = match >= 0
    cls_t[:] = attrs["ignore_label"]
    cls_t[positive] = gt[match[positive], 0] + 1
    if attrs["negative_mining_ratio"] > 0:
        candidates = np.flatnonzero(~positive & (best_iou < attrs["negative_mining_thresh"]))
        logits = cls_pred[:, candidates].astype(np.float64)
        logits = logits - logits.max(axis=0)
        loss = -(logits[0] - np.log(np.exp(logits).sum(axis=0)))  # background's negative log-softmax
        # MXNet 1.9.1's CPU kernel takes positives * ratio; minimum_negative_samples is accepted, not read
        wanted = int(positive.sum() * attrs["negative_mining_ratio"])
        hardest = candidates[np.argsort(-loss, kind="stable")[:min(wanted, candidates.size)]]
        cls_t[hardest] = 0
    else:
        cls_t[~positive] = 0
    a = anchors[positive].astype(np.float64)
    g = gt[match[positive], 1:5]
    aw, ah = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    ax, ay = (a[:, 0] + a[:, 2]) / 2, (a[:, 1] + a[:, 3]) / 2
    gw, gh = g[:, 2] - g[:, 0], g[:, 3] - g[:, 1]
    gx, gy = (g[:, 0] + g[:, 2]) / 2, (g[:, 1] + g[:, 3]) / 2
    vx, vy, vw, vh = variances
    loc[positive] = np.stack([(gx - ax) / aw / vx, (gy - ay) / ah / vy, np.log(gw / aw) / vw,
                              np.log(gh / ah) / vh], axis=1)
    mask[positive] = 1
    return loc, mask, cls_t


def _kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    anchor, label, cls_pred = [x.get() if hasattr(x, "get") else np.asarray(x) for x in inputs]  # host
    variances = _variances(attrs)
    b, n = label.shape[0], anchor.shape[1]
    results = [_targets(attrs, anchor.reshape(n, 4), label[i], cls_pred[i], variances) for i in range(b)]
    for k, out in enumerate(outputs):
        stacked = np.stack([r[k] for r in results]).reshape(out.shape)
        out[...] = xp.asarray(stacked.astype(out.dtype))


register(OpDef(
    name=_NAME, attrs=_ATTRS, inputs=["anchor", "label", "cls_pred"], outputs=["output0", "output1", "output2"],
    infer_shape=_infer_shape, infer_type=lambda a, d: (d, [d[0], d[0], d[0]]), kernels={"any": _kernel},
    gradient=no_gradient(3), doc="SSD training targets: anchor matching, offsets, hard negative mining."))
