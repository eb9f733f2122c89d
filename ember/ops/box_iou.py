"""_contrib_box_iou (MXNet's `mx.nd/sym.contrib.box_iou`): intersection over union of every box of
`lhs` with every box of `rhs`.

lhs (a_1..a_n, 4) and rhs (b_1..b_m, 4) give (a_1..a_n, b_1..b_m).  Boxes are corners
[xmin, ymin, xmax, ymax] or centers [x, y, width, height] (`format`).  As MXNet 1.9.1: a box with a
negative width or height has area 0, an empty union gives 0, and the gradient is zero.
"""
from __future__ import annotations

from ..base import ShapeError
from ._common import no_gradient
from .registry import Attr, OpDef, register

_NAME = "_contrib_box_iou"


def _infer_shape(attrs, in_shapes):
    lhs, rhs = in_shapes
    for what, s in (("lhs", lhs), ("rhs", rhs)):
        if s is not None and (len(s) < 1 or s[-1] != 4):
            raise ShapeError(f"{_NAME}: {what} must end in a dimension of 4 (a box), got shape {tuple(s)}")
    if lhs is None or rhs is None:
        return in_shapes, [None]
    return in_shapes, [tuple(lhs[:-1]) + tuple(rhs[:-1])]


def _corners(xp, boxes, fmt: str):
    x0, y0, x1, y1 = (boxes[..., i] for i in range(4))
    if fmt == "center":
        x0, y0, x1, y1 = x0 - x1 / 2, y0 - y1 / 2, x0 + x1 / 2, y0 + y1 / 2
    return x0, y0, x1, y1


def _area(xp, x0, y0, x1, y1):
    w, h = x1 - x0, y1 - y0
    return xp.where((w < 0) | (h < 0), 0, w * h)


def _kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    lhs, rhs = inputs
    out = outputs[0]
    a = _corners(xp, lhs.reshape(-1, 4), attrs["format"])
    b = _corners(xp, rhs.reshape(-1, 4), attrs["format"])
    a = [v[:, None] for v in a]  # (n, 1) against (m,)
    iw = xp.maximum(xp.minimum(a[2], b[2]) - xp.maximum(a[0], b[0]), 0)
    ih = xp.maximum(xp.minimum(a[3], b[3]) - xp.maximum(a[1], b[1]), 0)
    inter = iw * ih
    union = _area(xp, *a) + _area(xp, *b) - inter
    safe = xp.where(union > 0, union, 1)
    out[...] = xp.where(union > 0, inter / safe, 0).reshape(out.shape)


register(OpDef(
    name=_NAME, attrs={"format": Attr("str", "corner", choices=("center", "corner"),
                                      doc="corner: [xmin, ymin, xmax, ymax]; center: [x, y, width, height]")},
    inputs=["lhs", "rhs"], outputs=["output"], infer_shape=_infer_shape, kernels={"any": _kernel},
    gradient=no_gradient(2),
    doc="IOU of every lhs box with every rhs box (zero gradient, as MXNet)."))
