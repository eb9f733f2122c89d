"""_contrib_Proposal / _contrib_MultiProposal: region proposals of a Faster R-CNN RPN (MXNet 1.x).

Per image: anchors (feature_stride-sized base box reshaped to each ratio, then scaled, for ratio in
ratios for scale in scales) slid over the H x W feature map; each is moved by its bbox_pred deltas
(dx, dy, log dw, log dh) and clipped to the image; anchors past the image's real feature extent and
boxes smaller than rpn_min_size * im_scale score -1; the rpn_pre_nms_top_n best by foreground score
go through greedy NMS (IoU > threshold suppressed, areas with MXNet's +1 pixel convention), and the
first rpn_post_nms_top_n kept boxes are the output (repeated cyclically when fewer were kept).
rois rows are [batch index, x1, y1, x2, y2]; `score` is a hidden output unless output_score.  No
gradient flows (MXNet's backward writes zeros)."""
from __future__ import annotations

import ast

import numpy as np

from ..backend import to_host
from ..base import OperatorError, ShapeError
from .registry import Attr, OpDef, register

_ATTRS = {
    "rpn_pre_nms_top_n": Attr("int", 6000, doc="boxes kept before NMS"),
    "rpn_post_nms_top_n": Attr("int", 300, doc="boxes output after NMS"),
    "threshold": Attr("float", 0.7, doc="NMS IoU threshold"),
    "rpn_min_size": Attr("int", 16, doc="minimum box side, in image pixels before im_scale"),
    "scales": Attr("any", (4.0, 8.0, 16.0, 32.0), doc="anchor scales (tuple of floats)"),
    "ratios": Attr("any", (0.5, 1.0, 2.0), doc="anchor aspect ratios (tuple of floats)"),
    "feature_stride": Attr("int", 16, doc="image pixels per feature-map cell"),
    "output_score": Attr("bool", False, doc="also return the scores"),
    "iou_loss": Attr("bool", False, doc="deltas are box offsets (IoU loss) instead of center/size"),
}


def _floats(attrs, key: str) -> tuple:
    """A tuple-of-floats attribute, as given or as MXNet's JSON string '(8, 16, 32)'."""
    v = attrs[key]
    if isinstance(v, str):
        v = ast.literal_eval(v)
    v = tuple(float(x) for x in (v if isinstance(v, (tuple, list)) else (v,)))
    if not v:
        raise OperatorError(f"Proposal: {key} must not be empty")
    return v


def _anchors(attrs) -> np.ndarray:
    fs = attrs["feature_stride"]
    w = h = float(fs)
    x_ctr = y_ctr = 0.5 * (fs - 1)
    out = []
    for ratio in _floats(attrs, "ratios"):
        ws = np.round(np.sqrt(w * h / ratio))
        hs = np.round(ws * ratio)
        for scale in _floats(attrs, "scales"):
            sw, sh = ws * scale, hs * scale
            out.append([x_ctr - 0.5 * (sw - 1), y_ctr - 0.5 * (sh - 1), x_ctr + 0.5 * (sw - 1), y_ctr + 0.5 * (sh - 1)])
    return np.asarray(out, dtype=np.float64)


def _nms(boxes: np.ndarray, threshold: float, limit: int) -> list:
    x1, y1, x2, y2 = boxes.T
    area = (x2 - x1 + 1) * (y2 - y1 + 1)
    alive = np.ones(len(boxes), dtype=bool)
    keep = []
    for i in range(len(boxes)):
        if not alive[i]:
            continue
        keep.append(i)
        if len(keep) >= limit:
            break
        rest = np.nonzero(alive[i + 1:])[0] + i + 1
        iw = np.maximum(0.0, np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]) + 1)
        ih = np.maximum(0.0, np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]) + 1)
        inter = iw * ih
        alive[rest[inter / (area[i] + area[rest] - inter) > threshold]] = False
    return keep


def _one_image(attrs, scores_fg, deltas, info):
    """(rois (post, 4), scores (post,)) of one image: scores_fg (A, H, W), deltas (4A, H, W), info (3,)."""
    a_n, h, w = scores_fg.shape
    fs = attrs["feature_stride"]
    anchors = _anchors(attrs)
    # proposal order as MXNet's: index = (y * W + x) * A + a
    sy, sx = np.meshgrid(np.arange(h) * fs, np.arange(w) * fs, indexing="ij")
    shifts = np.stack([sx, sy, sx, sy], axis=-1).astype(np.float64)          # (H, W, 4)
    boxes = (shifts[:, :, None, :] + anchors[None, None]).reshape(-1, 4)      # (H*W*A, 4)
    scores = scores_fg.transpose(1, 2, 0).reshape(-1).astype(np.float64)
    d = deltas.reshape(a_n, 4, h, w).transpose(2, 3, 0, 1).reshape(-1, 4).astype(np.float64)
    im_h, im_w, im_scale = float(info[0]), float(info[1]), float(info[2])
    if attrs["iou_loss"]:
        pred = boxes + d
    else:
        bw = boxes[:, 2] - boxes[:, 0] + 1.0
        bh = boxes[:, 3] - boxes[:, 1] + 1.0
        cx = boxes[:, 0] + 0.5 * (bw - 1.0)
        cy = boxes[:, 1] + 0.5 * (bh - 1.0)
        pcx, pcy = d[:, 0] * bw + cx, d[:, 1] * bh + cy
        pw, ph = np.exp(d[:, 2]) * bw, np.exp(d[:, 3]) * bh
        pred = np.stack([pcx - 0.5 * (pw - 1.0), pcy - 0.5 * (ph - 1.0),
                         pcx + 0.5 * (pw - 1.0), pcy + 0.5 * (ph - 1.0)], axis=1)
    pred[:, 0::2] = np.clip(pred[:, 0::2], 0.0, im_w - 1.0)
    pred[:, 1::2] = np.clip(pred[:, 1::2], 0.0, im_h - 1.0)
    # cells past the image's real feature extent do not propose
    real_h, real_w = int(im_h / fs), int(im_w / fs)
    cell_y = np.repeat(np.arange(h), w * a_n)
    cell_x = np.tile(np.repeat(np.arange(w), a_n), h)
    scores = np.where((cell_y >= real_h) | (cell_x >= real_w), -1.0, scores)
    # boxes smaller than the minimum size are widened and score -1
    min_size = attrs["rpn_min_size"] * im_scale
    small = ((pred[:, 2] - pred[:, 0] + 1.0) < min_size) | ((pred[:, 3] - pred[:, 1] + 1.0) < min_size)
    pred[small] += np.array([-0.5, -0.5, 0.5, 0.5]) * min_size
    scores = np.where(small, -1.0, scores)
    order = np.argsort(-scores, kind="stable")[:min(attrs["rpn_pre_nms_top_n"], len(scores))]
    pred, scores = pred[order], scores[order]
    post = attrs["rpn_post_nms_top_n"]
    keep = _nms(pred, attrs["threshold"], post)
    pick = [keep[i % len(keep)] for i in range(post)] if keep else [0] * post
    return pred[pick], scores[pick]


def _infer_shape(multi: bool):
    op = "_contrib_MultiProposal" if multi else "_contrib_Proposal"

    def infer(attrs, in_shapes):
        cls, bbox, info = in_shapes
        a_n = len(_floats(attrs, "scales")) * len(_floats(attrs, "ratios"))
        if cls is not None and (len(cls) != 4 or (cls[1] is not None and cls[1] != 2 * a_n)):
            raise ShapeError(f"{op}: cls_prob must be (N, 2 * {a_n} anchors, H, W), got {tuple(cls)}")
        if cls is None or cls[0] is None:
            return in_shapes, [None, None]
        n = cls[0]
        if not multi and n != 1:
            raise ShapeError(f"{op}: only a batch of 1 is supported (use MultiProposal), got {n}")
        ins = [tuple(cls), (n, 4 * a_n) + tuple(cls[2:]), (n, 3)]
        for given, want, name in zip(in_shapes[1:], ins[1:], ("bbox_pred", "im_info")):
            if given is not None and tuple(given) != want:
                raise ShapeError(f"{op}: {name} must be {want}, got {tuple(given)}")
        rows = n * attrs["rpn_post_nms_top_n"]
        return ins, [(rows, 5), (rows, 1)]
    return infer


def _forward(ctx, attrs, inputs, outputs, aux):
    cls, bbox, info = (to_host(x) for x in inputs)
    a_n = cls.shape[1] // 2
    if attrs["rpn_post_nms_top_n"] <= 0:
        raise OperatorError("Proposal: rpn_post_nms_top_n must be positive")
    rois, scores = [], []
    for b in range(cls.shape[0]):
        r, s = _one_image(attrs, cls[b, a_n:], bbox[b], info[b])
        rois.append(np.concatenate([np.full((len(r), 1), float(b)), r], axis=1))
        scores.append(s[:, None])
    for o, v in ((outputs[0], np.concatenate(rois)), (outputs[1], np.concatenate(scores))):
        o[...] = ctx.xp.asarray(v)


def _zero_grads(F, attrs, inputs, outputs, out_grads):
    return [F.zeros_like(x) for x in inputs]


for _multi in (False, True):
    register(OpDef(
        name="_contrib_MultiProposal" if _multi else "_contrib_Proposal", attrs=_ATTRS,
        inputs=["cls_prob", "bbox_pred", "im_info"], outputs=["output", "score"],
        num_visible_outputs=lambda a: 2 if a["output_score"] else 1,
        infer_shape=_infer_shape(_multi), infer_type=lambda a, d: (list(d), [d[0], d[0]]),
        kernels={"any": _forward}, gradient=_zero_grads,
        doc="Region proposals of an RPN: anchors moved by bbox_pred, clipped, filtered, NMS" +
            (" (per image of the batch)." if _multi else " (one image).")))
