"""Convolution and Deconvolution (1-D, 2-D and 3-D; NCW/NCHW/NCDHW) through im2col + one GEMM per group.

The column matrix is built from a strided window view (no Python loop over pixels);
the data gradient scatters columns back with one vectorised add per kernel position
(kh*kw iterations); on float32 CPU arrays both run as native loops instead (native/conv_kernels.h:
the same bits, one channel's windows at a time while its plane is in cache).  Depthwise
convolutions use one multiply-add per kernel position, pointwise ones (1x1, stride 1, no
padding) one matrix product per image, and 3x3 ones with stride 1 and padding 1 the Winograd F(2x2, 3x3)
form where it pays (`_winograd_fits`).
Kernels work on a channel-first internal copy, CNHW or batch-last CHWN, whichever makes the
window copies cheaper for the layer (`choose_layout`).  1-D convolutions run as 2-D ones with
a height of 1; 3-D ones as one 2-D convolution per kernel depth tap, with the output depths folded
into the batch (`conv3d_*`).
"""
from __future__ import annotations

import os
from typing import Callable, NamedTuple, Tuple

import numpy as np

from ..base import OperatorError, ShapeError
from ..engine import native
from ._nn_util import (backward_via, call_op, float32_on_cpu, float_type_rule, known, matmul_into, merge, positive,
                       spatial)
from .registry import Attr, OpDef, register


class Geometry(NamedTuple):
    """A 2-D convolution's window geometry (1-D ones have kernel height 1)."""

    kernel: Tuple[int, int]
    stride: Tuple[int, int]
    dilate: Tuple[int, int]
    pad_before: Tuple[int, int]
    pad_after: Tuple[int, int]
    groups: int

    def out_size(self, size: Tuple[int, int]) -> Tuple[int, int]:
        """Output spatial size for an input of spatial `size`."""
        return tuple((n + a + b - (d * (k - 1) + 1)) // s + 1
                     for n, a, b, d, k, s in zip(size, self.pad_before, self.pad_after, self.dilate,
                                                 self.kernel, self.stride))


def _to2d(t, fill):
    return t if len(t) == 2 else (fill,) + tuple(t)


class Layout(NamedTuple):
    """An internal, channel-first array layout the kernels work in (spatial axes sp, sp + 1)."""

    perm: Tuple[int, int, int, int]   # NCHW -> internal
    inv: Tuple[int, int, int, int]    # internal -> NCHW
    sp: int


# "CNHW" keeps each image's rows contiguous (cheap output transposes); "CHWN" puts the batch last
# so window slices have long contiguous inner runs (OW*N), which makes the im2col copy and the
# col2im scatter several times faster when the column matrix dominates (stride 1, K >> F).
CNHW = Layout((1, 0, 2, 3), (1, 0, 2, 3), 2)
CHWN = Layout((1, 2, 3, 0), (3, 0, 1, 2), 1)


def choose_layout(geo: Geometry, channels: int, filters: int) -> Layout:
    """The faster internal layout for this convolution (measured with bench/conv.py)."""
    k = (channels // geo.groups) * geo.kernel[0] * geo.kernel[1]
    if _is_depthwise_shape(channels, filters, geo):
        return CHWN
    return CHWN if geo.stride == (1, 1) and k >= 2 * (filters // geo.groups) else CNHW


def _internal(xp, a, lay: Layout):
    """(N, C, H, W) -> a contiguous copy in the internal layout."""
    return xp.ascontiguousarray(a.transpose(lay.perm))


def _padded(xp, x, geo: Geometry, lay: Layout):
    """x (N, C, H, W) zero-padded by the geometry (negative pad_after crops), in layout `lay`."""
    n, c, h, w = x.shape
    (pt, pl), (pb, pr) = geo.pad_before, geo.pad_after
    hh, ww = h + min(pb, 0), w + min(pr, 0)
    padded_nchw = (n, c, pt + hh + max(pb, 0), pl + ww + max(pr, 0))
    shape = tuple(padded_nchw[a] for a in lay.perm)
    padded = pt or pl or pb > 0 or pr > 0
    out = xp.zeros(shape, dtype=x.dtype) if padded else xp.empty(shape, dtype=x.dtype)
    out[_tap_box(lay, slice(pt, pt + hh), slice(pl, pl + ww))] = x[:, :, :hh, :ww].transpose(lay.perm)
    return out


def _tap_box(lay: Layout, rows: slice, cols: slice):
    idx = [slice(None)] * 4
    idx[lay.sp], idx[lay.sp + 1] = rows, cols
    return tuple(idx)


def _taps(geo: Geometry, oh: int, ow: int, lay: Layout):
    """(i, j, index) of every kernel position, selecting that tap for every output pixel."""
    (sh, sw), (dh, dw) = geo.stride, geo.dilate
    for i in range(geo.kernel[0]):
        for j in range(geo.kernel[1]):
            yield i, j, _tap_box(lay, slice(i * dh, i * dh + sh * (oh - 1) + 1, sh),
                                 slice(j * dw, j * dw + sw * (ow - 1) + 1, sw))


def _native_windows(lay: Layout, geo: Geometry, oh: int, ow: int) -> tuple:
    """The window arguments of native.im2col_f32 / col2im_f32 for this layout and geometry."""
    return (lay is CHWN, oh, ow) + geo.kernel + geo.stride + geo.dilate


def im2col(xp, xpad, geo: Geometry, group: int, oh: int, ow: int, lay: Layout):
    """Columns (Cg*kh*kw, pixels) of group `group` of a padded internal-layout input; a fresh array."""
    cg = xpad.shape[0] // geo.groups
    part = xpad[group * cg:(group + 1) * cg]
    if xp is np and part.dtype == np.float32:
        batch = part.shape[1] if lay is CNHW else part.shape[3]
        cols = np.empty((cg * geo.kernel[0] * geo.kernel[1], batch * oh * ow), dtype=part.dtype)
        if native.im2col_f32(part, cols, *_native_windows(lay, geo, oh, ow)):
            return cols
    strides, shape = list(part.strides), list(part.shape)
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.stride, geo.dilate
    s_h, s_w = strides[lay.sp], strides[lay.sp + 1]
    shape[lay.sp], shape[lay.sp + 1] = oh, ow
    strides[lay.sp], strides[lay.sp + 1] = s_h * sh, s_w * sw
    win = xp.lib.stride_tricks.as_strided(part, shape=(cg, kh, kw) + tuple(shape[1:]),
                                          strides=(strides[0], s_h * dh, s_w * dw) + tuple(strides[1:]))
    return win.reshape(cg * kh * kw, -1)


def _is_depthwise_shape(channels: int, filters: int, geo: Geometry) -> bool:
    """One input and one output channel per group: the GEMM would be 1 x K, so use taps instead."""
    return geo.groups > 1 and geo.groups == channels == filters


def _channel_view(v):
    return v.reshape(-1, 1, 1, 1)


def _out_internal_shape(lay: Layout, c: int, n: int, oh: int, ow: int):
    return (c, n, oh, ow) if lay is CNHW else (c, oh, ow, n)


# -- pointwise (1x1, stride 1, no padding): a matrix product per image, no window copies -----------
def _is_pointwise(geo: Geometry, channels: int, filters: int) -> bool:
    """1x1 kernel, stride 1, no padding and not depthwise (depthwise layers keep their own path)."""
    return (geo.kernel == (1, 1) and geo.stride == (1, 1) and not any(geo.pad_before)
            and not any(geo.pad_after) and not _is_depthwise_shape(channels, filters, geo))


def _pixels(a, groups: int, g: int):
    """Channel group g of an (N, C, H, W) array as (N, C/groups, H*W) (a view when a is contiguous)."""
    cg = a.shape[1] // groups
    return a[:, g * cg:(g + 1) * cg].reshape(a.shape[0], cg, -1)


def _relu_inplace(xp, a) -> None:
    xp.maximum(a, 0, out=a)


def _pointwise_forward(xp, x, w, groups: int, out, shift=None, relu: bool = False) -> None:
    n, f = out.shape[:2]
    fg = f // groups
    if (shift is not None and groups == 1 and out.flags.c_contiguous and x.shape[1] < f
            and out.shape[2] * out.shape[3] >= _PER_IMAGE_MIN_PIXELS_1X1):
        # expanding layers: copying each (smaller) input image next to a row of ones puts the shift
        # in the GEMM, cheaper than a pass over the (bigger) output (64 -> 256 at 56x56: 3.0 -> 2.2 ms)
        c, p = x.shape[1], out.shape[2] * out.shape[3]
        buf = xp.empty((c + 1, p), dtype=out.dtype)
        buf[c] = 1
        wm = xp.concatenate([w.reshape(f, c), shift.reshape(f, 1).astype(w.dtype, copy=False)], axis=1)
        for i in range(n):
            buf[:c] = x[i].reshape(c, p)
            xp.matmul(wm, buf, out=out[i].reshape(f, p))
            if relu:  # while the image's result is still in cache
                _relu_inplace(xp, out[i])
        return
    if groups == 1 and out.flags.c_contiguous:  # straight into the output's buffer
        if shift is None and not relu:
            xp.matmul(w.reshape(f, -1), _pixels(x, 1, 0), out=out.reshape(n, f, -1))
            return
        wm, sv = w.reshape(f, -1), None if shift is None else shift.reshape(f, 1)
        for i in range(n):  # image by image: the epilogue runs while the result is in cache
            o = out[i].reshape(f, -1)
            xp.matmul(wm, x[i].reshape(x.shape[1], -1), out=o)
            if sv is not None:
                o += sv
            if relu:
                _relu_inplace(xp, o)
        return
    for g in range(groups):
        res = xp.matmul(w[g * fg:(g + 1) * fg].reshape(fg, -1), _pixels(x, groups, g))
        _store(xp, res.reshape((n, fg) + out.shape[2:]), shift, g * fg, (g + 1) * fg, out)
    if relu:
        _relu_inplace(xp, out)


def _pointwise_backward_data(xp, dy, w, groups: int, out) -> None:
    n, c = out.shape[:2]
    fg, cg = w.shape[0] // groups, c // groups
    for g in range(groups):
        res = xp.matmul(w[g * fg:(g + 1) * fg].reshape(fg, cg).T, _pixels(dy, groups, g))
        out[:, g * cg:(g + 1) * cg] = res.reshape((n, cg) + out.shape[2:])


def _pointwise_backward_weight(xp, x, dy, groups: int, out) -> None:
    f, cg = out.shape[:2]
    fg = f // groups
    for g in range(groups):
        res = xp.matmul(_pixels(dy, groups, g), _pixels(x, groups, g).transpose(0, 2, 1)).sum(axis=0)
        out[g * fg:(g + 1) * fg] = res.reshape(fg, cg, 1, 1)


def _shift_view(shift):
    return shift.reshape(1, -1, 1, 1)


def _store(xp, res, shift, lo: int, hi: int, out) -> None:
    """out[:, lo:hi] = res (+ shift[lo:hi] per channel): the add rides on the copy (no extra pass)."""
    if shift is None:
        out[:, lo:hi] = res
    else:
        xp.add(res, _shift_view(shift[lo:hi]), out=out[:, lo:hi])


# -- per image, channel-first as stored: no layout transposes at all ---------------------------------
# Measured with bench/conv.py-like shapes (ResNet-50, batch 4, 2 cores): from 28x28 output maps up
# one GEMM per image beats the batched forms (no input/output transposes); for 14x14 and smaller
# 3x3 layers one batched GEMM wins.  Strided 1x1 layers win per image down to 14x14 outputs (the
# batched form transposes the whole input to read a quarter of it).
_PER_IMAGE_MIN_PIXELS = 784
_PER_IMAGE_MIN_PIXELS_1X1 = 196


def _per_image_fits(geo: Geometry, channels: int, filters: int, out) -> bool:
    """Ungrouped, on C-contiguous NCHW output, with maps big enough for a GEMM per image."""
    least = _PER_IMAGE_MIN_PIXELS_1X1 if geo.kernel == (1, 1) else _PER_IMAGE_MIN_PIXELS
    return (geo.groups == 1 and out.flags.c_contiguous and not _is_depthwise_shape(channels, filters, geo)
            and out.shape[2] * out.shape[3] >= least)


def _conv_per_image(xp, x, w, geo: Geometry, out, shift, relu: bool = False) -> None:
    """One im2col + GEMM per image, written straight into out[n] (F, OH*OW): the input is padded
    image by image in its own layout and the result needs no transpose.  A shift rides in the
    GEMM as an extra column of the weights against a row of ones in the columns."""
    n, c, h, wd = x.shape
    f = w.shape[0]
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.stride, geo.dilate
    (pt, pl), (pb, pr) = geo.pad_before, geo.pad_after
    oh, ow = out.shape[2:]
    k = c * kh * kw
    extra = 0 if shift is None else 1
    cols = xp.empty((k + extra, oh * ow), dtype=out.dtype)
    wm = w.reshape(f, k)
    if extra:
        cols[k] = 1
        wm = xp.concatenate([wm, shift.reshape(f, 1).astype(wm.dtype, copy=False)], axis=1)
    hh, ww = h + min(pb, 0), wd + min(pr, 0)
    padded = pt or pl or pb > 0 or pr > 0
    img = xp.zeros((c, pt + hh + max(pb, 0), pl + ww + max(pr, 0)), dtype=x.dtype) if padded else None
    view = cols[:k].reshape(c, kh, kw, oh, ow)
    windows = _native_windows(CNHW, geo, oh, ow)   # one image: (C, 1, H, W)
    for i in range(n):
        if padded:
            img[:, pt:pt + hh, pl:pl + ww] = x[i, :, :hh, :ww]
            src = img
        else:
            src = x[i]
        # the native copy splits over the CPU team (numpy's strided copy runs on one thread)
        if not (xp is np and native.im2col_f32(src.reshape(c, 1, *src.shape[1:]), view, *windows)):
            s0, s1, s2 = src.strides
            view[...] = xp.lib.stride_tricks.as_strided(src, shape=(c, kh, kw, oh, ow),
                                                        strides=(s0, s1 * dh, s2 * dw, s1 * sh, s2 * sw))
        xp.matmul(wm, cols, out=out[i].reshape(f, oh * ow))
        if relu:  # while the image's result is still in cache
            _relu_inplace(xp, out[i])


# -- Winograd F(2x2, 3x3): 3x3 layers with stride 1 and padding 1 -------------------------------------
# 16 matrix products over transformed 4x4 tiles instead of one over 9x as many columns: 2.25x fewer
# multiply-adds, no im2col and no layout transposes (native/conv_kernels.h: the three transforms).  The
# weights' transform costs in proportion to filters x channels and the products lose speed when they are
# narrow (few tiles), so layers with fewer tiles than half their channels keep the direct form: measured
# (bench/conv.py --winograd, batch 8 / 4) ResNet-18's 16x16 and 8x8 layers and ResNet-50's 56x56 to 14x14
# ones gain, their 4x4 and 7x7 ones (32 tiles for 256 channels, 64 for 512) lose.  The results differ from
# the direct form's by float32 rounding (the transforms' adds, G's halves); EMBER_CONV_WINOGRAD=0 keeps
# every layer in the direct form (the bits of earlier versions).
_WINOGRAD = True


def _winograd_enabled() -> bool:
    """_WINOGRAD, unless EMBER_CONV_WINOGRAD is 0 / false / no (read per call, as EMBER_FUSE_CONV_BN)."""
    return _WINOGRAD and os.environ.get("EMBER_CONV_WINOGRAD", "1").strip().lower() not in ("0", "false", "no")


def _winograd_tiles(shape) -> int:
    """The 2x2 output tiles of an (N, C, H, W) map."""
    n, _, h, w = shape
    return n * ((h + 1) // 2) * ((w + 1) // 2)


def _winograd_fits(xp, geo: Geometry, x, w, out) -> bool:
    """3x3, stride 1, no dilation, padding 1 on every side (output maps of the input's size), ungrouped,
    float32 numpy arrays, at least half as many tiles as input or output channels."""
    _, c, h, wd = x.shape
    tiles = _winograd_tiles(x.shape)
    return (xp is np and x.dtype == w.dtype == out.dtype == np.float32 and geo.kernel == (3, 3)
            and geo.stride == (1, 1) and geo.dilate == (1, 1) and geo.pad_before == (1, 1)
            and geo.pad_after == (1, 1) and geo.groups == 1 and tuple(out.shape[2:]) == (h, wd)
            and 2 * tiles >= max(c, out.shape[1]) and _winograd_enabled())


def _into(out, write) -> bool:
    """write(res) into out's own buffer when it is C-contiguous, else into a copy then out; False, out
    untouched, where write refuses."""
    res = out if out.flags.c_contiguous else np.empty(out.shape, out.dtype)
    if not write(res):
        return False
    if res is not out:
        out[...] = res
    return True


def _winograd_conv(x, w, out, shift=None, relu: bool = False, data_grad: bool = False) -> bool:
    """out (N, F, H, W) = the stride-1, padding-1 3x3 convolution of x (N, C, H, W) by w (F, C, 3, 3)
    (+ shift, then relu, as conv_forward's); with data_grad, out (N, C, H, W) = the data gradient for
    x = dy (N, F, H, W).  False, out untouched, where the kernels refuse."""
    c = x.shape[1]
    u = np.empty((16, c, out.shape[1]), np.float32)
    v = np.empty((16, _winograd_tiles(x.shape), c), np.float32)
    if not (native.winograd_weights_f32(np.ascontiguousarray(w), u, data_grad)
            and native.winograd_input_f32(np.ascontiguousarray(x), v)):
        return False
    m = np.matmul(v, u)   # (16, tiles, out channels)
    if shift is not None:
        shift = np.ascontiguousarray(shift, dtype=np.float32)
    return _into(out, lambda res: native.winograd_output_f32(m, res, shift, relu))


def _winograd_weight_grad(x, dy, out) -> bool:
    """out (F, C, 3, 3) = the weight gradient of the stride-1, padding-1 3x3 convolution of x (N, C, H, W)
    given dy (N, F, H, W), in the Winograd form; False, out untouched, where the kernels refuse."""
    tiles = _winograd_tiles(x.shape)
    v = np.empty((16, tiles, x.shape[1]), np.float32)
    dm = np.empty((16, tiles, dy.shape[1]), np.float32)
    if not (native.winograd_input_f32(np.ascontiguousarray(x), v)
            and native.winograd_grad_output_f32(np.ascontiguousarray(dy), dm)):
        return False
    du = np.matmul(v.transpose(0, 2, 1), dm)   # (16, C, F)
    return _into(out, lambda res: native.winograd_grad_weights_f32(du, res))


def conv_forward(xp, x, w, geo: Geometry, out, shift=None, relu: bool = False) -> None:
    """out (N, F, OH, OW) = conv(x (N, C, H, W), w (F, C/g, kh, kw)) (+ shift (F,) per output channel:
    a bias, or a folded BatchNorm's shift, added while the GEMM's result is stored), then
    max(., 0) when `relu` (per image where the GEMM runs per image, while the result is in cache)."""
    n, c = x.shape[:2]
    f = w.shape[0]
    fg = f // geo.groups
    oh, ow = out.shape[2:]
    if _is_pointwise(geo, c, f):
        _pointwise_forward(xp, x, w, geo.groups, out, shift, relu)
        return
    if _winograd_fits(xp, geo, x, w, out) and _winograd_conv(x, w, out, shift, relu):
        return
    if _per_image_fits(geo, c, f, out):
        _conv_per_image(xp, x, w, geo, out, shift, relu)
        return
    lay = choose_layout(geo, c, f)
    xpad = _padded(xp, x, geo, lay)
    if _is_depthwise_shape(c, f, geo):
        acc = xp.zeros(_out_internal_shape(lay, f, n, oh, ow), dtype=out.dtype)
        for i, j, idx in _taps(geo, oh, ow, lay):
            acc += xpad[idx] * _channel_view(w[:, 0, i, j])
        _store(xp, acc.transpose(lay.inv), shift, 0, f, out)
    else:
        for g in range(geo.groups):
            cols = im2col(xp, xpad, geo, g, oh, ow, lay)
            res = xp.matmul(w[g * fg:(g + 1) * fg].reshape(fg, -1), cols)
            _store(xp, res.reshape(_out_internal_shape(lay, fg, n, oh, ow)).transpose(lay.inv), shift,
                   g * fg, (g + 1) * fg, out)
    if relu:
        _relu_inplace(xp, out)


def conv_backward_data(xp, dy, w, geo: Geometry, x_shape, out, dy_in=None) -> None:
    """out (= x_shape) = gradient of conv w.r.t. its input, given dy (N, F, OH, OW) (and, if the
    caller has it, dy_in: dy already in the internal layout `choose_layout` picks)."""
    n, c, h, wd = x_shape
    f = w.shape[0]
    fg, cg = f // geo.groups, c // geo.groups
    if _is_pointwise(geo, c, f) and tuple(dy.shape[2:]) == (h, wd):
        _pointwise_backward_data(xp, dy, w, geo.groups, out)
        return
    # with stride 1 and padding 1 the data gradient is the same convolution of dy by the kernels
    # flipped and with filters and channels swapped
    if _winograd_fits(xp, geo, dy, w, out) and _winograd_conv(dy, w, out, data_grad=True):
        return
    (kh, kw), (sh, sw), (dh, dw) = geo.kernel, geo.stride, geo.dilate
    (pt, pl), (pb, pr) = geo.pad_before, geo.pad_after
    oh, ow = dy.shape[2:]
    lay = choose_layout(geo, c, f)
    # padded canvas large enough for every window and for the cropped result
    hp = max(h + pt + pb, pt + h, (oh - 1) * sh + (kh - 1) * dh + 1)
    wp = max(wd + pl + pr, pl + wd, (ow - 1) * sw + (kw - 1) * dw + 1)
    canvas = xp.zeros(_out_internal_shape(lay, c, n, hp, wp), dtype=out.dtype)
    if dy_in is None:
        dy_in = _internal(xp, dy, lay)
    if _is_depthwise_shape(c, f, geo):
        for i, j, idx in _taps(geo, oh, ow, lay):
            canvas[idx] += dy_in * _channel_view(w[:, 0, i, j])
    else:
        for g in range(geo.groups):
            cols = xp.matmul(w[g * fg:(g + 1) * fg].reshape(fg, -1).T, dy_in[g * fg:(g + 1) * fg].reshape(fg, -1))
            part = canvas[g * cg:(g + 1) * cg]
            if xp is np and native.col2im_f32(cols, part, *_native_windows(lay, geo, oh, ow)):
                continue
            cols = cols.reshape((cg, kh, kw) + dy_in.shape[1:])
            for i, j, idx in _taps(geo, oh, ow, lay):
                part[idx] += cols[:, i, j]
    out[...] = canvas[_tap_box(lay, slice(pt, pt + h), slice(pl, pl + wd))].transpose(lay.inv)


def conv_backward_weight(xp, x, dy, geo: Geometry, out, dy_in=None) -> None:
    """out (F, C/g, kh, kw) = gradient of conv w.r.t. its weight (dy_in: as conv_backward_data's)."""
    c = x.shape[1]
    f = dy.shape[1]
    fg = f // geo.groups
    oh, ow = dy.shape[2:]
    if _is_pointwise(geo, c, f):
        _pointwise_backward_weight(xp, x, dy, geo.groups, out)
        return
    if _winograd_fits(xp, geo, x, out, dy) and _winograd_weight_grad(x, dy, out):   # (out: w's shape, dy: y's)
        return
    lay = choose_layout(geo, c, f)
    xpad = _padded(xp, x, geo, lay)
    if dy_in is None:
        dy_in = _internal(xp, dy, lay)
    if _is_depthwise_shape(c, f, geo):
        for i, j, idx in _taps(geo, oh, ow, lay):
            out[:, 0, i, j] = xp.einsum("cijk,cijk->c", xpad[idx], dy_in)  # any channel-first layout
        return
    for g in range(geo.groups):
        cols = im2col(xp, xpad, geo, g, oh, ow, lay)
        dyg = dy_in[g * fg:(g + 1) * fg].reshape(fg, -1)
        matmul_into(xp, dyg, cols.T, out[g * fg:(g + 1) * fg].reshape(fg, -1)
                    if out.flags.c_contiguous else out[g * fg:(g + 1) * fg])


# -- 3-D: one batched 2-D convolution per kernel depth tap ------------------------------------
class DepthGeometry(NamedTuple):
    """The depth axis of a 3-D convolution (the H, W axes are a 2-D Geometry)."""

    kernel: int
    stride: int
    dilate: int
    pad_before: int
    pad_after: int     # negative: rows cropped (a deconvolution's adj)

    def taps(self, out_depth: int):
        """(i, slice of the depth-padded input seen by kernel depth i at every output depth)."""
        for i in range(self.kernel):
            start = i * self.dilate
            yield i, slice(start, start + self.stride * (out_depth - 1) + 1, self.stride)


def _depth_padded(xp, x, dg: DepthGeometry):
    """x (N, C, D, H, W) zero-padded (or cropped) along D."""
    d = x.shape[2] + min(dg.pad_after, 0)
    out = xp.zeros(x.shape[:2] + (dg.pad_before + d + max(dg.pad_after, 0),) + x.shape[3:], dtype=x.dtype)
    out[:, :, dg.pad_before:dg.pad_before + d] = x[:, :, :d]
    return out


def _fold(a):
    """(N, C, D, H, W) -> (N*D, C, H, W): the depths become batch entries of a 2-D convolution."""
    n, c, d, h, w = a.shape
    return a.transpose(0, 2, 1, 3, 4).reshape(n * d, c, h, w)


def _unfold(a, n: int):
    """(N*D, C, H, W) -> an (N, C, D, H, W) view."""
    return a.reshape((n, -1) + a.shape[1:]).transpose(0, 2, 1, 3, 4)


def conv3d_forward(xp, x, w, dg: DepthGeometry, geo: Geometry, out) -> None:
    """out (N, F, OD, OH, OW) = conv(x (N, C, D, H, W), w (F, C/g, kd, kh, kw)), no bias."""
    n, od = x.shape[0], out.shape[2]
    xpad = _depth_padded(xp, x, dg)
    acc = None
    for i, sl in dg.taps(od):
        res = xp.empty((n * od, w.shape[0]) + out.shape[3:], dtype=out.dtype)
        conv_forward(xp, _fold(xpad[:, :, sl]), w[:, :, i], geo, res)
        if acc is None:
            acc = res
        else:
            acc += res
    out[...] = _unfold(acc, n)


def conv3d_backward_data(xp, dy, w, dg: DepthGeometry, geo: Geometry, x_shape, out) -> None:
    """out (= x_shape) = gradient of conv3d w.r.t. its input, given dy (N, F, OD, OH, OW)."""
    n, c, d = x_shape[:3]
    od = dy.shape[2]
    depth = max(d + dg.pad_before + dg.pad_after, dg.pad_before + d,
                (od - 1) * dg.stride + (dg.kernel - 1) * dg.dilate + 1)
    canvas = xp.zeros((n, c, depth) + tuple(x_shape[3:]), dtype=out.dtype)
    dyf = _fold(dy)
    for i, sl in dg.taps(od):
        res = xp.empty((n * od, c) + tuple(x_shape[3:]), dtype=out.dtype)
        conv_backward_data(xp, dyf, w[:, :, i], geo, res.shape, res)
        canvas[:, :, sl] += _unfold(res, n)
    out[...] = canvas[:, :, dg.pad_before:dg.pad_before + d]


def conv3d_backward_weight(xp, x, dy, dg: DepthGeometry, geo: Geometry, out) -> None:
    """out (F, C/g, kd, kh, kw) = gradient of conv3d w.r.t. its weight."""
    xpad = _depth_padded(xp, x, dg)
    dyf = _fold(dy)
    for i, sl in dg.taps(dy.shape[2]):
        conv_backward_weight(xp, _fold(xpad[:, :, sl]), dyf, geo, out[:, :, i])


# -- attributes and geometry --------------------------------------------------------
def _common_attrs(no_bias_default: bool, workspace: int):
    return {
        "kernel": Attr("shape", doc="window size, (w,) or (h, w)"),
        "stride": Attr("shape", (), doc="window step (default 1)"),
        "dilate": Attr("shape", (), doc="dilation (default 1)"),
        "pad": Attr("shape", (), doc="zero padding on both sides (default 0)"),
        "num_filter": Attr("int", doc="number of output channels"),
        "num_group": Attr("int", 1, doc="channel groups"),
        "workspace": Attr("int", workspace, doc="accepted for MXNet compatibility"),
        "no_bias": Attr("bool", no_bias_default, doc="drop the bias input"),
        "cudnn_tune": Attr("str_or_none", None, choices=("fastest", "limited_workspace", "off")),
        "cudnn_off": Attr("bool", False, doc="accepted for MXNet compatibility"),
        "layout": Attr("str_or_none", None, choices=("NCDHW", "NCHW", "NCW", "NDHWC", "NHWC", "NWC")),
    }


_CONV_ATTRS = _common_attrs(False, 1024)
_CONV_BACKWARD_ATTRS = dict(_CONV_ATTRS,
                            no_data_grad=Attr("bool", False, doc="skip the data gradient (nobody needs it)"))
_DECONV_ATTRS = dict(_common_attrs(True, 512),
                     adj=Attr("shape", (), doc="extra rows/cols added to the output (default 0)"),
                     target_shape=Attr("shape", (), doc="output spatial shape; overrides pad and adj"))


_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}
_CHANNEL_LAST = {2: "NHWC", 3: "NDHWC"}   # the channel-last layouts MXNet 1.9.1's Convolution accepts
_SPATIAL_NAMES = {1: "W", 2: "H, W", 3: "D, H, W"}


# -- channel-last layouts: everything runs on channel-first views ------------------------------------
def channel_last(attrs: dict) -> bool:
    """True for NHWC/NDHWC: data (N, *spatial, C), weight (F, *kernel, C/g), output (N, *spatial, F)."""
    return attrs["layout"] in ("NHWC", "NDHWC")


def _first_perm(ndim: int):
    return (0, ndim - 1) + tuple(range(1, ndim - 1))


def _last_perm(ndim: int):
    return (0,) + tuple(range(2, ndim)) + (1,)


def _permuted(shape, perm):
    if shape is None or len(shape) != len(perm):
        return shape
    return tuple(shape[i] for i in perm)


def _layout_shapes(infer):
    """Run a channel-first infer_shape on channel-last data/weight/output shapes (weights permute as data)."""
    def wrapped(attrs, in_shapes):
        if not channel_last(attrs):
            return infer(attrs, in_shapes)
        n = len(attrs["kernel"]) + 2
        first, last = _first_perm(n), _last_perm(n)
        ins, outs = infer(attrs, [_permuted(sh, first) if i < 2 else sh for i, sh in enumerate(in_shapes)])
        return [_permuted(sh, last) if i < 2 else sh for i, sh in enumerate(ins)], [_permuted(outs[0], last)]
    wrapped.__doc__ = infer.__doc__
    return wrapped


def _layout_backward_shapes(infer):
    """The same for infer_shape_backward (attrs, in_shapes, out_shapes) -> in_shapes."""
    def wrapped(attrs, in_shapes, out_shapes):
        if not channel_last(attrs):
            return infer(attrs, in_shapes, out_shapes)
        n = len(attrs["kernel"]) + 2
        first, last = _first_perm(n), _last_perm(n)
        ins = infer(attrs, [_permuted(sh, first) if i < 2 else sh for i, sh in enumerate(in_shapes)],
                    [_permuted(out_shapes[0], first)] + list(out_shapes[1:]))
        return [_permuted(sh, last) if i < 2 else sh for i, sh in enumerate(ins)]
    wrapped.__doc__ = infer.__doc__
    return wrapped


def _layout_views(in_idx, out_idx):
    """Kernel decorator: with a channel-last layout, the listed inputs/outputs become channel-first views
    (no copies; writes through the output views land in the outputs)."""
    def deco(kernel):
        def wrapped(ctx, attrs, inputs, outputs, aux):
            if channel_last(attrs):
                perm = _first_perm(len(attrs["kernel"]) + 2)
                inputs = [a.transpose(perm) if i in in_idx else a for i, a in enumerate(inputs)]
                outputs = [a.transpose(perm) if i in out_idx else a for i, a in enumerate(outputs)]
            return kernel(ctx, attrs, inputs, outputs, aux)
        wrapped.__doc__ = kernel.__doc__
        wrapped.__name__ = kernel.__name__
        return wrapped
    return deco


def _params(op: str, attrs: dict):
    """Validated (kernel, stride, dilate, pad) as 2-D tuples and the spatial rank."""
    kernel = attrs["kernel"]
    nd = len(kernel)
    if nd not in (1, 2, 3):
        raise OperatorError(f"{op}: only 1-D, 2-D and 3-D kernels are supported, got kernel={tuple(kernel)}")
    allowed = (_LAYOUTS[nd],) + ((_CHANNEL_LAST[nd],) if nd in _CHANNEL_LAST else ())
    if attrs["layout"] not in (None,) + allowed:
        raise OperatorError(f"{op}: layout {attrs['layout']} is not supported for a {nd}-D kernel "
                            f"(use {' or '.join(allowed)})")
    kernel = spatial(op, "kernel", kernel, nd, 1)
    stride = spatial(op, "stride", attrs["stride"], nd, 1)
    dilate = spatial(op, "dilate", attrs["dilate"], nd, 1)
    pad = spatial(op, "pad", attrs["pad"], nd, 0)
    positive(op, "kernel", kernel)
    positive(op, "stride", stride)
    positive(op, "dilate", dilate)
    positive(op, "pad", pad, allow_zero=True)
    if attrs["num_filter"] <= 0:
        raise OperatorError(f"{op}: num_filter must be > 0, got {attrs['num_filter']}")
    if attrs["num_group"] <= 0:
        raise OperatorError(f"{op}: num_group must be > 0, got {attrs['num_group']}")
    return kernel, stride, dilate, pad, nd


def _check_data(op, dshape, nd):
    if len(dshape) != nd + 2:
        raise ShapeError(f"{op}: data must be {nd + 2}-D (N, C, {_SPATIAL_NAMES[nd]}) "
                         f"for a {nd}-D kernel, got shape {tuple(dshape)}")


def _split_depth(kernel, stride, dilate, pad, after, groups):
    """(DepthGeometry or None, the 2-D Geometry of the last two axes) for 1-, 2- or 3-D tuples."""
    if len(kernel) < 3:
        return None, Geometry(_to2d(kernel, 1), _to2d(stride, 1), _to2d(dilate, 1), _to2d(pad, 0),
                              _to2d(after, 0), groups)
    depth = DepthGeometry(kernel[0], stride[0], dilate[0], pad[0], after[0])
    return depth, Geometry(kernel[1:], stride[1:], dilate[1:], pad[1:], after[1:], groups)


def conv_geometries(attrs: dict):
    """(DepthGeometry or None for 1-D/2-D, Geometry of the last two spatial axes) of a Convolution."""
    kernel, stride, dilate, pad, _ = _params("Convolution", attrs)
    return _split_depth(kernel, stride, dilate, pad, pad, attrs["num_group"])


def deconv_pad_adj(attrs: dict, in_spatial) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
    """Deconvolution (pad, adj), derived from target_shape when it is given (as MXNet does)."""
    kernel, stride, dilate, pad, nd = _params("Deconvolution", attrs)
    adj = spatial("Deconvolution", "adj", attrs["adj"], nd, 0)
    target = attrs["target_shape"]
    if target and any(t not in (0, None) for t in target):
        target = spatial("Deconvolution", "target_shape", target, nd, 0)
        pad_l, adj_l = [], []
        for n, k, s, d, t in zip(in_spatial, kernel, stride, dilate, target):
            total = s * (n - 1) + d * (k - 1) + 1 - t
            if total < 0:
                raise ShapeError(f"Deconvolution: target_shape {tuple(target)} is too large for input "
                                 f"spatial shape {tuple(in_spatial)}")
            adj_l.append(total % 2)
            pad_l.append((total + 1) // 2)
        return tuple(pad_l), tuple(adj_l)
    for a, s, d in zip(adj, stride, dilate):
        if a >= max(s, d):
            raise OperatorError(f"Deconvolution: adj {tuple(adj)} must be smaller than stride or dilate")
    return pad, adj


def deconv_geometries(attrs: dict, in_spatial):
    """(DepthGeometry or None, Geometry of the last two axes, output spatial shape) of a Deconvolution,
    as the convolution it is the data gradient of."""
    kernel, stride, dilate, _, nd = _params("Deconvolution", attrs)
    pad, adj = deconv_pad_adj(attrs, in_spatial)
    out = tuple(s * (n - 1) + d * (k - 1) + 1 - 2 * p + a
                for n, k, s, d, p, a in zip(in_spatial, kernel, stride, dilate, pad, adj))
    if any(o <= 0 for o in out):
        raise ShapeError(f"Deconvolution: output spatial shape {out} is not positive")
    after = tuple(p - a for p, a in zip(pad, adj))
    depth, geo = _split_depth(kernel, stride, dilate, pad, after, attrs["num_group"])
    return depth, geo, out


def _as4d(x):
    """(N, C, W) as a (N, C, 1, W) view; indexing (not reshape) keeps writes landing in x's buffer."""
    return x if x.ndim == 4 else x[:, :, None, :]


def _inputs(attrs):
    return ["data", "weight"] if attrs["no_bias"] else ["data", "weight", "bias"]


def _check_groups(op, c, attrs):
    g = attrs["num_group"]
    if c % g or attrs["num_filter"] % g:
        raise ShapeError(f"{op}: input channels ({c}) and num_filter ({attrs['num_filter']}) must be "
                         f"divisible by num_group ({g})")


def _filter_op_shapes(op: str, attrs, in_shapes, weight_lead: Callable, out_spatial: Callable):
    """Convolution/Deconvolution inference: data checked, weight (weight_lead(channels, num_filter,
    groups) + kernel) and bias filled in, output (batch, num_filter) + out_spatial(data spatial shape)."""
    kernel, _, _, _, nd = _params(op, attrs)
    ins = list(in_shapes)
    d = ins[0]
    if not known(d):
        return ins, [None]
    d = tuple(d)
    _check_data(op, d, nd)
    _check_groups(op, d[1], attrs)
    f = attrs["num_filter"]
    ins[1] = merge(op, "weight", ins[1], weight_lead(d[1], f, attrs["num_group"]) + kernel)
    if not attrs["no_bias"]:
        ins[2] = merge(op, "bias", ins[2], (f,))
    return ins, [(d[0], f) + out_spatial(d[2:])]


# -- Convolution -----------------------------------------------------------------
@_layout_shapes
def _conv_shape(attrs, in_shapes):
    kernel, stride, dilate, pad, _ = _params("Convolution", attrs)

    def out_spatial(sp):
        out_sp = tuple((n + 2 * p - (dl * (k - 1) + 1)) // s + 1
                       for n, p, dl, k, s in zip(sp, pad, dilate, kernel, stride))
        if any(o <= 0 for o in out_sp):
            raise ShapeError(f"Convolution: kernel {kernel} (dilate {dilate}) does not fit the padded input "
                             f"{sp} (pad {pad})")
        return out_sp
    return _filter_op_shapes("Convolution", attrs, in_shapes, lambda c, f, g: (f, c // g), out_spatial)


@_layout_backward_shapes
def _conv_backward_infer(attrs, in_shapes, out_shapes):
    """Data dimensions the output and weight determine (as MXNet: the batch always, a spatial size
    where its stride is 1, the channels from the weight)."""
    kernel, stride, dilate, pad, nd = _params("Convolution", attrs)
    d, w, out = in_shapes[0], in_shapes[1], out_shapes[0]
    d = list(d) if d is not None else [None] * (nd + 2)
    if len(d) != nd + 2:
        return [None] * len(in_shapes)
    if out is not None and len(out) == nd + 2:
        if d[0] is None:
            d[0] = out[0]
        for i in range(nd):
            if d[2 + i] is None and out[2 + i] is not None and stride[i] == 1:
                d[2 + i] = out[2 + i] - 2 * pad[i] + dilate[i] * (kernel[i] - 1)
    if d[1] is None and w is not None and len(w) == nd + 2 and w[1] is not None:
        d[1] = w[1] * attrs["num_group"]
    return [tuple(d)] + [None] * (len(in_shapes) - 1)


def _bias_view(b, ndim):
    return b.reshape((1, -1) + (1,) * (ndim - 2))


@float32_on_cpu
@_layout_views((0, 1), (0,))
def _conv_forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    depth, geo = conv_geometries(attrs)
    out = outputs[0]
    bias = None if attrs["no_bias"] else inputs[2]
    if depth is not None:
        conv3d_forward(xp, inputs[0], inputs[1], depth, geo, out)
        if bias is not None:
            out += _bias_view(bias, out.ndim)
    else:
        conv_forward(xp, _as4d(inputs[0]), _as4d(inputs[1]), geo, _as4d(out), bias)


@float32_on_cpu
@_layout_views((0, 1, 2), (0, 1))
def _conv_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    dy, x, w = inputs
    depth, geo = conv_geometries(attrs)
    dy_in = None
    if (depth is None and not _is_pointwise(geo, x.shape[1], w.shape[0])
            and not _winograd_fits(xp, geo, _as4d(x), _as4d(w), _as4d(dy))):  # (the Winograd form needs none)
        dy_in = _internal(xp, _as4d(dy), choose_layout(geo, x.shape[1], w.shape[0]))  # one copy for both gradients
    if attrs["no_data_grad"]:  # nobody reads it (MXNet leaves such an output unwritten): zeros, no GEMM
        outputs[0][...] = 0
    elif depth is not None:
        conv3d_backward_data(xp, dy, w, depth, geo, x.shape, outputs[0])
    else:
        conv_backward_data(xp, _as4d(dy), _as4d(w), geo, _as4d(x).shape, _as4d(outputs[0]), dy_in)
    if depth is not None:
        conv3d_backward_weight(xp, x, dy, depth, geo, outputs[1])
    else:
        conv_backward_weight(xp, _as4d(x), _as4d(dy), geo, _as4d(outputs[1]), dy_in)
    if not attrs["no_bias"]:
        outputs[2][...] = dy.sum(axis=tuple(a for a in range(dy.ndim) if a != 1))


def _conv_gradient(F, attrs, inputs, outputs, out_grads, needed=None):
    """Gradients through `_backward_Convolution`.  `needed` (per input, from the gradient pass or the
    tape) lets it skip the data gradient when nobody wants it (a network's first layer), as MXNet's
    kernel skips an output whose req is null."""
    skip = needed is not None and not needed[0]
    res = call_op(F, "_backward_Convolution", [out_grads[0], inputs[0], inputs[1]],
                  dict(attrs, no_data_grad=skip), 2 if attrs["no_bias"] else 3)
    return [None if skip else res[0]] + list(res[1:])


def _grad_outputs(attrs):
    return ["data_grad", "weight_grad"] + ([] if attrs["no_bias"] else ["bias_grad"])


def _backward_shape(attrs, in_shapes):
    outs = [in_shapes[1], in_shapes[2]] + ([] if attrs["no_bias"] else [(attrs["num_filter"],)])
    return in_shapes, outs


register(OpDef(
    name="Convolution", aliases=["Convolution_v1"], attrs=_CONV_ATTRS, inputs=_inputs, outputs=["output"],
    infer_shape=_conv_shape, infer_shape_backward=_conv_backward_infer, infer_type=float_type_rule("Convolution"),
    kernels={"any": _conv_forward}, expensive=True, gradient=_conv_gradient, gradient_takes_needed=True,
    doc="1-D/2-D/3-D convolution (NCW/NCHW/NCDHW) with stride, pad, dilate and groups, via im2col + GEMM."))
register(OpDef(
    name="_backward_Convolution", attrs=_CONV_BACKWARD_ATTRS, inputs=["out_grad", "data", "weight"],
    outputs=_grad_outputs, infer_shape=_backward_shape, kernels={"any": _conv_backward},
    doc="Gradients of Convolution w.r.t. data, weight and bias."))


# -- Deconvolution ----------------------------------------------------------------
@_layout_shapes
def _deconv_shape(attrs, in_shapes):
    return _filter_op_shapes("Deconvolution", attrs, in_shapes, lambda c, f, g: (c, f // g),
                             lambda sp: deconv_geometries(attrs, sp)[2])


@float32_on_cpu
@_layout_views((0, 1), (0,))
def _deconv_forward(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    depth, geo, _ = deconv_geometries(attrs, x.shape[2:])
    out = outputs[0]
    # a deconvolution is the data gradient of the convolution mapping its output back to its input
    if depth is not None:
        conv3d_backward_data(ctx.xp, x, inputs[1], depth, geo, out.shape, out)
    else:
        conv_backward_data(ctx.xp, _as4d(x), _as4d(inputs[1]), geo, _as4d(out).shape, _as4d(out))
    if not attrs["no_bias"]:
        out += _bias_view(inputs[2], out.ndim)


@float32_on_cpu
@_layout_views((0, 1, 2), (0, 1))
def _deconv_backward(ctx, attrs, inputs, outputs, aux):
    dy, x, w = inputs
    depth, geo, _ = deconv_geometries(attrs, x.shape[2:])
    if depth is not None:
        conv3d_forward(ctx.xp, dy, w, depth, geo, outputs[0])
        conv3d_backward_weight(ctx.xp, dy, x, depth, geo, outputs[1])
    else:
        conv_forward(ctx.xp, _as4d(dy), _as4d(w), geo, _as4d(outputs[0]))
        conv_backward_weight(ctx.xp, _as4d(dy), _as4d(x), geo, _as4d(outputs[1]))
    if not attrs["no_bias"]:
        outputs[2][...] = dy.sum(axis=tuple(a for a in range(dy.ndim) if a != 1))


register(OpDef(
    name="Deconvolution", attrs=_DECONV_ATTRS, inputs=_inputs, outputs=["output"],
    infer_shape=_deconv_shape, infer_type=float_type_rule("Deconvolution"), kernels={"any": _deconv_forward},
    expensive=True,
    gradient=backward_via("_backward_Deconvolution", lambda a, i, o, g: [g[0], i[0], i[1]],
                          lambda a: [True, True] + ([] if a["no_bias"] else [True])),
    doc="1-D/2-D/3-D transposed convolution (weight (C, num_filter/num_group, *kernel)); adj and target_shape."))
register(OpDef(
    name="_backward_Deconvolution", attrs=_DECONV_ATTRS, inputs=["out_grad", "data", "weight"],
    outputs=_grad_outputs, infer_shape=_backward_shape, kernels={"any": _deconv_backward},
    doc="Gradients of Deconvolution w.r.t. data, weight and bias."))
