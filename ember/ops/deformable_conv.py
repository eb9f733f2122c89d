"""_contrib_DeformableConvolution (v1) and _contrib_ModulatedDeformableConvolution (v2), MXNet 1.x, 2-D, NCHW:
convolutions whose kernel taps are moved by learned offsets and read by bilinear interpolation (Dai et
al., 2017); v2 also scales each sampled tap by a learned mask (Zhu et al., 2019).

Tap (i, j) of output (y, x) reads channel c at (y * sh - ph + i * dh + oy, x * sw - pw + j * dw + ox),
where (oy, ox) = offset[n, g * 2 * kh * kw + 2 * (i * kw + j) + (0, 1), y, x] for the deformable group g
of c (v2: times mask[n, g * kh * kw + i * kw + j, y, x]).  Boundaries as MXNet 1.9.1's CPU kernels: v1
reads 0 for a point outside [0, H) x [0, W) and a point in the last row (column) reads that row
(column) alone; v2 reads a point in (-1, H) x (-1, W) from its four corners, those outside the image
as 0.  The sampled columns then meet the weights as in Convolution (num_group groups).  Gradients:
data (bilinear weights scattered back), offset (the interpolation's slope along each coordinate),
mask, weight and bias (MXNet computes v2's only on GPU)."""
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


def _infer_shape_of(modulated: bool):
    op = "_contrib_ModulatedDeformableConvolution" if modulated else _OP

    def infer(attrs, in_shapes):
        (kh, kw), (sh, sw), (dh, dw), (ph, pw) = _geometry(attrs)
        d = in_shapes[0]
        f, ng, dg = attrs["num_filter"], attrs["num_group"], attrs["num_deformable_group"]
        if d is None or None in d:
            return in_shapes, [None]
        if len(d) != 4:
            raise ShapeError(f"{op}: data must be 4-D (N, C, H, W), got {tuple(d)}")
        n, c, h, w = d
        if c % ng or f % ng or c % dg:
            raise ShapeError(f"{op}: channels {c} and num_filter {f} must divide by num_group {ng}, channels by "
                             f"num_deformable_group {dg}")
        ho = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
        wo = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
        if ho <= 0 or wo <= 0:
            raise ShapeError(f"{op}: kernel larger than the padded input {tuple(d)}")
        want = [tuple(d), (n, dg * 2 * kh * kw, ho, wo)] + ([(n, dg * kh * kw, ho, wo)] if modulated else []) \
            + [(f, c // ng, kh, kw)] + ([] if attrs["no_bias"] else [(f,)])
        names = ["data", "offset"] + (["mask"] if modulated else []) + ["weight", "bias"]
        for given, shape, name in zip(in_shapes[1:], want[1:], names[1:]):
            merge(op, name, given, shape)  # a given shape may leave dimensions unknown (a deferred weight)
        return want, [(n, f, ho, wo)]
    return infer


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


def _corners(py, px, h, w, modulated: bool = False):
    """Per point: the four corner indices (clipped) with their in-image masks and bilinear weights,
    and lh, lw.  DeformableConvolution's rule (MXNet 1.9.1's CPU kernel): a point outside [0, H) x
    [0, W) reads 0, one in the last row (column) reads that row (column) alone.  The modulated one's
    (MXNet's dmcn_im2col_bilinear): a point in (-1, H) x (-1, W) reads its four corners, those
    outside the image as 0."""
    y0, x0 = np.floor(py), np.floor(px)
    if modulated:
        valid = (py > -1) & (py < h) & (px > -1) & (px < w)
        ly, lx = py - y0, px - x0
        y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
        y1, x1 = y0 + 1, x0 + 1
    else:
        valid = (py >= 0) & (py < h) & (px >= 0) & (px < w)  # MXNet 1.9.1's CPU kernel reads 0 before row/col 0
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


def _columns(attrs, data, offset, modulated: bool = False):
    """Sampled columns (N, DG, C/DG, kh, kw, Ho, Wo), before any modulation mask."""
    n, c, h, w = data.shape
    dg = attrs["num_deformable_group"]
    py, px = _points(attrs, offset, h, w)
    corners, _, _ = _corners(py, px, h, w, modulated)
    x = data.astype(np.float64).reshape(n, dg, c // dg, h, w)
    cols = 0.0
    nn = np.arange(n)[:, None, None, None, None, None]
    gg = np.arange(dg)[None, :, None, None, None, None]
    for yy, xx, inside, wy, wx in corners:
        vals = x[nn, gg, :, yy, xx]                       # (N, DG, kh, kw, Ho, Wo, C/DG)
        cols = cols + np.moveaxis(vals, -1, 2) * (inside * wy * wx)[:, :, None]
    return cols


def _mask_view(attrs, mask):
    """The modulation mask (N, DG*kh*kw, Ho, Wo) as (N, DG, 1, kh, kw, Ho, Wo), in float64."""
    kh, kw = tuple(attrs["kernel"])
    n, _, ho, wo = mask.shape
    return mask.astype(np.float64).reshape(n, attrs["num_deformable_group"], 1, kh, kw, ho, wo)


def _host(ctx, arrays):
    return [a if ctx.xp is np else a.get() for a in arrays]


def _make_forward(modulated: bool):
    def forward(ctx, attrs, inputs, outputs, aux):
        k = 4 if modulated else 3
        data, offset, weight = _host(ctx, [inputs[0], inputs[1], inputs[k - 1]])
        n, c = data.shape[:2]
        f, ng = attrs["num_filter"], attrs["num_group"]
        cols = _columns(attrs, data, offset, modulated)
        if modulated:
            cols = cols * _mask_view(attrs, _host(ctx, [inputs[2]])[0])
        ho, wo = cols.shape[-2:]
        cols = cols.reshape(n, ng, -1, ho * wo)
        wmat = weight.astype(np.float64).reshape(ng, f // ng, -1)
        out = np.einsum("gfk,ngkp->ngfp", wmat, cols).reshape(n, f, ho, wo)
        if not attrs["no_bias"]:
            out += _host(ctx, [inputs[k]])[0].astype(np.float64)[None, :, None, None]
        outputs[0][...] = ctx.xp.asarray(out)
    return forward


def _make_backward(modulated: bool):
    def backward(ctx, attrs, inputs, outputs, aux):
        g, data, offset = _host(ctx, inputs[:3])
        mask = _host(ctx, [inputs[3]])[0] if modulated else None
        weight = _host(ctx, [inputs[4 if modulated else 3]])[0]
        n, c, h, w = data.shape
        f, ng, dg = attrs["num_filter"], attrs["num_group"], attrs["num_deformable_group"]
        (kh, kw) = tuple(attrs["kernel"])
        ho, wo = g.shape[-2:]
        g64 = g.astype(np.float64).reshape(n, ng, f // ng, ho * wo)
        wmat = weight.astype(np.float64).reshape(ng, f // ng, -1)
        raw = _columns(attrs, data, offset, modulated)          # (N, DG, C/DG, kh, kw, Ho, Wo)
        m6 = _mask_view(attrs, mask) if modulated else 1.0
        cols = (raw * m6).reshape(n, ng, -1, ho * wo)
        dweight = np.einsum("ngfp,ngkp->gfk", g64, cols).reshape(weight.shape)
        dcols = np.einsum("gfk,ngfp->ngkp", wmat, g64).reshape(n, dg, c // dg, kh, kw, ho, wo)
        dmask = (dcols * raw).sum(axis=2).reshape(mask.shape) if modulated else None
        dcols = dcols * m6   # the sampled value's gradient
        py, px = _points(attrs, offset, h, w)
        corners, ly, lx = _corners(py, px, h, w, modulated)
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
        grads = [ddata.reshape(data.shape), doffset] + ([dmask] if modulated else []) + [dweight]
        if not attrs["no_bias"]:
            grads.append(g.astype(np.float64).sum(axis=(0, 2, 3)))
        for o, v in zip(outputs, grads):
            o[...] = ctx.xp.asarray(v)
    return backward


def _register(op: str, modulated: bool, doc: str) -> None:
    sampled = ["data", "offset"] + (["mask"] if modulated else [])
    attrs = dict(_ATTRS, **({"im2col_step": Attr("int", 64, doc="accepted for MXNet compatibility")}
                            if modulated else {}))
    n_grad = len(sampled) + 1
    register(OpDef(
        name=f"_backward{op}", attrs=attrs, inputs=["ograd"] + sampled + ["weight"],
        outputs=lambda a: [f"{x}_grad" for x in sampled + ["weight"]] + ([] if a["no_bias"] else ["bias_grad"]),
        infer_shape=lambda a, s: (s, list(s[1:1 + n_grad]) + ([] if a["no_bias"] else [(s[n_grad][0],)])),
        infer_type=lambda a, d: (list(d), [d[1]] * (n_grad + (0 if a["no_bias"] else 1))),
        kernels={"any": _make_backward(modulated)}, doc=f"Gradients of {op[1:]}."))
    register(OpDef(
        name=op, attrs=attrs, inputs=lambda a: sampled + ["weight"] + ([] if a["no_bias"] else ["bias"]),
        outputs=["output"], infer_shape=_infer_shape_of(modulated),
        infer_type=lambda a, d: ([d[0]] * len(d), [d[0]]), kernels={"any": _make_forward(modulated)},
        gradient=lambda F, a, i, o, g: list(getattr(F, f"_backward{op}")(g[0], *i[:n_grad], **a)),
        doc=doc))


_register(_OP, False, "Convolution with learned per-tap offsets sampled bilinearly (2-D, NCHW).")
_register("_contrib_ModulatedDeformableConvolution", True,
          "Deformable convolution v2: each sampled tap is also scaled by a learned mask (2-D, NCHW).")
