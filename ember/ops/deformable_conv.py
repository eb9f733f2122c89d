"""_contrib_DeformableConvolution (MXNet 1.x, 2-D, NCHW): a convolution whose kernel taps are moved by
learned offsets and read by bilinear interpolation (Dai et al., 2017).

Tap (i, j) of output (y, x) reads channel c at (y * sh - ph + i * dh + oy, x * sw - pw + j * dw + ox),
where (oy, ox) = offset[n, g * 2 * kh * kw + 2 * (i * kw + j) + (0, 1), y, x] for the deformable group g
of c.  As MXNet 1.9.1's CPU kernel: a point outside [0, H) x [0, W) reads 0, and one in the last row
(column) reads that row (column) alone.  The sampled columns then meet the weights as in Convolution (num_group
groups).  Gradients: data (bilinear weights scattered back), offset (the interpolation's slope along
each coordinate), weight and bias."""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from ._nn_util import merge, positive, spatial
from .registry import Attr, OpDef, register

_ATTRS = {
    "kernel": Attr("shape", doc="(kh, kw)"),
    "stride": Attr("shape", (), doc="(default 1)"),
    "dilate": Attr("shape", (), doc="(default 1)"),
    "pad": Attr("shape", (), doc="(default 0)"),
    "num_filter": Attr("int", doc="output channels"),
    "num_group": Attr("int", 1, doc="channel groups of the weights"),
    "num_deformable_group": Attr("int", 1, doc="channel groups sharing one set of offsets"),
    "workspace": Attr("int", 1024, doc="accepted for MXNet compatibility"),
    "no_bias": Attr("bool", False, doc="drop the bias input"),
    "layout": Attr("str_or_none", None, choices=("NCHW",)),
}
_OP = "_contrib_DeformableConvolution"


def _geometry(attrs):
    k = tuple(attrs["kernel"])
    if len(k) != 2:
        raise OperatorError(f"{_OP}: only 2-D kernels are supported, got kernel={k}")
    s, d, p = (spatial(_OP, n, attrs[n], 2, dflt) for n, dflt in (("stride", 1), ("dilate", 1), ("pad", 0)))
    positive(_OP, "kernel", k)
    positive(_OP, "stride", s)
    positive(_OP, "dilate", d)
    positive(_OP, "pad", p, allow_zero=True)
    return k, s, d, p


def _inputs(attrs):
    return ["data", "offset", "weight"] + ([] if attrs["no_bias"] else ["bias"])


def _infer_shape(attrs, in_shapes):
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = _geometry(attrs)
    d = in_shapes[0]
    f, ng, dg = attrs["num_filter"], attrs["num_group"], attrs["num_deformable_group"]
    if d is None or None in d:
        return in_shapes, [None]
    if len(d) != 4:
        raise ShapeError(f"{_OP}: data must be 4-D (N, C, H, W), got {tuple(d)}")
    n, c, h, w = d
    if c % ng or f % ng or c % dg:
        raise ShapeError(f"{_OP}: channels {c} and num_filter {f} must divide by num_group {ng}, channels by "
                         f"num_deformable_group {dg}")
    ho = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    wo = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    if ho <= 0 or wo <= 0:
        raise ShapeError(f"{_OP}: kernel larger than the padded input {tuple(d)}")
    want = [tuple(d), (n, dg * 2 * kh * kw, ho, wo), (f, c // ng, kh, kw)] + ([] if attrs["no_bias"] else [(f,)])
    for given, shape, name in zip(in_shapes[1:], want[1:], _inputs(attrs)[1:]):
        merge(_OP, name, given, shape)  # a given shape may leave dimensions unknown (a deferred weight)
    return want, [(n, f, ho, wo)]


def _points(attrs, offset, h, w):
    """Sample coordinates (N, DG, kh, kw, Ho, Wo) for y and x."""
    (kh, kw), (sh, sw), (dh, dw), (ph, pw) = _geometry(attrs)
    n, _, ho, wo = offset.shape
    off = offset.reshape(n, attrs["num_deformable_group"], kh, kw, 2, ho, wo).astype(np.float64)
    base_y = (np.arange(ho) * sh - ph)[None, :, None] + (np.arange(kh) * dh)[:, None, None]   # (kh, Ho, 1)
    base_x = (np.arange(wo) * sw - pw)[None, None, :] + (np.arange(kw) * dw)[:, None, None]   # (kw, 1, Wo)
    py = base_y[None, None, :, None, :, :] + off[:, :, :, :, 0]
    px = base_x[None, None, None, :, :, :] + off[:, :, :, :, 1]
    return py, px


def _corners(py, px, h, w):
    """Per point: validity, the four corner indices (clipped) with in-image masks, and lh, lw."""
    valid = (py >= 0) & (py < h) & (px >= 0) & (px < w)  # MXNet 1.9.1's CPU kernel reads 0 before row/col 0
    y0, x0 = np.floor(py), np.floor(px)
    # a point in the last row (column) reads that row alone: MXNet clamps the pair there
    top_y, top_x = y0 >= h - 1, x0 >= w - 1
    y0, x0 = np.where(top_y, h - 1, y0), np.where(top_x, w - 1, x0)
    ly, lx = np.where(top_y, 0.0, py - y0), np.where(top_x, 0.0, px - x0)
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    y1, x1 = np.where(top_y, y0, y0 + 1), np.where(top_x, x0, x0 + 1)
    corners = []
    for yy, xx, wy, wx in ((y0, x0, 1 - ly, 1 - lx), (y0, x1, 1 - ly, lx), (y1, x0, ly, 1 - lx), (y1, x1, ly, lx)):
        inside = valid & (yy >= 0) & (yy <= h - 1) & (xx >= 0) & (xx <= w - 1)
        corners.append((np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1), inside, wy, wx))
    return corners, ly, lx


def _columns(attrs, data, offset):
    """Sampled columns (N, C, kh, kw, Ho, Wo)."""
    n, c, h, w = data.shape
    dg = attrs["num_deformable_group"]
    py, px = _points(attrs, offset, h, w)
    corners, _, _ = _corners(py, px, h, w)
    x = data.astype(np.float64).reshape(n, dg, c // dg, h, w)
    cols = 0.0
    nn = np.arange(n)[:, None, None, None, None, None]
    gg = np.arange(dg)[None, :, None, None, None, None]
    for yy, xx, inside, wy, wx in corners:
        vals = x[nn, gg, :, yy, xx]                       # (N, DG, kh, kw, Ho, Wo, C/DG)
        cols = cols + np.moveaxis(vals, -1, 2) * (inside * wy * wx)[:, :, None]
    return cols.reshape(n, c, *cols.shape[3:])


def _forward(ctx, attrs, inputs, outputs, aux):
    data, offset, weight = (a if ctx.xp is np else a.get() for a in inputs[:3])
    n, c = data.shape[:2]
    f, ng = attrs["num_filter"], attrs["num_group"]
    cols = _columns(attrs, data, offset)                  # (N, C, kh, kw, Ho, Wo)
    ho, wo = cols.shape[-2:]
    cols = cols.reshape(n, ng, -1, ho * wo)
    wmat = weight.astype(np.float64).reshape(ng, f // ng, -1)
    out = np.einsum("gfk,ngkp->ngfp", wmat, cols).reshape(n, f, ho, wo)
    if not attrs["no_bias"]:
        out += (inputs[3] if ctx.xp is np else inputs[3].get()).astype(np.float64)[None, :, None, None]
    outputs[0][...] = out if ctx.xp is np else ctx.xp.asarray(out)


def _backward(ctx, attrs, inputs, outputs, aux):
    g, data, offset, weight = (a if ctx.xp is np else a.get() for a in inputs[:4])
    n, c, h, w = data.shape
    f, ng, dg = attrs["num_filter"], attrs["num_group"], attrs["num_deformable_group"]
    (kh, kw) = tuple(attrs["kernel"])
    ho, wo = g.shape[-2:]
    g64 = g.astype(np.float64).reshape(n, ng, f // ng, ho * wo)
    wmat = weight.astype(np.float64).reshape(ng, f // ng, -1)
    cols = _columns(attrs, data, offset).reshape(n, ng, -1, ho * wo)
    dweight = np.einsum("ngfp,ngkp->gfk", g64, cols).reshape(weight.shape)
    dcols = np.einsum("gfk,ngfp->ngkp", wmat, g64).reshape(n, dg, c // dg, kh, kw, ho, wo)
    py, px = _points(attrs, offset, h, w)
    corners, ly, lx = _corners(py, px, h, w)
    x = data.astype(np.float64).reshape(n, dg, c // dg, h, w)
    ddata = np.zeros((n, dg, c // dg, h, w))
    dy_coord = np.zeros(py.shape)
    dx_coord = np.zeros(px.shape)
    nn = np.arange(n)[:, None, None, None, None, None]
    gg = np.arange(dg)[None, :, None, None, None, None]
    # d(value)/dy and d(value)/dx of each corner's term: sign of the weight's slope times the other weight
    slopes = (((-1, 1 - lx), (-1, 1 - ly)), ((-1, lx), (1, 1 - ly)), ((1, 1 - lx), (-1, ly)), ((1, lx), (1, ly)))
    for (yy, xx, inside, wy, wx), ((sy, oy), (sx, ox)) in zip(corners, slopes):
        m = inside.astype(np.float64)
        contrib = dcols * (m * wy * wx)[:, :, None]                       # (N, DG, C/DG, kh, kw, Ho, Wo)
        idx_n = np.broadcast_to(nn[:, :, None], contrib.shape)
        idx_g = np.broadcast_to(gg[:, :, None], contrib.shape)
        idx_c = np.broadcast_to(np.arange(c // dg)[None, None, :, None, None, None, None], contrib.shape)
        idx_y = np.broadcast_to(yy[:, :, None], contrib.shape)
        idx_x = np.broadcast_to(xx[:, :, None], contrib.shape)
        np.add.at(ddata, (idx_n, idx_g, idx_c, idx_y, idx_x), contrib)
        vals = np.moveaxis(x[nn, gg, :, yy, xx], -1, 2)                    # (N, DG, C/DG, kh, kw, Ho, Wo)
        both = (dcols * vals).sum(axis=2) * m
        dy_coord += both * sy * oy
        dx_coord += both * sx * ox
    doffset = np.stack([dy_coord, dx_coord], axis=4).reshape(offset.shape)
    grads = [ddata.reshape(data.shape), doffset, dweight]
    if not attrs["no_bias"]:
        grads.append(g.astype(np.float64).sum(axis=(0, 2, 3)))
    for o, v in zip(outputs, grads):
        o[...] = v if ctx.xp is np else ctx.xp.asarray(v)


register(OpDef(
    name="_backward_contrib_DeformableConvolution", attrs=_ATTRS,
    inputs=lambda a: ["ograd", "data", "offset", "weight"],
    outputs=lambda a: ["data_grad", "offset_grad", "weight_grad"] + ([] if a["no_bias"] else ["bias_grad"]),
    infer_shape=lambda a, s: (s, list(s[1:4]) + ([] if a["no_bias"] else [(s[3][0],)])),
    infer_type=lambda a, d: (list(d), [d[1]] * (3 if a["no_bias"] else 4)),
    kernels={"any": _backward}, doc="Gradients of DeformableConvolution."))
register(OpDef(
    name=_OP, attrs=_ATTRS, inputs=_inputs, outputs=["output"],
    infer_shape=_infer_shape, infer_type=lambda a, d: ([d[0]] * len(d), [d[0]]), kernels={"any": _forward},
    gradient=lambda F, a, i, o, g: list(F._backward_contrib_DeformableConvolution(g[0], i[0], i[1], i[2], **a)),
    doc="Convolution with learned per-tap offsets sampled bilinearly (2-D, NCHW)."))
