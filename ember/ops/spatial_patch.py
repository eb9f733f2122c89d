"""Patch operators of MXNet 1.x: Correlation (FlowNet's correlation layer), im2col and col2im.

All three walk the kernel window offset by offset, so each step is one strided slice of the
(padded) input; the backward passes add the same slices back, which makes them exact adjoints.
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..base import OperatorError, ShapeError
from ._common import known, with_backward
from ._nn_util import float_type_rule
from .registry import Attr, OpDef, register


# -- Correlation ---------------------------------------------------------------------------------------
_CORR_ATTRS = {
    "kernel_size": Attr("int", 1, doc="side of the (odd) comparison patch"),
    "max_displacement": Attr("int", 1, doc="largest displacement compared"),
    "stride1": Attr("int", 1, doc="stride over data1 positions"),
    "stride2": Attr("int", 1, doc="stride over displacements"),
    "pad_size": Attr("int", 0, doc="zero padding of both inputs"),
    "is_multiply": Attr("bool", True, doc="multiply patches (else sum absolute differences)"),
}


def _corr_geometry(attrs, h, w):
    k, md, s1, s2, pad = (attrs[n] for n in ("kernel_size", "max_displacement", "stride1", "stride2", "pad_size"))
    if k < 1 or k % 2 == 0:
        raise OperatorError(f"Correlation: kernel_size must be odd and positive, got {k}")
    if s1 < 1 or s2 < 1 or md < 0 or pad < 0:
        raise OperatorError("Correlation: strides must be >= 1, max_displacement and pad_size >= 0")
    border = md + (k - 1) // 2
    th = int(math.ceil((h + 2 * pad - 2 * border) / s1))
    tw = int(math.ceil((w + 2 * pad - 2 * border) / s1))
    if th < 1 or tw < 1:
        raise ShapeError(f"Correlation: input ({h}, {w}) with pad_size {pad} is too small for kernel_size {k} "
                         f"and max_displacement {md}")
    radius = md // s2
    return th, tw, radius, 2 * radius + 1


def _corr_shape(attrs, in_shapes):
    d1, d2 = in_shapes
    for d in (d1, d2):
        if d is not None and len(d) != 4:
            raise ShapeError(f"Correlation: data must be 4-D (N, C, H, W), got {tuple(d)}")
    if known(d1) and known(d2) and tuple(d1) != tuple(d2):
        raise ShapeError(f"Correlation: data1 {tuple(d1)} and data2 {tuple(d2)} must have one shape")
    d = d1 if known(d1) else d2
    if not known(d):
        return in_shapes, [None, None, None]
    n, c, h, w = d
    th, tw, _, gw = _corr_geometry(attrs, h, w)
    p = attrs["pad_size"]
    tmp = (n, h + 2 * p, w + 2 * p, c)
    return [tuple(d), tuple(d)], [(n, gw * gw, th, tw), tmp, tmp]


def _corr_windows(attrs, c, th, tw, radius, gw):
    """(channel, data1 slice, data2 slice) for every displacement and kernel offset, and the normaliser."""
    k, md, s1, s2 = attrs["kernel_size"], attrs["max_displacement"], attrs["stride1"], attrs["stride2"]
    for tc, (p, o) in enumerate(itertools.product(range(gw), range(gw))):
        dy, dx = (p - radius) * s2, (o - radius) * s2
        for kh, kw in itertools.product(range(k), range(k)):
            y0, x0 = md + kh, md + kw
            a = (slice(None), slice(None), slice(y0, y0 + s1 * (th - 1) + 1, s1), slice(x0, x0 + s1 * (tw - 1) + 1, s1))
            b = (slice(None), slice(None), slice(y0 + dy, y0 + dy + s1 * (th - 1) + 1, s1),
                 slice(x0 + dx, x0 + dx + s1 * (tw - 1) + 1, s1))
            yield tc, a, b


def _pad(xp, x, p):
    return xp.pad(x, ((0, 0), (0, 0), (p, p), (p, p))) if p else x


def _corr_forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    d1, d2 = (x.astype(np.float64) for x in inputs)
    out = outputs[0]
    n, c, h, w = d1.shape
    th, tw, radius, gw = _corr_geometry(attrs, h, w)
    p1, p2 = _pad(xp, d1, attrs["pad_size"]), _pad(xp, d2, attrs["pad_size"])
    acc = xp.zeros(out.shape, dtype=np.float64)
    for tc, a, b in _corr_windows(attrs, c, th, tw, radius, gw):
        if attrs["is_multiply"]:
            acc[:, tc] += (p1[a] * p2[b]).sum(axis=1)
        else:
            acc[:, tc] += xp.abs(p1[a] - p2[b]).sum(axis=1)
    out[...] = acc / (attrs["kernel_size"] ** 2 * c)
    outputs[1][...] = p1.transpose(0, 2, 3, 1)
    outputs[2][...] = p2.transpose(0, 2, 3, 1)


def _corr_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g = inputs[0].astype(np.float64)
    d1, d2 = (x.astype(np.float64) for x in inputs[1:3])
    n, c, h, w = d1.shape
    th, tw, radius, gw = _corr_geometry(attrs, h, w)
    pad = attrs["pad_size"]
    p1, p2 = _pad(xp, d1, pad), _pad(xp, d2, pad)
    g1, g2 = xp.zeros_like(p1), xp.zeros_like(p2)
    norm = attrs["kernel_size"] ** 2 * c
    for tc, a, b in _corr_windows(attrs, c, th, tw, radius, gw):
        gt = g[:, tc][:, None] / norm
        if attrs["is_multiply"]:
            g1[a] += gt * p2[b]
            g2[b] += gt * p1[a]
        else:
            # ties count as +1 (MXNet: a >= b), which matters in the zero padding
            sg = xp.where(p1[a] >= p2[b], 1.0, -1.0) * gt
            g1[a] += sg
            g2[b] -= sg
    crop = (slice(None), slice(None), slice(pad, pad + h), slice(pad, pad + w))
    outputs[0][...] = g1[crop]
    outputs[1][...] = g2[crop]


with_backward(OpDef(
    name="Correlation", attrs=_CORR_ATTRS, inputs=["data1", "data2"], outputs=["output", "tmp1", "tmp2"],
    num_visible_outputs=lambda a: 1, infer_shape=_corr_shape,
    infer_type=float_type_rule("Correlation", 3), kernels={"any": _corr_forward},
    doc="Correlation of data1 patches with displaced data2 patches (FlowNet): output channel per "
        "displacement, averaged over the patch and channels; hidden outputs the padded inputs (NHWC)."),
    _corr_backward, "Gradients of Correlation.", ograd="out_grad")


# -- im2col / col2im -----------------------------------------------------------------------------------
_PATCH_ATTRS = {
    "kernel": Attr("shape", doc="kernel size (1 to 3 spatial dims)"),
    "stride": Attr("shape", (), doc="stride (default 1 per dim)"),
    "dilate": Attr("shape", (), doc="dilation (default 1 per dim)"),
    "pad": Attr("shape", (), doc="zero padding (default 0 per dim)"),
}


def _patch_params(op, attrs):
    k = tuple(attrs["kernel"])
    nd = len(k)
    if not 1 <= nd <= 3:
        raise OperatorError(f"{op}: kernel must have 1 to 3 dims, got {k}")

    def fill(name, default):
        v = tuple(attrs[name]) or (default,) * nd
        if len(v) != nd:
            raise OperatorError(f"{op}: {name} {v} must have as many dims as kernel {k}")
        return v
    stride, dilate, pad = fill("stride", 1), fill("dilate", 1), fill("pad", 0)
    if min(k) < 1 or min(stride) < 1 or min(dilate) < 1 or min(pad) < 0:
        raise OperatorError(f"{op}: kernel, stride and dilate must be >= 1 and pad >= 0")
    return k, stride, dilate, pad


def _patch_out(op, spatial, k, stride, dilate, pad):
    out = []
    for n, kk, s, d, p in zip(spatial, k, stride, dilate, pad):
        o = (n + 2 * p - (d * (kk - 1) + 1)) // s + 1
        if o < 1:
            raise ShapeError(f"{op}: spatial size {n} (pad {p}) is smaller than the dilated kernel {d * (kk - 1) + 1}")
        out.append(o)
    return tuple(out)


def _im2col_shape(attrs, in_shapes):
    d = in_shapes[0]
    k, stride, dilate, pad = _patch_params("im2col", attrs)
    if not known(d):
        return in_shapes, [None]
    if len(d) != len(k) + 2:
        raise ShapeError(f"im2col: data must be {len(k) + 2}-D for a {len(k)}-D kernel, got {tuple(d)}")
    out = _patch_out("im2col", d[2:], k, stride, dilate, pad)
    return [tuple(d)], [(d[0], d[1] * int(np.prod(k)), int(np.prod(out)))]


def _windows(k, stride, dilate, out):
    """(kernel offset index, slices into the padded data) of every kernel position."""
    for i, offs in enumerate(itertools.product(*(range(kk) for kk in k))):
        yield i, tuple(slice(o * d, o * d + s * (n - 1) + 1, s) for o, d, s, n in zip(offs, dilate, stride, out))


def _pad_nd(xp, x, pad):
    if not any(pad):
        return x
    return xp.pad(x, ((0, 0), (0, 0)) + tuple((p, p) for p in pad))


def _im2col(xp, x, out, k, stride, dilate, pad):
    n, c = x.shape[:2]
    spatial_out = _patch_out("im2col", x.shape[2:], k, stride, dilate, pad)
    xpad = _pad_nd(xp, x, pad)
    kp = int(np.prod(k))
    view = out.reshape(n, c, kp, -1)
    for i, sl in _windows(k, stride, dilate, spatial_out):
        view[:, :, i] = xpad[(slice(None), slice(None)) + sl].reshape(n, c, -1)


def _col2im(xp, col, out, k, stride, dilate, pad):
    n, c = out.shape[:2]
    spatial_out = _patch_out("col2im", out.shape[2:], k, stride, dilate, pad)
    padded = xp.zeros((n, c) + tuple(s + 2 * p for s, p in zip(out.shape[2:], pad)), dtype=np.float64)
    view = col.reshape(n, c, int(np.prod(k)), *spatial_out)
    for i, sl in _windows(k, stride, dilate, spatial_out):
        padded[(slice(None), slice(None)) + sl] += view[:, :, i]
    crop = tuple(slice(p, p + s) for p, s in zip(pad, out.shape[2:]))
    out[...] = padded[(slice(None), slice(None)) + crop]


def _im2col_kernel(ctx, attrs, inputs, outputs, aux):
    _im2col(ctx.xp, inputs[0], outputs[0], *_patch_params("im2col", attrs))


def _bwd_im2col_kernel(ctx, attrs, inputs, outputs, aux):
    _col2im(ctx.xp, inputs[0], outputs[0], *_patch_params("im2col", attrs))


with_backward(OpDef(
    name="im2col", attrs=_PATCH_ATTRS, inputs=["data"], outputs=["output"], infer_shape=_im2col_shape,
    infer_type=float_type_rule("im2col"), kernels={"any": _im2col_kernel},
    doc="Sliding kernel patches of (N, C, *spatial) data as columns: (N, C*prod(kernel), positions)."),
    _bwd_im2col_kernel, "Gradient of im2col (col2im; data read for its shape).", ograd="out_grad", infer_type=None)


_COL2IM_ATTRS = dict(_PATCH_ATTRS, output_size=Attr("shape", doc="spatial size of the image"))


def _col2im_shape(attrs, in_shapes):
    d = in_shapes[0]
    k, stride, dilate, pad = _patch_params("col2im", attrs)
    size = tuple(attrs["output_size"])
    if len(size) != len(k):
        raise OperatorError(f"col2im: output_size {size} must have as many dims as kernel {k}")
    out = _patch_out("col2im", size, k, stride, dilate, pad)
    if not known(d):
        return in_shapes, [None]
    kp, lp = int(np.prod(k)), int(np.prod(out))
    if len(d) != 3 or d[1] % kp or d[2] != lp:
        raise ShapeError(f"col2im: data must be (N, C*{kp}, {lp}) for kernel {k} and output_size {size}, "
                         f"got {tuple(d)}")
    return [tuple(d)], [(d[0], d[1] // kp) + size]


def _col2im_kernel(ctx, attrs, inputs, outputs, aux):
    _col2im(ctx.xp, inputs[0], outputs[0], *_patch_params("col2im", attrs))


def _col2im_grad(F, attrs, inputs, outputs, out_grads):
    return [F.im2col(out_grads[0], **{k: v for k, v in attrs.items() if k != "output_size"})]


register(OpDef(
    name="col2im", attrs=_COL2IM_ATTRS, inputs=["data"], outputs=["output"], infer_shape=_col2im_shape,
    infer_type=float_type_rule("col2im"), kernels={"any": _col2im_kernel},
    gradient=_col2im_grad,
    doc="Sum columns (N, C*prod(kernel), positions) back into an (N, C, *output_size) image (im2col's adjoint)."))
