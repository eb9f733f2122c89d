"""_contrib_ROIAlign (MXNet 1.x): average of bilinear samples over each bin of each region of interest.

Bilinear sampling is separable, so for one ROI the pooled map of a channel is A_h @ data @ A_w^T / count,
where row ph of A_h holds the interpolation weights of the bin's sample rows over H (A_w likewise over W;
a sample outside [-1, H] or [-1, W] contributes nothing, as MXNet).  The gradient for data is the
transposed map A_h^T @ dy @ A_w / count scattered into the ROI's image; rois get a zero gradient (MXNet).
position_sensitive takes output channel c, bin (ph, pw) from input channel c * PH * PW + ph * PW + pw."""
from __future__ import annotations

import numpy as np

from ..backend import to_host
from ..base import OperatorError, ShapeError
from ._common import with_backward
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
    data, rois = (to_host(x) for x in inputs)
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
    outputs[0][...] = ctx.xp.asarray(out)


def _backward(ctx, attrs, inputs, outputs, aux):
    g, data, rois = (to_host(x) for x in inputs)
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
        o[...] = ctx.xp.asarray(v)


with_backward(OpDef(
    name="_contrib_ROIAlign", attrs=_ATTRS, inputs=["data", "rois"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _forward},
    doc="Bilinear-sample average pooling of regions of interest (Mask R-CNN's ROIAlign)."),
    _backward, "Gradient of ROIAlign: the transposed bilinear maps for data, zeros for rois.")


# -- _contrib_RROIAlign: rotated regions [batch, center_x, center_y, width, height, angle in degrees] ---------
_R_ATTRS = {
    "pooled_size": Attr("shape", doc="(PH, PW) output bins"),
    "spatial_scale": Attr("float", doc="rois coordinates times this give data coordinates"),
    "sampling_ratio": Attr("int", -1, doc="samples per bin side; <= 0: ceil(roi size / bins)"),
}


def _rroi_infer_shape(attrs, in_shapes):
    d, rois = in_shapes
    ph, pw = _bins(attrs)
    if d is not None and len(d) != 4:
        raise ShapeError(f"_contrib_RROIAlign: data must be 4-D (N, C, H, W), got {tuple(d)}")
    if rois is not None and (len(rois) != 2 or (rois[1] is not None and rois[1] != 6)):
        raise ShapeError("_contrib_RROIAlign: rois must be (R, 6) [batch, center_x, center_y, width, height, "
                         f"angle], got {tuple(rois)}")
    if d is None or rois is None:
        return in_shapes, [None]
    return [tuple(d), tuple(rois)], [(rois[0], d[1], ph, pw)]


def _bilinear_gather(img, y, x):
    """Bilinear samples of img (C, H, W) at points y, x (same shape S): (C, S); 0 outside [-1, H] x [-1, W]."""
    _, h, w = img.shape
    valid = (y >= -1.0) & (y <= h) & (x >= -1.0) & (x <= w)
    y, x = np.maximum(y, 0.0), np.maximum(x, 0.0)
    y0, x0 = y.astype(np.int64), x.astype(np.int64)
    top_y, top_x = y0 >= h - 1, x0 >= w - 1
    y0, x0 = np.where(top_y, h - 1, y0), np.where(top_x, w - 1, x0)
    y, x = np.where(top_y, y0, y), np.where(top_x, x0, x)
    y1, x1 = np.where(top_y, y0, y0 + 1), np.where(top_x, x0, x0 + 1)
    ly, lx = y - y0, x - x0
    val = ((1 - ly) * (1 - lx) * img[:, y0, x0] + (1 - ly) * lx * img[:, y0, x1]
           + ly * (1 - lx) * img[:, y1, x0] + ly * lx * img[:, y1, x1])
    return np.where(valid, val, 0.0)


def _rroi_forward(ctx, attrs, inputs, outputs, aux):
    data, rois = (to_host(x) for x in inputs)
    n = data.shape[0]
    ph, pw = _bins(attrs)
    t = data.dtype.type
    out = np.zeros(outputs[0].shape, dtype=np.float64)
    for k, roi in enumerate(rois):
        b = int(roi[0])
        if not 0 <= b < n:
            raise OperatorError(f"_contrib_RROIAlign: roi {k} names batch index {b}, data has {n} images")
        cx, cy, rw, rh = (t(v) * t(attrs["spatial_scale"]) for v in roi[1:5])
        theta = float(t(roi[5]) * t(np.pi / 180.0))
        rw, rh = max(rw, t(1.0)), max(rh, t(1.0))
        bin_h, bin_w = rh / t(ph), rw / t(pw)
        r = attrs["sampling_ratio"]
        gh = r if r > 0 else int(np.ceil(rh / t(ph)))
        gw = r if r > 0 else int(np.ceil(rw / t(pw)))
        # sample offsets in the roi's frame (centered), (PH, gh) rows and (PW, gw) columns
        yy = -rh / 2 + np.arange(ph)[:, None] * bin_h + (np.arange(gh)[None, :] + 0.5) * bin_h / gh
        xx = -rw / 2 + np.arange(pw)[:, None] * bin_w + (np.arange(gw)[None, :] + 0.5) * bin_w / gw
        yy, xx = yy[:, :, None, None], xx[None, None, :, :]
        cos, sin = np.cos(theta), np.sin(theta)
        x = xx * cos + yy * sin + cx
        y = yy * cos - xx * sin + cy
        vals = _bilinear_gather(data[b].astype(np.float64), y, x)  # (C, PH, gh, PW, gw)
        out[k] = vals.mean(axis=(2, 4))
    outputs[0][...] = ctx.xp.asarray(out)


register(OpDef(
    name="_contrib_RROIAlign", attrs=_R_ATTRS, inputs=["data", "rois"], outputs=["output"],
    infer_shape=_rroi_infer_shape, infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _rroi_forward},
    doc="ROIAlign of rotated regions (forward only, as MXNet 1.9.1)."))
