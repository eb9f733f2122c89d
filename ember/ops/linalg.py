"""Matrix products: dot (MXNet's N-D rule) and batch_dot, with dedicated backward ops.

dot views lhs as a matrix (prod(shape[:-1]), shape[-1]) - or (shape[0], prod(shape[1:]))
when transpose_a - and rhs as (shape[0], prod(shape[1:])) - or (prod(shape[:-1]), shape[-1])
when transpose_b - so an N-D dot contracts lhs's last (first) axis with rhs's first (last).
"""
from __future__ import annotations

from typing import Tuple

from ..base import ShapeError
from ._common import fmt, known, same_type
from .registry import Attr, OpDef, register

_DOT_ATTRS = {"transpose_a": Attr("bool", False), "transpose_b": Attr("bool", False),
              "forward_stype": Attr("str_or_none", None)}


def _prod(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _dot_parts(a, b, ta: bool, tb: bool):
    """(lhs kept dims, lhs contracted size, rhs contracted size, rhs kept dims, lhs 2-D, rhs 2-D)."""
    if ta:
        l_keep, l_k = tuple(a[1:]), a[0] if a else 1
        l2 = (l_k, _prod(a[1:]))
    else:
        l_keep, l_k = tuple(a[:-1]), a[-1] if a else 1
        l2 = (_prod(a[:-1]), l_k)
    if tb:
        r_keep, r_k = tuple(b[:-1]), b[-1] if b else 1
        r2 = (_prod(b[:-1]), r_k)
    else:
        r_keep, r_k = tuple(b[1:]), b[0] if b else 1
        r2 = (r_k, _prod(b[1:]))
    return l_keep, l_k, r_k, r_keep, l2, r2


def _dot_infer(attrs, in_shapes):
    a, b = in_shapes
    if not known(a) or not known(b):
        return in_shapes, [None]
    l_keep, l_k, r_k, r_keep, _, _ = _dot_parts(a, b, attrs["transpose_a"], attrs["transpose_b"])
    if l_k != r_k:
        raise ShapeError(f"dot: shapes {fmt(a)} and {fmt(b)} are not aligned (transpose_a={attrs['transpose_a']}, "
                         f"transpose_b={attrs['transpose_b']}): {l_k} != {r_k}")
    out = (l_keep if len(a) > 1 else ()) + (r_keep if len(b) > 1 else ())
    return in_shapes, [out if out else (1,)]


def _mats(a, b, ta, tb):
    _, _, _, _, l2, r2 = _dot_parts(a.shape, b.shape, ta, tb)
    am = a.reshape(l2)
    bm = b.reshape(r2)
    return (am.T if ta else am), (bm.T if tb else bm)


def _dot(ctx, attrs, inputs, outputs, aux):
    a, b = inputs
    am, bm = _mats(a, b, attrs["transpose_a"], attrs["transpose_b"])
    out = outputs[0]
    if out.flags.c_contiguous:  # reshaping a contiguous array gives a view: write straight into it
        ctx.xp.matmul(am, bm, out=out.reshape(am.shape[0], bm.shape[1]))
    else:
        out[...] = ctx.xp.matmul(am, bm).reshape(out.shape)


def _dot_backward(ctx, attrs, inputs, outputs, aux):
    g, a, b = inputs
    xp = ctx.xp
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    am, bm = _mats(a, b, ta, tb)
    gm = g.reshape(am.shape[0], bm.shape[1])
    ga = gm @ bm.T  # d(op(A))
    gb = am.T @ gm  # d(op(B))
    outputs[0][...] = (ga.T if ta else ga).reshape(a.shape)
    outputs[1][...] = (gb.T if tb else gb).reshape(b.shape)


def _pair_grad(bwd):
    def gradient(F, attrs, inputs, outputs, out_grads):
        res = getattr(F, bwd)(out_grads[0], inputs[0], inputs[1],
                              transpose_a=attrs["transpose_a"], transpose_b=attrs["transpose_b"])
        return [res[0], res[1]]
    return gradient


_BWD_ATTRS = {"transpose_a": Attr("bool", False), "transpose_b": Attr("bool", False)}
register(OpDef(name="_backward_dot", attrs=_BWD_ATTRS, inputs=["ograd", "lhs", "rhs"],
               outputs=["lhs_grad", "rhs_grad"], infer_shape=lambda a, s: (s, [s[1], s[2]]),
               infer_type=same_type("_backward_dot", 2), kernels={"any": _dot_backward},
               doc="Gradient of dot w.r.t. lhs and rhs."))
register(OpDef(name="dot", attrs=_DOT_ATTRS, inputs=["lhs", "rhs"], infer_shape=_dot_infer,
               infer_type=same_type("dot", names=["lhs", "rhs"]), kernels={"any": _dot},
               gradient=_pair_grad("_backward_dot"),
               doc="Matrix product; N-D inputs contract lhs's last axis with rhs's first (see module doc)."))


# -- batch_dot ----------------------------------------------------------------------------------
def _batch_infer(attrs, in_shapes):
    a, b = in_shapes
    if not known(a) or not known(b):
        return in_shapes, [None]
    if len(a) < 3 or len(b) < 3 or len(a) != len(b):
        raise ShapeError(f"batch_dot: inputs must both be N-D with N >= 3, got {fmt(a)} and {fmt(b)}")
    if a[:-2] != b[:-2]:
        raise ShapeError(f"batch_dot: batch dimensions differ: {fmt(a)} and {fmt(b)}")
    m, k = (a[-1], a[-2]) if attrs["transpose_a"] else (a[-2], a[-1])
    k2, n = (b[-1], b[-2]) if attrs["transpose_b"] else (b[-2], b[-1])
    if k != k2:
        raise ShapeError(f"batch_dot: shapes {fmt(a)} and {fmt(b)} are not aligned "
                         f"(transpose_a={attrs['transpose_a']}, transpose_b={attrs['transpose_b']}): {k} != {k2}")
    return in_shapes, [tuple(a[:-2]) + (m, n)]


def _t(x, flag):
    return x.swapaxes(-1, -2) if flag else x


def _batch_dot(ctx, attrs, inputs, outputs, aux):
    a, b = inputs
    out = outputs[0]
    am, bm = _t(a, attrs["transpose_a"]), _t(b, attrs["transpose_b"])
    if out.flags.c_contiguous:
        ctx.xp.matmul(am, bm, out=out)
    else:
        out[...] = ctx.xp.matmul(am, bm)


def _batch_dot_backward(ctx, attrs, inputs, outputs, aux):
    g, a, b = inputs
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    am, bm = _t(a, ta), _t(b, tb)
    ga = ctx.xp.matmul(g, bm.swapaxes(-1, -2))
    gb = ctx.xp.matmul(am.swapaxes(-1, -2), g)
    outputs[0][...] = _t(ga, ta)
    outputs[1][...] = _t(gb, tb)


register(OpDef(name="_backward_batch_dot", attrs=_BWD_ATTRS, inputs=["ograd", "lhs", "rhs"],
               outputs=["lhs_grad", "rhs_grad"], infer_shape=lambda a, s: (s, [s[1], s[2]]),
               infer_type=same_type("_backward_batch_dot", 2), kernels={"any": _batch_dot_backward},
               doc="Gradient of batch_dot."))
register(OpDef(name="batch_dot", attrs=_DOT_ATTRS, inputs=["lhs", "rhs"], infer_shape=_batch_infer,
               infer_type=same_type("batch_dot", names=["lhs", "rhs"]), kernels={"any": _batch_dot},
               gradient=_pair_grad("_backward_batch_dot"),
               doc="Batched matrix product over the leading axes (transpose_a/b swap the last two)."))
