"""Variable-length sequence ops: SequenceMask, SequenceLast, SequenceReverse.

Data is time-major (T, N, ...) with axis=0, or batch-major (N, T, ...) with axis=1 where
allowed.  With use_sequence_length=True a second input `sequence_length` (N,) gives each
sequence's length; otherwise every sequence has the full length T.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from .registry import Attr, OpDef, register


def _inputs(attrs):
    return ["data", "sequence_length"] if attrs["use_sequence_length"] else ["data"]


def _layout(op, attrs, shape):
    axis = attrs["axis"]
    if axis not in (0, 1):
        raise OperatorError(f"{op}: axis must be 0 or 1, got {axis}")
    if len(shape) < 2:
        raise ShapeError(f"{op}: data must be at least 2-D (time and batch axes), got {tuple(shape)}")
    return axis, 1 - axis  # time axis, batch axis


def _check_lengths(op, attrs, in_shapes):
    data = in_shapes[0]
    if data is not None:
        _layout(op, attrs, data)
    if attrs["use_sequence_length"] and data is not None:
        _, b = _layout(op, attrs, data)
        if in_shapes[1] is not None and tuple(in_shapes[1]) != (data[b],):
            raise ShapeError(f"{op}: sequence_length has shape {tuple(in_shapes[1])} but data {tuple(data)} "
                             f"needs ({data[b]},)")
        return [data, (data[b],)]
    return list(in_shapes)


def _lengths(xp, attrs, inputs, data, t_axis, b_axis):
    if attrs["use_sequence_length"]:
        return inputs[1].astype(np.int64)
    return xp.full(data.shape[b_axis], data.shape[t_axis], dtype=np.int64)


def _valid(xp, attrs, inputs, data):
    """Boolean mask broadcastable to data: True where the time step is inside the sequence."""
    t, b = _layout("Sequence", attrs, data.shape)
    lens = _lengths(xp, attrs, inputs, data, t, b)
    steps = xp.arange(data.shape[t])
    valid = steps[:, None] < lens[None, :] if t == 0 else steps[None, :] < lens[:, None]
    return valid.reshape(valid.shape + (1,) * (data.ndim - 2))


_SEQ = {"use_sequence_length": Attr("bool", False), "axis": Attr("int", 0)}


# -- SequenceMask ------------------------------------------------------------------------------
def _mask(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    outputs[0][...] = ctx.xp.where(_valid(ctx.xp, attrs, inputs, x), x, attrs["value"])


def _mask_backward(ctx, attrs, inputs, outputs, aux):
    g = inputs[0]
    outputs[0][...] = ctx.xp.where(_valid(ctx.xp, attrs, [g] + list(inputs[1:]), g), g, 0)


def _seq_grad(bwd):
    def gradient(F, attrs, inputs, outputs, out_grads):
        g = getattr(F, bwd)(out_grads[0], *inputs, **attrs)
        return [g] + [None] * (len(inputs) - 1)
    return gradient


_MASK_ATTRS = dict(_SEQ, value=Attr("float", 0.0))
register(OpDef(name="_backward_SequenceMask", attrs=_MASK_ATTRS, inputs=lambda a: ["ograd"] + _inputs(a),
               outputs=["data_grad"], infer_shape=lambda a, s: (s, [s[0]]),
               infer_type=lambda a, d: (list(d), [d[0]]),
               kernels={"any": lambda c, a, i, o, x: _mask_backward(c, a, [i[0]] + list(i[2:]), o, x)},
               doc="Gradient of SequenceMask: ograd with the masked steps zeroed."))
register(OpDef(name="SequenceMask", attrs=_MASK_ATTRS, inputs=_inputs,
               infer_shape=lambda a, s: (_check_lengths("SequenceMask", a, s), [s[0]]),
               infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _mask},
               gradient=_seq_grad("_backward_SequenceMask"), inplace=[(0, 0)],
               doc="Set the steps beyond each sequence's length to `value`."))


# -- SequenceLast -------------------------------------------------------------------------------
def _last_index(xp, attrs, inputs, x):
    t, b = _layout("SequenceLast", attrs, x.shape)
    lens = _lengths(xp, attrs, inputs, x, t, b)
    if lens.size and (int(lens.min()) < 1 or int(lens.max()) > x.shape[t]):
        raise IndexError(f"SequenceLast: sequence lengths must be in [1, {x.shape[t]}], "
                         f"got {int(lens.min())}..{int(lens.max())}")
    return t, b, lens - 1


def _last_infer(attrs, in_shapes):
    ins = _check_lengths("SequenceLast", attrs, in_shapes)
    x = in_shapes[0]
    if x is None:
        return ins, [None]
    t, _ = _layout("SequenceLast", attrs, x)
    return ins, [tuple(d for i, d in enumerate(x) if i != t)]


def _last(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    xp = ctx.xp
    t, b, idx = _last_index(xp, attrs, inputs, x)
    batch = xp.arange(x.shape[b])
    outputs[0][...] = x[idx, batch] if t == 0 else x[batch, idx]


def _last_backward(ctx, attrs, inputs, outputs, aux):
    g, x = inputs[0], inputs[1]
    xp = ctx.xp
    t, b, idx = _last_index(xp, attrs, inputs[1:], x)
    out = outputs[0]
    out[...] = 0
    batch = xp.arange(x.shape[b])
    if t == 0:
        out[idx, batch] = g
    else:
        out[batch, idx] = g


register(OpDef(name="_backward_SequenceLast", attrs=_SEQ, inputs=lambda a: ["ograd"] + _inputs(a),
               outputs=["data_grad"], infer_shape=lambda a, s: (s, [s[1]]),
               infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _last_backward},
               doc="Gradient of SequenceLast."))
register(OpDef(name="SequenceLast", attrs=_SEQ, inputs=_inputs, infer_shape=_last_infer,
               infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _last},
               gradient=_seq_grad("_backward_SequenceLast"),
               doc="The last valid step of each sequence."))


# -- SequenceReverse ------------------------------------------------------------------------------
def _reverse_index(xp, attrs, inputs, x):
    if attrs["axis"] != 0:
        raise OperatorError(f"SequenceReverse: only axis=0 (time-major data) is supported, got {attrs['axis']}")
    t, b = _layout("SequenceReverse", attrs, x.shape)
    lens = _lengths(xp, attrs, inputs, x, t, b)
    steps = xp.arange(x.shape[0])[:, None]
    src = xp.where(steps < lens[None, :], lens[None, :] - 1 - steps, steps)  # (T, N) source step
    return src, xp.broadcast_to(xp.arange(x.shape[1])[None, :], src.shape)


def _reverse(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    src, batch = _reverse_index(ctx.xp, attrs, inputs, x)
    outputs[0][...] = x[src, batch]


register(OpDef(name="_backward_SequenceReverse", attrs=_SEQ, inputs=lambda a: ["ograd"] + _inputs(a),
               outputs=["data_grad"], infer_shape=lambda a, s: (s, [s[0]]),
               infer_type=lambda a, d: (list(d), [d[0]]),
               kernels={"any": lambda c, a, i, o, x: _reverse(c, a, [i[0]] + list(i[2:]), o, x)},
               doc="Gradient of SequenceReverse: the same reversal applied to ograd."))
register(OpDef(name="SequenceReverse", attrs=_SEQ, inputs=_inputs,
               infer_shape=lambda a, s: (_check_lengths("SequenceReverse", a, s), [s[0]]),
               infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _reverse},
               gradient=_seq_grad("_backward_SequenceReverse"),
               doc="Reverse the first `length` steps of each sequence (time-major)."))
