"""_contrib_PSROIPooling (R-FCN's position-sensitive ROI pooling, MXNet 1.x contrib).

For ROI r, output channel k and bin (i, j): the mean of data[batch, (k * G + gi) * G + gj] over the bin's
integer window (floor/ceil of the bin edges, clipped to the image; an empty window gives 0), where G is
group_size (pooled_size when 0) and (gi, gj) the bin's group.  ROI corners are rounded (half away from zero)
and the far corner is inclusive: [round(x1), round(x2) + 1) * spatial_scale.  The gradient spreads each
output gradient evenly over its window; rois get a zero gradient."""
from __future__ import annotations

import math

import numpy as np

from ..backend import to_host
from ..base import OperatorError, ShapeError
from ._common import with_backward
from .registry import Attr, OpDef

_ATTRS = {
    "spatial_scale": Attr("float", doc="rois coordinates times this give data coordinates"),
    "output_dim": Attr("int", doc="output channels"),
    "pooled_size": Attr("int", doc="bins per side"),
    "group_size": Attr("int", 0, doc="position groups per side (0: pooled_size)"),
}


def _group(attrs) -> int:
    return attrs["group_size"] or attrs["pooled_size"]


def _infer_shape(attrs, in_shapes):
    d, rois = in_shapes
    p, g, k = attrs["pooled_size"], _group(attrs), attrs["output_dim"]
    if p <= 0 or g <= 0 or k <= 0:
        raise OperatorError(f"_contrib_PSROIPooling: pooled_size, group_size and output_dim must be positive, "
                            f"got {p}, {g}, {k}")
    if d is not None and len(d) != 4:
        raise ShapeError(f"_contrib_PSROIPooling: data must be 4-D (N, C, H, W), got {tuple(d)}")
    if d is not None and d[1] is not None and d[1] != k * g * g:
        raise ShapeError(f"_contrib_PSROIPooling: data has {d[1]} channels, output_dim * group_size^2 = {k * g * g}")
    if rois is not None and (len(rois) != 2 or (rois[1] is not None and rois[1] != 5)):
        raise ShapeError(f"_contrib_PSROIPooling: rois must be (R, 5), got {tuple(rois)}")
    if d is None or rois is None:
        return in_shapes, [None]
    return [tuple(d), tuple(rois)], [(rois[0], k, p, p)]


def _round(v: float) -> float:
    return math.copysign(math.floor(abs(v) + 0.5), v)


def _windows(attrs, roi, h: int, w: int):
    """Per bin (i, j): (channel group index gi * G + gj, h0, h1, w0, w1) of one ROI."""
    p, g, s = attrs["pooled_size"], _group(attrs), attrs["spatial_scale"]
    x1, y1 = _round(float(roi[1])) * s, _round(float(roi[2])) * s
    x2, y2 = (_round(float(roi[3])) + 1.0) * s, (_round(float(roi[4])) + 1.0) * s
    bh, bw = max(y2 - y1, 0.1) / p, max(x2 - x1, 0.1) / p
    out = []
    for i in range(p):
        h0 = min(max(math.floor(i * bh + y1), 0), h)
        h1 = min(max(math.ceil((i + 1) * bh + y1), 0), h)
        gi = min(max(i * g // p, 0), g - 1)
        for j in range(p):
            w0 = min(max(math.floor(j * bw + x1), 0), w)
            w1 = min(max(math.ceil((j + 1) * bw + x1), 0), w)
            gj = min(max(j * g // p, 0), g - 1)
            out.append((i, j, gi * g + gj, h0, h1, w0, w1))
    return out


def _forward(ctx, attrs, inputs, outputs, aux):
    data, rois = (to_host(x) for x in inputs)
    n, _, h, w = data.shape
    k_out, g = attrs["output_dim"], _group(attrs)
    out = np.zeros(outputs[0].shape, dtype=np.float64)
    chans = np.arange(k_out) * g * g
    for r, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < n:
            raise OperatorError(f"_contrib_PSROIPooling: roi {r} names batch index {b}, data has {n} images")
        for i, j, grp, h0, h1, w0, w1 in _windows(attrs, roi, h, w):
            if h1 > h0 and w1 > w0:
                out[r, :, i, j] = data[b, chans + grp, h0:h1, w0:w1].astype(np.float64).mean(axis=(1, 2))
    outputs[0][...] = ctx.xp.asarray(out)


def _backward(ctx, attrs, inputs, outputs, aux):
    gout, data, rois = (to_host(x) for x in inputs)
    _, _, h, w = data.shape
    k_out, g = attrs["output_dim"], _group(attrs)
    dx = np.zeros(data.shape, dtype=np.float64)
    chans = np.arange(k_out) * g * g
    for r, roi in enumerate(rois):
        b = int(roi[0])
        for i, j, grp, h0, h1, w0, w1 in _windows(attrs, roi, h, w):
            if h1 > h0 and w1 > w0:
                dx[b, chans + grp, h0:h1, w0:w1] += (gout[r, :, i, j] / ((h1 - h0) * (w1 - w0)))[:, None, None]
    for o, v in ((outputs[0], dx), (outputs[1], np.zeros(rois.shape))):
        o[...] = ctx.xp.asarray(v)


with_backward(OpDef(
    name="_contrib_PSROIPooling", attrs=_ATTRS, inputs=["data", "rois"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _forward},
    doc="Position-sensitive ROI average pooling (R-FCN)."),
    _backward, "Gradient of PSROIPooling: each output gradient spread over its window; zeros for rois.")
