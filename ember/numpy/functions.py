"""`mx.np`'s function library: numpy-named functions on `mx.np.ndarray`, each built from registry
operators (so they run on the engine, on any device, and autograd differentiates them).

What numpy semantics means here, as MXNet 1.9.1's `mx.np` has it:
- shapes: numpy broadcasting (trailing axes aligned), 0-d results of full reductions, integer
  indexing and `dot` of vectors; zero-size arrays (sum over an empty axis is 0, max raises);
- dtypes of binary operations between two arrays: bool yields to the other type, an integer with a
  float gives *that float* (MXNet's rule: int32 + float32 is float32, not numpy's float64), two
  integers or two floats the wider (numpy's promotion); with a Python scalar the array's dtype is
  kept (bool arrays become int64 for an int scalar, float32 for a float one); true division of
  integers gives float32; comparisons give bool; `mean` of integers float32, `sum` of bool int64,
  `argmax`/`argmin` int64.  Elementwise math keeps an integer dtype, as MXNet (numpy would give
  float64).  Mixed dtypes that MXNet refuses (maximum, where, concatenate, comparisons) are
  promoted by the rule above instead.
"""
from __future__ import annotations

import builtins
import numbers
from typing import Optional, Sequence

import numpy as _np

from ..base import MXNetError
from ..imperative.indexing import gather_positions, key_positions, stand_in
from ..imperative.ndarray import NDArray
from ..ndarray.legacy_helpers import moveaxis_order
from ..symbolic import np_symbol as _np_symbol
from ..symbolic.np_symbol import _Symbol as _NpSymbol
from ..symbolic.symbol import Symbol
from .multiarray import _as_np, _call, _deliver, array, ndarray, reshape

_F32 = _np.dtype(_np.float32)
_I64 = _np.dtype(_np.int64)
_BOOL = _np.dtype(_np.bool_)


# ------------------------------------------------------------------ helpers

def _is_scalar(x) -> bool:
    return isinstance(x, (numbers.Number, _np.generic)) and not isinstance(x, NDArray)


def asarray(a, dtype=None, ctx=None) -> ndarray:
    """`a` as an mx.np.ndarray: an NDArray is viewed (no copy), anything else copied in; a Symbol (a
    block being traced) is viewed as an np symbol."""
    if isinstance(a, Symbol):
        view = _np_symbol.as_np(a)
        return view if dtype is None or _np.dtype(dtype) == view.dtype else _cast(view, dtype)
    if isinstance(a, NDArray):
        view = a if isinstance(a, ndarray) else _as_np(a)
        return view if dtype is None or _np.dtype(dtype) == a.dtype else view.astype(dtype)
    return array(a, dtype=dtype, ctx=ctx)


def _result_type(da, db) -> _np.dtype:
    """The dtype of a binary operation on arrays of dtypes da and db (MXNet 1.9's mx.np rule); None
    when one is not known (a traced symbol whose dtype inference has not got there)."""
    if da is None or db is None:
        return None
    da, db = _np.dtype(da), _np.dtype(db)
    if da == db:
        return da
    if da.kind == "b":
        return db
    if db.kind == "b":
        return da
    fa, fb = da.kind == "f", db.kind == "f"
    if fa != fb:
        return da if fa else db
    return _np.promote_types(da, db)


def _cast(x: NDArray, dtype) -> NDArray:
    return x if dtype is None or x.dtype == dtype else _call("Cast", (x,), {"dtype": _np.dtype(dtype).name})


def _axes(axis, ndim: int, name: str):
    """Normalised tuple of axes (None: every axis)."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, _np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < builtins.max(ndim, 1):
            raise MXNetError(f"{name}: axis {a} is out of bounds for an array of dimension {ndim}")
        out.append(int(a) % builtins.max(ndim, 1))
    if len(set(out)) != len(out):
        raise MXNetError(f"{name}: repeated axis in {axis}")
    return tuple(out)


def _np_reshape(x: NDArray, shape) -> ndarray:
    shape = tuple(shape)
    return _as_np(x) if tuple(x.shape) == shape else reshape(x, shape)


# ------------------------------------------------------------------ binary arithmetic and comparisons

# name -> (array op, op with a scalar on the right, op with a scalar on the left)
_BINARY = {
    "add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
    "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
    "multiply": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
    "true_divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar"),
    "mod": ("broadcast_mod", "_mod_scalar", "_rmod_scalar"),
    "power": ("broadcast_power", "_power_scalar", "_rpower_scalar"),
    "maximum": ("broadcast_maximum", "_maximum_scalar", "_maximum_scalar"),
    "minimum": ("broadcast_minimum", "_minimum_scalar", "_minimum_scalar"),
    "equal": ("broadcast_equal", "_equal_scalar", "_equal_scalar"),
    "not_equal": ("broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar"),
    "greater": ("broadcast_greater", "_greater_scalar", "_lesser_scalar"),
    "greater_equal": ("broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar"),
    "less": ("broadcast_lesser", "_lesser_scalar", "_greater_scalar"),
    "less_equal": ("broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar"),
}
_COMPARISONS = frozenset(("equal", "not_equal", "greater", "greater_equal", "less", "less_equal"))


def _binary(name: str, x1, x2) -> ndarray:
    array_op, scalar_op, rscalar_op = _BINARY[name]
    s1, s2 = _is_scalar(x1), _is_scalar(x2)
    if s1 and s2:
        return array(getattr(_np, name)(x1, x2))
    if s1 or s2:
        arr, scalar, op = (asarray(x2), x1, rscalar_op) if s1 else (asarray(x1), x2, scalar_op)
        dt = arr.dtype
        exact = float(scalar) == int(scalar) if _np.isfinite(float(scalar)) else False
        if dt is None:
            pass  # a symbol of unknown dtype: the operator's own type rule decides
        elif name == "true_divide" and dt.kind != "f":
            dt = _F32  # integer and bool division is float32, as MXNet
        elif dt.kind == "b" and name not in _COMPARISONS:
            dt = _I64 if isinstance(scalar, (int, _np.integer)) else _F32
        elif name in _COMPARISONS and dt.kind != "f" and not exact:
            dt = _np.dtype(_np.float64)  # 2 == 2.5 is False, as numpy (comparing in the int type would not be)
        out = _call(op, (_cast(arr, dt),), {"scalar": float(scalar)})
    else:
        a, b = asarray(x1), asarray(x2)
        dt = _result_type(a.dtype, b.dtype)
        if name == "true_divide" and dt is not None and dt.kind != "f":
            dt = _F32
        if name == "subtract" and dt is not None and dt.kind == "b":
            raise TypeError("numpy boolean subtract, the `-` operator, is not supported, "
                            "use the bitwise_xor, the `^` operator, or the logical_xor function instead")
        out = _call(array_op, (_cast(a, dt), _cast(b, dt)), {})
    if name in _COMPARISONS:
        out = _cast(out, _BOOL)
    return _as_np(out)


def _check_ufunc_kwargs(name: str, kwargs: dict) -> None:
    """numpy ufunc keywords mx.np accepts: `where` only as True (MXNet raises NotImplementedError
    for a mask), `casting`/`order`/`dtype`/`subok` only at numpy's defaults; anything else a TypeError."""
    for key, value in kwargs.items():
        if key == "where":
            if value is not True:
                raise NotImplementedError(f"{name}: where={value!r} is not supported, only where=True")
        elif key == "dtype":
            if value is not None:
                _np.dtype(value)  # TypeError for what is not a dtype, as numpy
                raise NotImplementedError(f"{name}: dtype={value!r} is not supported, only dtype=None")
        elif key == "casting":
            if value not in ("no", "equiv", "safe", "same_kind", "unsafe"):
                raise TypeError(f"{name}: casting must be one of 'no', 'equiv', 'safe', 'same_kind', "
                                f"or 'unsafe', got {value!r}")
            if value != "same_kind":
                raise NotImplementedError(f"{name}: casting={value!r} is not supported, only 'same_kind'")
        elif key in ("order", "subok"):
            if value != {"order": "K", "subok": True}[key]:
                raise NotImplementedError(f"{name}: {key}={value!r} is not supported")
        else:
            raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")


def _make_binary(name: str):
    def fn(x1, x2, out=None, **kwargs):
        _check_ufunc_kwargs(name, kwargs)
        return _deliver(_binary(name, x1, x2), out)
    fn.__name__ = name
    fn.__doc__ = f"numpy.{name} with numpy broadcasting and mx.np's dtype rules (see the module docstring)."
    return fn


add = _make_binary("add")
subtract = _make_binary("subtract")
multiply = _make_binary("multiply")
true_divide = _make_binary("true_divide")
divide = true_divide
mod = _make_binary("mod")
remainder = mod
power = _make_binary("power")
maximum = _make_binary("maximum")
minimum = _make_binary("minimum")
equal = _make_binary("equal")
not_equal = _make_binary("not_equal")
greater = _make_binary("greater")
greater_equal = _make_binary("greater_equal")
less = _make_binary("less")
less_equal = _make_binary("less_equal")


# ------------------------------------------------------------------ elementwise math (dtype kept, as MXNet)

_UNARY = ("exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "cbrt", "square", "abs", "negative", "sign",
          "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
          "arctanh", "floor", "ceil", "trunc", "rint", "fix", "degrees", "radians", "reciprocal")


def _make_unary(op: str):
    def fn(x, out=None, **kwargs):
        _check_ufunc_kwargs(op, kwargs)
        x = asarray(x)
        if x.dtype.kind == "b" and op != "abs":
            raise MXNetError(f"{op}: operator does not support the bool dtype (as MXNet's mx.np)")
        result = _as_np(_call(op, (x,), {} if out is None else {"out": out}))
        return out if out is not None else result
    fn.__name__ = op
    fn.__doc__ = f"numpy.{op} elementwise (the registry's `{op}`)."
    return fn


for _op in _UNARY:
    globals()[_op] = _make_unary(_op)
absolute = globals()["abs"]


def _deliver_bool(result, out, name: str):
    """A bool result, into `out` when given (which must be a bool array, as MXNet: TypeError otherwise)."""
    if out is not None and _np.dtype(out.dtype) != _BOOL:
        raise TypeError(f"{name}: the output array must have dtype bool, got {_np.dtype(out.dtype)}")
    return _deliver(result, out)


def isnan(x, out=None, **kwargs) -> ndarray:
    """Where x is NaN (bool)."""
    _check_ufunc_kwargs("isnan", kwargs)
    x = asarray(x)
    return _deliver_bool(not_equal(x, x), out, "isnan")


def _infinite(name: str, x, out, kwargs: dict, test, of_ints=not_equal) -> ndarray:
    """isinf & co: `test(x)` of a float array; of an integer or bool array, where no value is infinite,
    `of_ints(x, x)` (not_equal: False everywhere)."""
    _check_ufunc_kwargs(name, kwargs)
    x = asarray(x)
    return _deliver_bool(of_ints(x, x) if x.dtype.kind in "biu" else test(x), out, name)


def isinf(x, out=None, **kwargs) -> ndarray:
    """Where x is +-inf (bool)."""
    return _infinite("isinf", x, out, kwargs, lambda v: equal(globals()["abs"](v), _np.inf))


def isposinf(x, out=None, **kwargs) -> ndarray:
    """Where x is +inf (bool)."""
    return _infinite("isposinf", x, out, kwargs, lambda v: equal(v, _np.inf))


def isneginf(x, out=None, **kwargs) -> ndarray:
    """Where x is -inf (bool)."""
    return _infinite("isneginf", x, out, kwargs, lambda v: equal(v, -_np.inf))


def isfinite(x, out=None, **kwargs) -> ndarray:
    """Where x is neither NaN nor +-inf (bool)."""
    return _infinite("isfinite", x, out, kwargs, lambda v: less(globals()["abs"](v), _np.inf), of_ints=equal)


def logical_not(x, out=None, **kwargs) -> ndarray:
    """Where x is zero (bool), as numpy.logical_not."""
    _check_ufunc_kwargs("logical_not", kwargs)
    return _deliver_bool(equal(asarray(x), 0), out, "logical_not")


# ------------------------------------------------------------------ reductions

def _reduced_shape(shape, axes, keepdims: bool):
    return tuple((1 if i in axes else d) for i, d in enumerate(shape)) if keepdims else \
        tuple(d for i, d in enumerate(shape) if i not in axes)


def _reduce(op: str, a, axis, keepdims: bool, dtype=None, name: Optional[str] = None) -> ndarray:
    name = name or op
    a = asarray(a)
    if dtype is not None:
        a = _cast(a, dtype)
    axes = _axes(axis, a.ndim, name)
    target = _reduced_shape(a.shape, axes, keepdims)
    if not axes:
        return _np_reshape(_call("_copy", (a,), {}), target)
    if op in ("max", "min") and builtins.any(a.shape[i] == 0 for i in axes):
        raise MXNetError(f"{name}: zero-size array to reduction operation {name} which has no identity")
    src = a if a.ndim else reshape(a, (1,))
    out = _call(op, (src,), {"axis": axes if a.ndim else (0,), "keepdims": True})
    return _np_reshape(out, target)


def _np_reduce(name: str, a, axis, dtype, keepdims: bool, initial=None) -> ndarray:
    """The registry's `_np_sum` / `_np_prod` / `_npi_mean` (ember/ops/np_reduce.py): numpy's shapes and dtypes, inferred by the
    operator itself, so a symbol whose shape is not known yet reduces too."""
    a = asarray(a)
    attrs = {"axis": axis, "keepdims": bool(keepdims)}
    if dtype is not None:
        attrs["dtype"] = _np.dtype(dtype).name
    if initial is not None:
        attrs["initial"] = float(initial)
    return _as_np(_call("_npi_mean" if name == "mean" else f"_np_{name}", (a,), attrs))


def sum(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None) -> ndarray:  # noqa: A001
    """Sum over `axis` (all axes: a 0-d array); bool sums to int64."""
    return _deliver(_np_reduce("sum", a, axis, dtype, keepdims, initial), out)


def prod(a, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None) -> ndarray:
    """Product over `axis`; bool multiplies as int64."""
    return _deliver(_np_reduce("prod", a, axis, dtype, keepdims, initial), out)


def mean(a, axis=None, dtype=None, out=None, keepdims: bool = False) -> ndarray:
    """Mean over `axis`; integers and bools average in float32 (MXNet's default float); the mean of
    nothing is NaN, as numpy (without its warning)."""
    return _deliver(_np_reduce("mean", a, axis, dtype, keepdims), out)


def max(a, axis=None, out=None, keepdims: bool = False) -> ndarray:  # noqa: A001
    """Largest value over `axis` (an empty axis raises, as numpy)."""
    return _deliver(_reduce("max", a, axis, keepdims, None, "max"), out)


def min(a, axis=None, out=None, keepdims: bool = False) -> ndarray:  # noqa: A001
    """Smallest value over `axis` (an empty axis raises, as numpy)."""
    return _deliver(_reduce("min", a, axis, keepdims, None, "min"), out)


amax, amin = max, min


def var(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False) -> ndarray:
    """Variance over `axis` with `ddof` delta degrees of freedom."""
    a = asarray(a)
    if dtype is None and a.dtype.kind != "f":
        dtype = _F32
    a = _cast(a, dtype) if dtype is not None else a
    axes = _axes(axis, a.ndim, "var")
    count = int(_np.prod([a.shape[i] for i in axes])) if axes else 1
    centred = subtract(a, mean(a, axis=axis, keepdims=True))
    total = _reduce("sum", multiply(centred, centred), axis, keepdims, None, "var")
    return _deliver(_as_np(_call("_div_scalar", (total,), {"scalar": float(count - ddof)})), out)


def std(a, axis=None, dtype=None, out=None, ddof: int = 0, keepdims: bool = False) -> ndarray:
    """Standard deviation over `axis` with `ddof` delta degrees of freedom."""
    return _deliver(globals()["sqrt"](var(a, axis, dtype, None, ddof, keepdims)), out)


def _arg(op: str, a, axis, keepdims: bool = False) -> ndarray:
    a = asarray(a)
    if a.size == 0 and (axis is None or a.shape[_axes(axis, a.ndim, op)[0]] == 0):
        raise MXNetError(f"{op}: attempt to get {op} of an empty sequence")
    if axis is None:
        flat = reshape(a, (-1,))
        res = _call(op, (flat,), {"axis": 0, "keepdims": False})
        return _np_reshape(_cast(res, _I64), (1,) * a.ndim if keepdims else ())
    ax = _axes(axis, builtins.max(a.ndim, 1), op)[0]
    if a.size == 0:  # other axes empty: an empty int64 result (the operator refuses empty inputs)
        return _full_array(_reduced_shape(a.shape, (ax,), keepdims), 0, _I64, a)
    if a.ndim == 0:  # numpy takes axis 0 / -1 of a 0-d array: the only element, index 0
        return _np_reshape(_cast(_call(op, (reshape(a, (1,)),), {"axis": 0, "keepdims": False}), _I64), ())
    res = _call(op, (a,), {"axis": ax, "keepdims": keepdims})
    return _np_reshape(_cast(res, _I64), _reduced_shape(a.shape, (ax,), keepdims))


def argmax(a, axis=None, out=None, keepdims: bool = False) -> ndarray:
    """Index of the largest value (int64; over the flattened array when axis is None)."""
    return _deliver(_arg("argmax", a, axis, keepdims), out)


def argmin(a, axis=None, out=None, keepdims: bool = False) -> ndarray:
    """Index of the smallest value (int64; over the flattened array when axis is None)."""
    return _deliver(_arg("argmin", a, axis, keepdims), out)


def all(a, axis=None, out=None, keepdims: bool = False) -> ndarray:  # noqa: A001
    """Whether every element over `axis` is non-zero (bool; True over an empty axis)."""
    nonzero = _cast(not_equal(asarray(a), 0), _np.int32)
    return _deliver(_cast(_reduce("prod", nonzero, axis, keepdims, None, "all"), _BOOL), out)


def any(a, axis=None, out=None, keepdims: bool = False) -> ndarray:  # noqa: A001
    """Whether some element over `axis` is non-zero (bool; False over an empty axis)."""
    nonzero = _cast(not_equal(asarray(a), 0), _np.int32)
    return _deliver(_as_np(_cast(_reduce("sum", nonzero, axis, keepdims, None, "any"), _BOOL)), out)


def cumsum(a, axis=None, dtype=None, out=None) -> ndarray:
    """Cumulative sum along `axis` (of the flattened array when axis is None)."""
    a = asarray(a)
    if axis is None:
        a, axis = reshape(a, (-1,)), 0
    if a.ndim == 0:
        a = reshape(a, (1,))
    attrs = {"axis": _axes(axis, a.ndim, "cumsum")[0]}
    if dtype is None and a.dtype.kind == "b":
        dtype = _I64  # bools count as int64, as MXNet and numpy
    if dtype is not None:  # accumulate in the requested type (float16 data summed in float32, as numpy)
        a = _cast(a, _np.dtype(dtype))
        attrs["dtype"] = _np.dtype(dtype).name
    return _deliver(_call("cumsum", (a,), attrs), out)


# ------------------------------------------------------------------ products

def dot(a, b, out=None) -> ndarray:
    """numpy.dot (the registry's `_np_dot`, which infers its own shapes): vectors give a 0-d inner product;
    N-D . M-D contracts a's last axis with b's second-to-last; a 0-d operand multiplies."""
    a, b = asarray(a), asarray(b)
    dt = _result_type(a.dtype, b.dtype)
    a, b = _cast(a, dt), _cast(b, dt)
    sa, sb = _known_shape(a), _known_shape(b)
    if sa is not None and sb is not None and len(sa) and len(sb) and sa[-1] != sb[-2 if len(sb) > 1 else 0]:
        raise MXNetError(f"dot: shapes {sa} and {sb} not aligned")
    return _deliver(_call("_np_dot", (a, b), {}), out)


def _known_shape(x):
    """x's shape, or None for a traced symbol with a dimension not known yet (a deferred parameter)."""
    return x._known_shape() if isinstance(x, _NpSymbol) else tuple(x.shape)


def matmul(a, b, out=None) -> ndarray:
    """numpy.matmul: matrix products over the last two axes with the batch axes broadcast;
    a 1-D operand is a row (left) or column (right) vector, removed from the result."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise MXNetError("matmul: input operand does not have enough dimensions (0-d)")
    dt = _result_type(a.dtype, b.dtype)
    a, b = _cast(a, dt), _cast(b, dt)
    a2 = reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    b2 = reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise MXNetError(f"matmul: mismatch in the core dimension: {a.shape} and {b.shape}")
    if a2.ndim == 2 and b2.ndim == 2:
        res = _call("dot", (a2, b2), {})
    else:
        try:
            batch = _np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        except ValueError:
            raise MXNetError(f"matmul: batch dimensions of {a.shape} and {b.shape} do not broadcast") from None
        a3 = broadcast_to(a2, batch + a2.shape[-2:])
        b3 = broadcast_to(b2, batch + b2.shape[-2:])
        flat = _call("batch_dot", (reshape(a3, (-1,) + a2.shape[-2:]), reshape(b3, (-1,) + b2.shape[-2:])), {})
        res = reshape(flat, batch + (a2.shape[-2], b2.shape[-1]))
    target = list(res.shape)
    if b.ndim == 1:
        target.pop(-1)
    if a.ndim == 1:
        target.pop(-2 if b.ndim != 1 else -1)
    return _deliver(_np_reshape(res, tuple(target)), out)


# ------------------------------------------------------------------ shapes, joins and selection

def transpose(a, axes=None) -> ndarray:
    """The axes of `a` permuted (reversed by default)."""
    a = asarray(a)
    if axes is not None:
        axes = tuple(int(x) for x in axes)
        if len(axes) != a.ndim:
            raise MXNetError(f"transpose: the number of axes {axes} does not match the dimension {a.ndim}")
        for x in axes:
            if not -a.ndim <= x < a.ndim:
                raise MXNetError(f"transpose: axis {x} exceeds the range [0, {a.ndim})")
        axes = tuple(x % a.ndim for x in axes)
        if len(set(axes)) != len(axes):
            raise ValueError(f"transpose: repeated axis in {axes}")
    if a.ndim < 2:
        return _as_np(_call("_copy", (a,), {}))  # a new array (numpy: a view), still differentiable
    return _as_np(_call("transpose", (a,), {} if axes is None else {"axes": axes}))


def swapaxes(a, axis1: int, axis2: int) -> ndarray:
    """`a` with two axes exchanged."""
    a = asarray(a)
    order = list(range(a.ndim))
    i, j = _axes((axis1, axis2), a.ndim, "swapaxes") if axis1 % builtins.max(a.ndim, 1) != \
        axis2 % builtins.max(a.ndim, 1) else (axis1 % a.ndim,) * 2
    order[i], order[j] = order[j], order[i]
    return transpose(a, order)


def moveaxis(a, source, destination) -> ndarray:
    """`a` with axes moved from `source` to `destination` (the others keep their order)."""
    a = asarray(a)
    try:
        order = moveaxis_order(a.ndim, source, destination)
    except ValueError as e:
        raise MXNetError(f"moveaxis: {e}") from None
    return transpose(a, order)


def expand_dims(a, axis: int) -> ndarray:
    """`a` with a new axis of length 1 at `axis`."""
    a = asarray(a)
    ax = axis + a.ndim + 1 if axis < 0 else axis
    if not 0 <= ax <= a.ndim:
        raise MXNetError(f"expand_dims: axis {axis} is out of bounds for an array of dimension {a.ndim + 1}")
    return _np_reshape(a, a.shape[:ax] + (1,) + a.shape[ax:])


def squeeze(a, axis=None) -> ndarray:
    """`a` without its length-1 axes (or just those in `axis`, which must have length 1)."""
    a = asarray(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(a.shape) if d == 1)
    else:
        if a.ndim == 0:  # numpy: axis 0 or -1 of a 0-d array names nothing to remove
            _axes(axis, 1, "squeeze")
            return _np_reshape(_call("_copy", (a,), {}), ())
        axes = _axes(axis, a.ndim, "squeeze")
        for i in axes:
            if a.shape[i] != 1:
                raise MXNetError(f"squeeze: cannot select an axis to squeeze out which has size not equal to one "
                                 f"(axis {i} of shape {a.shape})")
    return _np_reshape(a, tuple(d for i, d in enumerate(a.shape) if i not in axes))


def ravel(a, order: str = "C") -> ndarray:
    """`a` as a 1-D array."""
    return reshape(asarray(a), (-1,), order)


def broadcast_to(array, shape) -> ndarray:  # noqa: A002 - numpy's parameter name
    """`array` broadcast to `shape` under numpy's rules (trailing axes aligned)."""
    a = asarray(array)
    shape = (int(shape),) if isinstance(shape, (int, _np.integer)) else tuple(int(d) for d in shape)
    if a.ndim > len(shape):
        raise MXNetError(f"broadcast_to: input operand has more dimensions than allowed by the shape {shape}")
    if builtins.any(d < 0 for d in shape):  # MXNet's -2: keep the (trailing-aligned) input's length
        lead = len(shape) - a.ndim
        if builtins.any(d < 0 and (d != -2 or i < lead) for i, d in enumerate(shape)):
            raise MXNetError(f"broadcast_to: negative dimensions other than -2 over an input axis are not "
                             f"allowed in shape {shape}")
        shape = tuple(a.shape[i - lead] if d == -2 else d for i, d in enumerate(shape))
    lifted = _np_reshape(a, (1,) * (len(shape) - a.ndim) + tuple(a.shape))
    try:
        _np.broadcast_shapes(lifted.shape, shape)
    except ValueError:
        raise MXNetError(f"broadcast_to: operands could not be broadcast together with remapped shapes "
                         f"{a.shape} and requested shape {shape}") from None
    if tuple(lifted.shape) == shape:
        return _as_np(_call("_copy", (lifted,), {}))  # a node of its own, so the result is differentiable
    if 0 in shape:
        # the registry's broadcast_to reads a 0 as "keep the input's length": cut a length-1 axis
        # that becomes 0 down to 0 first (a differentiable slice), then every 0 is kept
        for i, (d, t) in enumerate(zip(lifted.shape, shape)):
            if t == 0 and d == 1:
                begin, end = [None] * len(shape), [None] * len(shape)
                begin[i], end[i] = 0, 0
                lifted = _call("slice", (lifted,), {"begin": tuple(begin), "end": tuple(end)})
        if tuple(lifted.shape) == shape:
            return _as_np(lifted)
    return _as_np(_call("broadcast_to", (lifted,), {"shape": shape}))


def _common_dtype(arrays) -> _np.dtype:
    dt = arrays[0].dtype
    for x in arrays[1:]:
        dt = _result_type(dt, x.dtype)
    return dt


def concatenate(seq: Sequence, axis: Optional[int] = 0, out=None) -> ndarray:
    """The arrays joined along an existing `axis` (flattened first when axis is None)."""
    arrays = [asarray(x) for x in seq]
    if not arrays:
        raise MXNetError("concatenate: need at least one array to concatenate")
    if axis is None:
        arrays, axis = [ravel(x) for x in arrays], 0
    dt = _common_dtype(arrays)
    ax = _axes(axis, arrays[0].ndim, "concatenate")[0]
    arrays = [_cast(x, dt) for x in arrays if x.shape[ax] != 0 or x is arrays[0]]
    if len(arrays) == 1:
        return _deliver(_call("_copy", (arrays[0],), {}), out)
    return _deliver(_call("Concat", tuple(arrays), {"num_args": len(arrays), "dim": ax}), out)


def vstack(arrays: Sequence, out=None) -> ndarray:
    """The arrays joined along axis 0, 1-D (and 0-d) ones first made rows of shape (1, N)."""
    rows = [a if a.ndim >= 2 else reshape(a, (1, a.size)) for a in (asarray(x) for x in arrays)]
    return concatenate(rows, axis=0, out=out)


def take(a, indices, axis: Optional[int] = None, mode: str = "raise", out=None) -> ndarray:
    """Elements of `a` (flattened when axis is None) at `indices` along `axis`; mode 'raise' refuses
    indices outside [-n, n) (negatives count from the end), 'wrap' wraps them and 'clip' clips them."""
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', not {mode!r}")
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    ax = _axes(axis, a.ndim, "take")[0]
    idx = asarray(indices)
    if idx.dtype.kind not in "iuf":  # float indices (mx.np's default dtype for lists) are truncated, as MXNet
        raise IndexError(f"take: indices must be integers, got {idx.dtype}")
    if mode == "raise":  # numpy's bounds (checked now), then negatives counted from the end
        n, host = a.shape[ax], idx.asnumpy().astype(_np.int64)
        if host.size and (host.min() < -n or host.max() >= n):
            raise IndexError(f"take: index {int(host.min() if host.min() < -n else host.max())} is out of "
                             f"bounds for axis {ax} with size {n}")
        idx, mode = array(_np.mod(host.astype(_np.int64), builtins.max(n, 1)), dtype=_I64, ctx=a.context), "clip"
    return _deliver(_as_np(_call("take", (a, idx), {"axis": ax, "mode": mode})), out)


def stack(arrays: Sequence, axis: int = 0, out=None) -> ndarray:
    """The arrays (all of one shape) joined along a new `axis`."""
    arrays = [asarray(x) for x in arrays]
    if not arrays:
        raise MXNetError("stack: need at least one array to stack")
    dt = _common_dtype(arrays)
    ax = axis + arrays[0].ndim + 1 if axis < 0 else axis
    return _deliver(_call("stack", tuple(_cast(x, dt) for x in arrays), {"num_args": len(arrays), "axis": ax}), out)


def split(ary, indices_or_sections, axis: int = 0) -> list:
    """Sub-arrays of `ary` along `axis`: `n` equal sections, or cut at the given indices."""
    return _split(ary, indices_or_sections, axis, "split", even=True)


def array_split(ary, indices_or_sections, axis: int = 0) -> list:
    """As split, but `n` sections need not divide the axis (the first `len % n` get one more)."""
    return _split(ary, indices_or_sections, axis, "array_split", even=False)


def hsplit(ary, indices_or_sections) -> list:
    """split along axis 1 (axis 0 of a 1-D array)."""
    a = asarray(ary)
    return _split(a, indices_or_sections, 1 if a.ndim > 1 else 0, "hsplit", even=True, min_ndim=1)


def vsplit(ary, indices_or_sections) -> list:
    """split along axis 0 of an array of 2 or more dimensions."""
    return _split(ary, indices_or_sections, 0, "vsplit", even=True, min_ndim=2)


def dsplit(ary, indices_or_sections) -> list:
    """split along axis 2 of an array of 3 or more dimensions."""
    return _split(ary, indices_or_sections, 2, "dsplit", even=True, min_ndim=3)


def _split(ary, indices_or_sections, axis: int, name: str, even: bool, min_ndim: int = 0) -> list:
    a = asarray(ary)
    if a.ndim < min_ndim:
        raise ValueError(f"{name} only works on arrays of {min_ndim} or more dimensions")
    ax = _axes(axis, a.ndim, name)[0]
    n = a.shape[ax]
    if isinstance(indices_or_sections, (int, _np.integer)):
        k = int(indices_or_sections)
        if k <= 0 or (even and n % k):
            raise ValueError(f"{name}: array split does not result in an equal division ({n} into {k})")
        per, extra = divmod(n, k)
        sizes = [per + 1] * extra + [per] * (k - extra)
        cuts = [int(c) for c in _np.cumsum(sizes)[:-1]]
    else:
        cuts = [int(c) for c in indices_or_sections]
    bounds = [0] + [builtins.min(builtins.max(c, 0), n) for c in cuts] + [n]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        begin = [None] * a.ndim
        end = [None] * a.ndim
        begin[ax], end[ax] = lo, builtins.max(lo, hi)
        parts.append(_as_np(_call("slice", (a,), {"begin": tuple(begin), "end": tuple(end)})))
    return parts


def flip(m, axis=None) -> ndarray:
    """`m` with the order of elements reversed along `axis` (every axis by default)."""
    a = asarray(m)
    axes = _axes(axis, a.ndim, "flip")
    if not axes or a.ndim == 0:
        return _as_np(_call("_copy", (a,), {}))
    return _as_np(_call("reverse", (a,), {"axis": axes}))


def tile(A, reps) -> ndarray:
    """`A` repeated `reps` times per axis (numpy's rules for differing lengths)."""
    a = asarray(A)
    reps = (int(reps),) if isinstance(reps, (int, _np.integer)) else tuple(int(r) for r in reps)
    if builtins.any(r < 0 for r in reps):
        raise MXNetError(f"tile: reps {reps} must be non-negative")
    if not reps:
        return _as_np(_call("_copy", (a,), {}))
    if a.ndim == 0:
        a = reshape(a, (1,) * len(reps))
    if len(reps) < a.ndim:
        reps = (1,) * (a.ndim - len(reps)) + reps
    return _as_np(_call("tile", (a,), {"reps": reps}))


def repeat(a, repeats: int, axis: Optional[int] = None) -> ndarray:
    """Each element repeated `repeats` times along `axis` (of the flattened array when None)."""
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    return _as_np(_call("repeat", (a,), {"repeats": int(repeats), "axis": _axes(axis, a.ndim, "repeat")[0]}))


def where(condition, x=None, y=None) -> ndarray:
    """x where condition is non-zero, else y, all three broadcast together; without x and y the
    indices of condition's non-zero elements (`nonzero`)."""
    if x is None and y is None:
        from .functions_nonzero import nonzero
        return nonzero(condition)
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y should be given")
    c = asarray(condition)
    xs, ys = _is_scalar(x), _is_scalar(y)
    xa = asarray(x) if not xs else None
    ya = asarray(y) if not ys else None
    if xa is None and ya is None:
        dt = _np._result_type(x, y)
        dt = _F32 if dt.kind == "f" else dt
    else:
        given = xa if ya is None else ya if xa is None else None
        dt = _result_type(xa.dtype, ya.dtype) if given is None else given.dtype
    shapes = [c.shape] + [v.shape for v in (xa, ya) if v is not None]
    shape = _np.broadcast_shapes(*shapes)
    if xa is None:
        xa = _full_array(shape, x, dt, c)
    if ya is None:
        ya = _full_array(shape, y, dt, c)
    parts = [broadcast_to(_cast(v, dt), shape) for v in (c, xa, ya)]
    return _as_np(_call("where", tuple(parts), {}))


def _full_array(shape, value, dtype, like) -> ndarray:
    """An array of `shape` filled with `value`, on `like`'s device (a node when `like` is a symbol)."""
    if isinstance(like, Symbol):
        return _np_symbol.apply("_full", (), {"shape": tuple(shape), "value": float(value),
                                              "dtype": _np.dtype(dtype).name})
    from .multiarray import full
    return full(shape, value, dtype=dtype, ctx=like.context)


def clip(a, a_min, a_max, out=None) -> ndarray:
    """`a` limited to [a_min, a_max] (either bound may be None)."""
    if _is_scalar(a) and not isinstance(a, NDArray):  # a Python scalar: numpy's answer
        return _np.clip(a, a_min, a_max)
    a = asarray(a)
    if a_min is None and a_max is None:
        raise ValueError("clip: one of a_min and a_max must be given")
    lo = -_np.inf if a_min is None else float(a_min)
    hi = _np.inf if a_max is None else float(a_max)
    return _deliver(_call("clip", (a,), {"a_min": lo, "a_max": hi}), out)


_SORT_KINDS = (None, "quicksort", "mergesort", "heapsort", "stable")


def _sorting(name: str, a, axis, kind, order, attrs: dict) -> ndarray:
    """The registry's sort / argsort along `axis` (of the flattened array when None).  numpy's `kind`
    names are taken (the sorted values do not depend on the algorithm, as in MXNet, which ignores it);
    sorting structured fields by `order` is not supported (NotImplementedError)."""
    if kind not in _SORT_KINDS:
        raise ValueError(f"{name}: kind must be one of {_SORT_KINDS[1:]}, not {kind!r}")
    if order is not None:
        raise NotImplementedError(f"{name}: order is not supported")
    a = asarray(a)
    if axis is None:
        a, axis = ravel(a), 0
    return _as_np(_call(name, (a,), {"axis": int(axis), **attrs}))


def sort(a, axis: Optional[int] = -1, kind: Optional[str] = None, order=None) -> ndarray:
    """A sorted copy of `a` along `axis` (of the flattened array when None)."""
    return _sorting("sort", a, axis, kind, order, {})


def argsort(a, axis: Optional[int] = -1, kind: Optional[str] = None, order=None) -> ndarray:
    """Indices (int64) that sort `a` along `axis` (of the flattened array when None)."""
    return _sorting("argsort", a, axis, kind, order, {"dtype": "int64"})


# ------------------------------------------------------------------ creation

def linspace(start, stop, num: int = 50, endpoint: bool = True, retstep: bool = False, dtype=None, axis: int = 0,
             ctx=None):
    """`num` evenly spaced values from start to stop (float32 by default)."""
    if axis != 0:
        raise NotImplementedError("linspace: only axis=0 is supported")
    if num < 0:
        raise ValueError(f"linspace: number of samples, {num}, must be non-negative")
    from ..imperative.invoke import invoke
    dt = _np.dtype(dtype) if dtype is not None else _F32
    values = _as_np(invoke("_linspace", [], {"start": float(start), "stop": float(stop), "num": int(num),
                                             "endpoint": bool(endpoint), "dtype": dt.name}, ctx=ctx))
    if retstep:
        div = (num - 1) if endpoint else num
        return values, (float(stop) - float(start)) / div if div > 0 else _np.nan
    return values


def eye(N: int, M: Optional[int] = None, k: int = 0, dtype=None, ctx=None) -> ndarray:
    """An N x M array with ones on the k-th diagonal (float32 by default)."""
    from ..imperative.invoke import invoke
    dt = _np.dtype(dtype) if dtype is not None else _F32
    if N < 0 or (M is not None and M < 0):
        raise MXNetError(f"eye: negative dimensions are not allowed (N={N}, M={M})")
    if M is not None and int(M) == 0 or int(N) == 0:  # the registry's M=0 means "M = N"
        from .multiarray import zeros
        return zeros((int(N), 0 if M is None else int(M)), dtype=dt, ctx=ctx)
    return _as_np(invoke("_eye", [], {"N": int(N), "M": int(M or N), "k": int(k), "dtype": dt.name}, ctx=ctx))


def identity(n: int, dtype=None, ctx=None) -> ndarray:
    """The n x n identity matrix."""
    return eye(n, dtype=dtype, ctx=ctx)


def shape(a) -> tuple:
    """The shape of `a`."""
    return tuple(asarray(a).shape)


def ndim(a) -> int:
    """The number of dimensions of `a`."""
    return asarray(a).ndim


def size(a) -> int:
    """The number of elements of `a`."""
    return asarray(a).size


def _byte_extent(x: NDArray):
    """(storage block, first byte, end byte) of an array's elements: mx.np arrays are contiguous, so
    two of them overlap exactly when their extents in the same block do."""
    data = x._data
    iface = getattr(data, "__array_interface__", None) or getattr(data, "__cuda_array_interface__")
    start = int(iface["data"][0])
    return x._chunk, start, start + data.size * data.itemsize


def shares_memory(a, b, max_work=None) -> bool:
    """Whether arrays `a` and `b` have an element in common in memory (views from basic indexing
    share their array's storage; every other result is a new array)."""
    a, b = asarray(a), asarray(b)
    a._chunk.check()
    b._chunk.check()
    (ca, a0, a1), (cb, b0, b1) = _byte_extent(a), _byte_extent(b)
    return ca is cb and a0 < b1 and b0 < a1 and a.size > 0 and b.size > 0


def may_share_memory(a, b, max_work=None) -> bool:
    """As `shares_memory`: contiguous extents make the bounds check exact."""
    return shares_memory(a, b, max_work)


# ------------------------------------------------------------------ ndarray operators and methods with these rules

def _host_key(k):
    """An index key with its arrays read to numpy, for numpy to interpret."""
    if isinstance(k, NDArray):
        return k.asnumpy()
    if isinstance(k, tuple):
        return tuple(_host_key(i) for i in k)
    return k


def _index_shape(shape, key):
    """The shape numpy gives `x[key]` for an x of `shape` (computed on a zero-stride dummy: no memory)."""
    return stand_in(shape)[_host_key(key)].shape


def _bool_mask(self, key):
    """(mask lifted to self's rank, whether it covers every axis) for a bool-array key of at least one
    dimension, else None (a 0-d bool key takes the general path of `indexing.key_positions`)."""
    if not (isinstance(key, NDArray) and _np.dtype(key.dtype) == _BOOL and key.ndim >= 1):
        return None
    if tuple(key.shape) == tuple(self.shape):
        return key, True
    if key.ndim >= 1 and tuple(key.shape) == tuple(self.shape[:key.ndim]):
        return key, False
    raise IndexError(f"boolean index of shape {key.shape} does not match the indexed array of shape {self.shape}")


def _is_bool_index(k) -> bool:
    if isinstance(k, (bool, _np.bool_)):
        return True
    if isinstance(k, (NDArray, _np.ndarray)):
        return _np.dtype(k.dtype) == _BOOL
    return isinstance(k, list) and len(k) > 0 and _np.asarray(k).dtype == _BOOL


def _has_bool_index(key) -> bool:
    """Whether `key` holds a boolean index anywhere (a bool, a bool array or list, alone or in a tuple)."""
    return builtins.any(_is_bool_index(k) for k in (key if isinstance(key, tuple) else (key,)))


def _getitem(self, key):
    mask = _bool_mask(self, key)
    if mask is not None:  # x[mask]: the selected elements (or leading-axis slices) via _contrib_boolean_mask
        from ..ndarray.legacy_helpers import boolean_mask
        key = mask[0]
        lead = int(_np.prod(key.shape))
        data = reshape(self, (lead,) + tuple(self.shape[key.ndim:]))
        return _as_np(boolean_mask(data, reshape(key, (lead,)), axis=0))
    if _has_bool_index(key):  # booleans anywhere numpy allows them (0-d bools add an axis of length 1 or 0;
        # a k-d mask stands for k integer arrays): a gather of the positions numpy selects
        return _as_np(gather_positions(self, key_positions(self.shape, _host_key(key))))
    result = NDArray.__getitem__(self, key)
    want = _index_shape(self.shape, key)
    if tuple(result.shape) != want and int(_np.prod(want)) == result.size:
        return _np_reshape(result, want)  # e.g. x[i] of a vector is 0-d, as numpy
    return _as_np(result)


def _setitem(self, key, value):
    mask = _bool_mask(self, key)
    if (mask is not None and not _is_scalar(value)) or (mask is None and _has_bool_index(key)):
        # an array value broadcasts to the selected elements' shape, as numpy's (count, trailing...):
        # broadcast over the selected positions, scattered in
        positions = key_positions(self.shape, _host_key(key))
        if not _is_scalar(value):
            value = reshape(broadcast_to(_cast(asarray(value), self.dtype), positions.shape), (-1,))
        if positions.size:
            # one integer array per axis: the write goes to self's own storage (a flat reshape could copy)
            where_ = _np.unravel_index(positions.reshape(-1), self.shape) if self.ndim else ()
            NDArray.__setitem__(self, tuple(array(w, dtype=_I64, ctx=self.context) for w in where_) or Ellipsis,
                                value if _is_scalar(value) or self.ndim else reshape(value[0], ()))
        return None
    if mask is None:
        return NDArray.__setitem__(self, key, value)
    # x[mask] = scalar: x = where(mask, value, x), written in place
    key = mask[0]
    lifted = _np_reshape(key, tuple(key.shape) + (1,) * (self.ndim - key.ndim))
    new_values = where(broadcast_to(lifted, self.shape), value, self)
    NDArray.__setitem__(self, slice(None), _cast(new_values, self.dtype))


def _operand(other) -> bool:
    """Whether a Python operator takes `other` (else NotImplemented: `x == None` is False, as numpy)."""
    return isinstance(other, (NDArray, Symbol, _np.ndarray, list, tuple)) or _is_scalar(other)


def _symbol_getitem(self, key):
    """`sym[key]` of an np symbol: output selection for a multi-output one (as MXNet's _Symbol); else
    numpy's basic indexing (ints, slices, None, ...) as `slice` + reshape, and an integer array on
    the first axis as `take`."""
    if len(self._outputs) > 1:
        return _NpSymbol(Symbol.__getitem__(self, key)._outputs)
    if isinstance(key, (Symbol, NDArray)):
        dtype = key.dtype if isinstance(key, NDArray) else getattr(_as_np(key), "dtype", None)
        if dtype is not None and _np.dtype(dtype) == _np.bool_:
            # a mask selects a number of elements its values decide; a graph's shapes are fixed when traced
            raise IndexError("boolean mask indexing of a traced np symbol is not supported (the result's "
                             "shape depends on the mask's values): index outside the hybridized block, or "
                             "use np.where(mask, x, 0) to keep the shape")
        return _as_np(_call("take", (self, asarray(key)), {"axis": 0, "mode": "raise"}))
    keys = key if isinstance(key, tuple) else (key,)
    for k in keys:
        if not (k is None or k is Ellipsis or isinstance(k, (slice, int, _np.integer))):
            raise IndexError(f"indexing a traced np symbol with {type(k).__name__} is not supported: use ints, "
                             "slices, None and ..., or one integer array (symbol) on the first axis")
    shape = self.shape
    want = _index_shape(shape, key)
    n_real = builtins.sum(1 for k in keys if k is not None and k is not Ellipsis)
    begin, end, step, axis = [], [], [], 0
    for k in keys:
        if k is None:
            continue
        if k is Ellipsis:
            fill = len(shape) - n_real
            begin += [None] * fill
            end += [None] * fill
            step += [1] * fill
            axis += fill
            continue
        if isinstance(k, slice):
            lo, hi, st = k.indices(shape[axis])
            begin.append(lo)
            end.append(None if st < 0 and hi < 0 else hi)
            step.append(st)
        else:
            i = int(k) + (shape[axis] if k < 0 else 0)
            if not 0 <= i < shape[axis]:
                raise IndexError(f"index {int(k)} is out of bounds for axis {axis} with size {shape[axis]}")
            begin.append(i)
            end.append(i + 1)
            step.append(1)
        axis += 1
    sliced = _call("slice", (self,), {"begin": tuple(begin), "end": tuple(end), "step": tuple(step)})
    return _np_reshape(sliced, want)


def _clip_method(self, min=None, max=None, out=None):  # noqa: A002 - MXNet's method parameter names
    """ndarray.clip(min, max): `clip` with MXNet's method keywords."""
    return clip(self, min, max, out=out)


def _install_methods() -> None:
    """numpy's operators and methods on mx.np.ndarray, and the same (less the in-place ones) on np symbols."""
    ops = {"add": add, "sub": subtract, "mul": multiply, "truediv": true_divide, "mod": mod, "pow": power}
    for stem, fn in ops.items():
        for cls in (ndarray, _NpSymbol):
            setattr(cls, f"__{stem}__",
                    lambda self, other, _f=fn: _f(self, other) if _operand(other) else NotImplemented)
            setattr(cls, f"__r{stem}__",
                    lambda self, other, _f=fn: _f(other, self) if _operand(other) else NotImplemented)

        def inplace(self, other, _f=fn):
            result = _f(self, other)
            if result.dtype != self.dtype:
                raise TypeError(f"cannot cast the result of dtype {result.dtype} to the array's dtype {self.dtype} "
                                "in place")
            result.copyto(self)
            return self
        setattr(ndarray, f"__i{stem}__", inplace)
    methods = (("sum", sum), ("prod", prod), ("mean", mean), ("max", max), ("min", min), ("std", std),
               ("var", var), ("argmax", argmax), ("argmin", argmin), ("all", all), ("any", any),
               ("cumsum", cumsum), ("dot", dot), ("clip", _clip_method), ("squeeze", squeeze), ("ravel", ravel),
               ("swapaxes", swapaxes), ("repeat", repeat), ("sort", sort), ("argsort", argsort))
    for cls in (ndarray, _NpSymbol):
        for stem, fn in (("eq", equal), ("ne", not_equal), ("gt", greater), ("ge", greater_equal), ("lt", less),
                         ("le", less_equal)):
            setattr(cls, f"__{stem}__",
                    lambda self, other, _f=fn: _f(self, other) if _operand(other) else NotImplemented)
        cls.__matmul__ = lambda self, other: matmul(self, other)
        cls.__rmatmul__ = lambda self, other: matmul(other, self)
        for name, fn in methods:
            setattr(cls, name, fn)
    ndarray.__hash__ = NDArray.__hash__
    ndarray.__getitem__ = _getitem
    ndarray.__setitem__ = _setitem
    ndarray.flatten = lambda a: _as_np(_call("_copy", (ravel(a),), {}))
    # on symbols, the NDArray methods mx.np.ndarray wraps (multiarray.py) are these functions
    _NpSymbol.__hash__ = Symbol.__hash__
    _NpSymbol.__getitem__ = _symbol_getitem
    _NpSymbol.__neg__ = lambda self: negative(self)  # noqa: F821 - made by the _UNARY loop
    _NpSymbol.__abs__ = lambda self: absolute(self)
    _NpSymbol.flatten = ravel
    _NpSymbol.reshape = lambda self, *shape, order="C": reshape(
        self, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape, order)
    for cls in (ndarray, _NpSymbol):  # x.transpose(), x.transpose(None), x.transpose((1, 0)), x.transpose(1, 0)
        cls.transpose = lambda self, *axes: transpose(
            self, (axes[0] if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list)))
                   else axes) or None)
    _NpSymbol.T = property(lambda self: transpose(self))
    _NpSymbol.astype = lambda self, dtype, copy=True: _as_np(_call("Cast", (self,), {"dtype": _np.dtype(dtype).name}))
    _NpSymbol.expand_dims = expand_dims
    _NpSymbol.tile = tile
    _NpSymbol.flip = flip
    _NpSymbol.split = split


_install_methods()

__all__ = sorted(n for n, v in list(globals().items())
                 if not n.startswith("_") and callable(v) and getattr(v, "__module__", None) == __name__)
