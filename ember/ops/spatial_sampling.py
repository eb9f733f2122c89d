"""Sampling layers of MXNet 1.x: GridGenerator, BilinearSampler, SpatialTransformer and ROIPooling.

Grids are normalised to [-1, 1] (x: column, y: row; -1 is the first pixel, 1 the last) as in
MXNet; BilinearSampler reads 0 outside the input.  SpatialTransformer is GridGenerator(affine)
followed by BilinearSampler, and its gradient runs through those two backward ops.
"""
from __future__ import annotations

import math

import numpy as np

from ..backend import to_host
from ..base import OperatorError, ShapeError
from ._common import known, with_backward
from ._nn_util import float_type_rule, float_types, merge, scatter_add
from .registry import Attr, OpDef, register


# -- GridGenerator -----------------------------------------------------------------------------------
_GG_ATTRS = {
    "transform_type": Attr("str", doc="affine (data (N, 6)) or warp (data (N, 2, H, W): a flow field)",
                           choices=("affine", "warp")),
    "target_shape": Attr("shape", (0, 0), doc="(H, W) of the grid for affine"),
}


def _gg_shape(attrs, in_shapes):
    d = in_shapes[0]
    if attrs["transform_type"] == "affine":
        th, tw = (tuple(attrs["target_shape"]) + (0, 0))[:2]
        if th <= 0 or tw <= 0:
            raise OperatorError(f"GridGenerator: affine needs a positive target_shape, got {attrs['target_shape']}")
        if d is None:
            return in_shapes, [None]
        if len(d) != 2 or (d[1] is not None and d[1] != 6):
            raise ShapeError(f"GridGenerator: affine data must be (batch, 6), got {tuple(d)}")
        return [tuple(d)], [(d[0], 2, th, tw)]
    if not known(d):
        return in_shapes, [None if d is None else tuple(d)]
    if len(d) != 4 or d[1] != 2:
        raise ShapeError(f"GridGenerator: warp data must be (batch, 2, H, W), got {tuple(d)}")
    return [tuple(d)], [tuple(d)]


def _base_grid(xp, h, w, dtype):
    """(3, h*w) rows x, y, 1 of the normalised target grid."""
    xs = -1.0 + np.arange(w) * (2.0 / (w - 1)) if w > 1 else np.full(w, -1.0)
    ys = -1.0 + np.arange(h) * (2.0 / (h - 1)) if h > 1 else np.full(h, -1.0)
    gx, gy = np.meshgrid(xs, ys)
    return xp.asarray(np.stack([gx.reshape(-1), gy.reshape(-1), np.ones(h * w)]), dtype=dtype)


def _gg_forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    d, out = inputs[0], outputs[0]
    n, _, h, w = out.shape
    if attrs["transform_type"] == "affine":
        out[...] = xp.matmul(d.reshape(n, 2, 3), _base_grid(xp, h, w, d.dtype)).reshape(out.shape)
        return
    out[:, 0] = (d[:, 0] + xp.arange(w, dtype=d.dtype)) / d.dtype.type((w - 1) / 2.0) - 1
    out[:, 1] = (d[:, 1] + xp.arange(h, dtype=d.dtype)[:, None]) / d.dtype.type((h - 1) / 2.0) - 1


def _gg_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, dd = inputs[0], outputs[0]
    n, _, h, w = g.shape
    if attrs["transform_type"] == "affine":
        dd[...] = xp.matmul(g.reshape(n, 2, h * w), _base_grid(xp, h, w, g.dtype).T).reshape(dd.shape)
        return
    dd[:, 0] = g[:, 0] * g.dtype.type(2.0 / (w - 1))
    dd[:, 1] = g[:, 1] * g.dtype.type(2.0 / (h - 1))


with_backward(OpDef(
    name="GridGenerator", attrs=_GG_ATTRS, inputs=["data"], outputs=["output"], infer_shape=_gg_shape,
    infer_type=float_type_rule("GridGenerator"), kernels={"any": _gg_forward},
    doc="Sampling grid (N, 2, H, W) in [-1, 1] from affine parameters (N, 6) or a flow field (N, 2, H, W)."),
    _gg_backward, "Gradient of GridGenerator (data read for its shape).", ograd="out_grad", infer_type=None)


# -- BilinearSampler -----------------------------------------------------------------------------------
def _bs_shape(attrs, in_shapes, op="BilinearSampler"):
    d, grid = in_shapes
    if d is not None and len(d) != 4:
        raise ShapeError(f"{op}: data must be 4-D (N, C, H, W), got {tuple(d)}")
    if grid is not None and (len(grid) != 4 or (grid[1] is not None and grid[1] != 2)):
        raise ShapeError(f"{op}: grid must be (N, 2, H, W), got {tuple(grid)}")
    if not known(d) or not known(grid):
        return in_shapes, [None]
    if d[0] != grid[0]:
        raise ShapeError(f"{op}: data batch {d[0]} differs from grid batch {grid[0]}")
    return [tuple(d), tuple(grid)], [(d[0], d[1], grid[2], grid[3])]


class _Corners:
    """Bilinear corner indices, weights and validity of every grid point."""

    def __init__(self, xp, grid, h, w):
        x = (grid[:, 0].astype(np.float64) + 1) * (w - 1) / 2.0
        y = (grid[:, 1].astype(np.float64) + 1) * (h - 1) / 2.0
        self.x0 = xp.floor(x).astype(np.int64)
        self.y0 = xp.floor(y).astype(np.int64)
        self.wx = 1.0 - (x - self.x0)  # weight of the left column
        self.wy = 1.0 - (y - self.y0)  # weight of the top row
        self.h, self.w = h, w
        self.n = xp.arange(grid.shape[0]).reshape(-1, 1, 1)

    def each(self):
        """(dy, dx, weight of the corner) for the four corners."""
        return ((0, 0, self.wy * self.wx), (0, 1, self.wy * (1 - self.wx)),
                (1, 0, (1 - self.wy) * self.wx), (1, 1, (1 - self.wy) * (1 - self.wx)))

    def index(self, dy, dx):
        yy, xx = self.y0 + dy, self.x0 + dx
        valid = (yy >= 0) & (yy < self.h) & (xx >= 0) & (xx < self.w)
        return yy.clip(0, self.h - 1), xx.clip(0, self.w - 1), valid


def _corner_values(xp, data_nhwc, cs):
    vals = {}
    for dy, dx, _ in cs.each():
        yy, xx, valid = cs.index(dy, dx)
        vals[dy, dx] = data_nhwc[cs.n, yy, xx].astype(np.float64) * valid[..., None]
    return vals


def _bs_forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    d, grid = inputs
    cs = _Corners(xp, grid, d.shape[2], d.shape[3])
    vals = _corner_values(xp, d.transpose(0, 2, 3, 1), cs)
    res = sum(vals[dy, dx] * wgt[..., None] for dy, dx, wgt in cs.each())
    outputs[0][...] = res.transpose(0, 3, 1, 2)


def _bs_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, d, grid = inputs
    dd, dgrid = outputs
    h, w = d.shape[2], d.shape[3]
    cs = _Corners(xp, grid, h, w)
    g_nhwc = g.transpose(0, 2, 3, 1).astype(np.float64)
    acc = xp.zeros(d.transpose(0, 2, 3, 1).shape, dtype=np.float64)
    for dy, dx, wgt in cs.each():
        yy, xx, valid = cs.index(dy, dx)
        contrib = g_nhwc * (wgt * valid)[..., None]
        n_idx = xp.broadcast_to(cs.n, yy.shape)
        scatter_add(xp, acc, (n_idx.reshape(-1), yy.reshape(-1), xx.reshape(-1)), contrib.reshape(-1, d.shape[1]))
    dd[...] = acc.transpose(0, 3, 1, 2)
    v = _corner_values(xp, d.transpose(0, 2, 3, 1), cs)
    # d out / d x (pixels) and d out / d y, summed over channels against the head gradient
    dx_pix = ((v[0, 1] - v[0, 0]) * cs.wy[..., None] + (v[1, 1] - v[1, 0]) * (1 - cs.wy)[..., None])
    dy_pix = ((v[1, 0] - v[0, 0]) * cs.wx[..., None] + (v[1, 1] - v[0, 1]) * (1 - cs.wx)[..., None])
    dgrid[:, 0] = (dx_pix * g_nhwc).sum(axis=-1) * ((w - 1) / 2.0)
    dgrid[:, 1] = (dy_pix * g_nhwc).sum(axis=-1) * ((h - 1) / 2.0)


_BS_ATTRS = {"cudnn_off": Attr("bool_or_none", None, doc="unused (MXNet: do not use cuDNN)")}

with_backward(OpDef(
    name="BilinearSampler", attrs=_BS_ATTRS, inputs=["data", "grid"], outputs=["output"], infer_shape=_bs_shape,
    infer_type=float_type_rule("BilinearSampler"), kernels={"any": _bs_forward},
    doc="Bilinear samples of data (N, C, H, W) at grid (N, 2, Ho, Wo) points in [-1, 1]; 0 outside."),
    _bs_backward, "Gradients of BilinearSampler with respect to data and grid.", ograd="out_grad")


# -- SpatialTransformer --------------------------------------------------------------------------------
_ST_ATTRS = {
    "target_shape": Attr("shape", (0, 0), doc="(H, W) of the output"),
    "transform_type": Attr("str", doc="only affine", choices=("affine",)),
    "sampler_type": Attr("str", doc="only bilinear", choices=("bilinear",)),
    "cudnn_off": Attr("bool_or_none", None, doc="unused"),
}


def _st_gg_attrs(attrs):
    return {"transform_type": "affine", "target_shape": attrs["target_shape"]}


def _st_shape(attrs, in_shapes):
    d, loc = in_shapes
    th, tw = (tuple(attrs["target_shape"]) + (0, 0))[:2]
    if th <= 0 or tw <= 0:
        raise OperatorError(f"SpatialTransformer: target_shape must be positive, got {attrs['target_shape']}")
    if d is not None and len(d) != 4:
        raise ShapeError(f"SpatialTransformer: data must be 4-D (N, C, H, W), got {tuple(d)}")
    if d is None:
        return in_shapes, [None]
    loc = merge("SpatialTransformer", "loc", loc, (d[0], 6))
    return [tuple(d), loc], [(d[0], d[1], th, tw)]


def _st_grid(ctx, attrs, loc):
    n = loc.shape[0]
    th, tw = attrs["target_shape"][:2]
    grid = ctx.xp.empty((n, 2, th, tw), dtype=loc.dtype)
    _gg_forward(ctx, _st_gg_attrs(attrs), [loc], [grid], [])
    return grid


def _st_forward(ctx, attrs, inputs, outputs, aux):
    d, loc = inputs
    _bs_forward(ctx, {}, [d, _st_grid(ctx, attrs, loc)], outputs, aux)


def _st_gradient(F, attrs, inputs, outputs, out_grads):
    data, loc = inputs
    grid = F.GridGenerator(loc, **_st_gg_attrs(attrs))
    res = F._backward_BilinearSampler(out_grads[0], data, grid)
    return [res[0], F._backward_GridGenerator(res[1], loc, **_st_gg_attrs(attrs))]


register(OpDef(
    name="SpatialTransformer", attrs=_ST_ATTRS, inputs=["data", "loc"], outputs=["output"], infer_shape=_st_shape,
    infer_type=float_type_rule("SpatialTransformer"), kernels={"any": _st_forward},
    gradient=_st_gradient,
    doc="BilinearSampler(data, GridGenerator(loc, 'affine', target_shape)): an affine warp of NCHW data."))


# -- ROIPooling ----------------------------------------------------------------------------------------
_ROI_ATTRS = {
    "pooled_size": Attr("shape", doc="(height, width) of every pooled region"),
    "spatial_scale": Attr("float", doc="ratio of the feature map to the image the rois are given in"),
}


def _roi_shape(attrs, in_shapes):
    d, rois = in_shapes
    ps = attrs["pooled_size"]
    if len(ps) != 2 or min(ps) <= 0:
        raise OperatorError(f"ROIPooling: pooled_size must be two positive sizes, got {ps}")
    if d is not None and len(d) != 4:
        raise ShapeError(f"ROIPooling: data must be 4-D (N, C, H, W), got {tuple(d)}")
    if rois is not None and (len(rois) != 2 or (rois[1] is not None and rois[1] != 5)):
        raise ShapeError(f"ROIPooling: rois must be (R, 5) [batch, x1, y1, x2, y2], got {tuple(rois)}")
    if d is None or rois is None:
        return in_shapes, [None, None]
    out = (rois[0], d[1], ps[0], ps[1])
    return [tuple(d), tuple(rois)], [out, out]


def _c_round(v):
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def _roi_bins(attrs, roi, h, w):
    """Yield (ph, pw, hs, he, ws, we) of each pooled bin of one roi."""
    ss = attrs["spatial_scale"]
    x1, y1, x2, y2 = (_c_round(float(v) * ss) for v in roi[1:5])
    rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
    ph_n, pw_n = attrs["pooled_size"]
    bh, bw = rh / ph_n, rw / pw_n
    for ph in range(ph_n):
        hs = min(max(int(math.floor(ph * bh)) + y1, 0), h)
        he = min(max(int(math.ceil((ph + 1) * bh)) + y1, 0), h)
        for pw in range(pw_n):
            ws = min(max(int(math.floor(pw * bw)) + x1, 0), w)
            we = min(max(int(math.ceil((pw + 1) * bw)) + x1, 0), w)
            yield ph, pw, hs, he, ws, we


def _roi_forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    d, rois = inputs
    out, arg = outputs
    n, c, h, w = d.shape
    out[...] = 0
    arg[...] = -1
    rois_host = to_host(rois)
    for r, roi in enumerate(rois_host):
        b = int(roi[0])
        if not 0 <= b < n:
            continue
        for ph, pw, hs, he, ws, we in _roi_bins(attrs, roi, h, w):
            if he <= hs or we <= ws:
                continue
            patch = d[b, :, hs:he, ws:we].reshape(c, -1)
            k = patch.argmax(axis=1)  # first maximum, as MXNet's strict '>' scan
            out[r, :, ph, pw] = patch[xp.arange(c), k]
            pw_len = we - ws
            arg[r, :, ph, pw] = (hs + k // pw_len) * w + ws + k % pw_len


def _roi_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, _, rois, arg = inputs
    dd, drois = outputs
    n, c, h, w = dd.shape
    drois[...] = 0
    acc = xp.zeros((n, c, h * w), dtype=np.float64)
    idx = arg.astype(np.int64)
    batch = xp.broadcast_to(rois[:, 0].astype(np.int64).reshape(-1, 1, 1, 1), idx.shape)
    chan = xp.broadcast_to(xp.arange(c).reshape(1, -1, 1, 1), idx.shape)
    keep = idx >= 0
    scatter_add(xp, acc, (batch[keep], chan[keep], idx[keep]), g[keep].astype(np.float64))
    dd[...] = acc.reshape(dd.shape)


register(OpDef(
    name="ROIPooling", attrs=_ROI_ATTRS, inputs=["data", "rois"], outputs=["output", "maxidx"],
    num_visible_outputs=lambda a: 1, infer_shape=_roi_shape,
    infer_type=lambda a, d: (float_types("ROIPooling", a, d, 2)[0], float_types("ROIPooling", a, d, 2)[1]),
    kernels={"any": _roi_forward},
    gradient=lambda F, a, i, o, g: list(F._backward_ROIPooling(g[0], i[0], i[1], o[1], **a)),
    doc="Max pooling of each region of interest (rows [batch, x1, y1, x2, y2] scaled by spatial_scale) "
        "into pooled_size bins; hidden output maxidx (flat h*W+w of each maximum, -1 for empty bins)."))
register(OpDef(
    name="_backward_ROIPooling", attrs=_ROI_ATTRS, inputs=["out_grad", "data", "rois", "maxidx"],
    outputs=["data_grad", "rois_grad"],
    infer_shape=lambda a, s: (s, [s[1], s[2]]), infer_type=lambda a, d: (list(d), [d[1], d[2]]),
    kernels={"any": _roi_backward},
    doc="Gradient of ROIPooling: each pooled gradient added at its maximum (data read for its shape); "
        "rois get zeros."))
