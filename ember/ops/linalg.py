"""Matrix products: dot (MXNet's N-D rule) and batch_dot, with dedicated backward ops.

dot views lhs as a matrix (prod(shape[:-1]), shape[-1]) - or (shape[0], prod(shape[1:]))
when transpose_a - and rhs as (shape[0], prod(shape[1:])) - or (prod(shape[:-1]), shape[-1])
when transpose_b - so an N-D dot contracts lhs's last (first) axis with rhs's first (last).
"""
from __future__ import annotations

from math import prod

from ..base import OperatorError, ShapeError
from ._common import fmt, known, same_type, with_backward
from . import stype
from .registry import Attr, OpDef, register

_DOT_ATTRS = {"transpose_a": Attr("bool", False), "transpose_b": Attr("bool", False),
              "forward_stype": Attr("str_or_none", None)}


def _dot_parts(a, b, ta: bool, tb: bool):
    """(lhs kept dims, lhs contracted size, rhs contracted size, rhs kept dims, lhs 2-D, rhs 2-D)."""
    if ta:
        l_keep, l_k = tuple(a[1:]), a[0] if a else 1
        l2 = (l_k, prod(a[1:]))
    else:
        l_keep, l_k = tuple(a[:-1]), a[-1] if a else 1
        l2 = (prod(a[:-1]), l_k)
    if tb:
        r_keep, r_k = tuple(b[:-1]), b[-1] if b else 1
        r2 = (prod(b[:-1]), r_k)
    else:
        r_keep, r_k = tuple(b[1:]), b[0] if b else 1
        r2 = (r_k, prod(b[1:]))
    return l_keep, l_k, r_k, r_keep, l2, r2


def _dot_infer(attrs, in_shapes):
    a, b = in_shapes
    if not known(a) or not known(b):
        if a is not None and b is not None and len(a) == 2 and len(b) == 2:
            return _dot_partial_2d(a, b, attrs["transpose_a"], attrs["transpose_b"])
        return in_shapes, [None]
    l_keep, l_k, r_k, r_keep, _, _ = _dot_parts(a, b, attrs["transpose_a"], attrs["transpose_b"])
    if l_k != r_k:
        raise ShapeError(f"dot: shapes {fmt(a)} and {fmt(b)} are not aligned (transpose_a={attrs['transpose_a']}, "
                         f"transpose_b={attrs['transpose_b']}): {l_k} != {r_k}")
    out = (l_keep if len(a) > 1 else ()) + (r_keep if len(b) > 1 else ())
    return in_shapes, [out if out else (1,)]


def _dot_partial_2d(a, b, ta: bool, tb: bool):
    """Matrix . matrix with unknown (None) dimensions: the contracted ones fill each other in and
    the output keeps what is known (as MXNet's numpy dot: a deferred weight learns its shape here)."""
    ak, akeep = (0, 1) if ta else (1, 0)
    bk, bkeep = (1, 0) if tb else (0, 1)
    k = a[ak] if a[ak] is not None else b[bk]
    if a[ak] is not None and b[bk] is not None and a[ak] != b[bk]:
        raise ShapeError(f"dot: shapes {fmt(a)} and {fmt(b)} are not aligned (transpose_a={ta}, "
                         f"transpose_b={tb}): {a[ak]} != {b[bk]}")
    a2, b2 = list(a), list(b)
    a2[ak], b2[bk] = k, k
    return [tuple(a2), tuple(b2)], [(a[akeep], b[bkeep])]


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
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]
    am, bm = _mats(a, b, ta, tb)
    gm = g.reshape(am.shape[0], bm.shape[1])
    ga = gm @ bm.T  # d(op(A))
    gb = am.T @ gm  # d(op(B))
    outputs[0][...] = (ga.T if ta else ga).reshape(a.shape)
    outputs[1][...] = (gb.T if tb else gb).reshape(b.shape)


_BWD_ATTRS = {"transpose_a": Attr("bool", False), "transpose_b": Attr("bool", False)}


def _register_product(name: str, infer_shape, kernel, backward_kernel, doc: str, infer_stype=None) -> None:
    """`name` (lhs, rhs; transpose_a/b) and `_backward_<name>` (ograd, lhs, rhs) -> (lhs_grad, rhs_grad)."""
    bwd = f"_backward_{name}"

    def gradient(F, attrs, inputs, outputs, out_grads):
        res = getattr(F, bwd)(out_grads[0], inputs[0], inputs[1],
                              transpose_a=attrs["transpose_a"], transpose_b=attrs["transpose_b"])
        return [res[0], res[1]]
    register(OpDef(name=bwd, attrs=_BWD_ATTRS, inputs=["ograd", "lhs", "rhs"], outputs=["lhs_grad", "rhs_grad"],
                   infer_shape=lambda a, s: (s, [s[1], s[2]]), infer_type=same_type(bwd, 2),
                   kernels={"any": backward_kernel}, doc=f"Gradient of {name} w.r.t. lhs and rhs."))
    register(OpDef(name=name, attrs=_DOT_ATTRS, inputs=["lhs", "rhs"], infer_shape=infer_shape,
                   infer_type=same_type(name, names=["lhs", "rhs"]), kernels={"any": kernel}, expensive=True,
                   gradient=gradient, infer_stype=infer_stype, doc=doc))


_register_product("dot", _dot_infer, _dot, _dot_backward,
                  "Matrix product; N-D inputs contract lhs's last axis with rhs's first (see module doc).",
                  infer_stype=stype.dot)


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


_register_product("batch_dot", _batch_infer, _batch_dot, _batch_dot_backward,
                  "Batched matrix product over the leading axes (transpose_a/b swap the last two).")


# -- linalg_* (LAPACK-style ops on the last two axes, batched over the leading ones) ------------------
def _mT(x):
    return x.swapaxes(-1, -2)


def _need_square(op, s):
    if len(s) < 2 or s[-1] != s[-2]:
        raise ShapeError(f"{op}: input must be a (batch of) square matrices, got shape {fmt(s)}")


def _gemm_shape(op, a, b, ta, tb):
    if len(a) < 2 or len(a) != len(b) or a[:-2] != b[:-2]:
        raise ShapeError(f"{op}: A {fmt(a)} and B {fmt(b)} must be matrices with equal batch dimensions")
    m, k = (a[-1], a[-2]) if ta else (a[-2], a[-1])
    k2, n = (b[-1], b[-2]) if tb else (b[-2], b[-1])
    if k != k2:
        raise ShapeError(f"{op}: A {fmt(a)} and B {fmt(b)} are not aligned (transpose_a={ta}, transpose_b={tb})")
    return tuple(a[:-2]) + (m, n)


_GEMM2 = {"transpose_a": Attr("bool", False), "transpose_b": Attr("bool", False), "alpha": Attr("float", 1.0),
          "axis": Attr("int", -2)}
_GEMM = dict(_GEMM2, beta=Attr("float", 1.0))


def _row_axis(op, attrs, ndim):
    """The matrices' row axis as a non-negative index (MXNet's `axis`: rows on `axis`, columns on the
    last axis, every other axis a batch axis)."""
    axis = attrs["axis"]
    if not -ndim <= axis < ndim - 1 or axis == -1:
        raise OperatorError(f"{op}: axis {axis} must name a row axis before the last of a {ndim}-D input")
    return axis % ndim


def _rows_last(shape, axis):
    """`shape` with the row axis moved to -2 (as numpy.moveaxis(x, axis, -2))."""
    s = list(shape)
    r = s.pop(axis)
    return tuple(s[:-1] + [r, s[-1]])


def _rows_back(shape, axis):
    s = list(shape)
    r = s.pop(-2)
    s.insert(axis, r)
    return tuple(s)


def _to_rows(xp, x, attrs):
    axis = attrs["axis"] % x.ndim
    return x if axis == x.ndim - 2 else xp.moveaxis(x, axis, -2)


def _from_rows(xp, x, attrs):
    axis = attrs["axis"] % x.ndim
    return x if axis == x.ndim - 2 else xp.moveaxis(x, -2, axis)


def _gemm2_infer(attrs, s):
    if not known(s[0]) or not known(s[1]):
        return s, [None]
    ax = _row_axis("linalg_gemm2", attrs, len(s[0]))
    out = _gemm_shape("linalg_gemm2", _rows_last(s[0], ax), _rows_last(s[1], ax), attrs["transpose_a"],
                      attrs["transpose_b"])
    return s, [_rows_back(out, ax)]


def _gemm_infer(attrs, s):
    if not known(s[0]) or not known(s[1]):
        return s, [s[2]]
    ax = _row_axis("linalg_gemm", attrs, len(s[0]))
    out = _rows_back(_gemm_shape("linalg_gemm", _rows_last(s[0], ax), _rows_last(s[1], ax), attrs["transpose_a"],
                                 attrs["transpose_b"]), ax)
    if known(s[2]) and tuple(s[2]) != out:
        raise ShapeError(f"linalg_gemm: C has shape {fmt(s[2])} but op(A) op(B) has shape {out}")
    return [s[0], s[1], out], [out]


def _gemm2(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    a, b = (_to_rows(xp, x, attrs) for x in inputs)
    res = xp.matmul(_t(a, attrs["transpose_a"]), _t(b, attrs["transpose_b"]))
    outputs[0][...] = _from_rows(xp, attrs["alpha"] * res, attrs)


def _gemm(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    a, b = (_to_rows(xp, x, attrs) for x in inputs[:2])
    res = xp.matmul(_t(a, attrs["transpose_a"]), _t(b, attrs["transpose_b"]))
    outputs[0][...] = _from_rows(xp, attrs["alpha"] * res, attrs) + attrs["beta"] * inputs[2]


def _gemm_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, a, b = (_to_rows(xp, x, attrs) for x in inputs[:3])
    ta, tb, alpha = attrs["transpose_a"], attrs["transpose_b"], attrs["alpha"]
    x, y = _t(a, ta), _t(b, tb)
    ga = alpha * xp.matmul(g, _mT(y))
    gb = alpha * xp.matmul(_mT(x), g)
    outputs[0][...] = _from_rows(xp, _t(ga, ta), attrs)
    outputs[1][...] = _from_rows(xp, _t(gb, tb), attrs)
    g = inputs[0]
    if len(outputs) == 3:
        outputs[2][...] = attrs["beta"] * g


with_backward(OpDef(name="linalg_gemm2", aliases=["_linalg_gemm2"],
                     attrs=_GEMM2, inputs=["A", "B"], infer_shape=_gemm2_infer,
                     infer_type=same_type("linalg_gemm2", names=["A", "B"]), kernels={"any": _gemm2}, expensive=True,
                     doc="alpha * op(A) @ op(B), batched."),
              _gemm_backward, "Gradient of linalg_gemm2.", infer_type=same_type("_backward_linalg_gemm2", 2))
register(OpDef(name="_backward_linalg_gemm", attrs=_GEMM, inputs=["ograd", "A", "B"],
               outputs=["A_grad", "B_grad", "C_grad"], infer_shape=lambda a, s: (s, [s[1], s[2], s[0]]),
               infer_type=same_type("_backward_linalg_gemm", 3), kernels={"any": _gemm_backward},
               doc="Gradient of linalg_gemm."))
register(OpDef(name="linalg_gemm", aliases=["_linalg_gemm"],
               attrs=_GEMM, inputs=["A", "B", "C"], infer_shape=_gemm_infer,
               infer_type=same_type("linalg_gemm", names=["A", "B", "C"]), kernels={"any": _gemm}, expensive=True,
               gradient=lambda F, a, i, o, g: list(F._backward_linalg_gemm(g[0], i[0], i[1], **a)),
               doc="alpha * op(A) @ op(B) + beta * C, batched."))


# -- syrk ------------------------------------------------------------------------------------------
_SYRK = {"transpose": Attr("bool", False), "alpha": Attr("float", 1.0)}


def _syrk_infer(attrs, s):
    a = s[0]
    if not known(a):
        return s, [None]
    if len(a) < 2:
        raise ShapeError(f"linalg_syrk: A must be a (batch of) matrices, got {fmt(a)}")
    n = a[-1] if attrs["transpose"] else a[-2]
    return s, [tuple(a[:-2]) + (n, n)]


def _syrk(ctx, attrs, inputs, outputs, aux):
    a = inputs[0]
    x = _mT(a) if attrs["transpose"] else a
    outputs[0][...] = attrs["alpha"] * ctx.xp.matmul(x, _mT(x))


def _syrk_backward(ctx, attrs, inputs, outputs, aux):
    g, a = inputs
    gs = g + _mT(g)
    if attrs["transpose"]:
        outputs[0][...] = attrs["alpha"] * ctx.xp.matmul(a, gs)
    else:
        outputs[0][...] = attrs["alpha"] * ctx.xp.matmul(gs, a)


with_backward(OpDef(name="linalg_syrk", aliases=["_linalg_syrk"],
                     attrs=_SYRK, inputs=["A"], infer_shape=_syrk_infer, kernels={"any": _syrk},
                     doc="alpha * A @ A^T (A^T @ A with transpose), batched."),
              _syrk_backward, "Gradient of linalg_syrk.", infer_type=same_type("_backward_linalg_syrk"))


# -- square-matrix functions ----------------------------------------------------------------------------
def _square_infer(op, out_shape):
    def infer(attrs, s):
        a = s[0]
        if not known(a):
            return s, [None] * (2 if op == "linalg_slogdet" else 1)
        _need_square(op, a)
        res = out_shape(a, attrs)
        return s, res if isinstance(res, list) else [res]
    return infer


def _batch_scalar(a):
    return tuple(a[:-2]) if len(a) > 2 else (1,)


def _inverse(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = ctx.xp.linalg.inv(inputs[0])


def _inverse_backward(ctx, attrs, inputs, outputs, aux):
    g, y = inputs  # y = A^-1
    yt = _mT(y)
    outputs[0][...] = -ctx.xp.matmul(ctx.xp.matmul(yt, g), yt)


def _det(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = ctx.xp.linalg.det(inputs[0]).reshape(outputs[0].shape)


def _det_backward(ctx, attrs, inputs, outputs, aux):
    g, a, d = inputs
    xp = ctx.xp
    scale = (g * d).reshape(a.shape[:-2] + (1, 1))
    outputs[0][...] = scale * _mT(xp.linalg.inv(a))


def _slogdet(ctx, attrs, inputs, outputs, aux):
    sign, logdet = ctx.xp.linalg.slogdet(inputs[0])
    outputs[0][...] = sign.reshape(outputs[0].shape)
    outputs[1][...] = logdet.reshape(outputs[1].shape)


def _slogdet_backward(ctx, attrs, inputs, outputs, aux):
    g, a = inputs
    outputs[0][...] = g.reshape(a.shape[:-2] + (1, 1)) * _mT(ctx.xp.linalg.inv(a))


def _sumlogdiag(ctx, attrs, inputs, outputs, aux):
    d = ctx.xp.diagonal(inputs[0], axis1=-2, axis2=-1)
    outputs[0][...] = ctx.xp.log(d).sum(axis=-1).reshape(outputs[0].shape)


def _sumlogdiag_backward(ctx, attrs, inputs, outputs, aux):
    g, a = inputs
    xp = ctx.xp
    n = a.shape[-1]
    d = xp.diagonal(a, axis1=-2, axis2=-1)
    out = outputs[0]
    out[...] = 0
    i = xp.arange(n)
    out[..., i, i] = g.reshape(a.shape[:-2] + (1,)) / d


register(OpDef(name="_backward_linalg_inverse", inputs=["ograd", "output"], outputs=["A_grad"],
               infer_shape=lambda a, s: (s, [s[1]]), infer_type=same_type("_backward_linalg_inverse"),
               kernels={"any": _inverse_backward}, doc="Gradient of linalg_inverse."))
register(OpDef(name="linalg_inverse", aliases=["_linalg_inverse"],
               inputs=["A"], infer_shape=_square_infer("linalg_inverse", lambda a, at: tuple(a)),
               kernels={"any": _inverse},
               gradient=lambda F, a, i, o, g: [F._backward_linalg_inverse(g[0], o[0])],
               doc="Inverse of (a batch of) square matrices."))
register(OpDef(name="_backward_linalg_det", inputs=["ograd", "A", "det"], outputs=["A_grad"],
               infer_shape=lambda a, s: (s, [s[1]]), infer_type=lambda a, d: (list(d), [d[1]]),
               kernels={"any": _det_backward}, doc="Gradient of linalg_det."))
register(OpDef(name="linalg_det", aliases=["_linalg_det"],
               inputs=["A"], infer_shape=_square_infer("linalg_det", lambda a, at: _batch_scalar(a)),
               kernels={"any": _det},
               gradient=lambda F, a, i, o, g: [F._backward_linalg_det(g[0], i[0], o[0])],
               doc="Determinant of (a batch of) square matrices."))
register(OpDef(name="_backward_linalg_slogdet", inputs=["ograd_logabsdet", "A"], outputs=["A_grad"],
               infer_shape=lambda a, s: (s, [s[1]]), infer_type=lambda a, d: (list(d), [d[1]]),
               kernels={"any": _slogdet_backward}, doc="Gradient of linalg_slogdet (through logabsdet)."))
register(OpDef(name="linalg_slogdet", aliases=["_linalg_slogdet"], inputs=["A"], outputs=["sign", "logabsdet"],
               infer_shape=_square_infer("linalg_slogdet", lambda a, at: [_batch_scalar(a)] * 2),
               infer_type=lambda a, d: (list(d), [d[0], d[0]]), kernels={"any": _slogdet},
               gradient=lambda F, a, i, o, g: [F._backward_linalg_slogdet(g[1], i[0]) if g[1] is not None
                                               else F.zeros_like(i[0])],
               doc="Sign and log|det| of (a batch of) square matrices."))
with_backward(OpDef(name="linalg_sumlogdiag", aliases=["_linalg_sumlogdiag"], inputs=["A"],
                     infer_shape=_square_infer("linalg_sumlogdiag", lambda a, at: _batch_scalar(a)),
                     kernels={"any": _sumlogdiag},
                     doc="Sum of the logs of the diagonal of (a batch of) square matrices."),
              _sumlogdiag_backward, "Gradient of linalg_sumlogdiag.")


# -- extractdiag / makediag -------------------------------------------------------------------------
_OFFSET = {"offset": Attr("int", 0)}


def _extract_infer(attrs, s):
    a = s[0]
    if not known(a):
        return s, [None]
    if len(a) < 2:
        raise ShapeError(f"linalg_extractdiag: A must be a (batch of) matrices, got {fmt(a)}")
    k = attrs["offset"]
    n = min(a[-2] + min(k, 0), a[-1] - max(k, 0))
    if n <= 0:
        raise ShapeError(f"linalg_extractdiag: offset {k} is outside matrices of shape {fmt(a[-2:])}")
    return s, [tuple(a[:-2]) + (n,)]


def _diag_index(xp, n, k):
    i = xp.arange(n)
    return i - min(k, 0), i + max(k, 0)


def _extractdiag(ctx, attrs, inputs, outputs, aux):
    a = inputs[0]
    rows, cols = _diag_index(ctx.xp, outputs[0].shape[-1], attrs["offset"])
    outputs[0][...] = a[..., rows, cols]


def _makediag_infer(attrs, s):
    a = s[0]
    if not known(a):
        return s, [None]
    n = a[-1] + abs(attrs["offset"])
    return s, [tuple(a[:-1]) + (n, n)]


def _makediag(ctx, attrs, inputs, outputs, aux):
    a = inputs[0]
    out = outputs[0]
    out[...] = 0
    rows, cols = _diag_index(ctx.xp, a.shape[-1], attrs["offset"])
    out[..., rows, cols] = a


with_backward(OpDef(name="linalg_extractdiag", aliases=["_linalg_extractdiag"],
                     attrs=_OFFSET, inputs=["A"], infer_shape=_extract_infer, kernels={"any": _extractdiag},
                     doc="Diagonal `offset` of (a batch of) matrices."),
              lambda c, a, i, o, x: _makediag(c, a, [i[0]], o, x),
              "Gradient of linalg_extractdiag: ograd placed on the diagonal.",
              infer_type=lambda a, d: (list(d), [d[0]]))
register(OpDef(name="linalg_makediag", aliases=["_linalg_makediag"],
               attrs=_OFFSET, inputs=["A"], infer_shape=_makediag_infer,
               kernels={"any": _makediag},
               gradient=lambda F, a, i, o, g: [F.linalg_extractdiag(g[0], **a)],
               doc="Square matrices with A's last axis on diagonal `offset`."))


# -- triangular ops: potrf, potri, trmm, trsm ---------------------------------------------------------
_TRI = {"transpose": Attr("bool", False), "rightside": Attr("bool", False), "lower": Attr("bool", True),
        "alpha": Attr("float", 1.0)}


def _tri(xp, a, lower):
    return xp.tril(a) if lower else xp.triu(a)


def _potrf(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    a = inputs[0]
    if attrs["lower"]:
        outputs[0][...] = xp.linalg.cholesky(a)
    else:
        outputs[0][...] = _mT(xp.linalg.cholesky(_mT(a)))


def _potri(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    t = _tri(xp, inputs[0], attrs["lower"])
    full = xp.matmul(t, _mT(t)) if attrs["lower"] else xp.matmul(_mT(t), t)
    outputs[0][...] = xp.linalg.inv(full)


def _potrf_backward(ctx, attrs, inputs, outputs, aux):
    # symmetric gradient 0.5 (S + S^T), S = L^-T phi(L^T G) L^-1, phi = lower triangle with half diagonal
    xp = ctx.xp
    g, f = inputs
    if not attrs["lower"]:  # the upper factor U = L^T: move everything to the lower form
        g, f = _mT(g), _mT(f)
    li = xp.linalg.inv(f)
    x = xp.matmul(_mT(f), g)
    n = x.shape[-1]
    phi = xp.tril(x) - 0.5 * x * xp.eye(n, dtype=x.dtype)
    s = xp.matmul(xp.matmul(_mT(li), phi), li)
    outputs[0][...] = 0.5 * (s + _mT(s))


def _potri_backward(ctx, attrs, inputs, outputs, aux):
    # out = (L L^T)^-1 = P  ->  dL = tril(-P (G + G^T) P L)   (upper: triu(-U P (G + G^T) P))
    xp = ctx.xp
    g, f, p = inputs
    m = -xp.matmul(xp.matmul(p, g + _mT(g)), p)
    t = _tri(xp, f, attrs["lower"])
    outputs[0][...] = xp.tril(xp.matmul(m, t)) if attrs["lower"] else xp.triu(xp.matmul(t, m))


_LOWER = {"lower": Attr("bool", True)}
register(OpDef(name="_backward_linalg_potrf", attrs=_LOWER, inputs=["ograd", "output"], outputs=["A_grad"],
               infer_shape=lambda a, s: (s, [s[1]]), infer_type=same_type("_backward_linalg_potrf"),
               kernels={"any": _potrf_backward}, doc="Gradient of linalg_potrf (symmetric, as MXNet)."))
register(OpDef(name="linalg_potrf", aliases=["_linalg_potrf"], attrs=_LOWER, inputs=["A"],
               infer_shape=_square_infer("linalg_potrf", lambda a, at: tuple(a)), kernels={"any": _potrf},
               gradient=lambda F, a, i, o, g: [F._backward_linalg_potrf(g[0], o[0], **a)],
               doc="Cholesky factor of symmetric positive-definite matrices (lower, or upper)."))
register(OpDef(name="_backward_linalg_potri", attrs=_LOWER, inputs=["ograd", "A", "output"], outputs=["A_grad"],
               infer_shape=lambda a, s: (s, [s[1]]), infer_type=same_type("_backward_linalg_potri"),
               kernels={"any": _potri_backward}, doc="Gradient of linalg_potri."))
register(OpDef(name="linalg_potri", aliases=["_linalg_potri"], attrs=_LOWER, inputs=["A"],
               infer_shape=_square_infer("linalg_potri", lambda a, at: tuple(a)), kernels={"any": _potri},
               gradient=lambda F, a, i, o, g: [F._backward_linalg_potri(g[0], i[0], o[0], **a)],
               doc="(L L^T)^-1 from a Cholesky factor L (U^T U with lower=False)."))


def _tri_infer(op):
    def infer(attrs, s):
        a, b = s
        if not known(a) or not known(b):
            return s, [None if b is None else tuple(b)]
        _need_square(op, a)
        k = b[-1] if attrs["rightside"] else b[-2]
        if k != a[-1] or a[:-2] != b[:-2]:
            raise ShapeError(f"{op}: triangular A {fmt(a)} does not fit B {fmt(b)} (rightside={attrs['rightside']})")
        return s, [tuple(b)]
    return infer


def _op_tri(xp, attrs, a):
    t = _tri(xp, a, attrs["lower"])
    return _mT(t) if attrs["transpose"] else t


def _trmm(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    a, b = inputs
    t = _op_tri(xp, attrs, a)
    res = xp.matmul(b, t) if attrs["rightside"] else xp.matmul(t, b)
    outputs[0][...] = attrs["alpha"] * res


def _trmm_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, a, b = inputs
    t = _op_tri(xp, attrs, a)
    alpha = attrs["alpha"]
    if attrs["rightside"]:  # out = alpha * B T
        gb = alpha * xp.matmul(g, _mT(t))
        gt = alpha * xp.matmul(_mT(b), g)
    else:  # out = alpha * T B
        gb = alpha * xp.matmul(_mT(t), g)
        gt = alpha * xp.matmul(g, _mT(b))
    outputs[0][...] = _tri(xp, _mT(gt) if attrs["transpose"] else gt, attrs["lower"])
    outputs[1][...] = gb


def _solve_tri(xp, t, rhs):
    return xp.linalg.solve(t, rhs)


def _trsm(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    a, b = inputs
    t = _op_tri(xp, attrs, a)
    if attrs["rightside"]:  # X T = alpha B  ->  T^T X^T = alpha B^T
        res = _mT(_solve_tri(xp, _mT(t), _mT(b)))
    else:
        res = _solve_tri(xp, t, b)
    outputs[0][...] = attrs["alpha"] * res


def _trsm_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, a, b, x = inputs
    t = _op_tri(xp, attrs, a)
    alpha = attrs["alpha"]
    if attrs["rightside"]:  # X = alpha B T^-1
        h = _mT(_solve_tri(xp, t, _mT(g)))  # G T^-T
        gb = alpha * h
        gt = -xp.matmul(_mT(x), h)
    else:  # X = alpha T^-1 B
        h = _solve_tri(xp, _mT(t), g)  # T^-T G
        gb = alpha * h
        gt = -xp.matmul(h, _mT(x))
    outputs[0][...] = _tri(xp, _mT(gt) if attrs["transpose"] else gt, attrs["lower"])
    outputs[1][...] = gb


with_backward(OpDef(name="linalg_trmm", aliases=["_linalg_trmm"],
                     attrs=_TRI, inputs=["A", "B"], infer_shape=_tri_infer("linalg_trmm"),
                     infer_type=same_type("linalg_trmm", names=["A", "B"]), kernels={"any": _trmm},
                     doc="alpha * op(tri(A)) @ B (B @ op(tri(A)) with rightside)."),
              _trmm_backward, "Gradient of linalg_trmm.", infer_type=same_type("_backward_linalg_trmm", 2))
register(OpDef(name="_backward_linalg_trsm", attrs=_TRI, inputs=["ograd", "A", "B", "output"],
               outputs=["A_grad", "B_grad"], infer_shape=lambda a, s: (s, [s[1], s[2]]),
               infer_type=same_type("_backward_linalg_trsm", 2), kernels={"any": _trsm_backward},
               doc="Gradient of linalg_trsm."))
register(OpDef(name="linalg_trsm", aliases=["_linalg_trsm"],
               attrs=_TRI, inputs=["A", "B"], infer_shape=_tri_infer("linalg_trsm"),
               infer_type=same_type("linalg_trsm", names=["A", "B"]), kernels={"any": _trsm},
               gradient=lambda F, a, i, o, g: list(F._backward_linalg_trsm(g[0], i[0], i[1], o[0], **a)),
               doc="Solve op(tri(A)) X = alpha * B (X op(tri(A)) = alpha * B with rightside)."))


# -- khatri_rao ------------------------------------------------------------------------------------------
def _kr_infer(attrs, in_shapes):
    if any(not known(s) for s in in_shapes):
        return in_shapes, [None]
    for s in in_shapes:
        if len(s) != 2 or s[1] != in_shapes[0][1]:
            shapes = ", ".join(fmt(x) for x in in_shapes)
            raise ShapeError(f"khatri_rao: inputs must be matrices with the same number of columns, got {shapes}")
    return in_shapes, [(prod(s[0] for s in in_shapes), in_shapes[0][1])]


def _khatri_rao(ctx, attrs, inputs, outputs, aux):
    res = inputs[0]
    for m in inputs[1:]:
        res = (res[:, None, :] * m[None, :, :]).reshape(-1, m.shape[1])
    outputs[0][...] = res


def _khatri_rao_backward(ctx, attrs, inputs, outputs, aux):
    # out[(i1, ..., ik), c] = prod_j A_j[i_j, c]: each input's gradient sums ograd times the others
    g, mats = inputs[0], inputs[1:]
    c = g.shape[-1]
    gk = g.reshape(tuple(m.shape[0] for m in mats) + (c,))
    k = len(mats)
    for j in range(k):
        acc = gk
        for other in range(k):
            if other != j:
                shape = [1] * k + [c]
                shape[other] = mats[other].shape[0]
                acc = acc * mats[other].reshape(shape)
        outputs[j][...] = acc.sum(axis=tuple(a for a in range(k) if a != j))


with_backward(OpDef(name="khatri_rao", attrs={"num_args": Attr("int")},
                     inputs=lambda a: [f"arg{i}" for i in range(a["num_args"])], key_var_num_args="num_args",
                     infer_shape=_kr_infer, infer_type=same_type("khatri_rao"), kernels={"any": _khatri_rao},
                     doc="Column-wise Kronecker product of matrices with equal column counts."),
              _khatri_rao_backward, "Gradient of khatri_rao.")
