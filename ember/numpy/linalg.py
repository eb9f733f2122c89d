"""`mx.np.linalg`: numpy.linalg on the registry's batched LAPACK operators (linalg_potrf, linalg_inverse,
and MXNet's `_npi_det _npi_slogdet _npi_solve _npi_tensorinv _npi_tensorsolve _npi_eigh _npi_eigvalsh`
in ember/ops/np_linalg.py, `_npi_svd _npi_pinv _npi_eig _npi_eigvals` in ember/ops/np_linalg_more.py), so
each function runs on the engine, is differentiated by those operators' gradients and hybridizes
(`F.np.linalg` while tracing is this module).  The `_npi_*` functions are one node each, which infers
its shapes itself, so they also build graphs from symbols whose shapes are known only at bind time.

Matrices are the last two axes; leading axes are a batch.  A non-square input is a ValueError (a
ShapeError, also MXNet's MXNetError); a singular matrix is a MXNetError when the operator runs.
"""
from __future__ import annotations

from typing import Tuple

import numpy as _np

from ..base import ArgumentError
from . import functions as _f
from .functions import _call, _cast, asarray
from .multiarray import _as_np, ndarray

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
    """The determinant of each square matrix in a (shape a.shape[:-2]): the registry's `_npi_det`."""
    return _as_np(_call("_npi_det", (asarray(a),), {}))


def slogdet(a) -> Tuple[ndarray, ndarray]:
    """(sign, log|det|) of each square matrix in a: the registry's `_npi_slogdet`."""
    return tuple(_as_np(r) for r in _call("_npi_slogdet", (asarray(a),), {}))


def _uplo(name: str, uplo: str) -> str:
    if uplo not in ("L", "U"):
        raise ArgumentError(f"{name}: UPLO argument must be 'L' or 'U', got {uplo!r}")
    return uplo


def eigh(a, UPLO: str = "L") -> Tuple[ndarray, ndarray]:  # noqa: N803 - numpy's parameter name
    """Eigenvalues (ascending) and eigenvectors (columns) of each symmetric matrix in a, read from its
    lower ('L') or upper ('U') triangle: the registry's `_npi_eigh` (float32 stays float32, any other
    dtype gives float64, as MXNet)."""
    return tuple(_as_np(r) for r in _call("_npi_eigh", (asarray(a),), {"UPLO": _uplo("eigh", UPLO)}))


def eigvalsh(a, UPLO: str = "L") -> ndarray:  # noqa: N803
    """Eigenvalues (ascending) of each symmetric matrix in a: the registry's `_npi_eigvalsh`."""
    return _as_np(_call("_npi_eigvalsh", (asarray(a),), {"UPLO": _uplo("eigvalsh", UPLO)}))


def solve(a, b) -> ndarray:
    """x with a @ x = b: b of shape (..., M) or (..., M, K) for a of shape (..., M, M), the same batch
    shape (MXNet does not broadcast it): the registry's `_npi_solve`."""
    return _as_np(_call("_npi_solve", (asarray(a), asarray(b)), {}))


def tensorinv(a, ind: int = 2) -> ndarray:
    """The inverse of a with respect to tensordot over its first `ind` axes: `_npi_tensorinv`."""
    return _as_np(_call("_npi_tensorinv", (asarray(a),), {"ind": int(ind)}))


def tensorsolve(a, b, axes=None) -> ndarray:
    """x with tensordot(a, x, x.ndim) = b, a's `axes` moved to the end first: `_npi_tensorsolve`."""
    a_axes = () if axes is None else tuple(int(ax) for ax in axes)
    return _as_np(_call("_npi_tensorsolve", (asarray(a), asarray(b)), {"a_axes": a_axes}))


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
    return tuple(_as_np(r) for r in _call("_npi_svd", (asarray(a),), {}))


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
    return tuple(_as_np(r) for r in _call("_npi_eig", (asarray(a),), {}))


def eigvals(a):
    """Eigenvalues of each square matrix in a (real spectra only, as MXNet)."""
    return _as_np(_call("_npi_eigvals", (asarray(a),), {}))
