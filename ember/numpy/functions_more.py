"""More of `mx.np`'s function library: numpy functions composed from the registry operators that
`functions.py` already uses (dot, reshape, transpose, slice, Concat, diag, take, arange, ...).

Each function is written once for arrays and np symbols (a block traced under NumPy array
semantics), so it runs imperatively, hybridizes, and autograd differentiates it through the
operators it is made of.  Errors follow numpy / MXNet 1.9.1 (ValueError for bad arguments,
MXNetError where MXNet's operator raises).
"""
from __future__ import annotations

import builtins
import numbers
from typing import List, Optional, Sequence

import numpy as _np

from ..base import MXNetError
from ..symbolic import np_symbol as _np_symbol
from ..symbolic.np_symbol import _Symbol as _NpSymbol
from . import functions as _f
from .functions import _axes, _call, _cast, _deliver, _known_shape, _result_type, asarray
from . import multiarray as _m
from .multiarray import _as_np, ndarray, reshape

__all__ = ["tensordot", "vdot", "inner", "outer", "average", "hstack", "dstack", "column_stack", "atleast_1d",
           "atleast_2d", "atleast_3d", "append", "flipud", "fliplr", "rot90", "roll", "trace", "diag", "diagonal",
           "diagflat", "diff", "ediff1d", "around", "round", "round_", "tril", "triu", "meshgrid",
           "broadcast_arrays", "logspace", "nan_to_num", "resize", "polyval", "indices", "bitwise_not", "invert",
           "diag_indices_from", "hanning", "hamming", "blackman"]

_F32 = _np.dtype(_np.float32)
# stands for "build graph nodes" where a creation function has no operand to tell (mx.sym.np's forms)
_TRACE = object()


def _symbol_form(fn):
    """Give creation function `fn` (which takes `_like`) the form mx.sym.np serves while tracing."""
    def traced(*args, **kwargs):
        return fn(*args, _like=_TRACE, **kwargs)
    traced.__name__, traced.__doc__ = fn.__name__, fn.__doc__
    fn._symbol_form = traced
    return fn


def _filled_like(x, value: float):
    """An array (or node) of x's shape and dtype filled with `value`."""
    return _as_np(_call("_plus_scalar", (_call("zeros_like", (x,), {}),), {"scalar": float(value)}))


def _slice(a, axis: int, begin, end, step=None):
    """a[..., begin:end:step, ...] on `axis` (the registry's slice_axis / slice)."""
    if (step is None or step == 1) and end > begin:
        return _call("slice_axis", (a,), {"axis": axis, "begin": begin, "end": end})
    nd = a.ndim
    begins = tuple(begin if i == axis else None for i in range(nd))
    ends = tuple(end if i == axis else None for i in range(nd))
    steps = tuple((step or 1) if i == axis else None for i in range(nd))
    return _call("slice", (a,), {"begin": begins, "end": ends, "step": steps})


def _arange_node(n: int, dtype, like) -> ndarray:
    """0..n-1 as an array (or, while tracing, a node) of `dtype`."""
    if isinstance(like, _NpSymbol) or like is _TRACE:
        return _as_np(_np_symbol.apply("_arange", (), {"start": 0.0, "stop": float(n), "step": 1.0,
                                                       "dtype": _np.dtype(dtype).name}))
    from .multiarray import arange
    return arange(n, dtype=dtype, ctx=like.context if isinstance(like, ndarray) else None)


# ------------------------------------------------------------------ products

def tensordot(a, b, axes=2) -> ndarray:
    """Sum of products over `axes` (an int N: a's last N and b's first N axes; or two lists): the registry's
    `_npi_tensordot_int_axes` / `_npi_tensordot`, which infer their own shapes."""
    a, b = asarray(a), asarray(b)
    dt = _result_type(a.dtype, b.dtype)
    a, b = _cast(a, dt), _cast(b, dt)
    sa, sb = _known_shape(a), _known_shape(b)
    if isinstance(axes, (int, _np.integer)):
        n = int(axes)
        if sa is not None and sb is not None and (n < 0 or n > len(sa) or n > len(sb)):
            raise ValueError(f"tensordot: axes={n} is out of range for inputs of {len(sa)} and {len(sb)} dimensions")
        if sa is not None and sb is not None:
            for i, j in zip(range(len(sa) - n, len(sa)), range(n)):
                if sa[i] != sb[j]:
                    raise ValueError(f"tensordot: shape-mismatch for sum: {sa} axis {i} vs {sb} axis {j}")
        return _as_np(_call("_npi_tensordot_int_axes", (a, b), {"axes": n}))
    ax_a, ax_b = axes
    ax_a = [int(ax_a)] if isinstance(ax_a, (int, _np.integer)) else [int(x) for x in ax_a]
    ax_b = [int(ax_b)] if isinstance(ax_b, (int, _np.integer)) else [int(x) for x in ax_b]
    if len(ax_a) != len(ax_b):
        raise ValueError("tensordot: shape-mismatch for sum (axes lists differ in length)")
    if sa is not None and sb is not None:
        for i, j in zip(ax_a, ax_b):
            if sa[i % builtins.max(len(sa), 1)] != sb[j % builtins.max(len(sb), 1)]:
                raise ValueError(f"tensordot: shape-mismatch for sum: {sa} axis {i} vs {sb} axis {j}")
    return _as_np(_call("_npi_tensordot", (a, b), {"a_axes_summed": tuple(ax_a), "b_axes_summed": tuple(ax_b)}))


def vdot(a, b) -> ndarray:
    """Dot product of the flattened arrays (a 0-d array)."""
    a, b = asarray(a), asarray(b)
    return tensordot(_as_np(_call("_np_reshape", (a,), {"newshape": (-1,)})),
                     _as_np(_call("_np_reshape", (b,), {"newshape": (-1,)})), 1)


def inner(a, b) -> ndarray:
    """Sum of products over the last axes of a and b (a scalar operand multiplies)."""
    a, b = asarray(a), asarray(b)
    sa, sb = _known_shape(a), _known_shape(b)
    if (sa is not None and len(sa) == 0) or (sb is not None and len(sb) == 0):
        return _f.multiply(a, b)
    return tensordot(a, b, ([-1], [-1]))


def outer(a, b) -> ndarray:
    """The outer product of the flattened a and b."""
    a, b = _f.ravel(asarray(a)), _f.ravel(asarray(b))
    return _f.multiply(reshape(a, (-1, 1)), reshape(b, (1, -1)))


def average(a, axis=None, weights=None, returned: bool = False, out=None):
    """Weighted mean along `axis` (weights of a's shape, or 1-D along a single axis)."""
    a = asarray(a)
    if weights is None:
        avg = _f.mean(a, axis=axis)
        count = a.size if axis is None else int(_np.prod([a.shape[i] for i in _axes(axis, a.ndim, "average")]))
        res = _deliver(avg, out)
        return (res, _filled_like(res, count)) if returned else res
    w = asarray(weights)
    if a.shape != w.shape:
        if axis is None:
            raise ValueError("average: axis must be specified when shapes of a and weights differ")
        if w.ndim != 1:
            raise ValueError("average: 1D weights expected when shapes of a and weights differ")
        ax = _axes(axis, a.ndim, "average")
        if len(ax) != 1:
            raise ValueError("average: a single axis is needed with 1-D weights")
        if w.shape[0] != a.shape[ax[0]]:
            raise ValueError("average: length of weights differs from that of the averaged axis")
        w = reshape(w, tuple(w.shape[0] if i == ax[0] else 1 for i in range(a.ndim)))
    scl = _f.sum(_f.broadcast_to(w, a.shape) if w.shape != a.shape else w, axis=axis)
    total = _f.sum(_f.multiply(a, w), axis=axis)
    res = _deliver(_f.true_divide(total, scl), out)
    return (res, scl) if returned else res


# ------------------------------------------------------------------ joins

def atleast_1d(*arys):
    """Each input viewed with at least one dimension (a list for several inputs)."""
    res = [reshape(x, (1,)) if x.ndim == 0 else x for x in map(asarray, arys)]
    return res[0] if len(res) == 1 else res


def atleast_2d(*arys):
    """Each input with at least two dimensions (1-D as a row)."""
    res = [reshape(x, (1, x.size)) if x.ndim < 2 else x for x in map(asarray, arys)]
    return res[0] if len(res) == 1 else res


def atleast_3d(*arys):
    """Each input with at least three dimensions: (N,) -> (1, N, 1), (M, N) -> (M, N, 1)."""
    res = []
    for x in arys:
        x = asarray(x)
        if x.ndim == 0:
            x = reshape(x, (1, 1, 1))
        elif x.ndim == 1:
            x = reshape(x, (1, x.shape[0], 1))
        elif x.ndim == 2:
            x = reshape(x, x.shape + (1,))
        res.append(x)
    return res[0] if len(res) == 1 else res


def hstack(arrays: Sequence, out=None) -> ndarray:
    """Join along axis 1 (axis 0 for 1-D inputs)."""
    arrs = atleast_1d(*arrays)
    arrs = arrs if isinstance(arrs, list) else [arrs]
    return _f.concatenate(arrs, axis=0 if arrs[0].ndim == 1 else 1, out=out)


def dstack(arrays: Sequence) -> ndarray:
    """Join along the third axis (inputs made 3-D first)."""
    arrs = atleast_3d(*arrays)
    arrs = arrs if isinstance(arrs, list) else [arrs]
    return _f.concatenate(arrs, axis=2)


def column_stack(tup: Sequence) -> ndarray:
    """1-D inputs as columns, 2-D ones as they are, joined along axis 1."""
    cols = [reshape(x, (-1, 1)) if x.ndim < 2 else x for x in map(asarray, tup)]
    return _f.concatenate(cols, axis=1)


def append(arr, values, axis: Optional[int] = None) -> ndarray:
    """`values` appended to `arr` (both flattened when axis is None)."""
    arr, values = asarray(arr), asarray(values)
    if axis is None:
        return _f.concatenate([_f.ravel(arr), _f.ravel(values)], axis=0)
    return _f.concatenate([arr, values], axis=axis)


# ------------------------------------------------------------------ rearranging

def flipud(m) -> ndarray:
    """`m` reversed along axis 0."""
    m = asarray(m)
    if m.ndim < 1:
        raise ValueError("flipud: input must be >= 1-d")
    return _f.flip(m, 0)


def fliplr(m) -> ndarray:
    """`m` reversed along axis 1."""
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError("fliplr: input must be >= 2-d")
    return _f.flip(m, 1)


def rot90(m, k: int = 1, axes=(0, 1)) -> ndarray:
    """`m` rotated by 90 degrees `k` times in the plane of `axes` (from the first axis to the second)."""
    m = asarray(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("rot90: len(axes) must be 2")
    if m.ndim < 2:
        raise ValueError("rot90: the array must have at least 2 dimensions")
    a0, a1 = axes[0] % m.ndim, axes[1] % m.ndim
    if a0 == a1 or builtins.abs(axes[0] - axes[1]) == m.ndim:
        raise ValueError("rot90: axes must be different")
    k %= 4
    if k == 0:
        return _as_np(_call("_copy", (m,), {}))
    if k == 2:
        return _f.flip(_f.flip(m, a0), a1)
    order = list(range(m.ndim))
    order[a0], order[a1] = order[a1], order[a0]
    if k == 1:
        return _f.transpose(_f.flip(m, a1), order)
    return _f.flip(_f.transpose(m, order), a1)


def roll(a, shift, axis=None) -> ndarray:
    """Elements shifted cyclically by `shift` along `axis` (of the flattened array when None): the
    registry's `_np_roll`, which infers its own shapes."""
    a = asarray(a)
    shifts = (int(shift),) if isinstance(shift, (int, _np.integer)) else tuple(int(s) for s in shift)
    axes = None if axis is None else ((int(axis),) if isinstance(axis, (int, _np.integer)) else
                                      tuple(int(x) for x in axis))
    if axes is None and len(shifts) != 1:
        raise ValueError("roll: 'shift' must be a scalar when axis is None")
    if axes is not None and len(shifts) != len(axes) and len(shifts) != 1 and len(axes) != 1:
        raise ValueError("roll: 'shift' and 'axis' should be scalars or 1D sequences of the same length")
    sa = _known_shape(a)
    if axes is not None and sa is not None:
        for x in axes:
            _axes(x, len(sa), "roll")
    return _as_np(_call("_np_roll", (a,), {"shift": shifts, "axis": axes}))


# ------------------------------------------------------------------ diagonals and triangles

def diagonal(a, offset: int = 0, axis1: int = 0, axis2: int = 1) -> ndarray:
    """The diagonal `offset` of the 2-D planes on axis1/axis2, as the last axis."""
    a = asarray(a)
    if a.ndim < 2:
        raise ValueError("diagonal: the input must have at least 2 dimensions")
    ax1, ax2 = _axes(axis1, a.ndim, "diagonal")[0], _axes(axis2, a.ndim, "diagonal")[0]
    if ax1 == ax2:
        raise ValueError("diagonal: axis1 and axis2 cannot be the same")
    n1, n2 = a.shape[ax1], a.shape[ax2]
    if offset >= n2 or -offset >= n1:  # numpy: a diagonal outside the plane is empty
        return _empty_diag(a, [i for i in range(a.ndim) if i not in (ax1, ax2)])
    return _as_np(_call("diag", (a,), {"k": int(offset), "axis1": ax1, "axis2": ax2}))


def _empty_diag(a, keep: List[int]):
    """A zero-size result of shape (kept axes..., 0): a slice of nothing, so autograd and tracing
    still see an operation on `a`."""
    order = keep + [i for i in range(a.ndim) if i not in keep]
    t = _f.transpose(a, order)
    rest = int(_np.prod([a.shape[i] for i in range(a.ndim) if i not in keep]))
    flat = reshape(t, tuple(a.shape[i] for i in keep) + (rest,))
    return _as_np(_slice(flat, len(keep), 0, 0))


def diag(v, k: int = 0) -> ndarray:
    """A 1-D input as the k-th diagonal of a square matrix; the k-th diagonal of a 2-D input."""
    v = asarray(v)
    if v.ndim not in (1, 2):
        raise ValueError("diag: input must be 1- or 2-d")
    if v.ndim == 2:
        return diagonal(v, k)
    return _as_np(_call("diag", (v,), {"k": int(k)}))


def diagflat(v, k: int = 0) -> ndarray:
    """The flattened input as the k-th diagonal of a square matrix."""
    return diag(_f.ravel(asarray(v)), k)


def trace(a, offset: int = 0, axis1: int = 0, axis2: int = 1, out=None) -> ndarray:
    """Sum along the diagonal `offset` of the planes on axis1/axis2."""
    nd = asarray(a).ndim
    if nd < 2:
        raise MXNetError(f"trace: the input must have at least 2 dimensions, got {nd}")
    if not (-nd <= axis1 < nd and -nd <= axis2 < nd):
        raise MXNetError(f"trace: axis1 {axis1} or axis2 {axis2} is out of range for {nd} dimensions")
    if axis1 % nd == axis2 % nd:
        raise MXNetError(f"trace: axis1 and axis2 cannot be the same ({axis1}, {axis2})")
    d = diagonal(a, offset, axis1, axis2)
    return _deliver(_f.sum(d, axis=-1), out)


def _tri_mask(n: int, m: int, k: int, like, lower: bool):
    """bool (n, m) mask of j - i <= k (lower) or j - i >= k (upper), built with arange nodes."""
    rows = reshape(_arange_node(n, _np.int64, like), (n, 1))
    cols = reshape(_arange_node(m, _np.int64, like), (1, m))
    delta = _f.subtract(cols, rows)
    return _f.less_equal(delta, k) if lower else _f.greater_equal(delta, k)


def _tri(m, k: int, lower: bool) -> ndarray:
    m = asarray(m)
    if m.ndim == 0:
        raise ValueError("tril/triu: the input must have at least 1 dimension")
    if m.ndim == 1:  # numpy treats a vector as the rows of a square matrix
        m = _f.broadcast_to(reshape(m, (1, -1)), (m.shape[0], m.shape[0]))
    mask = _tri_mask(m.shape[-2], m.shape[-1], int(k), m, lower)
    return _f.where(mask, m, _f.multiply(m, 0))


def tril(m, k: int = 0) -> ndarray:
    """`m` with the elements above the k-th diagonal zeroed (on its last two axes)."""
    return _tri(m, k, True)


def triu(m, k: int = 0) -> ndarray:
    """`m` with the elements below the k-th diagonal zeroed (on its last two axes)."""
    return _tri(m, k, False)


# ------------------------------------------------------------------ differences

def diff(a, n: int = 1, axis: int = -1, prepend=None, append=None) -> ndarray:  # noqa: A002
    """The n-th discrete difference along `axis`."""
    a = asarray(a)
    if prepend is not None or append is not None:
        raise NotImplementedError("diff: prepend and append are not supported (as MXNet 1.9.1)")
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = _axes(axis, a.ndim, "diff")[0]
    res = a
    for _ in range(n):
        length = res.shape[ax]
        if length <= 1:  # numpy: nothing left to difference gives an empty axis
            res = _as_np(_slice(res, ax, 0, 0))
            break
        res = _f.subtract(_as_np(_slice(res, ax, 1, length)), _as_np(_slice(res, ax, 0, length - 1)))
    return res if res is not a else _as_np(_call("_copy", (a,), {}))


def _end_part(values, a):
    """ediff1d's to_begin / to_end flattened (a scalar or list: a constant of a's dtype)."""
    if isinstance(values, (ndarray, _NpSymbol)):
        return _f.ravel(values)
    host = _np.asarray(values, dtype=a.dtype).ravel()
    if isinstance(a, _NpSymbol):  # a constant node: scalars (or short lists) joined
        nodes = [_as_np(_np_symbol.apply("_full", (), {"shape": (1,), "value": float(v), "dtype": a.dtype.name}))
                 for v in host]
        return nodes[0] if len(nodes) == 1 else _f.concatenate(nodes, axis=0)
    return _m.array(host, dtype=a.dtype, ctx=a.context)


def ediff1d(ary, to_end=None, to_begin=None) -> ndarray:
    """Differences between consecutive elements of the flattened array, with optional ends."""
    a = _f.ravel(asarray(ary))
    parts = []
    if to_begin is not None:
        parts.append(_end_part(to_begin, a))
    n = a.shape[0]
    parts.append(_f.subtract(_as_np(_slice(a, 0, 1, n)), _as_np(_slice(a, 0, 0, n - 1))) if n > 1
                 else _as_np(_slice(a, 0, 0, 0)))
    if to_end is not None:
        parts.append(_end_part(to_end, a))
    # joined by the registry's Concat itself: concatenate drops empty parts, and the (possibly
    # empty) differences must stay in the graph for the input's gradient
    parts = [_cast(p, a.dtype) for p in parts]
    if len(parts) == 1:
        return _as_np(_call("_copy", (parts[0],), {}))
    return _as_np(_call("Concat", tuple(parts), {"num_args": len(parts), "dim": 0}))


# ------------------------------------------------------------------ rounding and cleaning

def around(x, decimals: int = 0, out=None) -> ndarray:
    """`x` rounded half to even to `decimals` places (MXNet's `_npi_around`: ember/ops/np_around.py)."""
    x = asarray(x)
    if x.dtype.kind == "b":
        raise TypeError("around: the bool dtype is not supported")
    return _deliver(_call("_npi_around", (x,), {"decimals": int(decimals)}), out)


round = around  # noqa: A001 - numpy's name
round_ = around


def nan_to_num(x, copy: bool = True, nan: float = 0.0, posinf=None, neginf=None):
    """NaN replaced by `nan`, +inf / -inf by `posinf` / `neginf` (the dtype's extremes by default)."""
    x = asarray(x)
    if x.dtype.kind not in "f":
        return _as_np(_call("_copy", (x,), {})) if copy else x
    info = _np.finfo(x.dtype)
    posinf = float(info.max) if posinf is None else float(posinf)
    neginf = float(info.min) if neginf is None else float(neginf)
    res = _f.where(_f.isnan(x), _filled_like(x, nan), x)
    res = _f.where(_f.equal(x, float("inf")), _filled_like(x, posinf), res)
    res = _f.where(_f.equal(x, float("-inf")), _filled_like(x, neginf), res)
    res = _cast(res, x.dtype)
    if not copy and isinstance(x, ndarray):
        res.copyto(x)
        return x
    return _as_np(res)


def bitwise_not(x, out=None, **kwargs) -> ndarray:
    """~x: logical not for bool, -x - 1 (two's complement) for integers."""
    _f._check_ufunc_kwargs("bitwise_not", kwargs)
    x = asarray(x)
    if x.dtype.kind == "b":
        return _deliver(_cast(_call("logical_not", (x,), {}), x.dtype), out)
    if x.dtype.kind not in "iu":
        raise TypeError(f"bitwise_not: ufunc 'invert' not supported for the input type {x.dtype}")
    return _deliver(_call("_rminus_scalar", (x,), {"scalar": -1.0}), out)


invert = bitwise_not


# ------------------------------------------------------------------ grids, resizing, polynomials

def broadcast_arrays(*args) -> List[ndarray]:
    """The inputs broadcast against each other."""
    arrs = [asarray(x) for x in args]
    shape = _np.broadcast_shapes(*[x.shape for x in arrs])
    return [x if x.shape == shape else _f.broadcast_to(x, shape) for x in arrs]


def meshgrid(*xi, indexing: str = "xy", sparse: bool = False, copy: bool = True) -> List[ndarray]:
    """Coordinate matrices from coordinate vectors ('xy' swaps the first two output axes)."""
    if indexing not in ("xy", "ij"):
        raise ValueError("meshgrid: valid values for `indexing` are 'xy' and 'ij'")
    xs = [_f.ravel(asarray(x)) for x in xi]
    nd = len(xs)
    shapes = [x.shape[0] for x in xs]
    if indexing == "xy" and nd > 1:
        shapes[0], shapes[1] = shapes[1], shapes[0]
    out = []
    for i, x in enumerate(xs):
        pos = 1 - i if indexing == "xy" and nd > 1 and i < 2 else i
        view = tuple(-1 if j == pos else 1 for j in range(nd))
        g = reshape(x, view)
        out.append(g if sparse else _f.broadcast_to(g, tuple(shapes)))
    return out


@_symbol_form
def indices(dimensions, dtype=_np.int32, ctx=None, _like=None) -> ndarray:
    """A (len(dimensions), *dimensions) grid of each axis' index."""
    dims = tuple(int(d) for d in dimensions)
    grids = []
    for i, d in enumerate(dims):
        ar = _arange_node(d, dtype, _like) if _like is _TRACE else _m.arange(d, dtype=dtype, ctx=ctx)
        grids.append(_f.broadcast_to(reshape(ar, tuple(d if j == i else 1 for j in range(len(dims)))), dims))
    if not grids:  # numpy: indices(()) is an empty 1-D array
        return _m.zeros((0,), dtype=dtype, ctx=ctx)
    return _f.stack(grids, axis=0)


def diag_indices_from(arr):
    """Indices of the main diagonal of an n-dimensional square array (a tuple of n index arrays)."""
    arr = asarray(arr)
    if arr.ndim < 2:
        raise ValueError("diag_indices_from: input array must be at least 2-d")
    if len(set(arr.shape)) != 1:
        raise ValueError("diag_indices_from: all dimensions of input must be of equal length")
    idx = _arange_node(arr.shape[0], _np.int64, arr) if isinstance(arr, _NpSymbol) else \
        _m.arange(arr.shape[0], dtype=_np.int64, ctx=arr.context)
    return tuple(idx for _ in range(arr.ndim))


def resize(a, new_shape) -> ndarray:
    """`a` flattened, repeated (or cut) to fill `new_shape`."""
    a = asarray(a)
    shape = (int(new_shape),) if isinstance(new_shape, (int, _np.integer)) else tuple(int(d) for d in new_shape)
    if any(d < 0 for d in shape):
        raise ValueError("resize: all elements of `new_shape` must be non-negative")
    total = int(_np.prod(shape))
    flat = _f.ravel(a)
    if total == 0:
        return reshape(_as_np(_slice(flat, 0, 0, 0)), shape)
    if a.size == 0:  # numpy fills with zeros when there is nothing to repeat
        if isinstance(a, _NpSymbol):
            return _as_np(_np_symbol.apply("_zeros", (), {"shape": shape, "dtype": a.dtype.name}))
        return _m.zeros(shape, dtype=a.dtype, ctx=a.context)
    reps = -(-total // a.size)
    tiled = _f.tile(flat, reps) if reps > 1 else flat
    return reshape(_as_np(_slice(tiled, 0, 0, total)), shape)


def polyval(p, x) -> ndarray:
    """The polynomial with coefficients `p` (highest power first) at `x` (Horner's scheme)."""
    p, x = asarray(p), asarray(x)
    if p.ndim != 1:
        raise ValueError("polyval: p must be a 1-D array")
    res = _f.multiply(x, 0)
    for i in range(p.shape[0]):
        res = _f.add(_f.multiply(res, x), reshape(_as_np(_slice(p, 0, i, i + 1)), ()))
    return res


@_symbol_form
def logspace(start, stop, num: int = 50, endpoint: bool = True, base: float = 10.0, dtype=None, axis: int = 0,
             ctx=None, _like=None) -> ndarray:
    """`num` values spaced evenly on a log scale: base ** linspace(start, stop)."""
    if num < 0:
        raise ValueError(f"logspace: number of samples, {num}, must be non-negative")
    if axis != 0:
        raise NotImplementedError("logspace: only axis=0 is supported (as MXNet 1.9.1)")
    if _like is _TRACE:
        exps = _as_np(_np_symbol.apply("_linspace", (), {"start": float(start), "stop": float(stop), "num": int(num),
                                                         "endpoint": bool(endpoint), "dtype": "float64"}))
    else:
        exps = _f.linspace(start, stop, num, endpoint=endpoint, dtype=_np.float64, ctx=ctx)
    res = _call("_rpower_scalar", (exps,), {"scalar": float(base)})
    return _as_np(_cast(res, _F32 if dtype is None else _np.dtype(dtype)))


# ------------------------------------------------------------------ windows

def _window(name: str, m: int, coefs, dtype, ctx, like=None) -> ndarray:
    """sum_i coefs[i] * cos(2 pi i n / (M - 1)), n = 0..M-1 (the cosine-sum windows)."""
    if not isinstance(m, numbers.Integral):
        raise TypeError(f"{name}: M must be an integer")
    dt = _F32 if dtype is None else _np.dtype(dtype)
    if like is _TRACE and m <= 1:
        return _as_np(_np_symbol.apply("_zeros" if m <= 0 else "_ones", (),
                                       {"shape": (builtins.max(m, 0),), "dtype": dt.name}))
    if m <= 0:
        return _m.zeros((0,), dtype=dt, ctx=ctx)
    if m == 1:
        return _m.ones((1,), dtype=dt, ctx=ctx)
    n = _arange_node(m, _np.float64, like) if like is _TRACE else _m.arange(m, dtype=_np.float64, ctx=ctx)
    res = None
    for i, c in enumerate(coefs):
        term = _f.multiply(_f.cos(_f.multiply(n, 2.0 * _np.pi * i / (m - 1))), c)
        res = term if res is None else _f.add(res, term)
    return _as_np(_cast(res, dt))


@_symbol_form
def hanning(M: int, dtype=None, ctx=None, _like=None) -> ndarray:  # noqa: N803 - numpy's parameter name
    """The Hann window of M points."""
    return _window("hanning", M, (0.5, -0.5), dtype, ctx, _like)


@_symbol_form
def hamming(M: int, dtype=None, ctx=None, _like=None) -> ndarray:  # noqa: N803
    """The Hamming window of M points."""
    return _window("hamming", M, (0.54, -0.46), dtype, ctx, _like)


@_symbol_form
def blackman(M: int, dtype=None, ctx=None, _like=None) -> ndarray:  # noqa: N803
    """The Blackman window of M points."""
    return _window("blackman", M, (0.42, -0.5, 0.08), dtype, ctx, _like)
