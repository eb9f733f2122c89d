"""mx.np.linalg's svd, pinv, eig and eigvals as registry operators (MXNet 1.9.1's names), batched over
leading axes, with shape/dtype inference of their own:

* `_npi_svd(a)` -> (UT, L, V): a = UT @ diag(L) @ V for a of shape (..., M, N) with M <= N (MXNet's
  requirement; MXNetError otherwise): UT (..., M, M), L (..., M) descending, V (..., M, N) (numpy's
  `svd(full_matrices=False)`).  Gradient `_backward_npi_svd`, MXNet's formula (distinct non-zero
  singular values assumed; denominators clamped at 1e-20 as MXNet's).
* `_npi_pinv(A, rcond, hermitian)` / `_npi_pinv_scalar_rcond(A, rcond, hermitian)`: numpy.linalg.pinv,
  rcond an array broadcast over the batch or a scalar.  No gradient (as MXNet).
* `_npi_eig(A)` -> (w, v) and `_npi_eigvals(A)` -> w: eigenvalues (and right eigenvectors) of square
  matrices with real spectra (MXNet returns real arrays; a complex eigenvalue is an MXNetError).  Integer
  inputs give float32 results.  No gradient (as MXNet).
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ._common import host, known
from .registry import Attr, OpDef, register


def _float_type(op):
    def infer(attrs, in_dtypes):
        d = in_dtypes[0]
        if d is None:
            return list(in_dtypes), [None]
        d = np.dtype(d)
        if d.kind == "f":
            out = np.dtype(np.float32) if d == np.float16 else d
        elif d.kind in "iub":
            out = np.dtype(np.float32)
        else:
            raise MXNetError(f"{op}: unsupported dtype {d.name}")
        return list(in_dtypes), [out]
    return infer


# -- svd ------------------------------------------------------------------------------------------------
def _svd_infer(attrs, in_shapes):
    s = in_shapes[0]
    if not known(s):
        return in_shapes, [None, None, None]
    if len(s) < 2:
        raise MXNetError(f"_npi_svd: a must have at least 2 dimensions, got shape {tuple(s)}")
    *b, m, n = s
    if m > n:
        raise MXNetError(f"_npi_svd: a of shape {tuple(s)} must have at most as many rows as columns (M <= N)")
    b = tuple(b)
    return in_shapes, [b + (m, m), b + (m,), b + (m, n)]


def _svd_type(attrs, in_dtypes):
    d = in_dtypes[0]
    if d is not None and np.dtype(d).kind != "f":
        raise MXNetError(f"_npi_svd: a must be floating point, got {np.dtype(d).name}")
    return list(in_dtypes), [d, d, d]


def _svd(ctx, attrs, inputs, outputs, aux):
    a = inputs[0]
    ut, l, v = outputs
    if a.size == 0:
        ut[...] = ctx.xp.broadcast_to(ctx.xp.eye(ut.shape[-1], dtype=ut.dtype), ut.shape) if ut.size else 0
        l[...] = 0
        v[...] = 0
        return
    work = a.astype(np.float64) if a.dtype == np.float16 else a
    u, s, vh = ctx.xp.linalg.svd(work, full_matrices=False)
    ut[...] = u
    l[...] = s
    v[...] = vh


def _svd_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    dut, dl, dv, ut, l, v = inputs
    da = outputs[0]
    if da.size == 0:
        da[...] = 0
        return
    m = l.shape[-1]
    li, lj = l[..., :, None], l[..., None, :]
    diff = xp.maximum(li - lj, 1e-20)
    summ = xp.maximum(li + lj, 1e-20)
    upper = xp.triu(xp.ones((m, m), dtype=bool), 1)
    e = xp.where(upper, 1.0 / diff / summ, 0)
    e = e - xp.swapaxes(e, -1, -2)
    vt = xp.swapaxes(v, -1, -2)
    inv_l = 1.0 / l[..., :, None]
    g1 = xp.matmul(inv_l * dv, vt) * lj + xp.matmul(xp.swapaxes(dut, -1, -2), ut)
    x = g1 * e
    eye = xp.eye(m, dtype=l.dtype)
    g2 = eye * dl[..., None, :] + (x + xp.swapaxes(x, -1, -2)) * lj - inv_l * xp.matmul(dv, vt) * eye
    da[...] = xp.matmul(ut, xp.matmul(g2, v) + inv_l * dv)


def _svd_gradient(F, attrs, inputs, outputs, out_grads):
    g = [og if og is not None else F.zeros_like(o) for og, o in zip(out_grads, outputs)]
    return [F._backward_npi_svd(g[0], g[1], g[2], outputs[0], outputs[1], outputs[2])]


register(OpDef(name="_backward_npi_svd", inputs=["dUT", "dL", "dV", "UT", "L", "V"], outputs=["a_grad"],
               infer_shape=lambda a, s: (s, [s[5]]), infer_type=lambda a, d: (list(d), [d[5]]),
               kernels={"any": _svd_backward}, doc="Gradient of _npi_svd (MXNet's formula)."))
register(OpDef(name="_npi_svd", inputs=["a"], outputs=["UT", "L", "V"], infer_shape=_svd_infer,
               infer_type=_svd_type, kernels={"any": _svd}, gradient=_svd_gradient, expensive=True,
               doc="Singular value decomposition a = UT @ diag(L) @ V of (..., M, N) matrices, M <= N."))


# -- pinv -----------------------------------------------------------------------------------------------
def _pinv_shape(s):
    if len(s) < 2:
        raise MXNetError(f"_npi_pinv: a must have at least 2 dimensions, got shape {tuple(s)}")
    return tuple(s[:-2]) + (s[-1], s[-2])


def _pinv_infer(attrs, in_shapes):
    s = in_shapes[0]
    if not known(s):
        return in_shapes, [None]
    if len(in_shapes) > 1 and known(in_shapes[1]):
        try:
            np.broadcast_shapes(tuple(in_shapes[1]), tuple(s[:-2]))
        except ValueError:
            raise MXNetError(f"_npi_pinv: rcond of shape {tuple(in_shapes[1])} does not broadcast to the batch "
                             f"shape {tuple(s[:-2])}") from None
    return in_shapes, [_pinv_shape(s)]


def _pinv(ctx, attrs, inputs, outputs, aux):
    a = host(inputs[0])
    rcond = host(inputs[1]) if len(inputs) > 1 else attrs["rcond"]
    out = outputs[0]
    if a.size == 0:
        out[...] = 0
        return
    work = a.astype(np.float64) if a.dtype == np.float16 else a
    r = np.linalg.pinv(work, rcond=rcond, hermitian=attrs["hermitian"])
    out[...] = ctx.xp.asarray(r.astype(out.dtype, copy=False))


register(OpDef(name="_npi_pinv", attrs={"hermitian": Attr("bool", False)}, inputs=["A", "rcond"], outputs=["out"],
               infer_shape=_pinv_infer, infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _pinv},
               doc="Moore-Penrose pseudo-inverse of (..., M, N) matrices, singular values below rcond * max cut."))
register(OpDef(name="_npi_pinv_scalar_rcond", attrs={"rcond": Attr("float", 1e-15), "hermitian": Attr("bool", False)},
               inputs=["A"], outputs=["out"], infer_shape=_pinv_infer, infer_type=lambda a, d: (list(d), [d[0]]),
               kernels={"any": _pinv},
               doc="Moore-Penrose pseudo-inverse of (..., M, N) matrices with a scalar rcond."))


# -- eig / eigvals --------------------------------------------------------------------------------------
def _square_check(op, s):
    if len(s) < 2 or s[-1] != s[-2]:
        raise MXNetError(f"{op}: a must be a stack of square matrices, got shape {tuple(s)}")


def _eig_infer(op, n_out):
    def infer(attrs, in_shapes):
        s = in_shapes[0]
        if not known(s):
            return in_shapes, [None] * n_out
        _square_check(op, s)
        w = tuple(s[:-1])
        return in_shapes, [w, tuple(s)][:n_out]
    return infer


def _eig_kernel(op):
    def kernel(ctx, attrs, inputs, outputs, aux):
        a = host(inputs[0]).astype(np.float64)
        if a.size == 0:
            for o in outputs:
                o[...] = 0
            return
        if not np.isfinite(a).all():
            raise MXNetError(f"{op}: the matrix contains infinite or NaN values")
        if len(outputs) == 2:
            w, v = np.linalg.eig(a)
        else:
            w, v = np.linalg.eigvals(a), None
        if np.iscomplexobj(w) and (w.imag != 0).any():
            raise MXNetError(f"{op}: the matrix has complex eigenvalues, which mx.np does not support")
        outputs[0][...] = ctx.xp.asarray(w.real.astype(outputs[0].dtype))
        if v is not None:
            outputs[1][...] = ctx.xp.asarray(np.real(v).astype(outputs[1].dtype))
    return kernel


register(OpDef(name="_npi_eig", inputs=["A"], outputs=["w", "v"], infer_shape=_eig_infer("_npi_eig", 2),
               infer_type=lambda a, d: (lambda r: (r[0], r[1] * 2))(_float_type("_npi_eig")(a, d)),
               kernels={"any": _eig_kernel("_npi_eig")},
               doc="Eigenvalues w and right eigenvectors v (columns) of square matrices with real spectra."))
register(OpDef(name="_npi_eigvals", inputs=["A"], outputs=["w"], infer_shape=_eig_infer("_npi_eigvals", 1),
               infer_type=_float_type("_npi_eigvals"), kernels={"any": _eig_kernel("_npi_eigvals")},
               doc="Eigenvalues of square matrices with real spectra."))
