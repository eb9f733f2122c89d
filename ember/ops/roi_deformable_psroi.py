"""_contrib_DeformablePSROIPooling (Deformable R-FCN's position-sensitive ROI pooling, MXNet 1.x contrib).

For ROI r, output channel k and bin (i, j) of a pooled_size x pooled_size grid: the mean of
sample_per_part^2 bilinear samples of data[batch, (k * G + gi) * G + gj] (G = group_size, (gi, gj) the bin's
group) taken on a regular grid inside the bin, the bin shifted by trans[r, 2 c, pi, pj] * trans_std * roi width
and trans[r, 2 c + 1, pi, pj] * trans_std * roi height (c = k // (output_dim / classes), (pi, pj) the bin's
part on a part_size grid; no_trans: unshifted, no trans input).  As MXNet 1.9.1's CPU kernel: ROI corners
rounded half away from zero, the far corner inclusive, -0.5 pixel centres ([round(x1), round(x2) + 1) *
spatial_scale - 0.5), sizes at least 0.1; samples outside [-0.5, size - 0.5] skipped, the others clamped to
the map; an empty bin gives 0.  The hidden output top_count holds each bin's sample count.  Gradients: data
(each sample's share of its bin's gradient, bilinear weights), trans (the interpolation's slope along x and
y, times trans_std and the roi's size), rois zero."""
from __future__ import annotations

from typing import Dict

import numpy as np

from ..backend import to_host
from ..base import OperatorError, ShapeError
from ._nn_util import float_types, scatter_add
from .registry import Attr, OpDef, register

_OP = "_contrib_DeformablePSROIPooling"
_ATTRS = {
    "spatial_scale": Attr("float", doc="rois coordinates times this give data coordinates (0..1)"),
    "output_dim": Attr("int", doc="output channels"),
    "group_size": Attr("int", doc="position groups per side"),
    "pooled_size": Attr("int", doc="bins per side"),
    "part_size": Attr("int", 0, doc="trans parts per side (0: pooled_size)"),
    "sample_per_part": Attr("int", 1, doc="samples per bin side"),
    "trans_std": Attr("float", 0.0, doc="scale of trans (0..1)"),
    "no_trans": Attr("bool", False, doc="no trans input: bins stay where the ROI puts them"),
}
_ROI_CHUNK = 64   # ROIs sampled together: bounds the temporaries (ROIs x output_dim x bins x samples)


def _inputs(attrs):
    return ["data", "rois"] if attrs["no_trans"] else ["data", "rois", "trans"]


def _part(attrs) -> int:
    return attrs["part_size"] or attrs["pooled_size"]


def _check_attrs(attrs) -> None:
    for name in ("output_dim", "group_size", "pooled_size", "sample_per_part"):
        if attrs[name] <= 0:
            raise OperatorError(f"{_OP}: {name} must be positive, got {attrs[name]}")
    if attrs["part_size"] < 0:
        raise OperatorError(f"{_OP}: part_size must not be negative, got {attrs['part_size']}")
    for name in ("spatial_scale", "trans_std"):
        if not 0.0 <= attrs[name] <= 1.0:
            raise OperatorError(f"{_OP}: {name} must be in [0, 1], got {attrs[name]}")


def _infer_shape(attrs, in_shapes):
    _check_attrs(attrs)
    d, rois = in_shapes[0], in_shapes[1]
    k, g, p, part = attrs["output_dim"], attrs["group_size"], attrs["pooled_size"], _part(attrs)
    if d is not None and len(d) != 4:
        raise ShapeError(f"{_OP}: data must be 4-D (N, C, H, W), got {tuple(d)}")
    if d is not None and d[1] is not None and d[1] < k * g * g:
        raise ShapeError(f"{_OP}: data has {d[1]} channels, fewer than output_dim * group_size^2 = {k * g * g}")
    if rois is not None and (len(rois) != 2 or (rois[1] is not None and rois[1] != 5)):
        raise ShapeError(f"{_OP}: rois must be (R, 5) rows [batch, x1, y1, x2, y2], got {tuple(rois)}")
    if not attrs["no_trans"]:
        t = in_shapes[2]
        if t is not None:
            if len(t) != 4 or (t[1] is not None and (t[1] < 2 or t[1] % 2)) or \
                    (t[2] is not None and t[2] != part) or (t[3] is not None and t[3] != part):
                raise ShapeError(f"{_OP}: trans must be (R, 2 * classes, part_size, part_size) with part_size "
                                 f"{part}, got {tuple(t)}")
            if t[1] is not None and k % (t[1] // 2):
                raise ShapeError(f"{_OP}: output_dim {k} is not a multiple of trans's {t[1] // 2} classes")
            if rois is not None and None not in (t[0], rois[0]) and t[0] != rois[0]:
                raise ShapeError(f"{_OP}: trans has {t[0]} rows, rois {rois[0]}")
    if d is None or rois is None or rois[0] is None:
        return in_shapes, [None, None]
    out = (rois[0], k, p, p)
    return list(in_shapes), [out, out]


def _round(v):
    """C's round: halves away from zero."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def _samples(attrs, data, rois, trans) -> Dict[str, np.ndarray]:
    """Every sample of every bin of these ROIs, shape (R, K, P, P, S, S) after broadcasting: the clamped
    position (w, h), whether it counts (valid), the data channel, the batch index, and the trans cell."""
    dt = data.dtype.type
    _, _, height, width = data.shape
    k, g, p, s = attrs["output_dim"], attrs["group_size"], attrs["pooled_size"], attrs["sample_per_part"]
    part, scale, std = _part(attrs), dt(attrs["spatial_scale"]), dt(attrs["trans_std"])
    r = rois.astype(dt)
    start_w, start_h = _round(r[:, 1]) * scale - dt(0.5), _round(r[:, 2]) * scale - dt(0.5)
    end_w, end_h = (_round(r[:, 3]) + dt(1)) * scale - dt(0.5), (_round(r[:, 4]) + dt(1)) * scale - dt(0.5)
    roi_w, roi_h = np.maximum(end_w - start_w, dt(0.1)), np.maximum(end_h - start_h, dt(0.1))
    bin_w, bin_h = roi_w / dt(p), roi_h / dt(p)
    sub_w, sub_h = bin_w / dt(s), bin_h / dt(s)
    bins = np.arange(p)
    part_of = np.floor(bins.astype(dt) / dt(p) * dt(part)).astype(np.int64)
    group_of = np.clip(np.floor(bins.astype(dt) * dt(g) / dt(p)).astype(np.int64), 0, g - 1)
    n_rois = rois.shape[0]
    ctop = np.arange(k)
    if trans is None:
        tx = ty = np.zeros((n_rois, k, p, p), dt)
        cls = np.zeros(k, np.int64)
    else:
        classes = trans.shape[1] // 2
        cls = ctop // (k // classes)
        cell = (np.arange(n_rois)[:, None, None, None], 2 * cls[None, :, None, None],
                part_of[None, None, :, None], part_of[None, None, None, :])
        tx = trans[cell] * std
        ty = trans[(cell[0], cell[1] + 1, cell[2], cell[3])] * std
    e = (slice(None), None, None, None)   # a per-ROI vector against (K, P, P)
    wstart = bins[None, None, None, :].astype(dt) * bin_w[e] + start_w[e] + tx * roi_w[e]
    hstart = bins[None, None, :, None].astype(dt) * bin_h[e] + start_h[e] + ty * roi_h[e]
    steps = np.arange(s).astype(dt)
    w = wstart[..., None, None] + steps[None, :] * sub_w[:, None, None, None, None, None]
    h = hstart[..., None, None] + steps[:, None] * sub_h[:, None, None, None, None, None]
    w, h = np.broadcast_arrays(w, h)   # (iw along the last axis, ih along the one before)
    valid = (w >= -0.5) & (w <= width - 0.5) & (h >= -0.5) & (h <= height - 0.5)
    w = np.clip(w, dt(0), dt(width - 1))
    h = np.clip(h, dt(0), dt(height - 1))
    chan = (ctop[:, None, None] * g + group_of[None, :, None]) * g + group_of[None, None, :]
    batch = rois[:, 0].astype(np.int64)
    return dict(w=w, h=h, valid=valid, chan=np.broadcast_to(chan[None, :, :, :, None, None], w.shape),
                batch=np.broadcast_to(batch[:, None, None, None, None, None], w.shape), cls=cls,
                part_of=part_of, roi_w=roi_w, roi_h=roi_h)


def _corners(sm):
    """(y0, y1, x0, x1, dist_x, dist_y) of every sample's bilinear interpolation."""
    w, h = sm["w"], sm["h"]
    x0, x1 = np.floor(w).astype(np.int64), np.ceil(w).astype(np.int64)
    y0, y1 = np.floor(h).astype(np.int64), np.ceil(h).astype(np.int64)
    return y0, y1, x0, x1, w - x0.astype(w.dtype), h - y0.astype(h.dtype)


def _taps(corners):
    """The four (row, column, weight) taps of every sample's bilinear interpolation."""
    y0, y1, x0, x1, dx, dy = corners
    one = dx.dtype.type(1)
    return ((y0, x0, (one - dx) * (one - dy)), (y1, x0, (one - dx) * dy), (y0, x1, dx * (one - dy)),
            (y1, x1, dx * dy))


def _check_batch(rois, n: int) -> None:
    bad = (rois[:, 0] < 0) | (rois[:, 0] >= n)
    if bad.any():
        r = int(np.argmax(bad))
        raise OperatorError(f"{_OP}: roi {r} names batch index {rois[r, 0]:g}, data has {n} images")


def _chunks(n_rois: int):
    for lo in range(0, n_rois, _ROI_CHUNK):
        yield slice(lo, min(lo + _ROI_CHUNK, n_rois))


def _forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    data, rois = to_host(inputs[0]), to_host(inputs[1])
    trans = None if attrs["no_trans"] else to_host(inputs[2])
    _check_batch(rois, data.shape[0])
    out = np.zeros(outputs[0].shape, data.dtype)
    count = np.zeros(outputs[1].shape, data.dtype)
    for sl in _chunks(rois.shape[0]):
        sm = _samples(attrs, data, rois[sl], None if trans is None else trans[sl])
        b, c = sm["batch"], sm["chan"]
        val = sum(q * data[b, c, ys, xs] for ys, xs, q in _taps(_corners(sm)))
        n = sm["valid"].sum(axis=(-2, -1))
        total = np.where(sm["valid"], val, 0).sum(axis=(-2, -1))
        out[sl] = np.where(n > 0, total / np.maximum(n, 1).astype(data.dtype), 0)
        count[sl] = n
    outputs[0][...] = xp.asarray(out)
    outputs[1][...] = xp.asarray(count)


def _backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    host = [to_host(x) for x in inputs]
    gout, data, rois = host[0], host[1], host[2]
    trans = None if attrs["no_trans"] else host[3]
    count = host[-1]
    dt = data.dtype.type
    ddata = np.zeros(data.shape, np.float64)
    dtrans = None if trans is None else np.zeros(trans.shape, np.float64)
    std = float(attrs["trans_std"])
    for sl in _chunks(rois.shape[0]):
        sm = _samples(attrs, data, rois[sl], None if trans is None else trans[sl])
        corners = _corners(sm)
        y0, y1, x0, x1, dx, dy = corners
        b, c, valid = sm["batch"], sm["chan"], sm["valid"]
        cnt = count[sl]
        share = np.where(cnt > 0, gout[sl] / np.where(cnt > 0, cnt, 1), 0).astype(dt)[..., None, None]
        share = np.broadcast_to(share, valid.shape)
        one = dt(1)
        keep = valid & (share != 0)
        for ys, xs, q in _taps(corners):
            scatter_add(np, ddata, (b[keep], c[keep], ys[keep], xs[keep]), (q * share)[keep].astype(np.float64))
        if dtrans is None:
            continue
        u00, u01 = data[b, c, y0, x0], data[b, c, y1, x0]
        u10, u11 = data[b, c, y0, x1], data[b, c, y1, x1]
        e = (slice(None), None, None, None, None, None)
        diff_x = (u11 * dy + u10 * (one - dy) - u01 * dy - u00 * (one - dy)) * (dt(std) * share) * sm["roi_w"][e]
        diff_y = (u11 * dx + u01 * (one - dx) - u10 * dx - u00 * (one - dx)) * (dt(std) * share) * sm["roi_h"][e]
        rr = np.broadcast_to((np.arange(valid.shape[0]) + sl.start)[:, None, None, None, None, None], valid.shape)
        cc = np.broadcast_to(2 * sm["cls"][None, :, None, None, None, None], valid.shape)
        ph = np.broadcast_to(sm["part_of"][None, None, :, None, None, None], valid.shape)
        pw = np.broadcast_to(sm["part_of"][None, None, None, :, None, None], valid.shape)
        scatter_add(np, dtrans, (rr[keep], cc[keep], ph[keep], pw[keep]), diff_x[keep].astype(np.float64))
        scatter_add(np, dtrans, (rr[keep], cc[keep] + 1, ph[keep], pw[keep]), diff_y[keep].astype(np.float64))
    results = [ddata, np.zeros(rois.shape)] + ([] if dtrans is None else [dtrans])
    for o, v in zip(outputs, results):
        o[...] = xp.asarray(v)


def _backward_inputs(attrs):
    return ["ograd"] + _inputs(attrs) + ["top_count"]


def _backward_outputs(attrs):
    return ["data_grad", "rois_grad"] + ([] if attrs["no_trans"] else ["trans_grad"])


def _types(attrs, dtypes, n_out):
    ins, outs, _ = float_types(_OP, attrs, dtypes, n_out)
    return ins, outs


register(OpDef(
    name="_backward" + _OP, attrs=_ATTRS, inputs=_backward_inputs, outputs=_backward_outputs,
    infer_shape=lambda a, s: (s, [s[1], s[2]] + ([] if a["no_trans"] else [s[3]])),
    infer_type=lambda a, d: _types(a, d, 2 if a["no_trans"] else 3), kernels={"any": _backward},
    doc="Gradient of DeformablePSROIPooling: data (bilinear shares of each bin's gradient), rois (zeros), "
        "trans (the interpolation's slopes)."))
register(OpDef(
    name=_OP, attrs=_ATTRS, inputs=_inputs, outputs=["output", "top_count"], num_visible_outputs=lambda a: 1,
    infer_shape=_infer_shape, infer_type=lambda a, d: _types(a, d, 2), kernels={"any": _forward},
    gradient=lambda F, a, i, o, g: list(getattr(F, "_backward" + _OP)(g[0], *i, o[1], **a)),
    doc="Deformable position-sensitive ROI average pooling (Deformable R-FCN); hidden output top_count."))
