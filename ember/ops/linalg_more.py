"""More of MXNet 1.x's linalg: linalg_extracttrian, linalg_maketrian, linalg_gelqf, linalg_syevd
(batched over leading axes, with gradients; each also answers to `_linalg_<name>`).

Conventions follow MXNet 1.9.1: a triangle is packed row by row from the lower triangle (an upper
triangle, offset > 0 or lower=False, is packed as the lower triangle of the transpose); gelqf gives
A = L Q with Q's rows orthonormal (LAPACK's signs); syevd gives A = U^T diag(lam) U with the
eigenvalues ascending and the largest-magnitude entry of each eigenvector row positive.
"""
from __future__ import annotations

import math

import numpy as np

from ..base import ShapeError
from ._common import fmt, known, same_type
from .registry import Attr, OpDef, register

_TRIAN = {"offset": Attr("int", 0, doc="diagonal offset (> 0 above, < 0 below the main diagonal)"),
          "lower": Attr("bool", True, doc="lower triangle when offset is 0")}


def _use_upper(attrs):
    return attrs["offset"] > 0 or (attrs["offset"] == 0 and not attrs["lower"])


def _trian_index(xp, n, attrs):
    """(rows, cols) of the packed triangle of an n x n matrix, in MXNet's order."""
    k = abs(attrs["offset"])
    rows, cols = np.tril_indices(n - k)  # row-major lower triangle of the shifted square
    rows = rows + k
    if _use_upper(attrs):
        rows, cols = cols, rows  # the transpose's lower triangle
    return xp.asarray(rows), xp.asarray(cols)


def _extracttrian_infer(attrs, s):
    a = s[0]
    if not known(a):
        return s, [None]
    if len(a) < 2 or a[-1] != a[-2]:
        raise ShapeError(f"linalg_extracttrian: input must be (a batch of) square matrices, got {fmt(a)}")
    n = a[-1] - abs(attrs["offset"])
    if n < 1:
        raise ShapeError(f"linalg_extracttrian: offset {attrs['offset']} is outside a {a[-1]}x{a[-1]} matrix")
    return s, [tuple(a[:-2]) + (n * (n + 1) // 2,)]


def _extracttrian(ctx, attrs, inputs, outputs, aux):
    a = inputs[0]
    r, c = _trian_index(ctx.xp, a.shape[-1], attrs)
    outputs[0][...] = a[..., r, c]


def _maketrian_size(op, m, offset):
    n = (math.isqrt(8 * m + 1) - 1) // 2
    if n * (n + 1) // 2 != m:
        raise ShapeError(f"{op}: the last axis ({m}) must hold a triangle, n*(n+1)/2 elements")
    return n + abs(offset)


def _maketrian_infer(attrs, s):
    a = s[0]
    if not known(a):
        return s, [None]
    n = _maketrian_size("linalg_maketrian", a[-1], attrs["offset"])
    return s, [tuple(a[:-1]) + (n, n)]


def _maketrian(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    out[...] = 0
    r, c = _trian_index(ctx.xp, out.shape[-1], attrs)
    out[..., r, c] = inputs[0]


register(OpDef(name="linalg_extracttrian", aliases=["_linalg_extracttrian"], attrs=_TRIAN, inputs=["A"],
               infer_shape=_extracttrian_infer, infer_type=same_type("linalg_extracttrian"),
               kernels={"any": _extracttrian},
               gradient=lambda F, a, i, o, g: [F.linalg_maketrian(g[0], **a)],
               doc="The (offset) triangle of (a batch of) square matrices packed into the last axis."))
register(OpDef(name="linalg_maketrian", aliases=["_linalg_maketrian"], attrs=_TRIAN, inputs=["A"],
               infer_shape=_maketrian_infer, infer_type=same_type("linalg_maketrian"),
               kernels={"any": _maketrian},
               gradient=lambda F, a, i, o, g: [F.linalg_extracttrian(g[0], **a)],
               doc="Square matrices holding a packed triangle (extracttrian's inverse), zeros elsewhere."))


# -- gelqf ---------------------------------------------------------------------------------------------
def _gelqf_infer(attrs, s):
    a = s[0]
    if not known(a):
        return s, [None, None]
    if len(a) < 2 or a[-2] > a[-1]:
        raise ShapeError(f"linalg_gelqf: input must be (a batch of) m x n matrices with m <= n, got {fmt(a)}")
    m = a[-2]
    return s, [tuple(a), tuple(a[:-2]) + (m, m)]


def _gelqf(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    a = inputs[0]
    q_t, r = xp.linalg.qr(a.swapaxes(-1, -2).astype(np.float64))  # A^T = Q' R  =>  A = R^T Q'^T
    outputs[0][...] = q_t.swapaxes(-1, -2)
    outputs[1][...] = r.swapaxes(-1, -2)


def _copyltu(xp, m):
    """Symmetric matrix from the lower triangle of m (MXNet's copyltu)."""
    low = xp.tril(m)
    return low + xp.tril(m, -1).swapaxes(-1, -2)


def _gelqf_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    dq, dl, q, l = (x.astype(np.float64) for x in inputs)
    mt = l.swapaxes(-1, -2) @ dl - dq @ q.swapaxes(-1, -2)
    rhs = dq + _copyltu(xp, mt) @ q
    # dA = L^-T rhs: solve L^T X = rhs
    outputs[0][...] = xp.linalg.solve(l.swapaxes(-1, -2), rhs)


def _zeros_for_missing(F, out_grads, outputs):
    return [F.zeros_like(o) if g is None else g for g, o in zip(out_grads, outputs)]


register(OpDef(name="linalg_gelqf", aliases=["_linalg_gelqf"], inputs=["A"], outputs=["Q", "L"],
               infer_shape=_gelqf_infer, infer_type=same_type("linalg_gelqf", n_out=2), kernels={"any": _gelqf},
               gradient=lambda F, a, i, o, g: [F._backward_linalg_gelqf(*_zeros_for_missing(F, g, o), o[0], o[1])],
               doc="LQ factorisation A = L Q of (a batch of) m x n matrices, m <= n: L lower triangular, "
                   "Q with orthonormal rows."))
register(OpDef(name="_backward_linalg_gelqf", inputs=["dQ", "dL", "Q", "L"], outputs=["A_grad"],
               infer_shape=lambda a, s: (s, [s[2]]), infer_type=lambda a, d: (list(d), [d[2]]),
               kernels={"any": _gelqf_backward},
               doc="Gradient of linalg_gelqf: L^-T (dQ + copyltu(L^T dL - dQ Q^T) Q)."))


# -- syevd ---------------------------------------------------------------------------------------------
def _syevd_infer(attrs, s):
    a = s[0]
    if not known(a):
        return s, [None, None]
    if len(a) < 2 or a[-1] != a[-2]:
        raise ShapeError(f"linalg_syevd: input must be (a batch of) square matrices, got {fmt(a)}")
    return s, [tuple(a), tuple(a[:-1])]


def _syevd(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    a = inputs[0].astype(np.float64)
    lam, v = xp.linalg.eigh(a)  # columns of v are eigenvectors, ascending eigenvalues
    u = v.swapaxes(-1, -2)
    idx = xp.abs(u).argmax(axis=-1)[..., None]
    sign = xp.sign(xp.take_along_axis(u, idx, axis=-1))
    sign = xp.where(sign == 0, 1.0, sign)
    outputs[0][...] = u * sign
    outputs[1][...] = lam


def _syevd_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    du, dlam, u, lam = (x.astype(np.float64) for x in inputs)
    n = lam.shape[-1]
    diff = lam[..., None, :] - lam[..., :, None]  # lam_j - lam_i
    eye = xp.eye(n, dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = xp.where(eye, 0.0, 1.0 / xp.where(eye, 1.0, diff))
    inner = f * (u @ du.swapaxes(-1, -2))
    inner = inner + dlam[..., None] * xp.eye(n)
    grad = u.swapaxes(-1, -2) @ inner @ u
    outputs[0][...] = 0.5 * (grad + grad.swapaxes(-1, -2))  # A is symmetric: the symmetric part


register(OpDef(name="linalg_syevd", aliases=["_linalg_syevd"], inputs=["A"], outputs=["U", "L"],
               infer_shape=_syevd_infer, infer_type=same_type("linalg_syevd", n_out=2), kernels={"any": _syevd},
               gradient=lambda F, a, i, o, g: [F._backward_linalg_syevd(*_zeros_for_missing(F, g, o), o[0], o[1])],
               doc="Eigendecomposition A = U^T diag(L) U of (a batch of) symmetric matrices: rows of U are "
                   "eigenvectors (largest-magnitude entry positive), L ascending."))
register(OpDef(name="_backward_linalg_syevd", inputs=["dU", "dL", "U", "L"], outputs=["A_grad"],
               infer_shape=lambda a, s: (s, [s[2]]), infer_type=lambda a, d: (list(d), [d[2]]),
               kernels={"any": _syevd_backward},
               doc="Gradient of linalg_syevd (symmetric part of U^T (diag(dL) + F o (U dU^T)) U)."))
