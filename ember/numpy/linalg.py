"""`mx.np.linalg`: numpy.linalg on the registry's batched LAPACK operators (linalg_potrf, linalg_inverse,
linalg_det, linalg_slogdet, linalg_syevd), so each function runs on the engine, is differentiated by
those operators' gradients and hybridizes (`F.np.linalg` while tracing is this module).

Matrices are the last two axes; leading axes are a batch.  A non-square input is a ValueError; a
singular matrix given to inv/solve/det-based gradients follows the LAPACK operators (MXNetError).
Not here: svd, pinv, eig, eigvals (no registry operator yet).
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as _np

from ..base import MXNetError
from . import functions as _f
from .functions import _call, _cast, asarray
from .multiarray import _as_np, ndarray, reshape

__all__ = ["cholesky", "inv", "det", "slogdet", "eigh", "eigvalsh", "solve", "tensorinv", "tensorsolve", "norm",
           "svd", "pinv", "eig", "eigvals"]


def _square(name: str, a) -> ndarray:
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError(f"{name}: {a.ndim}-dimensional array given. Array must be at least two-dimensional")
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: last 2 dimensions of the array must be square, got {a.shape}")
    if a.dtype is not None and a.dtype.kind not in "f":
        raise TypeError(f"{name}: array type {a.dtype} is unsupported in linalg (floating-point only)")
    return a


def cholesky(a) -> ndarray:
    """The lower-triangular L with L @ L^T = a, for each symmetric positive-definite matrix in a."""
    a = _square("cholesky", a)
    if a.size == 0:
        return _as_np(_call("_copy", (a,), {}))
    return _as_np(_call("linalg_potrf", (a,), {"lower": True}))


def inv(a) -> ndarray:
    """The inverse of each square matrix in a."""
    a = _square("inv", a)
    if a.size == 0:
        return _as_np(_call("_copy", (a,), {}))
    return _as_np(_call("linalg_inverse", (a,), {}))


def det(a) -> ndarray:
    """The determinant of each square matrix in a (shape a.shape[:-2])."""
    a = _square("det", a)
    return reshape(_as_np(_call("linalg_det", (a,), {})), a.shape[:-2])


def slogdet(a) -> Tuple[ndarray, ndarray]:
    """(sign, log|det|) of each square matrix in a."""
    a = _square("slogdet", a)
    sign, logdet = _call("linalg_slogdet", (a,), {})
    return reshape(_as_np(sign), a.shape[:-2]), reshape(_as_np(logdet), a.shape[:-2])


def eigh(a, UPLO: str = "L") -> Tuple[ndarray, ndarray]:  # noqa: N803 - numpy's parameter name
    """Eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix in a, read from its
    lower ('L') or upper ('U') triangle."""
    a = _square("eigh", a)
    if UPLO not in ("L", "U"):
        raise ValueError(f"eigh: UPLO argument must be 'L' or 'U', got {UPLO!r}")
    sym = _symmetrized(a, UPLO)
    vecs_rows, vals = _call("linalg_syevd", (sym,), {})
    return _as_np(vals), _f.swapaxes(_as_np(vecs_rows), -1, -2)


def eigvalsh(a, UPLO: str = "L") -> ndarray:  # noqa: N803
    """Eigenvalues (ascending) of each symmetric matrix in a."""
    return eigh(a, UPLO)[0]


def _symmetrized(a, uplo: str):
    """The symmetric matrix numpy's eigh reads: the chosen triangle mirrored onto the other."""
    from .functions_more import tril, triu
    tri = tril(a) if uplo == "L" else triu(a)
    diag_only = _f.multiply(tril(triu(a)), 0.5)
    half = _f.subtract(tri, diag_only)
    return _f.add(half, _f.swapaxes(half, -1, -2))


def solve(a, b) -> ndarray:
    """x with a @ x = b: b of shape (..., M) or (..., M, K) for a of shape (..., M, M)."""
    a = _square("solve", a)
    b = asarray(b)
    vector = b.ndim == a.ndim - 1
    if vector:
        b = _f.expand_dims(b, -1)
    if b.shape[-2] != a.shape[-1]:
        raise ValueError(f"solve: a {a.shape} and b {b.shape} do not match")
    x = _f.matmul(inv(a), b)
    return _f.squeeze(x, -1) if vector else x


def tensorinv(a, ind: int = 2) -> ndarray:
    """The inverse of a with respect to tensordot over its first `ind` axes."""
    a = asarray(a)
    if ind <= 0:
        raise ValueError(f"tensorinv: invalid ind argument {ind}")
    old = a.shape
    rows = int(_np.prod(old[:ind]))
    cols = int(_np.prod(old[ind:]))
    if rows != cols:
        raise ValueError(f"tensorinv: prod(a.shape[:ind]) = {rows} must equal prod(a.shape[ind:]) = {cols}")
    return reshape(inv(reshape(a, (rows, cols))), old[ind:] + old[:ind])


def tensorsolve(a, b, axes=None) -> ndarray:
    """x with tensordot(a, x, x.ndim) = b."""
    a, b = asarray(a), asarray(b)
    if axes is not None:
        order = [i for i in range(a.ndim) if i not in [ax % a.ndim for ax in axes]] + [ax % a.ndim for ax in axes]
        a = _f.transpose(a, order)
    x_shape = a.shape[b.ndim:]
    rows = int(_np.prod(a.shape[:b.ndim]))
    cols = int(_np.prod(x_shape))
    if rows != cols:
        raise ValueError(f"tensorsolve: a's leading dimensions ({rows} elements) must match the rest ({cols})")
    x = solve(reshape(a, (rows, cols)), reshape(b, (rows,)))
    return reshape(x, x_shape)


def norm(x, ord=None, axis=None, keepdims: bool = False):  # noqa: A002 - numpy's parameter name
    """Matrix or vector norm: 'fro' / 2-norm by default; vector ords inf, -inf, 0, p; matrix ords
    'fro', 'nuc', 2, -2 (from singular values), 1, -1, inf, -inf."""
    x = asarray(x)
    if isinstance(ord, str) and ord in ("inf", "-inf"):  # MXNet takes numpy's infinities spelled out too
        ord = float(ord)  # noqa: A001
    if x.dtype.kind not in "f":
        x = _cast(x, _np.float32)
    if axis is None:
        if ord is None or (ord == "fro" and x.ndim == 2) or (ord == 2 and x.ndim == 1):
            return _f.sqrt(_f.sum(_f.square(x), keepdims=keepdims) if not keepdims else
                           _f.sum(_f.square(x), axis=tuple(range(x.ndim)), keepdims=True))
        if x.ndim == 1:
            return _vector_norm(x, ord, 0, keepdims)
        if x.ndim == 2:
            return _matrix_norm(x, ord, (0, 1), keepdims)
        raise ValueError("norm: improper number of dimensions to norm")
    axes = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    if len(axes) == 1:
        return _vector_norm(x, ord, axes[0], keepdims)
    if len(axes) == 2:
        if ord is None or ord == "fro":
            return _f.sqrt(_f.sum(_f.square(x), axis=axes, keepdims=keepdims))
        return _matrix_norm(x, ord, axes, keepdims)
    raise ValueError("norm: improper number of dimensions to norm")


def _vector_norm(x, ord, axis: int, keepdims: bool):  # noqa: A002
    if ord is None or ord == 2:
        return _f.sqrt(_f.sum(_f.square(x), axis=axis, keepdims=keepdims))
    if isinstance(ord, str):
        raise ValueError(f"norm: invalid norm order {ord!r} for vectors")
    ab = _f.abs(x)
    if ord == _np.inf:
        return _f.max(ab, axis=axis, keepdims=keepdims)
    if ord == -_np.inf:
        return _f.min(ab, axis=axis, keepdims=keepdims)
    if ord == 0:
        return _f.sum(_cast(_f.not_equal(x, 0), x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return _f.sum(ab, axis=axis, keepdims=keepdims)
    p = float(ord)
    return _f.power(_f.sum(_f.power(ab, p), axis=axis, keepdims=keepdims), 1.0 / p)


def _matrix_norm(x, ord, axes, keepdims: bool):  # noqa: A002
    r, c = (a % x.ndim for a in axes)
    if r == c:
        raise ValueError("norm: duplicate axes given")
    ab = _f.abs(x)
    if ord in (1, -1):
        col = _f.sum(ab, axis=r, keepdims=True)
        res = (_f.max if ord == 1 else _f.min)(col, axis=c, keepdims=True)
    elif ord in (_np.inf, -_np.inf):
        row = _f.sum(ab, axis=c, keepdims=True)
        res = (_f.max if ord == _np.inf else _f.min)(row, axis=r, keepdims=True)
    elif ord in (2, -2, "nuc"):
        # singular values of the (r, c) matrices: those axes moved last, the longer one last (svd's M <= N)
        rest = [i for i in range(x.ndim) if i not in (r, c)]
        last = (r, c) if x.shape[r] <= x.shape[c] else (c, r)
        sv = svd(_f.transpose(x, tuple(rest) + last))[1]
        res = _f.sum(sv, axis=-1) if ord == "nuc" else (_f.max if ord == 2 else _f.min)(sv, axis=-1)
        if keepdims:
            res = _f.expand_dims(_f.expand_dims(res, min(r, c)), max(r, c))
        return res
    else:
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    return res if keepdims else _f.squeeze(res, axis=(r, c))


def svd(a):
    """(UT, L, V) with a = UT @ diag(L) @ V for a of shape (..., M, N), M <= N (MXNet's form of numpy's
    svd(full_matrices=False)): the registry's `_npi_svd` (differentiable)."""
    a = asarray(a)
    ut, l, v = _call("_npi_svd", (a,), {})
    return _as_np(ut), _as_np(l), _as_np(v)


def pinv(a, rcond=1e-15, hermitian: bool = False):
    """The Moore-Penrose pseudo-inverse of each (..., M, N) matrix in a; rcond a scalar or an array
    broadcast over the batch."""
    a = asarray(a)
    if isinstance(rcond, (ndarray,)) or _is_symbol(rcond):
        return _as_np(_call("_npi_pinv", (a, rcond), {"hermitian": bool(hermitian)}))
    if _np.ndim(rcond) != 0:
        rcond = asarray(_np.asarray(rcond, dtype=a.dtype), ctx=a.context)
        return _as_np(_call("_npi_pinv", (a, rcond), {"hermitian": bool(hermitian)}))
    return _as_np(_call("_npi_pinv_scalar_rcond", (a,), {"rcond": float(rcond), "hermitian": bool(hermitian)}))


def _is_symbol(x) -> bool:
    from ..symbolic.symbol import Symbol
    return isinstance(x, Symbol)


def eig(a):
    """(w, v): eigenvalues and right eigenvectors (columns) of each square matrix in a (real spectra only,
    as MXNet; integer inputs give float32)."""
    w, v = _call("_npi_eig", (asarray(a),), {})
    return _as_np(w), _as_np(v)


def eigvals(a):
    """Eigenvalues of each square matrix in a (real spectra only, as MXNet)."""
    return _as_np(_call("_npi_eigvals", (asarray(a),), {}))
