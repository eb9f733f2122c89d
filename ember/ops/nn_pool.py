"""Pooling (max, avg, sum, lp; 1-D, 2-D and 3-D; valid/full conventions; global pooling).

Each kernel runs as one vectorised operation per kernel position (prod(kernel) of them)
over strided slices of the padded input, never a loop over output pixels; 1-D and 2-D max pooling
of float32 arrays on CPU run native kernels instead (native/pool_kernels.h), with the same results.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple, Tuple

import numpy as np

from ..base import OperatorError, ShapeError
from ..engine import native
from ._nn_util import backward_via, float_type_rule, known, parse_optional_bool, positive, spatial
from .registry import Attr, OpDef, register

_ATTRS = {
    "kernel": Attr("shape", (), doc="window size (ignored with global_pool)"),
    "pool_type": Attr("str", "max", choices=("avg", "lp", "max", "sum")),
    "global_pool": Attr("bool", False, doc="pool over the whole spatial extent"),
    "cudnn_off": Attr("bool", False, doc="accepted for MXNet compatibility"),
    "pooling_convention": Attr("str", "valid", choices=("full", "same", "valid"),
                               doc="valid: floor; full: ceil when computing the output size; same: ceil(in / stride), padded by the op"),
    "stride": Attr("shape", (), doc="window step (default 1)"),
    "pad": Attr("shape", (), doc="padding on both sides (default 0)"),
    "p_value": Attr("int_or_none", None, doc="p of lp pooling"),
    "count_include_pad": Attr("any", None, doc="avg: count padded positions in the divisor (default True)"),
    "layout": Attr("str_or_none", None, choices=("NCDHW", "NCHW", "NCW", "NDHWC", "NHWC", "NWC")),
}


class PoolGeometry(NamedTuple):
    """Window geometry of one pooling call, one entry per spatial axis (1, 2 or 3 of them)."""

    kernel: Tuple[int, ...]
    stride: Tuple[int, ...]
    pad: Tuple[int, ...]
    extra: Tuple[int, ...]      # zero/-inf entries added on the far side by 'full'
    out: Tuple[int, ...]


_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def channel_last(attrs) -> bool:
    """True for the NWC/NHWC/NDHWC layouts (channels on the last axis)."""
    return attrs["layout"] is not None and attrs["layout"].endswith("C")


def _channel_first(a, attrs):
    """A channel-first view of `a` (no copy): writes through it land in `a`."""
    return a if not channel_last(attrs) else a.transpose((0, a.ndim - 1) + tuple(range(1, a.ndim - 1)))


def _params(attrs, in_spatial):
    nd = len(in_spatial)
    if nd not in (1, 2, 3):
        raise ShapeError(f"Pooling: only 1-D, 2-D and 3-D pooling are supported; data has {nd} spatial axes")
    if attrs["layout"] not in (None,) + _LAYOUTS[nd]:
        raise OperatorError(f"Pooling: layout {attrs['layout']} does not fit {nd + 2}-D data "
                            f"(use {' or '.join(_LAYOUTS[nd])})")
    if attrs["pool_type"] == "lp" and attrs["p_value"] not in (1, 2, 3):
        raise OperatorError(f"Pooling: lp pooling needs p_value 1, 2 or 3, got {attrs['p_value']}")
    if attrs["global_pool"]:
        return tuple(in_spatial), (1,) * nd, (0,) * nd
    if len(attrs["kernel"]) != nd:
        raise OperatorError(f"Pooling: kernel {tuple(attrs['kernel'])} must have one entry per spatial axis "
                            f"of the data ({nd})")
    kernel = spatial("Pooling", "kernel", attrs["kernel"], nd, 1)
    stride = spatial("Pooling", "stride", attrs["stride"], nd, 1)
    # MXNet reads only the leading entries of a longer pad (a 1-D pooling given pad=(0, 0, 0) works)
    pad = spatial("Pooling", "pad", tuple(attrs["pad"])[:nd] if attrs["pad"] else attrs["pad"], nd, 0)
    positive("Pooling", "kernel", kernel)
    positive("Pooling", "stride", stride)
    positive("Pooling", "pad", pad, allow_zero=True)
    if attrs["pooling_convention"] == "same":
        if nd != 1 or attrs["pool_type"] != "max":  # MXNet 1.9.1 has 'same' for 1-D max pooling only
            raise OperatorError("Pooling: pooling_convention='same' supports 1-D max pooling only (MXNet 1.9.1)")
        if any(pad):
            raise OperatorError(f"Pooling: pad must be 0 with pooling_convention='same' (it pads itself), got {pad}")
    return kernel, stride, pad


def geometry(attrs, in_spatial) -> PoolGeometry:
    """Validated geometry (and output spatial size) for data of spatial shape `in_spatial`."""
    kernel, stride, pad = _params(attrs, in_spatial)
    full = attrs["pooling_convention"] == "full"
    if attrs["pooling_convention"] == "same" and not attrs["global_pool"]:
        # ceil(n / stride) outputs; the padding they need is split, the odd entry on the far side
        out, pads, extra = [], [], []
        for n, k, s in zip(in_spatial, kernel, stride):
            o = -(-n // s)
            total = max(0, (o - 1) * s + k - n)
            out.append(o)
            pads.append(total // 2)
            extra.append(total - 2 * (total // 2))
        return PoolGeometry(kernel, stride, tuple(pads), tuple(extra), tuple(out)), tuple(out)
    out, extra = [], []
    for n, k, s, p in zip(in_spatial, kernel, stride, pad):
        span = n + 2 * p - k
        if span < 0:
            raise ShapeError(f"Pooling: kernel {kernel} is larger than the padded input {tuple(in_spatial)} "
                             f"(pad {pad})")
        o = (math.ceil(span / s) if full else span // s) + 1
        out.append(o)
        extra.append(max(0, (o - 1) * s + k - (n + 2 * p)))
    return PoolGeometry(kernel, stride, pad, tuple(extra), tuple(out)), tuple(out)


def _infer_shape(attrs, in_shapes):
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None]
    d = tuple(d)
    if len(d) not in (3, 4, 5):
        raise ShapeError(f"Pooling: data must be 3-D (N, C, W), 4-D (N, C, H, W) or 5-D (N, C, D, H, W), "
                         f"got shape {d}")
    if channel_last(attrs):
        _, out = geometry(attrs, d[1:-1])
        return [d], [d[:1] + out + d[-1:]]
    _, out = geometry(attrs, d[2:])
    return [d], [d[:2] + out]


def _padded(xp, x, geo, value):
    if not any(geo.pad) and not any(geo.extra):
        return x
    return xp.pad(x, [(0, 0), (0, 0)] + [(p, p + e) for p, e in zip(geo.pad, geo.extra)],
                  constant_values=value)


def _slices(geo):
    """One index per kernel position; it selects that tap for every output pixel."""
    for taps in itertools.product(*(range(k) for k in geo.kernel)):
        yield (slice(None), slice(None)) + tuple(slice(i, i + s * (o - 1) + 1, s)
                                                 for i, s, o in zip(taps, geo.stride, geo.out))


def _divisor(xp, attrs, geo, in_sizes, dtype):
    """avg pooling divisor per output pixel (separable: product of per-axis window counts)."""
    include = parse_optional_bool("Pooling", "count_include_pad", attrs["count_include_pad"])
    include = True if include is None else include
    div = np.ones((), dtype=np.int64)
    for n, k, s, p, o in zip(in_sizes, geo.kernel, geo.stride, geo.pad, geo.out):
        start = np.arange(o) * s - p
        lo, hi = (-p, n + p) if include else (0, n)
        div = np.multiply.outer(div, np.minimum(start + k, hi) - np.maximum(start, lo))
    return xp.asarray(np.maximum(div, 1).astype(dtype))


def _native_max_pool(geo: PoolGeometry, x, y, dy=None, dx=None) -> bool:
    """Max pooling (with dy and dx: its gradient into dx) by the native kernel, 1-D pooling as 2-D
    pooling of one-row maps; False, nothing done, where the arrays do not fit it (not C-contiguous
    float32 numpy arrays, 3-D pooling)."""
    if len(geo.kernel) == 2:
        window = geo.kernel + geo.stride + geo.pad
    elif len(geo.kernel) == 1:
        window = (1,) + geo.kernel + (1,) + geo.stride + (0,) + geo.pad
        x, y = x[:, :, None], y[:, :, None]
        if dy is not None:
            dy, dx = dy[:, :, None], dx[:, :, None]
    else:
        return False
    (kh, kw, sh, sw, ph, pw) = window
    if dy is None:
        return native.max_pool2d_f32(x, y, kh, kw, sh, sw, ph, pw)
    return native.max_pool2d_backward_f32(x, y, dy, dx, kh, kw, sh, sw, ph, pw)


def _forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x, out = _channel_first(inputs[0], attrs), _channel_first(outputs[0], attrs)
    geo, _ = geometry(attrs, x.shape[2:])
    kind = attrs["pool_type"]
    if kind == "max" and xp is np and _native_max_pool(geo, x, out):
        return
    if kind == "max":
        # separable: the window maximum is the maximum along each axis in turn (the same values,
        # exactly), kh + kw passes over shrinking arrays instead of kh * kw over the output
        acc = _padded(xp, x, geo, -np.inf)
        for d, (k, s, o) in enumerate(zip(geo.kernel, geo.stride, geo.out)):
            taps = [acc[(slice(None),) * (2 + d) + (slice(i, i + s * (o - 1) + 1, s),)] for i in range(k)]
            red = taps[0].copy()
            for t in taps[1:]:
                xp.maximum(red, t, out=red)
            acc = red
        out[...] = acc
        return
    xpad = _padded(xp, x, geo, 0)
    p = attrs["p_value"] if kind == "lp" else 1
    acc = xp.zeros(out.shape, dtype=x.dtype)
    for idx in _slices(geo):
        acc += xpad[idx] if p == 1 else xpad[idx] ** p
    if kind == "avg":
        acc /= _divisor(xp, attrs, geo, x.shape[2:], x.dtype)
    elif kind == "lp" and p != 1:
        acc = acc ** (1.0 / p)
    out[...] = acc


def _backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    dy, x, y = (_channel_first(a, attrs) for a in inputs)
    dx = _channel_first(outputs[0], attrs)
    geo, _ = geometry(attrs, x.shape[2:])
    kind = attrs["pool_type"]
    if kind == "max" and xp is np and _native_max_pool(geo, x, y, dy, dx):
        return
    canvas = xp.zeros(x.shape[:2] + tuple(n + 2 * p + e for n, p, e in zip(x.shape[2:], geo.pad, geo.extra)),
                      dtype=dx.dtype)
    if kind == "max":
        xpad = _padded(xp, x, geo, -np.inf)
        taken = xp.zeros(dy.shape, dtype=bool)
        for idx in _slices(geo):
            # the first maximum in window order receives the gradient, as in MXNet
            hit = (xpad[idx] == y) & ~taken
            canvas[idx] += xp.where(hit, dy, 0)
            taken |= hit
    else:
        g = dy
        if kind == "avg":
            g = dy / _divisor(xp, attrs, geo, x.shape[2:], dy.dtype)
        p = attrs["p_value"] if kind == "lp" else 1
        xpad = _padded(xp, x, geo, 0) if p != 1 else None
        for idx in _slices(geo):
            if p == 1:
                canvas[idx] += g
            else:  # d (sum x^p)^(1/p) / dx = x^(p-1) / y^(p-1)
                with np.errstate(divide="ignore", invalid="ignore"):
                    ratio = xp.where(y != 0, xpad[idx] ** (p - 1) / y ** (p - 1), 0)
                canvas[idx] += g * ratio
    dx[...] = canvas[(slice(None), slice(None)) + tuple(slice(p, p + n) for p, n in zip(geo.pad, x.shape[2:]))]


register(OpDef(
    name="Pooling", attrs=_ATTRS, inputs=["data"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=float_type_rule("Pooling"),
    kernels={"any": _forward},
    gradient=backward_via("_backward_Pooling", lambda a, i, o, g: [g[0], i[0], o[0]], lambda a: [True]),
    doc="1-D/2-D/3-D max, avg, sum or lp pooling with stride, pad, global_pool and valid/full conventions."))


def _linear_pooling(attrs) -> bool:
    """avg/sum (and lp with p=1) pooling: the gradient spreads out_grad by window geometry alone."""
    return attrs["pool_type"] in ("avg", "sum") or (attrs["pool_type"] == "lp" and attrs["p_value"] == 1)


register(OpDef(
    name="_backward_Pooling", attrs=_ATTRS, inputs=["out_grad", "data", "output"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[1]]), kernels={"any": _backward}, doc="Gradient of Pooling.",
    # linear pooling reads data and output for their shapes only (max and lp>1 compare values)
    shape_only_inputs=lambda a: (1, 2) if _linear_pooling(a) else ()))
