"""_contrib_quantize / _contrib_dequantize (MXNet 1.x's min/max-range quantization, no gradient).

int8 is zero-centered: r = max(|min|, |max|), q = sign(x) * trunc(min(|x| * 127 / r + 0.5, 127)), and the
output range is (-r, r); uint8 maps [min, max] onto 0..255: q = trunc(clip((x - min) * 255 / (max - min)
+ 0.5, 0, 255)), range (min, max).  dequantize inverts: int8 q * r / 127, uint8 q * (max - min) / 255 + min.
These are MXNet's generic CPU kernels (quantize-inl.h); its MKLDNN build differs slightly (uint8 maps
0..max(|min|, |max|), dequantize divides by 127.5 / 255.5)."""
from __future__ import annotations

import numpy as np

from ..base import DTypeError, ShapeError
from .registry import Attr, OpDef, register


def _range_shapes(op, in_shapes):
    data = in_shapes[0]
    for name, s in zip(("min_range", "max_range"), in_shapes[1:]):
        if s is not None and tuple(s) not in ((1,), ()):
            raise ShapeError(f"{op}: {name} must hold one value, got shape {tuple(s)}")
    return [data, (1,), (1,)]


def _quantize_shape(attrs, in_shapes):
    ins = _range_shapes("_contrib_quantize", in_shapes)
    return ins, [None if ins[0] is None else tuple(ins[0]), (1,), (1,)]


def _quantize_type(attrs, in_dtypes):
    d = in_dtypes[0]
    if d is not None and np.dtype(d) != np.float32:
        raise DTypeError(f"_contrib_quantize: data must be float32, got {np.dtype(d).name}")
    f32 = np.dtype(np.float32)
    return [f32, f32, f32], [np.dtype(attrs["out_type"]), f32, f32]


def _quantize(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x, lo, hi = inputs
    lo, hi = float(lo.reshape(-1)[0]), float(hi.reshape(-1)[0])
    if attrs["out_type"] == "int8":
        r = max(abs(lo), abs(hi))
        q = xp.sign(x) * xp.minimum(xp.abs(x) * np.float32(127.0 / r) + np.float32(0.5), np.float32(127.0))
        outputs[0][...] = q.astype(np.int8)  # truncation toward zero, as C's cast
        outputs[1][...], outputs[2][...] = -r, r
    else:
        scale = np.float32(255.0 / (hi - lo))
        q = xp.clip((x - np.float32(lo)) * scale + np.float32(0.5), 0, 255)
        outputs[0][...] = q.astype(np.uint8)
        outputs[1][...], outputs[2][...] = lo, hi


register(OpDef(
    name="_contrib_quantize", attrs={"out_type": Attr("str", "uint8", choices=("int8", "uint8"))},
    inputs=["data", "min_range", "max_range"], outputs=["output", "min_output", "max_output"],
    infer_shape=_quantize_shape, infer_type=_quantize_type, kernels={"any": _quantize},
    doc="float32 to int8 (zero-centered) or uint8 over [min_range, max_range]; outputs the range used."))


def _dequantize_shape(attrs, in_shapes):
    ins = _range_shapes("_contrib_dequantize", in_shapes)
    return ins, [None if ins[0] is None else tuple(ins[0])]


def _dequantize_type(attrs, in_dtypes):
    d = in_dtypes[0]
    if d is not None and np.dtype(d) not in (np.dtype(np.int8), np.dtype(np.uint8)):
        raise DTypeError(f"_contrib_dequantize: data must be int8 or uint8, got {np.dtype(d).name}")
    f32 = np.dtype(np.float32)
    return [d, f32, f32], [f32]


def _dequantize(ctx, attrs, inputs, outputs, aux):
    q, lo, hi = inputs
    lo, hi = float(lo.reshape(-1)[0]), float(hi.reshape(-1)[0])
    if q.dtype == np.int8:
        outputs[0][...] = q.astype(np.float32) * np.float32(max(abs(lo), abs(hi)) / 127.0)
    else:
        outputs[0][...] = q.astype(np.float32) * np.float32((hi - lo) / 255.0) + np.float32(lo)


register(OpDef(
    name="_contrib_dequantize", attrs={"out_type": Attr("str", "float32", choices=("float32",))},
    inputs=["data", "min_range", "max_range"], outputs=["output"],
    infer_shape=_dequantize_shape, infer_type=_dequantize_type, kernels={"any": _dequantize},
    doc="int8/uint8 back to float32 over the range quantize reported."))
