"""MXNet 1.x's fused multi-head attention products on interleaved projections:
_contrib_interleaved_matmul_{selfatt_qk, selfatt_valatt, encdec_qk, encdec_valatt}.

Layouts (MXNet 1.9.1): sequences first, (seq, batch, features).  Self-attention projections are
(seq, batch, heads * 3 * head_dim) with q, k, v interleaved per head; encoder-decoder keys/values
are (seq, batch, heads * 2 * head_dim) with k, v interleaved per head.  Attention scores are
(batch * heads, q_seq, k_seq); the qk products scale the queries by 1 / sqrt(head_dim).
"""
from __future__ import annotations

import math

from ..base import ShapeError
from ._common import known, same_type, with_backward
from .registry import Attr, OpDef

_HEADS = {"heads": Attr("int", doc="number of attention heads")}


def _split(x, heads, parts):
    """(seq, batch, heads*parts*d) -> (batch*heads, parts, seq, d)."""
    s, b, f = x.shape
    d = f // (heads * parts)
    return x.reshape(s, b, heads, parts, d).transpose(1, 2, 3, 0, 4).reshape(b * heads, parts, s, d)


def _join(y, s, b, heads, parts, xp):
    """Inverse of _split."""
    d = y.shape[-1]
    return y.reshape(b, heads, parts, s, d).transpose(3, 0, 1, 2, 4).reshape(s, b, heads * parts * d)


def _features(op, shape, heads, parts):
    if len(shape) != 3:
        raise ShapeError(f"{op}: input must be (seq, batch, features), got {tuple(shape)}")
    if heads < 1 or shape[2] % (heads * parts):
        raise ShapeError(f"{op}: features {shape[2]} must split into {heads} heads x {parts} projections")
    return shape[2] // (heads * parts)


# -- selfatt_qk ------------------------------------------------------------------------------------------
def _sqk_shape(attrs, s):
    x = s[0]
    if not known(x):
        return s, [None]
    _features("_contrib_interleaved_matmul_selfatt_qk", x, attrs["heads"], 3)
    return s, [(x[1] * attrs["heads"], x[0], x[0])]


def _sqk(ctx, attrs, inputs, outputs, aux):
    p = _split(inputs[0], attrs["heads"], 3)
    d = p.shape[-1]
    q = p[:, 0] * p.dtype.type(1.0 / math.sqrt(d))
    outputs[0][...] = ctx.xp.matmul(q, p[:, 1].swapaxes(-1, -2))


def _sqk_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, x = inputs
    s, b, _ = x.shape
    p = _split(x, attrs["heads"], 3)
    scale = 1.0 / math.sqrt(p.shape[-1])
    grad = xp.zeros_like(p)
    grad[:, 0] = scale * xp.matmul(g, p[:, 1])
    grad[:, 1] = scale * xp.matmul(g.swapaxes(-1, -2), p[:, 0])
    outputs[0][...] = _join(grad, s, b, attrs["heads"], 3, xp)


with_backward(OpDef(
    name="_contrib_interleaved_matmul_selfatt_qk", attrs=_HEADS, inputs=["queries_keys_values"],
    infer_shape=_sqk_shape, infer_type=same_type("_contrib_interleaved_matmul_selfatt_qk"), kernels={"any": _sqk},
    doc="Scaled q k^T per head from interleaved self-attention projections: (batch*heads, seq, seq)."),
    _sqk_backward, "Gradient of _contrib_interleaved_matmul_selfatt_qk (zero for the value projections).",
    name="_backward_interleaved_matmul_selfatt_qk", ograd="out_grad", grads=["qkv_grad"], infer_type=None)


# -- selfatt_valatt --------------------------------------------------------------------------------------
def _sva_shape(attrs, s):
    x, att = s
    if not known(x):
        return s, [None]
    h = attrs["heads"]
    d = _features("_contrib_interleaved_matmul_selfatt_valatt", x, h, 3)
    want = (x[1] * h, x[0], x[0])
    if known(att) and tuple(att) != want:
        raise ShapeError(f"_contrib_interleaved_matmul_selfatt_valatt: attention must be {want}, got {tuple(att)}")
    return [tuple(x), want], [(x[0], x[1], h * d)]


def _sva(ctx, attrs, inputs, outputs, aux):
    x, att = inputs
    s, b, _ = x.shape
    h = attrs["heads"]
    v = _split(x, h, 3)[:, 2]
    out = ctx.xp.matmul(att, v)  # (b*h, s, d)
    outputs[0][...] = out.reshape(b, h, s, -1).transpose(2, 0, 1, 3).reshape(outputs[0].shape)


def _heads_view(g, b, h):
    """(seq, batch, heads*d) -> (batch*heads, seq, d)."""
    s = g.shape[0]
    return g.reshape(s, b, h, -1).transpose(1, 2, 0, 3).reshape(b * h, s, -1)


def _sva_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, x, att = inputs
    s, b, _ = x.shape
    h = attrs["heads"]
    p = _split(x, h, 3)
    gh = _heads_view(g, b, h)
    grad = xp.zeros_like(p)
    grad[:, 2] = xp.matmul(att.swapaxes(-1, -2), gh)
    outputs[0][...] = _join(grad, s, b, h, 3, xp)
    outputs[1][...] = xp.matmul(gh, p[:, 2].swapaxes(-1, -2))


with_backward(OpDef(
    name="_contrib_interleaved_matmul_selfatt_valatt", attrs=_HEADS, inputs=["queries_keys_values", "attention"],
    infer_shape=_sva_shape, infer_type=same_type("_contrib_interleaved_matmul_selfatt_valatt"),
    kernels={"any": _sva},
    doc="attention @ v per head from interleaved self-attention projections: (seq, batch, heads*head_dim)."),
    _sva_backward, "Gradients of _contrib_interleaved_matmul_selfatt_valatt.",
    name="_backward_interleaved_matmul_selfatt_valatt", ograd="out_grad", grads=["qkv_grad", "attention_grad"])


# -- encdec_qk -------------------------------------------------------------------------------------------
def _eqk_shape(attrs, s):
    q, kv = s
    if not known(q) or not known(kv):
        return s, [None]
    h = attrs["heads"]
    dq = _features("_contrib_interleaved_matmul_encdec_qk", q, h, 1)
    dk = _features("_contrib_interleaved_matmul_encdec_qk", kv, h, 2)
    if dq != dk or q[1] != kv[1]:
        raise ShapeError(f"_contrib_interleaved_matmul_encdec_qk: queries {tuple(q)} and keys_values {tuple(kv)} "
                         "disagree on batch or head size")
    return s, [(q[1] * h, q[0], kv[0])]


def _eqk(ctx, attrs, inputs, outputs, aux):
    q, kv = inputs
    h = attrs["heads"]
    qh = _split(q, h, 1)[:, 0]
    k = _split(kv, h, 2)[:, 0]
    outputs[0][...] = ctx.xp.matmul(qh * qh.dtype.type(1.0 / math.sqrt(qh.shape[-1])), k.swapaxes(-1, -2))


def _eqk_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, q, kv = inputs
    h = attrs["heads"]
    qh = _split(q, h, 1)
    p = _split(kv, h, 2)
    scale = 1.0 / math.sqrt(qh.shape[-1])
    gq = scale * xp.matmul(g, p[:, 0])
    gkv = xp.zeros_like(p)
    gkv[:, 0] = scale * xp.matmul(g.swapaxes(-1, -2), qh[:, 0])
    outputs[0][...] = _join(gq[:, None], q.shape[0], q.shape[1], h, 1, xp)
    outputs[1][...] = _join(gkv, kv.shape[0], kv.shape[1], h, 2, xp)


with_backward(OpDef(
    name="_contrib_interleaved_matmul_encdec_qk", attrs=_HEADS, inputs=["queries", "keys_values"],
    infer_shape=_eqk_shape, infer_type=same_type("_contrib_interleaved_matmul_encdec_qk"), kernels={"any": _eqk},
    doc="Scaled q k^T per head, queries (q_seq, batch, heads*d) against interleaved keys/values: "
        "(batch*heads, q_seq, k_seq)."),
    _eqk_backward, "Gradients of _contrib_interleaved_matmul_encdec_qk.",
    name="_backward_interleaved_matmul_encdec_qk", ograd="out_grad")


# -- encdec_valatt ---------------------------------------------------------------------------------------
def _eva_shape(attrs, s):
    kv, att = s
    if not known(kv) or not known(att):
        return s, [None]
    h = attrs["heads"]
    d = _features("_contrib_interleaved_matmul_encdec_valatt", kv, h, 2)
    if len(att) != 3 or att[0] != kv[1] * h or att[2] != kv[0]:
        raise ShapeError(f"_contrib_interleaved_matmul_encdec_valatt: attention must be "
                         f"({kv[1] * h}, q_seq, {kv[0]}), got {tuple(att)}")
    return s, [(att[1], kv[1], h * d)]


def _eva(ctx, attrs, inputs, outputs, aux):
    kv, att = inputs
    h = attrs["heads"]
    b = kv.shape[1]
    v = _split(kv, h, 2)[:, 1]
    out = ctx.xp.matmul(att, v)  # (b*h, q_seq, d)
    qs = att.shape[1]
    outputs[0][...] = out.reshape(b, h, qs, -1).transpose(2, 0, 1, 3).reshape(outputs[0].shape)


def _eva_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, kv, att = inputs
    h = attrs["heads"]
    b = kv.shape[1]
    p = _split(kv, h, 2)
    gh = _heads_view(g, b, h)
    gkv = xp.zeros_like(p)
    gkv[:, 1] = xp.matmul(att.swapaxes(-1, -2), gh)
    outputs[0][...] = _join(gkv, kv.shape[0], b, h, 2, xp)
    outputs[1][...] = xp.matmul(gh, p[:, 1].swapaxes(-1, -2))


with_backward(OpDef(
    name="_contrib_interleaved_matmul_encdec_valatt", attrs=_HEADS, inputs=["keys_values", "attention"],
    infer_shape=_eva_shape, infer_type=same_type("_contrib_interleaved_matmul_encdec_valatt"),
    kernels={"any": _eva},
    doc="attention @ v per head with interleaved keys/values: (q_seq, batch, heads*head_dim)."),
    _eva_backward, "Gradients of _contrib_interleaved_matmul_encdec_valatt.",
    name="_backward_interleaved_matmul_encdec_valatt", ograd="out_grad")
