"""_contrib_MultiBoxPrior (MXNet's `mx.nd/sym.contrib.MultiBoxPrior`): SSD anchor boxes for every
cell of a feature map.

data (B, C, H, W) gives (1, H * W * (len(sizes) + len(ratios) - 1), 4) corner boxes, per cell
(row-major): one box per size at ratios[0], then one per further ratio at sizes[0].  The cell
center is ((x + offsets[1]) * step_x, (y + offsets[0]) * step_y) with steps (y, x) defaulting to
1/H and 1/W; a box of size s and ratio r is s * H / W * sqrt(r) wide and s / sqrt(r) high, as
MXNet 1.9.1 computes it.  `clip` limits the coordinates to [0, 1].  Zero gradient.
"""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from ._common import no_gradient
from .registry import Attr, OpDef, register

_NAME = "_contrib_MultiBoxPrior"
_ATTRS = {"sizes": Attr("any", (1.0,)), "ratios": Attr("any", (1.0,)), "clip": Attr("bool", False),
          "steps": Attr("any", (-1.0, -1.0)), "offsets": Attr("any", (0.5, 0.5))}


def _floats(value, name: str):
    if isinstance(value, str):
        import ast
        value = ast.literal_eval(value.strip())
    if isinstance(value, (int, float)):
        value = (value,)
    try:
        return tuple(float(v) for v in value)
    except (TypeError, ValueError):
        raise ShapeError(f"{_NAME}: {name} must be a tuple of floats, got {value!r}") from None


def _params(attrs):
    sizes, ratios = _floats(attrs["sizes"], "sizes"), _floats(attrs["ratios"], "ratios")
    steps, offsets = _floats(attrs["steps"], "steps"), _floats(attrs["offsets"], "offsets")
    if not sizes or not ratios:
        raise ShapeError(f"{_NAME}: sizes and ratios must not be empty")
    if len(steps) != 2 or len(offsets) != 2:
        raise ShapeError(f"{_NAME}: steps and offsets take two values (y, x), got {steps} and {offsets}")
    return sizes, ratios, steps, offsets


def _infer_shape(attrs, in_shapes):
    d = in_shapes[0]
    sizes, ratios, _, _ = _params(attrs)
    if d is None:
        return in_shapes, [None]
    if len(d) != 4:
        raise ShapeError(f"{_NAME}: data must be 4-D (batch, channel, height, width), got shape {tuple(d)}")
    return in_shapes, [(1, d[2] * d[3] * (len(sizes) + len(ratios) - 1), 4)]


def anchors(height: int, width: int, attrs) -> np.ndarray:
    """The (H * W * per_cell, 4) anchor boxes of an H x W map."""
    sizes, ratios, steps, offsets = _params(attrs)
    step_y = steps[0] if steps[0] > 0 else 1.0 / height
    step_x = steps[1] if steps[1] > 0 else 1.0 / width
    # (size, sqrt(ratio)) per box of a cell, in MXNet's order
    shapes = [(s, np.sqrt(np.float32(ratios[0]))) for s in sizes] + \
             [(sizes[0], np.sqrt(np.float32(r))) for r in ratios[1:]]
    half_w = np.array([s * height / width * r / 2 for s, r in shapes], dtype=np.float32)
    half_h = np.array([s / r / 2 for s, r in shapes], dtype=np.float32)
    cy = ((np.arange(height, dtype=np.float32) + offsets[0]) * step_y).astype(np.float32)
    cx = ((np.arange(width, dtype=np.float32) + offsets[1]) * step_x).astype(np.float32)
    cy, cx = cy[:, None, None], cx[None, :, None]
    boxes = np.stack(np.broadcast_arrays(cx - half_w, cy - half_h, cx + half_w, cy + half_h), axis=-1)
    boxes = boxes.reshape(-1, 4)
    if attrs["clip"]:
        boxes = np.clip(boxes, 0.0, 1.0)
    return boxes


def _kernel(ctx, attrs, inputs, outputs, aux):
    h, w = inputs[0].shape[2], inputs[0].shape[3]
    outputs[0][...] = ctx.xp.asarray(anchors(h, w, attrs).reshape(outputs[0].shape).astype(outputs[0].dtype))


register(OpDef(
    name=_NAME, attrs=_ATTRS, inputs=["data"], outputs=["output"], infer_shape=_infer_shape,
    kernels={"any": _kernel}, gradient=no_gradient(1), shape_only_inputs=(0,),
    doc="SSD anchor (prior) boxes of a feature map (see the module docstring)."))
