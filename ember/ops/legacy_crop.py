"""MXNet's legacy `Crop` (deprecated there in favour of `slice`, still in 1.9.1 and in old model files,
e.g. fully convolutional networks): the H and W axes of a 4-D NCHW `data` cut to `h_w`, or to the H and W
of a second input `crop_like` (`num_args=2`), at `offset` (y, x) or centred (`center_crop`).

The gradient puts the output's gradient back into its window of a zero `data`-shaped array; `crop_like`,
read only for its shape, gets zeros (MXNet's).  Shapes and offsets are checked as MXNet checks them.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

from ..base import ShapeError
from ._common import with_backward
from .registry import Attr, OpDef

_ATTRS = {
    "num_args": Attr("int", doc="1: crop to h_w; 2: crop to the H and W of the second input"),
    "offset": Attr("shape", (0, 0), doc="the window's top-left corner (y, x), unless center_crop"),
    "h_w": Attr("shape", (0, 0), doc="the window's (height, width) when num_args is 1"),
    "center_crop": Attr("bool", False, doc="centre the window (offset ignored)"),
}


def _inputs(attrs) -> List[str]:
    n = attrs["num_args"]
    if n not in (1, 2):
        raise ShapeError(f"Crop: num_args must be 1 (crop to h_w) or 2 (crop like a second input), got {n}")
    return [f"arg{i}" for i in range(n)]


def _window(attrs, data: Sequence[int], out_hw: Tuple[int, int]) -> Tuple[int, int]:
    """The window's (y, x) in `data` (N, C, H, W) for an output of spatial size out_hw; ShapeError when it
    does not fit."""
    h, w = data[2], data[3]
    if out_hw[0] > h or out_hw[1] > w:
        raise ShapeError(f"Crop: the output's (height, width) {tuple(out_hw)} exceeds the input's {(h, w)}")
    if attrs["center_crop"]:
        return (h - out_hw[0]) // 2, (w - out_hw[1]) // 2
    offset = attrs["offset"]
    if len(offset) != 2:
        raise ShapeError(f"Crop: offset must be (y, x), got {offset}")
    y, x = offset
    if not (0 <= y <= h - out_hw[0] and 0 <= x <= w - out_hw[1]):
        raise ShapeError(f"Crop: offset {tuple(offset)} puts the {tuple(out_hw)} window outside the input's "
                         f"{(h, w)} (y in [0, {h - out_hw[0]}], x in [0, {w - out_hw[1]}])")
    return y, x


def _out_hw(attrs, in_shapes) -> Optional[Tuple[int, int]]:
    if attrs["num_args"] == 1:
        hw = attrs["h_w"]
        if len(hw) != 2 or min(hw) < 1:
            raise ShapeError(f"Crop: h_w must be a (height, width) of at least 1 each, got {hw}")
        return tuple(hw)
    like = in_shapes[1]
    if like is None or len(like) < 4 or like[2] is None or like[3] is None:
        return None
    return like[2], like[3]


def _infer_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is None:
        return in_shapes, [None]
    if len(data) != 4:
        raise ShapeError(f"Crop: data must be 4-D (batch, channel, y, x), got shape {tuple(data)}")
    if attrs["num_args"] == 2 and in_shapes[1] is not None and len(in_shapes[1]) != 4:
        raise ShapeError(f"Crop: crop_like must be 4-D, got shape {tuple(in_shapes[1])}")
    hw = _out_hw(attrs, in_shapes)
    if hw is None:
        return in_shapes, [None]
    if None not in data:
        _window(attrs, data, hw)
    return in_shapes, [(data[0], data[1], hw[0], hw[1])]


def _forward(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    y, x = _window(attrs, inputs[0].shape, out.shape[2:])
    out[...] = inputs[0][:, :, y:y + out.shape[2], x:x + out.shape[3]]


def _backward(ctx, attrs, inputs, outputs, aux):
    og = inputs[0]
    d_data = outputs[0]
    y, x = _window(attrs, d_data.shape, og.shape[2:])
    d_data[...] = 0
    d_data[:, :, y:y + og.shape[2], x:x + og.shape[3]] = og
    for d_like in outputs[1:]:  # read only for its shape: no gradient (MXNet's zeros)
        d_like[...] = 0


with_backward(OpDef(
    name="Crop", attrs=_ATTRS, inputs=_inputs, outputs=["output"], key_var_num_args="num_args",
    infer_shape=_infer_shape, kernels={"any": _forward},
    shape_only_inputs=lambda attrs: (1,) if attrs["num_args"] == 2 else (),
    doc="Legacy Crop (MXNet 1.9.1, deprecated for slice): H and W cut to h_w or to crop_like's, at offset or centred."),
    _backward, "Gradient of Crop: the output's gradient in its window of zeros; zeros for crop_like.", infer_type=None,
    shape_only_inputs=lambda attrs: tuple(range(1, attrs["num_args"] + 1)))
