"""`mx.nd.sparse`: sparse NDArrays (CSRNDArray, RowSparseNDArray), their constructors and operators.

Constructors follow MXNet 1.9.1: `csr_matrix` from (data, indices, indptr), (data, (row, col)),
a shape, a dense array, a CSRNDArray or a scipy.sparse matrix; `row_sparse_array` from
(data, indices), a shape, a dense array or a RowSparseNDArray; `zeros`/`empty`/`array`.
Every registry operator is also here (`mx.nd.sparse.<op>`): ops with a sparse kernel keep
sparse storage, the others compute on dense copies of sparse inputs (storage fallback,
docs/sparse.md).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..base import mx_real_t
from ..context import Context, current_context
from ..imperative.invoke import call as _call
from ..imperative.ndarray import NDArray
from ..imperative.sparse_ndarray import (AUX_DTYPE, BaseSparseNDArray, CSRNDArray,  # noqa: F401
                                         NotSupportedForSparseNDArray, RowSparseNDArray, from_dense_numpy,
                                         make_csr, make_row_sparse, sparse_zeros)
from ..imperative import sparse_ops as _sparse_ops
from ..ops import registry as _registry

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "csr_matrix", "row_sparse_array",
           "zeros", "empty", "array", "dot", "retain", "add", "subtract", "multiply", "divide",
           "elemwise_add", "elemwise_sub", "elemwise_mul", "cast_storage"]

_integer_types = (int, np.integer)


def _scipy_sparse():
    try:
        import scipy.sparse as spsp
        return spsp
    except ImportError:
        return None


def _is_scipy_csr(x) -> bool:
    spsp = _scipy_sparse()
    return spsp is not None and spsp.issparse(x) and x.format == "csr"


def _default_dtype(source, dtype):
    """dtype, or the source's dtype for arrays and scipy matrices, else float32 (as MXNet)."""
    if dtype is not None:
        return dtype
    if isinstance(source, (NDArray, np.ndarray)) or _is_scipy_csr(source):
        return source.dtype
    return mx_real_t


def _host_array(x, dtype) -> np.ndarray:
    if isinstance(x, NDArray):
        x = x.asnumpy()
    try:
        return np.asarray(x, dtype=dtype)
    except (TypeError, ValueError):
        raise TypeError("values must be array like object") from None


def _check_shape(s1, s2) -> None:
    if s1 and s2 and tuple(s1) != tuple(s2):
        raise ValueError(f"Shape mismatch detected. {tuple(s1)} v.s. {tuple(s2)}")


def _ctx(ctx) -> Context:
    return current_context() if ctx is None else ctx


# ------------------------------------------------------------------ constructors

def csr_matrix(arg1, shape=None, ctx=None, dtype=None) -> CSRNDArray:
    """A CSRNDArray from (data, indices, indptr), (data, (row, col)), a shape (all zeros), a dense
    array (NDArray, numpy, lists), a CSRNDArray or a scipy.sparse.csr_matrix."""
    if isinstance(arg1, tuple):
        if len(arg1) == 2:
            if isinstance(arg1[1], tuple) and len(arg1[1]) == 2:  # COO: (data, (row, col))
                spsp = _scipy_sparse()
                if spsp is None:
                    raise ImportError("csr_matrix from (data, (row, col)) needs scipy")
                dtype = _default_dtype(arg1[0], dtype)
                coo = spsp.coo_matrix((_host_array(arg1[0], dtype), (_host_array(arg1[1][0], AUX_DTYPE),
                                                                     _host_array(arg1[1][1], AUX_DTYPE))),
                                      shape=shape, dtype=dtype)
                _check_shape(coo.shape, shape)
                return array(coo.tocsr(), ctx=ctx, dtype=dtype)
            if not all(isinstance(d, _integer_types) for d in arg1):
                raise ValueError(f"Unexpected input tuple for csr_matrix: {arg1!r}")
            _check_shape(arg1, shape)
            return sparse_zeros("csr", arg1, _ctx(ctx), dtype)
        if len(arg1) == 3:
            return _csr_from_definition(arg1[0], arg1[1], arg1[2], shape, ctx, dtype)
        raise ValueError(f"Unexpected length of input tuple: {len(arg1)}")
    if isinstance(arg1, CSRNDArray) or _is_scipy_csr(arg1):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        raise ValueError("Unexpected input type: RowSparseNDArray")
    spsp = _scipy_sparse()
    if spsp is not None and spsp.issparse(arg1):  # another scipy format (coo, csc, ...)
        _check_shape(arg1.shape, shape)
        return array(spsp.csr_matrix(arg1), ctx=ctx, dtype=dtype)
    dtype = _default_dtype(arg1, dtype)
    dense = _host_array(arg1, dtype)
    _check_shape(dense.shape, shape)
    if dense.ndim != 2:
        raise ValueError(f"csr_matrix needs a 2-D array, got shape {dense.shape}")
    return from_dense_numpy("csr", dense, _ctx(ctx))


def _csr_from_definition(data, indices, indptr, shape, ctx, dtype) -> CSRNDArray:
    dtype = _default_dtype(data, dtype)
    data = _host_array(data, dtype)
    indices = _host_array(indices, AUX_DTYPE)
    indptr = _host_array(indptr, AUX_DTYPE)
    if shape is None:
        if indices.size == 0:
            raise ValueError("invalid shape: cannot infer the number of columns without indices")
        shape = (len(indptr) - 1, int(indices.max()) + 1)
    shape = tuple(int(d) for d in shape)
    if data.ndim != 1 or indptr.ndim != 1 or indices.ndim != 1 or indptr.shape[0] == 0 or len(shape) != 2:
        raise ValueError(f"invalid shape: data {data.shape}, indices {indices.shape}, indptr {indptr.shape} "
                         f"for a csr matrix of shape {shape}")
    return make_csr(data, indptr, indices, shape, _ctx(ctx), dtype)


def row_sparse_array(arg1, shape=None, ctx=None, dtype=None) -> RowSparseNDArray:
    """A RowSparseNDArray from (data, indices), a shape (all zeros), a dense array or a RowSparseNDArray."""
    if isinstance(arg1, tuple):
        if len(arg1) < 2:
            raise ValueError(f"Unexpected length of input tuple: {len(arg1)}")
        if len(arg1) > 2 or (isinstance(arg1[0], _integer_types) and isinstance(arg1[1], _integer_types)):
            if not all(isinstance(d, _integer_types) for d in arg1):
                raise ValueError(f"Unexpected input tuple for row_sparse_array: {arg1!r}")
            _check_shape(arg1, shape)
            return sparse_zeros("row_sparse", arg1, _ctx(ctx), dtype)
        return _row_sparse_from_definition(arg1[0], arg1[1], shape, ctx, dtype)
    if isinstance(arg1, RowSparseNDArray):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, CSRNDArray):
        raise ValueError("Unexpected input type: CSRNDArray")
    dtype = _default_dtype(arg1, dtype)
    dense = _host_array(arg1, dtype)
    _check_shape(dense.shape, shape)
    return from_dense_numpy("row_sparse", dense, _ctx(ctx))


def _row_sparse_from_definition(data, indices, shape, ctx, dtype) -> RowSparseNDArray:
    dtype = _default_dtype(data, dtype)
    data = _host_array(data, dtype)
    indices = _host_array(indices, AUX_DTYPE)
    if shape is None:
        if indices.size == 0:
            raise ValueError("invalid shape: cannot infer the number of rows without indices")
        shape = (int(indices[-1]) + 1,) + data.shape[1:]
    shape = tuple(int(d) for d in shape)
    if data.ndim != len(shape) or indices.ndim != 1 or int(np.prod(shape[1:])) == 0:
        raise ValueError(f"invalid shape: data {data.shape} and indices {indices.shape} for a row_sparse "
                         f"array of shape {shape}")
    return make_row_sparse(data, indices, shape, _ctx(ctx), dtype)


def zeros(stype: str, shape, ctx=None, dtype=None, **kwargs) -> NDArray:
    """An all-zero array of storage type `stype` ('default', 'row_sparse' or 'csr')."""
    if stype == "default":
        from ..imperative.creation import zeros as dense_zeros
        return dense_zeros(shape, ctx=ctx, dtype=dtype, **kwargs)
    if stype not in ("row_sparse", "csr"):
        raise ValueError(f"unknown storage type {stype}")
    return sparse_zeros(stype, shape, _ctx(ctx), dtype)


def empty(stype: str, shape, ctx=None, dtype=None) -> NDArray:
    """A new array of storage type `stype` with no stored values (sparse) or uninitialised (dense)."""
    if stype == "default":
        from ..imperative.creation import empty as dense_empty
        return dense_empty(shape, ctx=ctx, dtype=dtype)
    return zeros(stype, shape, ctx, dtype)


def array(source_array, ctx=None, dtype=None) -> BaseSparseNDArray:
    """A sparse array copied from a CSRNDArray, RowSparseNDArray or scipy.sparse.csr_matrix."""
    if isinstance(source_array, BaseSparseNDArray):
        result = source_array.copyto(_ctx(ctx) if ctx is not None else source_array.context)
        return result if dtype is None else result.astype(dtype, copy=False)
    if _is_scipy_csr(source_array):
        m = source_array.copy()
        m.sum_duplicates()  # canonical form: sorted column indices, no repeated entries
        dtype = m.dtype if dtype is None else dtype
        return make_csr(m.data, m.indptr, m.indices, m.shape, _ctx(ctx), dtype)
    raise ValueError("Unexpected source_array type: a CSRNDArray, RowSparseNDArray or "
                     f"scipy.sparse.csr_matrix is expected, got {type(source_array).__name__}")


# ------------------------------------------------------------------ operators

def cast_storage(data: NDArray, stype: str) -> NDArray:
    """A copy of `data` with storage type `stype`."""
    return _sparse_ops.cast_storage(data, stype)


def dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False,
        forward_stype=None) -> NDArray:
    """Matrix product with sparse operands (csr.dense -> dense, csr.T.dense -> row_sparse,
    dense.csr -> csr, ...); other combinations compute densely."""
    attrs = {"transpose_a": transpose_a, "transpose_b": transpose_b}
    if forward_stype is not None:
        attrs["forward_stype"] = forward_stype
    return _call("dot", (lhs, rhs), attrs)


def retain(data: RowSparseNDArray, indices=None, **kwargs) -> RowSparseNDArray:
    """Row_sparse `data` restricted to the rows listed in `indices` (zeros where data stores none)."""
    from ..base import MXNetError
    if kwargs:
        raise MXNetError(f"retain: unexpected arguments {sorted(kwargs)}; it takes data and indices")
    if indices is None:
        raise MXNetError("retain: required argument 'indices' is missing")
    return _sparse_ops.retain(data, indices)


_OPERATOR_NAMES = {"add": ("broadcast_add", "_plus_scalar", "_plus_scalar"),
                   "subtract": ("broadcast_sub", "_minus_scalar", "_rminus_scalar"),
                   "multiply": ("broadcast_mul", "_mul_scalar", "_mul_scalar"),
                   "divide": ("broadcast_div", "_div_scalar", "_rdiv_scalar")}


def _binary(kind: str, lhs, rhs):
    array_op, scalar_op, rscalar_op = _OPERATOR_NAMES[kind]
    if isinstance(lhs, NDArray):
        return _sparse_ops.binary(lhs, rhs, array_op, scalar_op)
    if isinstance(rhs, NDArray):
        return _sparse_ops.binary(rhs, lhs, array_op, rscalar_op, reflected=True)
    raise TypeError(f"{kind}: at least one operand must be an NDArray, got {type(lhs).__name__} "
                    f"and {type(rhs).__name__}")


def add(lhs, rhs) -> NDArray:
    """lhs + rhs, element-wise (same-shape sparse arrays of one format stay sparse; broadcasts otherwise)."""
    return _binary("add", lhs, rhs)


def subtract(lhs, rhs) -> NDArray:
    """lhs - rhs, element-wise (see `add`)."""
    return _binary("subtract", lhs, rhs)


def multiply(lhs, rhs) -> NDArray:
    """lhs * rhs, element-wise (see `add`)."""
    return _binary("multiply", lhs, rhs)


def divide(lhs, rhs) -> NDArray:
    """lhs / rhs, element-wise (computed densely unless rhs is a scalar)."""
    return _binary("divide", lhs, rhs)


def elemwise_add(lhs: NDArray, rhs: NDArray, out=None) -> NDArray:
    """lhs + rhs for same-shape arrays (row_sparse + row_sparse -> row_sparse, csr + csr -> csr)."""
    return _call("elemwise_add", (lhs, rhs), {} if out is None else {"out": out})


def elemwise_sub(lhs: NDArray, rhs: NDArray, out=None) -> NDArray:
    """lhs - rhs for same-shape arrays (keeps a common sparse format)."""
    return _call("elemwise_sub", (lhs, rhs), {} if out is None else {"out": out})


def elemwise_mul(lhs: NDArray, rhs: NDArray, out=None) -> NDArray:
    """lhs * rhs for same-shape arrays (keeps a common sparse format)."""
    return _call("elemwise_mul", (lhs, rhs), {} if out is None else {"out": out})


def _make_op_function(name: str) -> Callable:
    canonical = _registry.get(name).name

    def op_function(*args, **kwargs):
        return _call(canonical, args, kwargs)
    op_function.__name__ = name
    op_function.__doc__ = (f"The `{canonical}` operator; sparse inputs use its sparse kernel if it has one, "
                           "dense copies otherwise.")
    return op_function


def __getattr__(name: str):
    if name.startswith("__") or not _registry.exists(name):
        raise AttributeError(f"module 'ember.ndarray.sparse' has no attribute or operator '{name}'")
    fn = _make_op_function(name)
    globals()[name] = fn
    return fn
