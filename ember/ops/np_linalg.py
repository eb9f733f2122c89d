"""mx.np.linalg's det, slogdet, solve, tensorinv, tensorsolve, eigh and eigvalsh as registry operators
under MXNet 1.9.1's names, so `mx.np.linalg` is one node per function and graphs from variables without
shapes (`mx.sym.np.linalg.det(mx.sym.Variable('a'))`, a legacy block traced with `F.np.linalg`) infer
at bind time as any other:

* `_npi_det(A)`, `_npi_slogdet(A)` -> (sign, logabsdet): of each (..., N, N) matrix; results of shape
  A.shape[:-2], 0-d for a matrix (MXNet gives (1,) outside NumPy shape semantics; ember's mx.np results
  are 0-d either way).
  Gradients: the `linalg_det` / `linalg_slogdet` backward ops.
* `_npi_solve(A, B)`: X with A @ X = B, B of shape (..., N) or (..., N, K) with A's batch shape exactly
  (no broadcasting, as MXNet).  Gradient `_backward_npi_solve`.
* `_npi_tensorinv(a, ind)`: a's inverse for tensordot over its first `ind` axes, of shape
  a.shape[ind:] + a.shape[:ind].  Gradient `_backward_npi_tensorinv`.
* `_npi_tensorsolve(a, b, a_axes)`: x with tensordot(a, x, x.ndim) = b, a's `a_axes` moved last first;
  x has numpy's shape a.shape[-(a.ndim - b.ndim):].  Gradient `_backward_npi_tensorsolve`.
* `_npi_eigh(A, UPLO)` -> (w, v), `_npi_eigvalsh(A, UPLO)` -> w: ascending eigenvalues (and eigenvector
  columns) of the symmetric matrices that A's lower ('L') or upper ('U') triangle defines.  MXNet gives
  these zero gradients; ember keeps the true ones (folded onto the triangle read), as it had before.

dtypes follow MXNet: float16 is refused (DTypeError); det/slogdet take float32/float64 only; the others
give float32 for float32 inputs and float64 for everything else (integers included).  Shape problems
are ShapeErrors (MXNetError and ValueError), a singular matrix a MXNetError when the kernel runs.
"""
from __future__ import annotations

from typing import Sequence, Tuple

import numpy as np

from ..base import DTypeError, MXNetError, ShapeError
from ._common import known, with_backward
from .linalg import _det, _mT, _slogdet  # the kernels of linalg_det/slogdet serve the np forms too
from .np_products import _norm_axes
from .registry import Attr, OpDef, register

_UPLO = {"UPLO": Attr("str", "L", choices=("L", "U"), doc="which triangle of A is read")}


# -- shared rules -----------------------------------------------------------------------------------------
def _check_square(op: str, s) -> None:
    """(..., N, N) or a ShapeError naming op and the shape."""
    if len(s) < 2:
        raise ShapeError(f"{op}: {len(s)}-dimensional array given. Array must be at least two-dimensional")
    if s[-1] != s[-2]:
        raise ShapeError(f"{op}: last 2 dimensions of the array must be square, got shape {tuple(s)}")


def _square_shape(op: str, outputs):
    """Shape rule of an op on a stack of square matrices s (..., n, n): outputs(s) lists its output shapes."""
    n_out = len(outputs((1, 1)))

    def infer(attrs, in_shapes):
        s = in_shapes[0]
        if s is None:
            return in_shapes, [None] * n_out
        _check_square(op, s)
        return in_shapes, outputs(tuple(s))
    return infer


def _no_half(op: str, dtypes) -> None:
    for d in dtypes:
        if d is not None and np.dtype(d) == np.float16:
            raise DTypeError(f"{op}: array type float16 is unsupported in linalg")


def _solver_type(op: str, n_out: int = 1):
    """MXNet's rule for solve/tensorinv/tensorsolve/eigh: float32 if every input is, else float64."""
    def infer(attrs, in_dtypes):
        _no_half(op, in_dtypes)
        if any(d is None for d in in_dtypes):
            return list(in_dtypes), [None] * n_out
        f32 = all(np.dtype(d) == np.float32 for d in in_dtypes)
        out = np.dtype(np.float32 if f32 else np.float64)
        return list(in_dtypes), [out] * n_out
    return infer


def _det_type(op: str, n_out: int):
    """det/slogdet: float32 or float64 inputs only, results of the same dtype."""
    def infer(attrs, in_dtypes):
        d = in_dtypes[0]
        if d is None:
            return list(in_dtypes), [None] * n_out
        if np.dtype(d) not in (np.float32, np.float64):
            raise DTypeError(f"{op}: array type {np.dtype(d).name} is unsupported in linalg (float32 and float64 only)")
        return list(in_dtypes), [np.dtype(d)] * n_out
    return infer


def _grad_type(*positions: int):
    """Backward ops: gradient i has the dtype of input positions[i] (the forward input it is for)."""
    return lambda attrs, d: (list(d), [d[p] for p in positions])


def _prod(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _solve(xp, a, b):
    """xp.linalg.solve with b of a's ndim (matrices of right-hand sides); singular: MXNetError."""
    if a.size == 0 or b.size == 0:
        return xp.zeros(b.shape, dtype=np.result_type(a.dtype, b.dtype))
    try:
        return xp.linalg.solve(a, b)
    except np.linalg.LinAlgError as e:
        raise MXNetError(f"linalg solve: {e} (the matrix is singular)") from None


def _inv(xp, a):
    if a.size == 0:
        return xp.zeros(a.shape, dtype=a.dtype)
    try:
        return xp.linalg.inv(a)
    except np.linalg.LinAlgError as e:
        raise MXNetError(f"linalg inverse: {e} (the matrix is singular)") from None


# -- det / slogdet ----------------------------------------------------------------------------------------
def _det_shape(op: str, n_out: int):
    # numpy's shape, also outside NumPy shape semantics (MXNet gives (1,) for a matrix there), as
    # every mx.np function's result is 0-d either way in ember
    return _square_shape(op, lambda s: [s[:-2]] * n_out)


register(OpDef(name="_npi_det", inputs=["A"], infer_shape=_det_shape("_npi_det", 1),
               infer_type=_det_type("_npi_det", 1), kernels={"any": _det},
               gradient=lambda F, a, i, o, g: [F._backward_linalg_det(g[0], i[0], o[0])],
               doc="Determinant of each (..., N, N) matrix; of shape A.shape[:-2]."))
register(OpDef(name="_npi_slogdet", inputs=["A"], outputs=["sign", "logabsdet"],
               infer_shape=_det_shape("_npi_slogdet", 2), infer_type=_det_type("_npi_slogdet", 2),
               kernels={"any": _slogdet},
               gradient=lambda F, a, i, o, g: [F._backward_linalg_slogdet(g[1], i[0]) if g[1] is not None
                                               else F.zeros_like(i[0])],
               doc="Sign and log|det| of each (..., N, N) matrix; of shape A.shape[:-2]."))


# -- solve ------------------------------------------------------------------------------------------------
def _solve_shape(attrs, in_shapes):
    a, b = in_shapes
    if a is None or b is None:
        return in_shapes, [None if b is None else tuple(b)]
    _check_square("_npi_solve", a)
    if len(a) == len(b) + 1:
        if a[-1] != b[-1]:
            raise ShapeError(f"_npi_solve: A {tuple(a)} and B {tuple(b)}: A's and B's last dimension must be equal")
    elif len(a) == len(b):
        if a[-1] != b[-2]:
            raise ShapeError(f"_npi_solve: A {tuple(a)} and B {tuple(b)}: A's last dimension must equal B's second "
                             "to last")
    else:
        raise ShapeError(f"_npi_solve: A {tuple(a)} and B {tuple(b)}: A's and B's dimensions don't match")
    if tuple(a[:-2]) != tuple(b[:len(a) - 2]):
        raise ShapeError(f"_npi_solve: A {tuple(a)} and B {tuple(b)}: A's and B's batch dimensions don't match")
    return in_shapes, [tuple(b)]


def _as_columns(a, b):
    """b as a stack of right-hand-side matrices (a vector right-hand side gets a trailing axis)."""
    return b[..., None] if b.ndim == a.ndim - 1 else b


def _solve_kernel(ctx, attrs, inputs, outputs, aux):
    a, b = inputs
    out = outputs[0]
    x = _solve(ctx.xp, a.astype(out.dtype, copy=False), _as_columns(a, b.astype(out.dtype, copy=False)))
    out[...] = x.reshape(out.shape)


def _solve_backward(ctx, attrs, inputs, outputs, aux):
    # X = A^-1 B: dB = A^-T dX, dA = -dB X^T (both with B's columns)
    g, a, b, x = inputs
    xp = ctx.xp
    g2, x2 = _as_columns(a, g), _as_columns(a, x)
    gb = _solve(xp, _mT(a).astype(g.dtype), g2)
    outputs[0][...] = -xp.matmul(gb, _mT(x2))
    outputs[1][...] = gb.reshape(b.shape)


register(OpDef(name="_backward_npi_solve", inputs=["ograd", "A", "B", "X"], outputs=["A_grad", "B_grad"],
               infer_shape=lambda a, s: (s, [s[1], s[2]]), infer_type=_grad_type(1, 2),
               kernels={"any": _solve_backward}, doc="Gradient of _npi_solve."))
register(OpDef(name="_npi_solve", inputs=["A", "B"], infer_shape=_solve_shape,
               infer_type=_solver_type("_npi_solve"), kernels={"any": _solve_kernel},
               gradient=lambda F, a, i, o, g: list(F._backward_npi_solve(g[0], i[0], i[1], o[0])),
               doc="X with A @ X = B for square (..., N, N) A and B of shape (..., N) or (..., N, K)."))


# -- tensorinv --------------------------------------------------------------------------------------------
def _tensorinv_shape(attrs, in_shapes):
    s = in_shapes[0]
    ind = attrs["ind"]
    if ind <= 0:
        raise ShapeError(f"_npi_tensorinv: invalid ind argument {ind} (must be positive)")
    if s is None:
        return in_shapes, [None]
    s = tuple(s)
    out = s[ind:] + s[:ind] if 0 < len(s) and ind < len(s) else s
    if len(out) == 0:
        raise ShapeError("_npi_tensorinv: can not reshape array of shape () (a must have dimensions)")
    if not known(s):
        return in_shapes, [out]
    front, back = (_prod(s[:ind]), _prod(s[ind:])) if ind < len(s) else (_prod(s), 1)
    if ind < len(s) and back == 0:
        raise ShapeError(f"_npi_tensorinv: can not reshape array of size 0 (shape {s}) into a square matrix")
    if front != back:
        raise ShapeError(f"_npi_tensorinv: a of shape {s} must be square, i.e., prod(a.shape[:ind]) == "
                         f"prod(a.shape[ind:]) (ind={ind})")
    return in_shapes, [out]


def _tensorinv_kernel(ctx, attrs, inputs, outputs, aux):
    a, out = inputs[0], outputs[0]
    n = int(round(np.sqrt(a.size)))
    inv = _inv(ctx.xp, a.astype(out.dtype, copy=False).reshape(n, n))
    out[...] = inv.reshape(out.shape)


def _tensorinv_backward(ctx, attrs, inputs, outputs, aux):
    # Y = M^-1 with M = a as an (n, n) matrix: dM = -Y^T dY Y^T
    g, y, a = inputs
    xp = ctx.xp
    n = int(round(np.sqrt(y.size)))
    ym = y.reshape(n, n)
    outputs[0][...] = (-xp.matmul(xp.matmul(ym.T, g.reshape(n, n)), ym.T)).reshape(a.shape)


register(OpDef(name="_backward_npi_tensorinv", attrs={"ind": Attr("int", 2)}, inputs=["ograd", "output", "a"],
               outputs=["a_grad"], infer_shape=lambda a, s: (s, [s[2]]), infer_type=_grad_type(2),
               kernels={"any": _tensorinv_backward}, shape_only_inputs=(2,), doc="Gradient of _npi_tensorinv."))
register(OpDef(name="_npi_tensorinv", attrs={"ind": Attr("int", 2, doc="how many leading axes are the rows")},
               inputs=["a"], infer_shape=_tensorinv_shape, infer_type=_solver_type("_npi_tensorinv"),
               kernels={"any": _tensorinv_kernel},
               gradient=lambda F, a, i, o, g: [F._backward_npi_tensorinv(g[0], o[0], i[0], **a)],
               doc="Inverse of a with respect to tensordot over its first `ind` axes."))


# -- tensorsolve ------------------------------------------------------------------------------------------
def _tensorsolve_order(a_axes: Sequence[int], ndim: int) -> Tuple[int, ...]:
    """a's axes with the ones in a_axes moved to the end, in a_axes' order."""
    moved = _norm_axes("_npi_tensorsolve", a_axes, ndim)  # ShapeError for an axis out of range or repeated
    return tuple(i for i in range(ndim) if i not in moved) + tuple(moved)


def _tensorsolve_split(a, b) -> int:
    """How many leading axes of (transposed) a pair with b; the rest are x's (numpy's a.shape[-(a.ndim -
    b.ndim):], which is all of a when the ndims are equal)."""
    return len(b) if len(a) > len(b) else len(b) - len(a)


def _tensorsolve_shape(attrs, in_shapes):
    a, b = in_shapes
    if a is None or b is None:
        return in_shapes, [None]
    if len(a) == 0 or len(b) == 0:
        other = b if len(a) == 0 else a
        if known(other) and _prod(other) != 1:
            raise ShapeError(f"_npi_tensorsolve: a {tuple(a)} and b {tuple(b)}: a's and b's dimensions don't match")
        return in_shapes, [tuple(b) if len(a) == 0 and len(b) == 0 else tuple(a)]
    at = tuple(a[i] for i in _tensorsolve_order(attrs["a_axes"], len(a)))
    split = _tensorsolve_split(a, b)
    out = at[split:] if split < len(at) else ()
    if not (known(a) and known(b)):
        return in_shapes, [out]
    front, back = _prod(at[:split]), _prod(out)
    if front != back:
        raise ShapeError(f"_npi_tensorsolve: a of shape {tuple(a)} must be square (the product of its first "
                         f"{split} axes, {front}, must equal that of the rest, {back})")
    if back != _prod(b):
        raise ShapeError(f"_npi_tensorsolve: a {tuple(a)} and b {tuple(b)}: a's and b's dimensions don't match")
    return in_shapes, [out]


def _tensorsolve_matrix(attrs, a, n: int):
    """a transposed as tensorsolve reads it, as an (n, n) matrix (0-d and size-1 inputs: (1, 1))."""
    if a.ndim:
        a = a.transpose(_tensorsolve_order(attrs["a_axes"], a.ndim))
    return a.reshape(n, n)


def _tensorsolve_kernel(ctx, attrs, inputs, outputs, aux):
    a, b = inputs
    out = outputs[0]
    n = b.size
    m = _tensorsolve_matrix(attrs, a.astype(out.dtype, copy=False), n)
    x = _solve(ctx.xp, m, b.astype(out.dtype, copy=False).reshape(n, 1))
    out[...] = x.reshape(out.shape)


def _tensorsolve_backward(ctx, attrs, inputs, outputs, aux):
    # x = M^-1 b: db = M^-T dx, dM = -db x^T, dM then put back in a's axis order
    g, a, b, x = inputs
    xp = ctx.xp
    n = b.size
    m = _tensorsolve_matrix(attrs, a, n)
    gb = _solve(xp, m.T.astype(g.dtype), g.reshape(n, 1))
    gm = -xp.matmul(gb, x.reshape(1, n))
    if a.ndim:
        order = _tensorsolve_order(attrs["a_axes"], a.ndim)
        gm = gm.reshape(tuple(a.shape[i] for i in order)).transpose(np.argsort(order))
    outputs[0][...] = gm.reshape(a.shape)
    outputs[1][...] = gb.reshape(b.shape)


_AXES = {"a_axes": Attr("shape", (), doc="axes of a moved to the end before solving")}
register(OpDef(name="_backward_npi_tensorsolve", attrs=_AXES, inputs=["ograd", "a", "b", "x"],
               outputs=["a_grad", "b_grad"], infer_shape=lambda a, s: (s, [s[1], s[2]]),
               infer_type=_grad_type(1, 2), kernels={"any": _tensorsolve_backward},
               doc="Gradient of _npi_tensorsolve."))
register(OpDef(name="_npi_tensorsolve", attrs=_AXES, inputs=["a", "b"], infer_shape=_tensorsolve_shape,
               infer_type=_solver_type("_npi_tensorsolve"), kernels={"any": _tensorsolve_kernel},
               gradient=lambda F, a, i, o, g: list(F._backward_npi_tensorsolve(g[0], i[0], i[1], o[0], **a)),
               doc="x with tensordot(a, x, x.ndim) = b (a's a_axes moved to the end first)."))


# -- eigh / eigvalsh --------------------------------------------------------------------------------------
def _eig_shape(op: str, n_out: int):
    return _square_shape(op, lambda s: [s[:-1], s][:n_out])


def _eigh(xp, a, uplo: str, dtype):
    """(w, v) of the symmetric matrices a's `uplo` triangle defines, computed in dtype."""
    a = a.astype(dtype, copy=False)
    if a.size == 0:  # no batch or 0x0 matrices: both results are empty too
        return xp.zeros(a.shape[:-1], dtype=dtype), xp.zeros(a.shape, dtype=dtype)
    return xp.linalg.eigh(a, UPLO=uplo)


def _eigh_kernel(ctx, attrs, inputs, outputs, aux):
    w, v = _eigh(ctx.xp, inputs[0], attrs["UPLO"], outputs[0].dtype)
    outputs[0][...] = w
    if len(outputs) > 1:
        outputs[1][...] = v


def _fold_to_triangle(xp, g, uplo: str):
    """The gradient with respect to a, given g with respect to the symmetric matrix S its triangle
    defines: an off-diagonal entry of the triangle is both S[i, j] and S[j, i]; the other triangle is
    never read."""
    sym = (g + _mT(g)) / 2
    tri = xp.tril(sym, -1) if uplo == "L" else xp.triu(sym, 1)
    n = g.shape[-1]
    eye = xp.eye(n, dtype=g.dtype)
    return 2 * tri + sym * eye


def _eigh_backward(ctx, attrs, inputs, outputs, aux):
    # dS = V (diag(dw) + F o (V^T dV)) V^T, F[i, j] = 1 / (w[j] - w[i]) off the diagonal
    gw, gv, w, v, a = inputs
    xp = ctx.xp
    if a.size == 0:
        outputs[0][...] = 0
        return
    diff = w[..., None, :] - w[..., :, None]
    n = w.shape[-1]
    off = ~xp.eye(n, dtype=bool)
    f = xp.where(off, 1.0 / xp.where(off, diff, 1.0), 0.0)
    inner = f * xp.matmul(_mT(v), gv) + gw[..., None, :] * xp.eye(n, dtype=w.dtype)
    g = xp.matmul(xp.matmul(v, inner), _mT(v))
    outputs[0][...] = _fold_to_triangle(xp, g, attrs["UPLO"])


def _eigvalsh_backward(ctx, attrs, inputs, outputs, aux):
    # dS = V diag(dw) V^T, V recomputed (eigvalsh does not keep the eigenvectors)
    gw, a = inputs
    xp = ctx.xp
    if a.size == 0:
        outputs[0][...] = 0
        return
    _, v = _eigh(xp, a, attrs["UPLO"], gw.dtype)
    g = xp.matmul(v * gw[..., None, :], _mT(v))
    outputs[0][...] = _fold_to_triangle(xp, g, attrs["UPLO"])


def _eigh_gradient(F, attrs, inputs, outputs, out_grads):
    gw, gv = (og if og is not None else F.zeros_like(o) for og, o in zip(out_grads, outputs))
    return [F._backward_npi_eigh(gw, gv, outputs[0], outputs[1], inputs[0], **attrs)]


register(OpDef(name="_backward_npi_eigh", attrs=_UPLO, inputs=["dw", "dv", "w", "v", "A"], outputs=["A_grad"],
               infer_shape=lambda a, s: (s, [s[4]]), infer_type=_grad_type(4), shape_only_inputs=(4,),
               kernels={"any": _eigh_backward}, doc="Gradient of _npi_eigh (on the triangle read)."))
register(OpDef(name="_npi_eigh", attrs=_UPLO, inputs=["A"], outputs=["w", "v"], infer_shape=_eig_shape("_npi_eigh", 2),
               infer_type=_solver_type("_npi_eigh", 2), kernels={"any": _eigh_kernel}, gradient=_eigh_gradient,
               expensive=True, doc="Eigenvalues (ascending) and eigenvector columns of symmetric matrices."))
with_backward(OpDef(name="_npi_eigvalsh", attrs=_UPLO, inputs=["A"], infer_shape=_eig_shape("_npi_eigvalsh", 1),
                     infer_type=_solver_type("_npi_eigvalsh"), kernels={"any": _eigh_kernel}, expensive=True,
                     doc="Eigenvalues (ascending) of symmetric matrices."),
              _eigvalsh_backward, "Gradient of _npi_eigvalsh (on the triangle read).", ograd="dw",
              infer_type=_grad_type(1))
