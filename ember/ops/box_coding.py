"""_contrib_box_encode / _contrib_box_decode (MXNet's `mx.nd/sym.contrib.box_encode`, `box_decode`):
the normalized center-offset coding of boxes that SSD-style detectors train on.

encode(samples, matches, anchors, refs, means, stds) -> (targets, masks): for every anchor whose
sample is positive (> 0.5), the offsets of its matched reference box
((rx - ax) / aw, (ry - ay) / ah, log(rw / aw), log(rh / ah)), minus `means`, divided by `stds`,
with mask 1; zeros elsewhere.  Anchors and refs are corner boxes.
decode(data, anchors) -> corner boxes: the inverse, each offset multiplied by std0..std3 first (the
stds the targets were divided by), the log-sizes clipped to `clip` when it is > 0; anchors are
corner or center boxes (`format`).
Both have a zero gradient, as MXNet 1.9.1.
"""
from __future__ import annotations

from ..base import ShapeError
from ._common import no_gradient
from .registry import Attr, OpDef, register


def _center(xp, boxes):
    """(x, y, w, h) of corner boxes (..., 4)."""
    x0, y0, x1, y1 = (boxes[..., i] for i in range(4))
    return (x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0


# -- encode ----------------------------------------------------------------------------------------
def _encode_shape(attrs, in_shapes):
    samples, matches, anchors, refs, means, stds = in_shapes
    if samples is None or anchors is None or refs is None:
        return in_shapes, [None, None]
    if len(samples) != 2 or tuple(anchors) != tuple(samples) + (4,) or len(refs) != 3 or refs[0] != samples[0] \
            or refs[2] != 4:
        raise ShapeError(f"_contrib_box_encode: expected samples (B, N), anchors (B, N, 4), refs (B, M, 4), "
                         f"got {tuple(samples)}, {tuple(anchors)}, {tuple(refs)}")
    for name, s in (("matches", matches), ("means", means), ("stds", stds)):
        want = tuple(samples) if name == "matches" else (4,)
        if s is not None and tuple(s) != want:
            raise ShapeError(f"_contrib_box_encode: {name} must have shape {want}, got {tuple(s)}")
    out = tuple(anchors)
    return [tuple(samples), tuple(samples), out, tuple(refs), (4,), (4,)], [out, out]


def _encode(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    samples, matches, anchors, refs, means, stds = inputs
    targets, masks = outputs
    b = xp.arange(samples.shape[0])[:, None]
    matched = refs[b, matches.astype(xp.int64)]            # (B, N, 4): each anchor's reference box
    ax, ay, aw, ah = _center(xp, anchors)
    rx, ry, rw, rh = _center(xp, matched)
    with_errstate = getattr(xp, "errstate", None)
    ctx_mgr = with_errstate(divide="ignore", invalid="ignore") if with_errstate else _nullcontext()
    with ctx_mgr:
        t = xp.stack([(rx - ax) / aw, (ry - ay) / ah, xp.log(rw / aw), xp.log(rh / ah)], axis=-1)
    t = (t - means) / stds
    positive = (samples > 0.5)[..., None]
    targets[...] = xp.where(positive, t, 0)
    masks[...] = xp.where(positive, 1, 0)


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


register(OpDef(
    name="_contrib_box_encode", inputs=["samples", "matches", "anchors", "refs", "means", "stds"],
    outputs=["output0", "output1"], infer_shape=_encode_shape,
    infer_type=lambda a, d: (d, [d[2], d[2]]), kernels={"any": _encode}, gradient=no_gradient(6),
    doc="Normalized center-offset targets (and masks) of the matched reference boxes of positive anchors."))


# -- decode ----------------------------------------------------------------------------------------
_DECODE_ATTRS = {**{f"std{i}": Attr("float", 1.0) for i in range(4)}, "clip": Attr("float", -1.0),
                 "format": Attr("str", "center", choices=("center", "corner"))}


def _decode_shape(attrs, in_shapes):
    data, anchors = in_shapes
    for name, s in (("data", data), ("anchors", anchors)):
        if s is not None and (len(s) != 3 or s[-1] != 4):
            raise ShapeError(f"_contrib_box_decode: {name} must have shape (B, N, 4), got {tuple(s)}")
    if data is None:
        return in_shapes, [None]
    if anchors is not None and (anchors[0] != 1 or anchors[1] != data[1]):
        raise ShapeError(f"_contrib_box_decode: anchors must have shape (1, {data[1]}, 4), got {tuple(anchors)}")
    return [tuple(data), (1, data[1], 4)], [tuple(data)]


def _decode(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    data, anchors = inputs
    if attrs["format"] == "corner":
        ax, ay, aw, ah = _center(xp, anchors)
    else:
        ax, ay, aw, ah = (anchors[..., i] for i in range(4))
    ox = data[..., 0] * attrs["std0"] * aw + ax
    oy = data[..., 1] * attrs["std1"] * ah + ay
    dw = data[..., 2] * attrs["std2"]
    dh = data[..., 3] * attrs["std3"]
    if attrs["clip"] > 0:
        dw = xp.minimum(dw, attrs["clip"])
        dh = xp.minimum(dh, attrs["clip"])
    hw = xp.exp(dw) * aw / 2
    hh = xp.exp(dh) * ah / 2
    out = outputs[0]
    out[..., 0] = ox - hw
    out[..., 1] = oy - hh
    out[..., 2] = ox + hw
    out[..., 3] = oy + hh


register(OpDef(
    name="_contrib_box_decode", attrs=_DECODE_ATTRS, inputs=["data", "anchors"], outputs=["output"],
    infer_shape=_decode_shape, kernels={"any": _decode}, gradient=no_gradient(2),
    doc="Corner boxes from normalized center offsets relative to anchors (the inverse of box_encode)."))
