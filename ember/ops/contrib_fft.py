"""_contrib_fft and _contrib_ifft (MXNet 1.x contrib; GPU-only in MXNet 1.9.1, here on every device through
the array module's FFT).

fft: real data (N, d) or (N1, N2, N3, d) -> its unnormalized 1-D DFT along the last axis, interleaved as
[re0, im0, re1, im1, ...] (last axis 2d).  ifft: the inverse layout -> the real part of the unnormalized
inverse DFT (no 1/d, as MXNet's, "consistent with caffe").  Each one's gradient is the other transform
applied to the output gradient (fft's: the real part of the unnormalized inverse DFT of the interleaved
gradient; ifft's: the interleaved DFT of the real gradient), which is each op's exact gradient.
`compute_size` (MXNet's cuFFT batch size) is accepted and checked, not needed."""
from __future__ import annotations

from ..base import OperatorError, ShapeError
from ._common import with_backward
from ._nn_util import float_type_rule
from .registry import Attr, OpDef

_ATTRS = {"compute_size": Attr("int", 128, doc="sub-batch size of MXNet's cuFFT calls (accepted, not needed)")}


def _check(op: str, attrs, shape) -> None:
    if attrs["compute_size"] <= 0:
        raise OperatorError(f"{op}: compute_size must be positive, got {attrs['compute_size']}")
    if shape is not None and len(shape) not in (2, 4):
        raise ShapeError(f"{op}: data must be 2-D (N, d) or 4-D (N1, N2, N3, d), got {tuple(shape)}")


def _fft_shape(attrs, in_shapes):
    d = in_shapes[0]
    _check("_contrib_fft", attrs, d)
    if d is None or d[-1] is None:
        return in_shapes, [None]
    return in_shapes, [tuple(d[:-1]) + (2 * d[-1],)]


def _ifft_shape(attrs, in_shapes):
    d = in_shapes[0]
    _check("_contrib_ifft", attrs, d)
    if d is None or d[-1] is None:
        return in_shapes, [None]
    if d[-1] % 2:
        raise ShapeError(f"_contrib_ifft: the last axis holds (re, im) pairs, so its length must be even, got "
                         f"{tuple(d)}")
    return in_shapes, [tuple(d[:-1]) + (d[-1] // 2,)]


def _interleave(z, out) -> None:
    """out (..., 2d) = z's real and imaginary parts, alternating."""
    pairs = out.reshape(out.shape[:-1] + (out.shape[-1] // 2, 2))
    pairs[..., 0] = z.real
    pairs[..., 1] = z.imag


def _complex(x):
    """(..., 2d) interleaved pairs -> complex (..., d)."""
    pairs = x.reshape(x.shape[:-1] + (x.shape[-1] // 2, 2))
    return pairs[..., 0] + 1j * pairs[..., 1]


def _dft(ctx, attrs, inputs, outputs, aux):
    """out = the interleaved DFT of the real first input (fft's data, ifft's output gradient)."""
    _interleave(ctx.xp.fft.fft(inputs[0], axis=-1), outputs[0])


def _inverse_dft(ctx, attrs, inputs, outputs, aux):
    """out = the real part of the unnormalized inverse DFT of the first input's interleaved pairs (ifft's
    data, fft's output gradient)."""
    z = _complex(inputs[0])
    outputs[0][...] = (ctx.xp.fft.ifft(z, axis=-1) * z.shape[-1]).real


with_backward(OpDef(
    name="_contrib_fft", attrs=_ATTRS, inputs=["data"], outputs=["output"], infer_shape=_fft_shape,
    infer_type=float_type_rule("_contrib_fft"), kernels={"any": _dft},
    doc="1-D DFT of real data along the last axis, (re, im) interleaved (MXNet's GPU-only op, on any device)."),
    _inverse_dft, "Gradient of fft: the real part of the unnormalized inverse DFT of the interleaved gradient.",
    ograd="out_grad", infer_type=float_type_rule("_contrib_fft"), shape_only_inputs=(1,))
with_backward(OpDef(
    name="_contrib_ifft", attrs=_ATTRS, inputs=["data"], outputs=["output"], infer_shape=_ifft_shape,
    infer_type=float_type_rule("_contrib_ifft"), kernels={"any": _inverse_dft},
    doc="Real part of the unnormalized inverse 1-D DFT of (re, im) interleaved data (MXNet's GPU-only op, on "
        "any device)."),
    _dft, "Gradient of ifft: the interleaved DFT of the real gradient.", ograd="out_grad",
    infer_type=float_type_rule("_contrib_ifft"), shape_only_inputs=(1,))
