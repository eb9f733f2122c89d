"""`mx.test_utils`: the helpers MXNet users' test suites (and MXNet's own) import.

Comparisons with MXNet 1.9.1's tolerances per dtype (`assert_almost_equal` and friends), random
shapes and arrays, finite-difference and expected-value checks of symbols
(`check_numeric_gradient`, `check_symbolic_forward/backward`), cross-context consistency
(`check_consistency`), a hybridized block against its imperative self
(`check_gluon_hybridize_consistency`), the default test context and an environment-variable
context manager, and mx.util's `use_np`.  Written for ember: symbols are bound with ember's
executors, arrays compared in numpy (a sparse `grad_stype_dict`/`grad_stypes` binds sparse gradient
arrays, which the executor fills from its dense gradients).
"""
from __future__ import annotations

import functools
import json
import logging
import numbers
import os
import platform
import sys
import time
import traceback
import urllib.request
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.random as rnd

import ember as mx
from .base import MXNetError
from .context import Context, current_context
from .imperative.ndarray import NDArray
from .symbolic.symbol import Symbol
from .ndarray import array  # noqa: F401
from .util import getenv, setenv, use_np  # noqa: F401  (MXNet's test_utils re-exports them)

# MXNet's test files do `from mxnet.test_utils import *` and then use modules it imported
# (struct.pack, bz2, npt) without importing them: keep those names here too. (scipy.stats, which
# MXNet's also imports, is left to the tests that use it: importing it would slow `import ember`.)
import bz2  # noqa: E402,F401
import errno  # noqa: E402,F401
import gzip  # noqa: E402,F401
import struct  # noqa: E402,F401
import zipfile  # noqa: E402,F401
import numpy.testing as npt  # noqa: E402,F401

_Tol = Union[None, float, Dict[Any, float]]

# ---------------------------------------------------------------------------------------------
# Default context and dtype, tolerances
# ---------------------------------------------------------------------------------------------


def default_context() -> Context:
    """The context tests run on: this thread's current default context."""
    return current_context()


def set_default_context(ctx: Context) -> None:
    """Make `ctx` this thread's default context (what `default_context()` and new arrays use).

    Inside a `with ctx2:` block it lasts until the block ends, as in MXNet.
    """
    Context.default_ctx = ctx


def default_dtype():
    """The dtype random test arrays are made in."""
    return np.float32


_INT_TYPES = (np.bool_, np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64)


def default_rtols() -> Dict[np.dtype, float]:
    """Relative tolerance per dtype (MXNet's: float16 1e-2, float32 1e-4, float64 1e-5, exact for integers)."""
    tols = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
    tols.update({np.dtype(t): 0 for t in _INT_TYPES})
    return tols


def default_atols() -> Dict[np.dtype, float]:
    """Absolute tolerance per dtype (MXNet's: float16 1e-1, float32 1e-3, float64 1e-20, exact for integers)."""
    tols = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}
    tols.update({np.dtype(t): 0 for t in _INT_TYPES})
    return tols


def default_numeric_eps() -> Dict[np.dtype, float]:
    """Finite-difference step per dtype (powers of two, so adding it to an input loses no bits)."""
    return {np.dtype(np.float16): 1.0 / 2 ** 6, np.dtype(np.float32): 1.0 / 2 ** 9,
            np.dtype(np.float64): 1.0 / 2 ** 14}


def _tf32_enabled(ctx) -> bool:
    # CuPy runs float32 matmuls/convolutions in TF32 only when CUPY_TF32=1 (then their outputs
    # carry float16-like precision, which MXNet's tolerance rules call the effective dtype).
    return (isinstance(ctx, Context) and ctx.device_type == "gpu" and os.environ.get("CUPY_TF32") == "1"
            and os.environ.get("NVIDIA_TF32_OVERRIDE") != "0")


def effective_dtype(dat) -> np.dtype:
    """The dtype whose tolerances apply to `dat` (float16 for float32 results computed in TF32)."""
    dtype = np.dtype(dat.dtype)
    if dtype == np.float32 and _tf32_enabled(getattr(dat, "context", None)):
        return np.dtype(np.float16)
    return dtype


def get_tolerance(dat, tol: _Tol, default_tol: Dict[np.dtype, float]) -> float:
    """`tol` itself if it is a number, else its entry for `dat`'s effective dtype, else the default's."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    tol = tol or {}
    if dtype in tol:
        return tol[dtype]
    if dtype not in default_tol:
        raise TypeError(f"no default tolerance for dtype {dtype}; pass rtol/atol explicitly")
    return default_tol[dtype]


def get_tols(x, y, rtol: _Tol, atol: _Tol) -> Tuple[float, float]:
    """(rtol, atol) for comparing x and y: the looser of the two arrays' tolerances."""
    x = x if hasattr(x, "dtype") else np.asarray(x)  # numbers (float64) and nested lists
    y = y if hasattr(y, "dtype") else np.asarray(y)
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def get_atol(atol: Optional[float] = None, dtype=np.dtype(np.float64)) -> float:
    """`atol`, or the default absolute tolerance of `dtype` when it is None."""
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def get_rtol(rtol: Optional[float] = None, dtype=np.dtype(np.float64)) -> float:
    """`rtol`, or the default relative tolerance of `dtype` when it is None."""
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_etol(etol: Optional[float] = None) -> float:
    """`etol` (tolerated fraction of mismatching elements), 0 when None."""
    return 0 if etol is None else etol


# ---------------------------------------------------------------------------------------------
# Random shapes and arrays
# ---------------------------------------------------------------------------------------------


def random_arrays(*shapes):
    """Standard-normal numpy arrays of `default_dtype()`, one per shape (a single array for one shape)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, low: float = 0.0, high: float = 1.0, dtype=None) -> List[np.ndarray]:
    """Uniform [low, high) numpy arrays, one per shape."""
    dtype = default_dtype() if dtype is None else dtype
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population: list, k: int) -> list:
    """k distinct elements of `population` in random order."""
    if not 0 <= k <= len(population):
        raise ValueError(f"random_sample: k={k} is outside [0, {len(population)}]")
    chosen = list(population)
    np.random.shuffle(chosen)
    return chosen[:k]


def _low(allow_zero_size: bool) -> int:
    return 0 if allow_zero_size else 1


def rand_shape_2d(dim0: int = 10, dim1: int = 10, allow_zero_size: bool = False) -> Tuple[int, int]:
    """A random 2-D shape with sides in [1, dim] ([0, dim] with allow_zero_size)."""
    low = _low(allow_zero_size)
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1)


def rand_shape_3d(dim0: int = 10, dim1: int = 10, dim2: int = 10,
                  allow_zero_size: bool = False) -> Tuple[int, int, int]:
    """A random 3-D shape with sides in [1, dim] ([0, dim] with allow_zero_size)."""
    low = _low(allow_zero_size)
    return rnd.randint(low, dim0 + 1), rnd.randint(low, dim1 + 1), rnd.randint(low, dim2 + 1)


def rand_shape_nd(num_dim: int, dim: int = 10, allow_zero_size: bool = False) -> Tuple[int, ...]:
    """A random `num_dim`-D shape with sides in [1, dim] ([0, dim] with allow_zero_size)."""
    return tuple(rnd.randint(_low(allow_zero_size), dim + 1, size=num_dim))


def rand_coord_2d(x_low: int, x_high: int, y_low: int, y_high: int) -> Tuple[int, int]:
    """A random integer point in [x_low, x_high) x [y_low, y_high)."""
    return np.random.randint(x_low, x_high, dtype=np.int64), np.random.randint(y_low, y_high, dtype=np.int64)


def _csr_uniform(rows: int, cols: int, density: float, dtype, data_init, shuffle: bool):
    """(data, indices, indptr) with int(rows * cols * density) distinct random positions."""
    nnz = int(rows * cols * density)
    flat = np.sort(np.random.choice(rows * cols, size=nnz, replace=False))
    row_of, col_of = np.divmod(flat, cols)
    data = np.random.uniform(size=nnz).astype(dtype)
    if data_init is not None:
        data.fill(data_init)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=rows))]).astype(np.int64)
    if shuffle:  # unordered column indices within a row are valid CSR too
        for r in range(rows):
            np.random.shuffle(col_of[indptr[r]:indptr[r + 1]])
    return data, col_of.astype(np.int64), indptr


def _csr_powerlaw(rows: int, cols: int, density: float, dtype) -> np.ndarray:
    """Dense values whose row r holds min(cols, 2^(r+1)) leading non-zeros (the first column of
    every row first), until int(rows * cols * density) non-zeros are placed."""
    budget = int(rows * cols * density)
    if budget < 2 * rows:
        raise ValueError(f"powerlaw csr needs rows * cols * density >= 2 * rows, got density {density} "
                         f"for shape ({rows}, {cols})")
    counts = np.ones(rows, np.int64)
    budget -= rows
    for r in range(rows):
        extra = min(min(cols, 2 ** (r + 1)) - 1, budget)
        counts[r] += extra
        budget -= extra
        if budget == 0:
            break
    if budget > 0:
        raise ValueError(f"powerlaw csr cannot place {int(rows * cols * density)} non-zeros in shape ({rows}, {cols})")
    dense = np.zeros((rows, cols), dtype=dtype)
    for r, n in enumerate(counts):
        dense[r, :n] = 1 + np.random.uniform(0.001, 2, size=n)
    return dense


def rand_sparse_ndarray(shape, stype: str, density: Optional[float] = None, dtype=None,
                        distribution: Optional[str] = None, data_init=None, rsp_indices=None,
                        modifier_func: Optional[Callable] = None, shuffle_csr_indices: bool = False, ctx=None):
    """A random sparse array and its parts: (RowSparseNDArray, (values, row indices)) or
    (CSRNDArray, (indptr, indices, data)).

    density: the share of rows (row_sparse) or elements (csr) kept (random when None);
    distribution: 'uniform', or 'powerlaw' for csr (row r holds min(cols, 2^(r+1)) non-zeros);
    data_init fills the values with a constant, modifier_func maps each value.
    """
    ctx = ctx or default_context()
    density = float(rnd.rand()) if density is None else float(density)
    if not 0.0 <= density <= 1.0:
        raise ValueError(f"density must be in [0, 1], got {density}")
    dtype = np.dtype(default_dtype() if dtype is None else dtype)
    distribution = distribution or "uniform"
    shape = tuple(int(d) for d in shape)
    if stype == "row_sparse":
        if distribution != "uniform":
            raise ValueError(f"distribution {distribution!r} is not supported for row_sparse (only 'uniform')")
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices, dtype=np.int64)
            if len(indices) > shape[0]:
                raise ValueError(f"{len(indices)} row indices for {shape[0]} rows")
        else:
            indices = np.flatnonzero(rnd.rand(shape[0]) < density).astype(np.int64)
        if indices.size == 0:
            return mx.nd.sparse.zeros("row_sparse", shape, ctx=ctx, dtype=dtype), \
                (np.array([], dtype=dtype), np.array([], dtype=np.int64))
        values = rnd.rand(indices.size, *shape[1:]).astype(dtype)
        if data_init is not None:
            values.fill(data_init)
        if modifier_func is not None:
            values = assign_each(values, modifier_func).astype(dtype)
        arr = mx.nd.sparse.row_sparse_array((values, indices), shape=shape, ctx=ctx, dtype=dtype)
        return arr, (values, indices)
    if stype == "csr":
        if len(shape) != 2:
            raise ValueError(f"csr arrays are 2-D, got shape {shape}")
        if shape[0] <= 0 or shape[1] <= 0:
            raise ValueError(f"csr shape must have positive sides, got {shape}")
        if distribution == "uniform":
            data, indices, indptr = _csr_uniform(shape[0], shape[1], density, dtype, data_init,
                                                 shuffle_csr_indices)
            if modifier_func is not None:
                data = assign_each(data, modifier_func).astype(dtype)
            arr = mx.nd.sparse.csr_matrix((data, indices, indptr), shape=shape, ctx=ctx, dtype=dtype)
        elif distribution == "powerlaw":
            arr = mx.nd.array(_csr_powerlaw(shape[0], shape[1], density, dtype), ctx=ctx, dtype=dtype).tostype("csr")
        else:
            raise ValueError(f"unknown distribution {distribution!r}: 'uniform' or 'powerlaw'")
        return arr, (arr.indptr, arr.indices, arr.data)
    raise ValueError(f"unknown storage type {stype!r}: 'row_sparse' or 'csr'")


def rand_ndarray(shape, stype: str = "default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices: bool = False, distribution=None, ctx=None) -> NDArray:
    """A random NDArray of `shape` on `ctx` (default: default_context()): standard normal values
    for stype 'default', else a random sparse array (see rand_sparse_ndarray)."""
    ctx = ctx or default_context()
    if stype == "default":
        return mx.nd.array(random_arrays(shape), dtype=dtype, ctx=ctx)
    return rand_sparse_ndarray(shape, stype, density=density, dtype=dtype, distribution=distribution,
                               modifier_func=modifier_func, shuffle_csr_indices=shuffle_csr_indices, ctx=ctx)[0]


def create_sparse_array(shape, stype: str, data_init=None, rsp_indices=None, dtype=None, modifier_func=None,
                        density: float = 0.5, shuffle_csr_indices: bool = False):
    """A random sparse array; row_sparse row indices given in `rsp_indices` are sorted first."""
    if stype == "row_sparse" and rsp_indices is not None:
        rsp_indices = np.sort(np.asarray(rsp_indices))
    if stype not in ("row_sparse", "csr"):
        raise ValueError(f"unknown storage type {stype!r}: 'row_sparse' or 'csr'")
    return rand_sparse_ndarray(shape, stype, density=density, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func,
                               shuffle_csr_indices=shuffle_csr_indices)[0]


def create_sparse_array_zd(shape, stype: str, density: float, data_init=None, rsp_indices=None, dtype=None,
                           modifier_func=None, shuffle_csr_indices: bool = False):
    """create_sparse_array where, for row_sparse, only `rsp_indices` decide the rows kept."""
    if stype == "row_sparse":
        density = 0.0
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices, dtype=dtype,
                               modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def create_2d_tensor(rows: int, columns: int, dtype=np.int64) -> NDArray:
    """A (rows, columns) NDArray whose row i is all i."""
    column = mx.nd.arange(0, rows, dtype=dtype).reshape(rows, 1)
    return mx.nd.broadcast_to(column, shape=(rows, columns))


def create_vector(size: int, dtype=np.int64) -> NDArray:
    """The NDArray [0, 1, ..., size-1]."""
    return mx.nd.arange(0, size, dtype=dtype)


def get_identity_mat(size: int) -> NDArray:
    """A (size, size) float32 identity matrix."""
    return mx.nd.array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size: int) -> NDArray:
    """A batch of two (size, size) identity matrices."""
    return mx.nd.array(np.stack([np.eye(size, dtype=np.float32)] * 2))


def assign_each(the_input: np.ndarray, function: Optional[Callable]) -> np.ndarray:
    """`function` applied to every element (a copy when function is None)."""
    if function is None:
        return np.array(the_input)
    return np.vectorize(function, otypes=[np.float64])(the_input) if np.size(the_input) else \
        np.zeros(np.shape(the_input))


def assign_each2(input1: np.ndarray, input2: np.ndarray, function: Optional[Callable]) -> np.ndarray:
    """`function` applied to every pair of elements (a copy of input1 when function is None)."""
    if function is None:
        return np.array(input1)
    if np.shape(input1) != np.shape(input2):
        raise ValueError(f"assign_each2: shapes {np.shape(input1)} and {np.shape(input2)} differ")
    return np.vectorize(function, otypes=[np.float64])(input1, input2) if np.size(input1) else \
        np.zeros(np.shape(input1))


def np_reduce(dat: np.ndarray, axis, keepdims: bool, numpy_reduce_func: Callable) -> np.ndarray:
    """Reduce `dat` over `axis` (int, sequence or None) one axis at a time with a numpy reduction."""
    axes = [axis] if isinstance(axis, int) else list(range(dat.ndim)) if axis is None else list(axis)
    axes = [a % dat.ndim if dat.ndim else a for a in axes]
    ret = dat
    for a in sorted(axes, reverse=True):  # highest first, so the remaining axis numbers stay valid
        ret = numpy_reduce_func(ret, axis=a)
    if keepdims:
        ret = np.asarray(ret).reshape(tuple(1 if i in axes else n for i, n in enumerate(dat.shape)))
    return ret


def is_op_runnable() -> bool:
    """Whether MXNet's TVM-built operators can run in the current context (MXNet's tests skip
    some checks otherwise): ember builds no operator with TVM, so always True."""
    return True


def has_tvm_ops() -> bool:
    """Whether operators generated by TVM are available (MXNet's tests take other code paths
    then): ember builds none, so always False."""
    return False


def _matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """One n x n matrix P^-1 D P with real eigenvalues D in [-10, 10), where P (a Householder
    reflection times a diagonal) has 2-norm condition number below 3, so inverting it is stable."""
    eye = np.eye(n)
    while True:
        scale = np.diag(np.random.uniform(-1.0, 1.0, n))
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v = v / np.linalg.norm(v, axis=0, keepdims=True)
        p = (eye - 2 * v @ v.T) @ scale
        if np.linalg.cond(p, 2) < 3:
            break
    eigvals = np.diag(np.random.uniform(-10.0, 10.0, n))
    return np.linalg.inv(p) @ eigvals @ p


def _sym_matrix_with_real_eigvals_2d(n: int) -> np.ndarray:
    """One symmetric n x n matrix Q^T D Q, Q orthonormal, D's entries uniform in [-10, 10)."""
    x = np.random.randn(n, n)
    q = np.linalg.qr(x.T @ x)[0]
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def _stack_square(shape: Sequence[int], make: Callable[[int], np.ndarray]) -> np.ndarray:
    shape = tuple(shape)
    if len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(f"expected a shape (..., n, n) of square matrices, got {shape}")
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([make(shape[-1]) for _ in range(count)]).reshape(shape)


def new_matrix_with_real_eigvals_nd(shape: Sequence[int]) -> np.ndarray:
    """Well-conditioned square matrices of `shape` (..., n, n) with real eigenvalues in [-10, 10)."""
    return _stack_square(shape, _matrix_with_real_eigvals_2d)


def new_sym_matrix_with_real_eigvals_nd(shape: Sequence[int]) -> np.ndarray:
    """Symmetric square matrices of `shape` (..., n, n) with eigenvalues in [-10, 10)."""
    return _stack_square(shape, _sym_matrix_with_real_eigvals_2d)


def collapse_sum_like(a: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """Sum `a` down to `shape` (the shape it was broadcast from): the gradient of broadcasting."""
    shape = tuple(shape)
    if a.ndim < len(shape):
        raise ValueError(f"collapse_sum_like: {a.shape} has fewer dimensions than {shape}")
    if a.size == 0 or int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = a.ndim - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[lead + i]:
            if s != 1:
                raise ValueError(f"collapse_sum_like: {shape} does not broadcast to {a.shape}")
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


# ---------------------------------------------------------------------------------------------
# Comparisons
# ---------------------------------------------------------------------------------------------


def _as_numpy(x):
    if isinstance(x, NDArray):
        return x.asnumpy()
    return x


def same(a, b) -> bool:
    """True when the two arrays have the same shape and elements."""
    return np.array_equal(_as_numpy(a), _as_numpy(b))


def checkShapes(a, b) -> None:  # noqa: N802  (MXNet's name)
    """Raise AssertionError when the shapes of a and b differ."""
    if np.shape(a) != np.shape(b):
        raise AssertionError(f"a.shape = {np.shape(a)} and b.shape = {np.shape(b)} are not equal")


def almost_equal(a, b, rtol: Optional[float] = None, atol: Optional[float] = None, equal_nan: bool = False,
                 use_broadcast: bool = True) -> bool:
    """|a - b| <= atol + rtol * |b| everywhere (float64 defaults when rtol/atol are None)."""
    a, b = _as_numpy(a), _as_numpy(b)
    if not use_broadcast:
        checkShapes(a, b)
    return bool(np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol), equal_nan=equal_nan))


def _violations(a: np.ndarray, b: np.ndarray, rtol: float, atol: float, equal_nan: bool) -> np.ndarray:
    """|a - b| / (atol + rtol |b|) per element; 0 where equal (infinities included), inf where a NaN
    meets a number (or another NaN without equal_nan)."""
    a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(a == b, 0.0, np.abs(a - b))
        ratio = diff / (atol + rtol * np.abs(b) + 1e-20)
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    ratio = np.where(nan_a | nan_b, np.inf, ratio)
    if equal_nan:
        ratio = np.where(nan_a & nan_b, 0.0, ratio)
    return ratio


def locationError(a, b, index, names, maxError: bool = False) -> str:  # noqa: N802,N803  (MXNet's names)
    """'Location of [maximum ]error: index, a=..., b=...' for one element."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    kind = "maximum " if maxError else ""
    return f"Location of {kind}error: {tuple(int(i) for i in index)}, " \
           f"{names[0]}={float(a[index]):.8f}, {names[1]}={float(b[index]):.8f}"


def _summarize(x: np.ndarray) -> str:
    """A one-line glimpse of an array: shape, dtype and its first and last values (flattened)."""
    x = np.asarray(x)
    with np.printoptions(threshold=6, edgeitems=3, suppress=True, linewidth=10 ** 6):
        values = np.array2string(x.ravel(), separator=", ")
    return f"shape {x.shape} {x.dtype}: {values}"


def assert_almost_equal(a, b, rtol: _Tol = None, atol: _Tol = None, names: Tuple[str, str] = ("a", "b"),
                        equal_nan: bool = False, use_broadcast: bool = True,
                        mismatches: Tuple[int, int] = (10, 10)) -> None:
    """Raise AssertionError unless |a - b| <= atol + rtol * |b| everywhere.

    a and b are NDArrays, numpy arrays or numbers; rtol/atol default per dtype (the looser of the
    two arrays', see default_rtols/default_atols) and may be dicts dtype -> tolerance. The message
    gives the largest violation with its location and both values, the share of mismatching
    elements, and up to `mismatches[0]` further violations, worst first.
    """
    if not use_broadcast:
        checkShapes(a, b)
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _as_numpy(a), _as_numpy(b)
    if getattr(a, "dtype", None) == np.bool_ and getattr(b, "dtype", None) == np.bool_:
        np.testing.assert_equal(a, b)
        return
    a, b = np.asarray(a), np.asarray(b)
    try:
        ratio = _violations(a, b, rtol, atol, equal_nan)
    except ValueError:
        raise AssertionError(f"{names[0]} of shape {a.shape} and {names[1]} of shape {b.shape} "
                             "cannot be compared (shapes do not broadcast)") from None
    bad = ratio > 1.0
    if not bad.any():
        return
    a_b, b_b = np.broadcast_arrays(a, b)
    count = int(bad.sum())
    if ratio.ndim == 0:
        msg = f"Error {float(ratio):f} exceeds tolerance rtol={rtol:e}, atol={atol:e}.\n" \
              f"{names[0]}={float(a_b):.8f}, {names[1]}={float(b_b):.8f}"
    else:
        order = np.argsort(-np.where(bad, ratio, -1.0), axis=None, kind="stable")
        worst = np.unravel_index(int(order[0]), ratio.shape)
        msg = f"Error {float(ratio[worst]):f} exceeds tolerance rtol={rtol:e}, atol={atol:e} " \
              f"(mismatch {100.0 * count / ratio.size:f}%: {count} of {ratio.size} elements).\n" \
              f"{locationError(a_b, b_b, worst, names, maxError=True)}"
        shown = min(count, max(int(mismatches[0]), 0))
        if shown > 1:
            lines = [f"{i + 1:3d}: Error {float(ratio.flat[j]):f}  "
                     f"{locationError(a_b, b_b, np.unravel_index(int(j), ratio.shape), names)}"
                     for i, j in enumerate(order[:shown])]
            msg += "\nLargest violations:\n" + "\n".join(lines)
    msg += f"\n {names[0]}: {_summarize(a)}\n {names[1]}: {_summarize(b)}"
    raise AssertionError(msg)


def assert_allclose(a, b, rtol: float = 1e-07, atol: float = 0, equal_nan: bool = True) -> None:
    """assert_almost_equal with numpy.testing.assert_allclose's defaults."""
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal_with_err(a, b, rtol: _Tol = None, atol: _Tol = None, etol: Optional[float] = None,
                                 names: Tuple[str, str] = ("a", "b"), equal_nan: bool = False,
                                 mismatches: Tuple[int, int] = (10, 10)) -> None:
    """Like assert_almost_equal, but tolerate a fraction `etol` of mismatching elements."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan, mismatches=mismatches)
        return
    rt, at = get_tols(a, b, rtol, atol)
    a_np, b_np = np.asarray(_as_numpy(a)), np.asarray(_as_numpy(b))
    close = np.isclose(a_np, b_np, rtol=rt, atol=at, equal_nan=equal_nan)
    if 1.0 - np.count_nonzero(close) / close.size > etol:
        assert_almost_equal(a_np, b_np, rtol=rt, atol=at, names=names, equal_nan=equal_nan, mismatches=mismatches)


def assert_almost_equal_ignore_nan(a, b, rtol: _Tol = None, atol: _Tol = None,
                                   names: Tuple[str, str] = ("a", "b")) -> None:
    """assert_almost_equal on the elements where neither array is NaN."""
    a = np.array(_as_numpy(a), copy=True)
    b = np.array(_as_numpy(b), copy=True)
    nan = np.isnan(a) | np.isnan(b)
    a[nan] = 0
    b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f: Callable, exception_type, *args, **kwargs) -> None:
    """Raise AssertionError unless f(*args, **kwargs) raises `exception_type`."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise {getattr(exception_type, '__name__', exception_type)}")


def retry(n: int) -> Callable:
    """Decorator: rerun a stochastic test up to n times while it fails with an AssertionError."""
    if n <= 0:
        raise ValueError(f"retry: n must be positive, got {n}")

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return f(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
                    mx.nd.waitall()
        return wrapper
    return decorate


def compare_ndarray_tuple(t1, t2, rtol: _Tol = None, atol: _Tol = None) -> None:
    """assert_almost_equal over (nested tuples of) arrays; None on either side is skipped."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def same_array(array1: NDArray, array2: NDArray) -> bool:
    """True when the two NDArrays share memory (a change to one shows in the other)."""
    array1[:] += 1
    shared = same(array1.asnumpy(), array2.asnumpy())
    array1[:] -= 1
    return shared and same(array1.asnumpy(), array2.asnumpy())


def same_symbol_structure(sym1: Symbol, sym2: Symbol) -> bool:
    """True when the two graphs have the same operator at every node position."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2))


# ---------------------------------------------------------------------------------------------
# Symbol checks
# ---------------------------------------------------------------------------------------------


def simple_forward(sym: Symbol, ctx: Optional[Context] = None, is_train: bool = False, **inputs):
    """Run `sym` once on numpy inputs given by argument name; numpy output(s) back."""
    ctx = ctx or default_context()
    args = {k: mx.nd.array(v, ctx=ctx) for k, v in inputs.items()}
    exe = sym.bind(ctx, args=args)
    exe.forward(is_train=is_train)
    outputs = [o.asnumpy() for o in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def _check_dtype_arg(dtype, allow_asnumpy: bool = True) -> None:
    ok = (np.float16, np.float32, np.float64)
    if not ((allow_asnumpy and isinstance(dtype, str) and dtype == "asnumpy") or
            (not isinstance(dtype, str) and np.dtype(dtype) in [np.dtype(t) for t in ok])):
        raise ValueError(f"dtype must be {'asnumpy, ' if allow_asnumpy else ''}float16, float32 or float64, "
                         f"got {dtype!r}")


def _to_nd(v, ctx, dtype):
    if isinstance(v, NDArray):
        return v
    v = np.asarray(v)
    return mx.nd.array(v, ctx=ctx, dtype=v.dtype if isinstance(dtype, str) else dtype)


def _parse_location(sym: Symbol, location, ctx, dtype=default_dtype()) -> "OrderedDict[str, NDArray]":
    """Argument name -> NDArray from a list (in list_arguments() order) or a dict of every argument."""
    _check_dtype_arg(dtype)
    if not isinstance(location, (dict, list, tuple)):
        raise TypeError(f"location must be a list, tuple or dict, got {type(location).__name__}")
    names = sym.list_arguments()
    if isinstance(location, dict):
        if set(location) != set(names):
            raise ValueError("Symbol arguments and keys of the given location do not match: "
                             f"symbol arguments {sorted(names)}, location keys {sorted(location)}")
    else:
        if len(location) != len(names):
            raise ValueError(f"location has {len(location)} arrays for {len(names)} arguments {names}")
        location = dict(zip(names, location))
    return OrderedDict((k, _to_nd(location[k], ctx, dtype)) for k in sorted(location))


def _parse_aux_states(sym: Symbol, aux_states, ctx, dtype=default_dtype()) -> Optional[Dict[str, NDArray]]:
    """Aux-state name -> NDArray from a list (in list_auxiliary_states() order) or a dict; None stays None."""
    _check_dtype_arg(dtype)
    if aux_states is None:
        return None
    names = sym.list_auxiliary_states()
    if isinstance(aux_states, dict):
        if set(aux_states) != set(names):
            raise ValueError("Symbol aux_states names and given aux_states do not match: "
                             f"symbol aux states {sorted(names)}, given {sorted(aux_states)}")
    elif isinstance(aux_states, (list, tuple)):
        aux_states = dict(zip(names, aux_states))
    else:
        raise TypeError(f"aux_states must be a list, tuple or dict, got {type(aux_states).__name__}")
    return {k: _to_nd(v, ctx, dtype) for k, v in aux_states.items()}


def numeric_grad(executor, location: Dict[str, np.ndarray], aux_states: Optional[Dict[str, np.ndarray]] = None,
                 eps: float = 1e-4, use_forward_train: bool = True, dtype=default_dtype()) -> Dict[str, np.ndarray]:
    """Central finite differences of sum(outputs[0]) with respect to every float argument in `location`.

    Each element of each argument is moved by +-eps/2 in turn (aux states restored before each
    forward, since training-mode forwards update them); the executor's arguments are restored.
    """
    _check_dtype_arg(dtype, allow_asnumpy=False)
    location = {k: np.array(v, dtype=np.float64 if np.asarray(v).dtype.kind == "f" else np.asarray(v).dtype,
                            order="C", copy=True) for k, v in location.items()}
    grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}

    def value_at(name, flat):
        executor.arg_dict[name][:] = flat.reshape(location[name].shape).astype(dtype)
        if aux_states is not None:
            for key, val in aux_states.items():
                executor.aux_dict[key][:] = val
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy().astype(np.float64).sum()

    for name, value in location.items():
        executor.arg_dict[name][:] = value.astype(dtype)
    for name, value in location.items():
        if value.dtype.kind != "f":
            continue  # integer inputs (indices, labels) have no gradient
        flat = value.ravel().copy()
        for i in range(flat.size):
            orig = flat[i]
            flat[i] = orig + eps / 2.0
            f_plus = value_at(name, flat)
            flat[i] = orig - eps / 2.0
            f_minus = value_at(name, flat)
            flat[i] = orig
            grads[name].ravel()[i] = (f_plus - f_minus) / eps
        executor.arg_dict[name][:] = value.astype(dtype)
    return grads


def _grad_reqs(grad_nodes, arg_names) -> Tuple[List[str], Dict[str, str]]:
    if grad_nodes is None:
        return list(arg_names), {k: "write" for k in arg_names}
    if isinstance(grad_nodes, (list, tuple)):
        return list(grad_nodes), {k: "write" for k in grad_nodes}
    if isinstance(grad_nodes, dict):
        return list(grad_nodes), dict(grad_nodes)
    raise ValueError(f"grad_nodes must be None, a list/tuple of names or a dict name -> grad_req, "
                     f"got {type(grad_nodes).__name__}")


def _compare_grad(name, req, expected, actual, original, rtol, atol, names, equal_nan=False) -> None:
    actual = _as_numpy(actual)
    if req == "write":
        assert_almost_equal(expected, actual, rtol, atol, names, equal_nan=equal_nan)
    elif req == "add":
        assert_almost_equal(expected, actual - original, rtol, atol, names, equal_nan=equal_nan)
    elif req == "null":
        assert_almost_equal(original, actual, rtol, atol, names, equal_nan=equal_nan)
    else:
        raise ValueError(f"invalid grad_req {req!r} for argument '{name}'")


def _with_stype(arr: NDArray, stype: Optional[str]) -> NDArray:
    """`arr` in storage type `stype` (None or 'default': as it is), as MXNet's helpers make gradient arrays."""
    return arr if stype in (None, "default") else arr.tostype(stype)


def check_numeric_gradient(sym: Symbol, location, aux_states=None, numeric_eps: _Tol = None, rtol: _Tol = None,
                           atol: _Tol = None, grad_nodes=None, use_forward_train: bool = True,
                           ctx: Optional[Context] = None, grad_stype_dict=None, dtype=default_dtype()) -> None:
    """Check the symbolic gradient of `sym` against finite differences at `location`.

    The scalar differentiated is sum(sym * P) for a fixed random P with entries in [0.1, 1.1)
    (so every output element counts, none with a tiny weight). grad_nodes: the arguments to check
    (all by default), a list, or a dict name -> grad_req ('write', 'add', 'null').
    """
    _check_dtype_arg(dtype, allow_asnumpy=False)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    location_np = {k: v.asnumpy() for k, v in location.items()}
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    aux_np = None if aux_states is None else {k: v.asnumpy() for k, v in aux_states.items()}
    grad_nodes, grad_req = _grad_reqs(grad_nodes, sym.list_arguments())
    unknown = [k for k in grad_nodes if k not in location]
    if unknown:
        raise ValueError(f"grad_nodes {unknown} are not arguments of the symbol ({list(location)})")

    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    proj_name = "__random_proj"
    loss = mx.sym.make_loss(sym * mx.sym.Variable(proj_name))
    args = dict(location)
    args[proj_name] = mx.nd.array(np.random.rand(*out_shapes[0]) + 0.1, ctx=ctx, dtype=dtype)
    grads_np = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in grad_nodes}
    args_grad = {k: _with_stype(mx.nd.array(v, ctx=ctx, dtype=dtype), (grad_stype_dict or {}).get(k))
                 for k, v in grads_np.items()}
    executor = loss.bind(ctx, args=args, args_grad=args_grad, grad_req=grad_req, aux_states=aux_states)
    if len(executor.outputs) != 1:
        raise ValueError(f"check_numeric_gradient: the symbol must have one output, it has {len(executor.outputs)}")
    executor.forward(is_train=True)
    eps = get_tolerance(executor.outputs[0], numeric_eps, default_numeric_eps())
    if np.dtype(dtype) in (np.float16, np.float32) and eps < 1e-5:
        raise ValueError(f"numeric_eps={eps} is too small for finite differences in {np.dtype(dtype).name}")
    executor.backward()
    symbolic = {k: executor.grad_dict[k].asnumpy() for k in grad_nodes}

    # the projection stays bound as it is: only the checked arguments are perturbed
    numeric = numeric_grad(executor, location_np, aux_np, eps=eps, use_forward_train=use_forward_train,
                           dtype=dtype)
    for name in grad_nodes:
        _compare_grad(name, grad_req[name], numeric[name], symbolic[name], grads_np[name], rtol, atol,
                      (f"NUMERICAL_{name}", f"BACKWARD_{name}"))


def check_symbolic_forward(sym: Symbol, location, expected, rtol: _Tol = None, atol: _Tol = None,
                           aux_states=None, ctx: Optional[Context] = None, equal_nan: bool = False,
                           dtype=default_dtype()) -> List[NDArray]:
    """Run `sym` forward (inference mode) at `location` and compare each output with `expected`
    (a list in output order or a dict by output name); returns the outputs."""
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    out_names = sym.list_outputs()
    if isinstance(expected, dict):
        expected = [expected[k] for k in out_names]
    if len(expected) != len(out_names):
        raise ValueError(f"check_symbolic_forward: {len(expected)} expected arrays for {len(out_names)} outputs")
    grads = {k: mx.nd.zeros(v.shape, ctx=ctx, dtype=v.dtype) for k, v in location.items()}
    executor = sym.bind(ctx=ctx, args=location, args_grad=grads, aux_states=aux_states)
    executor.forward(is_train=False)
    for name, want, got in zip(out_names, expected, executor.outputs):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"), equal_nan=equal_nan)
    return executor.outputs


def check_symbolic_backward(sym: Symbol, location, out_grads, expected, rtol: _Tol = None, atol: _Tol = None,
                            aux_states=None, grad_req="write", ctx: Optional[Context] = None, grad_stypes=None,
                            equal_nan: bool = False, dtype=default_dtype()) -> Dict[str, NDArray]:
    """Run forward (training mode) and backward with head gradients `out_grads` (list, dict by
    output name, or None for a loss) and compare each argument's gradient with `expected` (a list
    in list_arguments() order or a dict). Gradient buffers start with random values, so 'add' and
    'null' are checked against them; returns the gradient arrays."""
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype)
    aux_states = _parse_aux_states(sym, aux_states, ctx, dtype)
    arg_names = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(arg_names, expected))
    expected = {k: _as_numpy(v) for k, v in expected.items()}
    # dirty the gradient buffers, in a fixed order so that a seed reproduces them
    grads_np = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    args_grad = {k: _with_stype(mx.nd.array(v, ctx=ctx, dtype=np.asarray(expected[k]).dtype if isinstance(dtype, str)
                                            else dtype), (grad_stypes or {}).get(k))
                 for k, v in grads_np.items()}
    if isinstance(grad_req, str):
        grad_req = {k: grad_req for k in arg_names}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(arg_names, grad_req))
    executor = sym.bind(ctx=ctx, args=location, args_grad=args_grad, aux_states=aux_states, grad_req=grad_req)
    executor.forward(is_train=True)
    if isinstance(out_grads, (list, tuple)):
        # head gradients beyond the symbol's outputs are ignored, as MXNet's executor does
        out_grads = [_to_nd(g, ctx, dtype) for g in out_grads[:len(sym.list_outputs())]]
    elif isinstance(out_grads, dict):
        out_grads = {k: _to_nd(g, ctx, dtype) for k, g in out_grads.items()}
    elif out_grads is not None:
        raise TypeError(f"out_grads must be a list, dict or None, got {type(out_grads).__name__}")
    executor.backward(out_grads)
    for name in expected:
        _compare_grad(name, grad_req.get(name, "write"), expected[name], args_grad[name], grads_np[name], rtol,
                      atol, (f"EXPECTED_{name}", f"BACKWARD_{name}"), equal_nan=equal_nan)
    return args_grad


def _context_available(ctx: Context) -> bool:
    return ctx.device_type != "gpu" or ctx.device_id < mx.num_gpus()


def check_consistency(sym, ctx_list: Sequence[dict], scale: float = 1.0, grad_req="write", arg_params=None,
                      aux_params=None, rtol: _Tol = None, atol: _Tol = None, raise_on_err: bool = True,
                      ground_truth=None, equal_nan: bool = False, use_uniform: bool = False,
                      rand_type=np.float64) -> Dict[str, NDArray]:
    """Check that `sym` (or one symbol per entry) gives the same outputs and gradients in every
    configuration of `ctx_list`: dicts of simple_bind arguments ({'ctx': ..., <arg>: shape,
    'type_dict': {...}}). Entries whose device this machine lacks are left out (with a warning),
    so a CPU+GPU list still compares its CPU configurations. The most precise configuration (by
    output dtype) is the reference unless `ground_truth` is given; returns the reference arrays.
    """
    keep = [i for i, c in enumerate(ctx_list) if _context_available(c.get("ctx", default_context()))]
    if len(keep) < len(ctx_list):
        missing = sorted({str(c.get("ctx")) for i, c in enumerate(ctx_list) if i not in keep})
        logging.warning("check_consistency: leaving out configurations on %s (not on this machine)", missing)
    available = [ctx_list[i] for i in keep]
    if isinstance(sym, Symbol):
        syms = [sym] * len(available)
    else:
        if len(sym) != len(ctx_list):
            raise ValueError(f"check_consistency: {len(sym)} symbols for {len(ctx_list)} configurations")
        syms = [sym[i] for i in keep]
    if len(available) < 2:
        raise ValueError(f"check_consistency needs at least two configurations on available devices, "
                         f"got {len(available)}")
    output_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    executors = []
    for s, conf in zip(syms, available):
        if s.list_arguments() != arg_names or s.list_outputs() != output_names:
            raise ValueError("check_consistency: every symbol must have the same arguments and outputs")
        executors.append(s.simple_bind(grad_req=grad_req, **conf))

    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for name, arr in sorted(executors[0].arg_dict.items()):  # sorted: a seed reproduces the inputs
        if name not in arg_params:
            arg_params[name] = (np.random.uniform(-0.92 * scale, 0.92 * scale, size=arr.shape) if use_uniform
                                else np.random.normal(size=arr.shape, scale=scale)).astype(rand_type)
    for name in executors[0].aux_dict:
        aux_params.setdefault(name, 0)
    for exe in executors:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0

    def least_precise(dt1, dt2):
        return dt1 if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize else dt2

    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in executors]
    gt_idx = int(np.argmax([d.itemsize for d in dtypes]))
    gt = ground_truth
    if gt is None:
        gt = dict(executors[gt_idx].output_dict)
        if grad_req != "null":
            gt.update(executors[gt_idx].grad_dict)

    def compare(arr, ref, what, i, rt=rtol, at=atol):
        try:
            assert_almost_equal(arr, ref, rtol=rt, atol=at, equal_nan=equal_nan, names=(f"ctx{i}", f"ctx{gt_idx}"))
        except AssertionError as err:
            print(f"{what} error: configuration {i} vs {gt_idx}")
            traceback.print_exc()
            if raise_on_err:
                raise
            print(str(err))

    for exe in executors:
        exe.forward(is_train=False)
    for i, exe in enumerate(executors):
        if i != gt_idx:
            for name, arr in zip(output_names, exe.outputs):
                compare(arr, gt[name], f"Predict ({name})", i)

    if grad_req != "null":
        for exe in executors:
            exe.forward(is_train=True)
        # head gradients: the first configuration's outputs, rounded to the least precise dtype
        out_dtypes = [o.dtype for o in executors[0].outputs]
        for exe in executors:
            out_dtypes = [least_precise(o.dtype, d) for o, d in zip(exe.outputs, out_dtypes)]
        heads = [o.astype(d).asnumpy() for o, d in zip(executors[0].outputs, out_dtypes)]
        for exe, conf in zip(executors, available):
            exe.backward([mx.nd.array(h, ctx=conf.get("ctx", default_context()), dtype=o.dtype)
                          for h, o in zip(heads, exe.outputs)])
        for i, exe in enumerate(executors):
            if i == gt_idx:
                continue
            for name, arr in zip(output_names + arg_names, list(exe.outputs) + list(exe.grad_arrays)):
                ref = gt.get(name)  # absent: an argument whose grad_req (a per-name dict) is 'null'
                if ref is None:
                    if arr is not None:
                        raise AssertionError(f"'{name}': configuration {i} has a gradient, the reference none")
                    continue
                rt, at = rtol, atol
                # a float16 configuration's float32 gradients (BatchNorm gamma, ...) get float16 tolerances
                arr_dt, ref_dt = least_precise(arr.dtype, dtypes[i]), least_precise(ref.dtype, dtypes[gt_idx])
                if arr_dt != arr.dtype or ref_dt != ref.dtype:
                    rt, at = get_tols(arr.astype(arr_dt), ref.astype(ref_dt), rtol, atol)
                compare(arr, ref, f"Train ({name})", i, rt, at)
    return gt


def compare_optimizer(opt1, opt2, shape, dtype, w_stype: str = "default", g_stype: str = "default",
                      rtol: float = 1e-4, atol: float = 1e-5, compare_states: bool = True, ntensors: int = 1) -> None:
    """Apply one update of opt1 and of opt2 to the same weights and gradients and compare the
    results (and the optimizer states); a list of shapes compares opt2's multi-tensor update."""
    ctx = default_context()
    dtype = np.dtype(dtype).name

    def pair(stype, density):
        """(opt1's dense copy, opt2's array in `stype`) holding the same random values."""
        if stype == "default":
            second = mx.nd.random.uniform(shape=shape, ctx=ctx, dtype=dtype)
            return second.copyto(ctx), second
        if stype not in ("row_sparse", "csr"):
            raise ValueError(f"compare_optimizer: unknown storage type {stype!r}")
        second = rand_ndarray(shape, stype, density=density, dtype=dtype)
        return second.tostype("default"), second

    if not isinstance(shape, list):
        if ntensors != 1:
            raise ValueError("compare_optimizer: ntensors > 1 needs a list of shapes")
        w1, w2 = pair(w_stype, 1)
        g1, g2 = pair(g_stype, None)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1 = [mx.nd.random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape]
    g1 = [mx.nd.random.uniform(shape=s, ctx=ctx, dtype=dtype) for s in shape]
    w2, g2 = [w.copy() for w in w1], [g.copy() for g in g1]
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


# ---------------------------------------------------------------------------------------------
# Random-generator checks (chi-square goodness of fit)
# ---------------------------------------------------------------------------------------------


def gen_buckets_probs_with_ppf(ppf: Callable[[float], float], nbuckets: int):
    """`nbuckets` equal-probability buckets [(low, high)] of a distribution given by its inverse
    CDF, and their probabilities."""
    edges = [ppf(i / float(nbuckets)) for i in range(nbuckets + 1)]
    return [(edges[i], edges[i + 1]) for i in range(nbuckets)], [1.0 / nbuckets] * nbuckets


def mean_check(generator: Callable[[int], np.ndarray], mu: float, sigma: float, nsamples: int = 1000000) -> bool:
    """True when the sample mean is within 3 standard errors of `mu`."""
    samples = np.asarray(generator(nsamples))
    return bool(abs(samples.mean() - mu) < 3 * sigma / np.sqrt(nsamples))


def var_check(generator: Callable[[int], np.ndarray], sigma: float, nsamples: int = 1000000) -> bool:
    """True when the sample variance is within 3 standard errors of sigma^2 (normal approximation)."""
    samples = np.asarray(generator(nsamples))
    return bool(abs(samples.var() - sigma ** 2) < 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1)))


def chi_square_check(generator: Callable[[int], np.ndarray], buckets, probs, nsamples: int = 1000000):
    """Chi-square test of `generator`'s samples against bucket probabilities.

    buckets: [(low, high)] ranges (continuous) or a list of values (discrete). Returns
    (p-value, observed frequencies, expected frequencies).
    """
    import scipy.stats

    if not np.isclose(sum(probs), 1.0, atol=1e-6):
        raise ValueError(f"chi_square_check: bucket probabilities sum to {sum(probs)}, not 1")
    samples = np.asarray(generator(nsamples)).ravel()
    if samples.size != nsamples:
        raise ValueError(f"chi_square_check: the generator gave {samples.size} samples, {nsamples} were asked")
    if isinstance(buckets[0], (list, tuple)):
        edges = [b[0] for b in buckets] + [buckets[-1][1]]
        if any(buckets[i][1] > buckets[i + 1][0] for i in range(len(buckets) - 1)):
            raise ValueError("chi_square_check: buckets must be sorted and must not overlap")
        observed = np.histogram(samples, bins=np.asarray(edges, dtype=np.float64))[0]
    else:
        observed = np.array([np.count_nonzero(samples == b) for b in buckets])
    expected = np.asarray(probs) * nsamples
    if observed.sum() < nsamples * 0.99:
        logging.warning("chi_square_check: %d of %d samples fall outside the buckets", nsamples - observed.sum(),
                        nsamples)
    p_value = scipy.stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue
    return p_value, observed, expected


def verify_generator(generator: Callable[[int], np.ndarray], buckets, probs, nsamples: int = 1000000,
                     nrepeat: int = 5, success_rate: float = 0.2, alpha: float = 0.05) -> List[float]:
    """Run chi_square_check `nrepeat` times; raise AssertionError unless at least `success_rate`
    of the runs have p > alpha. Returns the p-values."""
    p_values, observed, expected = [], [], []
    for _ in range(nrepeat):
        p, obs, exp = chi_square_check(generator, buckets, probs, nsamples)
        p_values.append(p)
        observed.append(obs)
        expected.append(exp)
    if (np.array(p_values) > alpha).mean() < success_rate:
        raise AssertionError(f"Generator test fails, chi-square p={p_values}, observed={observed}, "
                             f"expected={expected}\nbuckets={buckets}, probs={probs}")
    return p_values


# ---------------------------------------------------------------------------------------------
# Environment, devices, files
# ---------------------------------------------------------------------------------------------


@contextmanager
def environment(*args):
    """Set environment variables for the `with` body, then restore them (even after an error).

    environment('NAME', 'value') or environment({'NAME': 'value', 'OTHER': None}); None unsets.
    ember reads its variables through os.environ, so the change is seen at once.
    """
    if len(args) == 1 and isinstance(args[0], dict):
        env = dict(args[0])
    elif len(args) == 2:
        env = {args[0]: args[1]}
    else:
        raise TypeError("environment expects one dict of name -> value, or a name and a value")
    for name, value in env.items():
        if value is not None and not isinstance(value, str):
            raise TypeError(f"environment: the value of {name} must be a string or None, got {type(value).__name__}")
    saved = {name: os.environ.get(name) for name in env}

    def apply(values):
        for name, value in values.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    apply(env)
    try:
        yield
    finally:
        mx.nd.waitall()  # ops still running may read the variables
        apply(saved)


def list_gpus() -> range:
    """range(number of GPUs)."""
    return range(mx.num_gpus())


@contextmanager
def discard_stderr():
    """Send file descriptor 2 (stderr, also of native code) to /dev/null inside the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def download(url: str, fname: Optional[str] = None, dirname: Optional[str] = None, overwrite: bool = False,
             retries: int = 5) -> str:
    """Download `url` to `fname` (default: the URL's last part, under `dirname`); returns the path.

    An existing file is kept unless `overwrite`; failures are retried `retries` times, then raised.
    """
    if retries <= 0:
        raise ValueError(f"download: retries must be positive, got {retries}")
    if fname is None:
        fname = url.split("/")[-1] or "index.html"
    if dirname is not None:
        os.makedirs(dirname, exist_ok=True)
        fname = os.path.join(dirname, fname)
    elif os.path.dirname(fname):
        os.makedirs(os.path.dirname(fname), exist_ok=True)
    if os.path.exists(fname) and not overwrite:
        return fname
    for attempt in range(retries):
        try:
            with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 (caller's URL)
                data = response.read()
            tmp = f"{fname}.part{os.getpid()}"
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, fname)
            logging.info("downloaded %s into %s", url, fname)
            return fname
        except Exception as err:  # noqa: BLE001 (any network error is retried, the last one raised)
            if attempt == retries - 1:
                raise
            logging.info("download of %s failed (%s); %d retries left", url, err, retries - attempt - 1)
            time.sleep(min(2 ** attempt, 10))
    return fname


def is_cd_run() -> bool:
    """True inside a continuous-delivery job (CD_JOB=1)."""
    return os.environ.get("CD_JOB", "0") == "1"


def is_aarch64_run() -> bool:
    """True on an aarch64 machine."""
    return platform.machine() == "aarch64"


class DummyIter(mx.io.DataIter):
    """Yields the first batch of `real_iter` forever (for timing without data loading)."""

    def __init__(self, real_iter):
        super().__init__()
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.batch_size = real_iter.batch_size
        self.the_batch = next(iter(real_iter))

    def __iter__(self):
        return self

    def next(self):
        return self.the_batch


def check_gluon_hybridize_consistency(net_builder: Callable, data_l: Sequence, numpy_func: Optional[Callable] = None,
                                      test_grad: bool = True, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    """Check that a HybridBlock gives the same outputs (and input gradients) imperatively and hybridized.

    `net_builder(prefix=...)` makes the block (it must not draw random numbers); every build after the
    first starts from the first one's parameter values.  `numpy_func`, when given, is the expected
    function of the inputs' numpy values.
    """
    first_params: Optional[Dict[str, np.ndarray]] = None

    class _FromFirst(mx.init.Initializer):
        def _init_weight(self, name, arr):
            arr[()] = first_params[name]

    expected_out, expected_grads = None, None
    for hybridize in (False, True):
        for use_autograd in ((False, True) if test_grad else (False,)):
            net = net_builder(prefix="net_")
            net.initialize(None if first_params is None else _FromFirst())
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in data_l]
            if use_autograd:
                for x in inputs:
                    x.attach_grad()
                with mx.autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            if first_params is None:
                first_params = {k: v.data().asnumpy() for k, v in net.collect_params().items()}
            if expected_out is None:
                expected_out = out.asnumpy()
            else:
                assert_almost_equal(out.asnumpy(), expected_out, rtol=rtol, atol=atol)
            if use_autograd:
                grads = [x.grad.asnumpy() for x in inputs]
                if expected_grads is None:
                    expected_grads = grads
                else:
                    for got, want in zip(grads, expected_grads):
                        assert_almost_equal(got, want, rtol=rtol, atol=atol)
    if numpy_func is not None:
        assert_almost_equal(expected_out, numpy_func(*[x.asnumpy() for x in data_l]), rtol=rtol, atol=atol)
