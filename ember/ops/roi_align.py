"""_contrib_ROIAlign (MXNet 1.x): average of bilinear samples over each bin of each region of interest.

Bilinear sampling is separable, so for one ROI the pooled map of a channel is A_h @ data @ A_w^T / count,
where row ph of A_h holds the interpolation weights of the bin's sample rows over H (A_w likewise over W;
a sample outside [-1, H] or [-1, W] contributes nothing, as MXNet).  The gradient for data is the
transposed map A_h^T @ dy @ A_w / count scattered into the ROI's image; rois get a zero gradient (MXNet).
position_sensitive takes output channel c, bin (ph, pw) from input channel c * PH * PW + ph * PW + pw."""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from .registry import Attr, OpDef, register

_ATTRS = {
    "pooled_size": Attr("shape", doc="(PH, PW) output bins"),
    "spatial_scale": Attr("float", doc="rois coordinates times this give data coordinates"),
    "sample_ratio": Attr("int", -1, doc="samples per bin side; <= 0: ceil(roi size / bins)"),
    "position_sensitive": Attr("bool", False, doc="each bin reads its own group of channels"),
    "aligned": Attr("bool", False, doc="shift coordinates by -0.5 pixel (and no minimum roi size of 1)"),
}


def _bins(attrs):
    ps = tuple(attrs["pooled_size"])
    if len(ps) != 2 or min(ps) <= 0:
        raise OperatorError(f"_contrib_ROIAlign: pooled_size must be two positive sizes, got {ps}")
    return ps


def _infer_shape(attrs, in_shapes):
    d, rois = in_shapes
    ph, pw = _bins(attrs)
    if d is not None and len(d) != 4:
        raise ShapeError(f"_contrib_ROIAlign: data must be 4-D (N, C, H, W), got {tuple(d)}")
    if rois is not None and (len(rois) != 2 or (rois[1] is not None and rois[1] != 5)):
        raise ShapeError(f"_contrib_ROIAlign: rois must be (R, 5) [batch, x1, y1, x2, y2], got {tuple(rois)}")
    if d is None or rois is None or d[1] is None:
        return in_shapes, [None]
    c = d[1]
    if attrs["position_sensitive"]:
        if c % (ph * pw):
            raise ShapeError(f"_contrib_ROIAlign: position_sensitive needs channels ({c}) divisible by "
                             f"PH * PW = {ph * pw}")
        c //= ph * pw
    return [tuple(d), tuple(rois)], [(rois[0], c, ph, pw)]


def _axis_weights(start, bin_size, bins: int, grid: int, size: int, dtype) -> np.ndarray:
    """(bins, size): summed bilinear weights of each bin's `grid` samples along one axis."""
    t = dtype.type
    a = np.zeros((bins, size), dtype=np.float64)
    for p in range(bins):
        for i in range(grid):
            v = t(start + t(p) * bin_size + (t(i) + t(0.5)) * bin_size / t(grid))
            if v < -1.0 or v > size:
                continue
            v = max(t(0.0), v)
            lo = int(v)
            if lo >= size - 1:
                a[p, size - 1] += 1.0
                continue
            frac = float(v - t(lo))
            a[p, lo] += 1.0 - frac
            a[p, lo + 1] += frac
    return a


def _roi_maps(attrs, roi, h: int, w: int, dtype):
    """(A_h, A_w, 1 / count) of one ROI row [batch, x1, y1, x2, y2]."""
    t = dtype.type
    ph, pw = _bins(attrs)
    scale = t(attrs["spatial_scale"])
    off = t(0.5) if attrs["aligned"] else t(0.0)
    x1, y1, x2, y2 = (t(v) * scale - off for v in roi[1:5])
    roi_w, roi_h = x2 - x1, y2 - y1
    if not attrs["aligned"]:
        roi_w, roi_h = max(roi_w, t(1.0)), max(roi_h, t(1.0))
    bin_h, bin_w = roi_h / t(ph), roi_w / t(pw)
    r = attrs["sample_ratio"]
    gh = r if r > 0 else int(np.ceil(roi_h / t(ph)))
    gw = r if r > 0 else int(np.ceil(roi_w / t(pw)))
    inv_count = 1.0 / max(gh * gw, 1)
    return _axis_weights(y1, bin_h, ph, gh, h, dtype), _axis_weights(x1, bin_w, pw, gw, w, dtype), inv_count


def _select(attrs, full, ph: int, pw: int):
    """Output channels from (C, PH, PW): all of them, or the position-sensitive groups."""
    if not attrs["position_sensitive"]:
        return full
    c_out = full.shape[0] // (ph * pw)
    grouped = full.reshape(c_out, ph, pw, ph, pw)
    return grouped[:, np.arange(ph)[:, None], np.arange(pw)[None, :], np.arange(ph)[:, None], np.arange(pw)[None, :]]


def _forward(ctx, attrs, inputs, outputs, aux):
    data, rois = (x if ctx.xp is np else x.get() for x in inputs)
    n, c, h, w = data.shape
    ph, pw = _bins(attrs)
    out = np.zeros(outputs[0].shape, dtype=np.float64)
    for k, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < n:
            raise OperatorError(f"_contrib_ROIAlign: roi {k} names batch index {b}, data has {n} images")
        a_h, a_w, inv = _roi_maps(attrs, roi, h, w, data.dtype)
        full = np.einsum("ph,chw,qw->cpq", a_h, data[b].astype(np.float64), a_w) * inv
        out[k] = _select(attrs, full, ph, pw)
    outputs[0][...] = out if ctx.xp is np else ctx.xp.asarray(out)


def _backward(ctx, attrs, inputs, outputs, aux):
    g, data, rois = (x if ctx.xp is np else x.get() for x in inputs)
    n, c, h, w = data.shape
    ph, pw = _bins(attrs)
    dx = np.zeros(data.shape, dtype=np.float64)
    for k, roi in enumerate(rois):
        b = int(roi[0])
        a_h, a_w, inv = _roi_maps(attrs, roi, h, w, data.dtype)
        gk = g[k].astype(np.float64)
        if attrs["position_sensitive"]:
            full = np.zeros((c, ph, pw))
            c_out = c // (ph * pw)
            full.reshape(c_out, ph, pw, ph, pw)[:, np.arange(ph)[:, None], np.arange(pw)[None, :],
                                                 np.arange(ph)[:, None], np.arange(pw)[None, :]] = gk
            gk = full
        dx[b] += np.einsum("ph,cpq,qw->chw", a_h, gk, a_w) * inv
    for o, v in ((outputs[0], dx), (outputs[1], np.zeros(rois.shape))):
        o[...] = v if ctx.xp is np else ctx.xp.asarray(v)


register(OpDef(
    name="_backward_contrib_ROIAlign", attrs=_ATTRS, inputs=["ograd", "data", "rois"],
    outputs=["data_grad", "rois_grad"], infer_shape=lambda a, s: (s, [s[1], s[2]]),
    infer_type=lambda a, d: (list(d), [d[1], d[2]]), kernels={"any": _backward},
    doc="Gradient of ROIAlign: the transposed bilinear maps for data, zeros for rois."))
register(OpDef(
    name="_contrib_ROIAlign", attrs=_ATTRS, inputs=["data", "rois"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _forward},
    gradient=lambda F, a, i, o, g: list(F._backward_contrib_ROIAlign(g[0], i[0], i[1], **a)),
    doc="Bilinear-sample average pooling of regions of interest (Mask R-CNN's ROIAlign)."))
