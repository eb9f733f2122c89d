"""Sparse storage: CSRNDArray (2-D compressed sparse rows) and RowSparseNDArray (a subset of rows).

A sparse array is an NDArray subclass made of dense component NDArrays, in MXNet's order:

* csr:        values (nnz,), aux = (indptr (rows+1,), indices (nnz,))  -- int64 aux arrays
* row_sparse: values (k, *shape[1:]), aux = (indices (k,),)

The NDArray base fields (`_data`, `_chunk`) are the values component, so device, dtype and
liveness checks work unchanged; `shape` is the logical (dense) shape.  Sparse kernels and the
conversions here read components on the host after waiting for them (they are synchronous,
not engine ops: a sparse result's size is only known once its inputs are).  Operators without a
sparse kernel see dense copies of sparse inputs (MXNet's storage fallback, `sparse_ops.py`).
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple

import numpy as np

from ..base import MXNetError, ShapeError
from ..context import Context, current_context
from .ndarray import NDArray, _as_dtype

STYPES = ("default", "row_sparse", "csr")
AUX_DTYPE = np.dtype(np.int64)  # MXNet's aux types for both formats (indptr and indices)


class NotSupportedForSparseNDArray(MXNetError, NotImplementedError):
    """An NDArray method that sparse arrays do not have (MXNet's class of the same name)."""

    def __init__(self, function: str, alias: Optional[str] = None):
        what = function if alias is None else f"{function} ({alias})"
        super().__init__(f"Function {what} is not supported for SparseNDArray.")


def _check_stype(stype) -> str:
    if stype not in STYPES:
        raise ValueError(f"unknown storage type {stype!r}; expected one of {', '.join(STYPES)}")
    return stype


def _component(values: np.ndarray, ctx: Context, dtype) -> NDArray:
    from .creation import array
    return array(values, ctx=ctx, dtype=dtype)


# ------------------------------------------------------------------ dense <-> sparse on the host

def dense_to_csr(dense: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, indptr, indices) of a 2-D array's non-zeros, columns ascending within each row."""
    if dense.ndim != 2:
        raise ShapeError(f"csr storage needs a 2-D array, got shape {dense.shape}")
    rows, cols = np.nonzero(dense)
    indptr = np.zeros(dense.shape[0] + 1, dtype=AUX_DTYPE)
    np.cumsum(np.bincount(rows, minlength=dense.shape[0]), out=indptr[1:])
    return dense[rows, cols], indptr, cols.astype(AUX_DTYPE)


def dense_to_row_sparse(dense: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(values, row indices) of the rows of `dense` that hold a non-zero."""
    if dense.ndim < 1:
        raise MXNetError("row_sparse storage needs an array with at least one dimension")
    nonzero_rows = np.flatnonzero(dense.reshape(dense.shape[0], -1).any(axis=1)) if dense.size else \
        np.zeros(0, dtype=AUX_DTYPE)
    return dense[nonzero_rows], nonzero_rows.astype(AUX_DTYPE)


def csr_to_dense(values: np.ndarray, indptr: np.ndarray, indices: np.ndarray, shape) -> np.ndarray:
    dense = np.zeros(shape, dtype=values.dtype)
    rows = np.repeat(np.arange(shape[0]), np.diff(indptr))
    dense[rows, indices] = values
    return dense


def row_sparse_to_dense(values: np.ndarray, indices: np.ndarray, shape) -> np.ndarray:
    dense = np.zeros(shape, dtype=values.dtype)
    dense[indices] = values
    return dense


# ------------------------------------------------------------------ the classes

class BaseSparseNDArray(NDArray):
    """An NDArray stored sparsely (MXNet's base of CSRNDArray and RowSparseNDArray)."""

    __slots__ = ("_sparse_shape", "_aux")
    _STYPE = ""

    def __init__(self, values: NDArray, aux: Sequence[NDArray], shape):
        NDArray.__init__(self, values._data, values._chunk)
        self._aux = tuple(aux)
        self._sparse_shape = tuple(int(d) for d in shape)

    # -- structure ---------------------------------------------------------------------------
    @property
    def stype(self) -> str:
        return self._STYPE

    @property
    def shape(self) -> Tuple[int, ...]:
        return self._sparse_shape

    @property
    def ndim(self) -> int:
        return len(self._sparse_shape)

    @property
    def size(self) -> int:
        # as in MXNet: the size of a sparse array is ambiguous (stored or logical), so undefined
        raise NotImplementedError("size is not defined for sparse arrays; use .shape or .data.size")

    @property
    def _num_aux(self) -> int:
        return len(self._aux)

    @property
    def _aux_types(self):
        return [a.dtype for a in self._aux]

    def _aux_type(self, i: int):
        return self._aux[i].dtype

    def _values(self) -> NDArray:
        """The values component itself (not a copy)."""
        return NDArray(self._data, self._chunk)

    @property
    def data(self) -> NDArray:
        """A copy of the stored values (csr) or rows (row_sparse)."""
        return self._values().copy()

    def _aux_data(self, i: int) -> NDArray:
        """A copy of the i-th auxiliary array (indptr/indices)."""
        return self._aux[i].copy()

    def _replace(self, other: "BaseSparseNDArray") -> None:
        """Take `other`'s components (same format and shape): in-place assignment."""
        self._data, self._chunk, self._aux = other._data, other._chunk, other._aux

    # -- reading -----------------------------------------------------------------------------
    def wait_to_read(self) -> None:
        NDArray.wait_to_read(self)
        for a in self._aux:
            a.wait_to_read()

    wait_to_write = wait_to_read

    def _host_components(self):
        """(values, aux...) as numpy arrays (waits for them)."""
        return (NDArray.asnumpy(self),) + tuple(a.asnumpy() for a in self._aux)

    def asnumpy(self) -> np.ndarray:
        """The dense values as a numpy array."""
        return self._to_dense_numpy()

    def asscalar(self):
        shape = self.shape
        if int(np.prod(shape)) != 1:
            raise ValueError(f"the current array is not a scalar: shape {shape}")
        return self.asnumpy().reshape(())[()]

    def __repr__(self) -> str:
        shape = "x".join(str(d) for d in self.shape)
        return f"\n<{type(self).__name__} {shape} @{self.context}>"

    __str__ = __repr__

    def __bool__(self) -> bool:
        raise ValueError("The truth value of a sparse NDArray is ambiguous.")

    def __iter__(self):
        raise NotSupportedForSparseNDArray("__iter__")

    def __setitem__(self, key, value):
        _set_whole(self, key, value)

    def __reduce__(self):
        return (_rebuild, (self._STYPE, self.shape, self._host_components(), self.context))

    def check_format(self, full_check: bool = True) -> None:
        """Raise MXNetError if the components do not describe a valid array of this format."""
        problem = self._format_problem(self._host_components(), full_check)
        if problem:
            raise MXNetError(f"{type(self).__name__} of shape {self.shape} is malformed: {problem}")

    # -- conversion and copies ---------------------------------------------------------------
    def copy(self) -> "BaseSparseNDArray":
        return self.copyto(self.context)

    def copyto(self, other):
        """Copy into `other` (an array of this or default storage and the same shape), or onto a Context."""
        if isinstance(other, Context):
            return type(self)(self._values().copyto(other), [a.copyto(other) for a in self._aux], self.shape)
        if not isinstance(other, NDArray):
            raise TypeError(f"copyto does not support type {type(other).__name__}")
        if other is self:
            return self
        if other.stype not in ("default", self._STYPE):
            raise TypeError(f"copyto does not support destination NDArray stype {other.stype}")
        if other.shape != self.shape:
            raise ValueError(f"copyto: shape mismatch, source {self.shape} vs destination {other.shape}")
        from .sparse_ops import assign
        assign(other, self)
        return other

    def astype(self, dtype, copy: bool = True):
        """A copy with values of `dtype` (self when copy=False and the dtype already matches)."""
        dtype = np.dtype(_as_dtype(dtype))
        if not copy and dtype == self._data.dtype:
            return self
        return type(self)(self._values().astype(dtype), [a.copy() for a in self._aux], self.shape)

    def detach(self):
        """The same storage outside any autograd graph (a new handle, as MXNet's detach)."""
        return type(self)(self._values(), self._aux, self.shape)

    def reshape(self, *shape, **kwargs):
        raise NotSupportedForSparseNDArray("reshape")

    def as_np_ndarray(self):
        raise NotSupportedForSparseNDArray("as_np_ndarray", "mx.np arrays are dense")

    # -- the dense form ----------------------------------------------------------------------
    def _to_dense_numpy(self) -> np.ndarray:
        raise NotImplementedError

    def _format_problem(self, components, full_check: bool) -> str:
        raise NotImplementedError


class CSRNDArray(BaseSparseNDArray):
    """A 2-D array in compressed sparse row format: row i's column indices are
    `indices[indptr[i]:indptr[i+1]]` and its values the same slice of `data`."""

    __slots__ = ()
    _STYPE = "csr"

    @property
    def indptr(self) -> NDArray:
        """A copy of the row pointer array (rows + 1 entries)."""
        return self._aux[0].copy()

    @property
    def indices(self) -> NDArray:
        """A copy of the column indices of the stored values."""
        return self._aux[1].copy()

    def _to_dense_numpy(self) -> np.ndarray:
        values, indptr, indices = self._host_components()
        return csr_to_dense(values, indptr, indices, self.shape)

    def asscipy(self):
        """The array as a `scipy.sparse.csr_matrix` (a copy)."""
        try:
            import scipy.sparse as spsp
        except ImportError:
            raise ImportError("scipy could not be imported. Please make sure that scipy is installed.") from None
        values, indptr, indices = self._host_components()
        return spsp.csr_matrix((values, indices, indptr), shape=self.shape, dtype=values.dtype)

    def _format_problem(self, components, full_check: bool) -> str:
        values, indptr, indices = components
        rows, cols = self.shape
        if indptr.shape != (rows + 1,):
            return f"indptr has shape {indptr.shape}, expected ({rows + 1},)"
        if values.shape != indices.shape:
            return f"data has shape {values.shape} but indices {indices.shape}"
        if indptr[0] != 0 or indptr[-1] != indices.shape[0]:
            return f"indptr must start at 0 and end at nnz={indices.shape[0]}, got {indptr[0]}..{indptr[-1]}"
        if not full_check:
            return ""
        if (np.diff(indptr) < 0).any():
            return "indptr is not non-decreasing"
        if indices.size and (indices.min() < 0 or indices.max() >= cols):
            return f"a column index is outside [0, {cols})"
        for r in range(rows):
            seg = indices[indptr[r]:indptr[r + 1]]
            if seg.size > 1 and (np.diff(seg) <= 0).any():
                return f"the column indices of row {r} are not strictly ascending"
        return ""

    def __getitem__(self, key):
        """Rows `key` (an int or a step-1 slice) as a CSRNDArray."""
        rows = self.shape[0]
        if isinstance(key, (int, np.integer)):
            k = int(key)
            if not -rows <= k < rows:
                raise IndexError(f"index {key} is out of bounds for axis 0 with size {rows}")
            k %= rows
            key = slice(k, k + 1)
        if isinstance(key, slice):
            if key.step not in (None, 1):
                raise ValueError("CSRNDArray only supports continuous slicing on axis 0")
            start, stop, _ = key.indices(rows)
            stop = max(stop, start)
            values, indptr, indices = self._host_components()
            lo, hi = indptr[start], indptr[stop]
            return make_csr(values[lo:hi], indptr[start:stop + 1] - lo, indices[lo:hi],
                            (stop - start, self.shape[1]), self.context)
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise ValueError(f"Undefined behaviour for {key!r}")


class RowSparseNDArray(BaseSparseNDArray):
    """Rows `indices` of an array of `shape` (ascending); every other row is zero."""

    __slots__ = ()
    _STYPE = "row_sparse"

    @property
    def indices(self) -> NDArray:
        """A copy of the stored rows' indices."""
        return self._aux[0].copy()

    def _to_dense_numpy(self) -> np.ndarray:
        values, indices = self._host_components()
        return row_sparse_to_dense(values, indices, self.shape)

    def _format_problem(self, components, full_check: bool) -> str:
        values, indices = components
        if values.shape[1:] != self.shape[1:] or values.shape[0] != indices.shape[0]:
            return f"data has shape {values.shape} for {indices.shape[0]} indices of rows of {self.shape[1:]}"
        if not full_check:
            return ""
        if indices.size and (indices.min() < 0 or indices.max() >= self.shape[0]):
            return f"a row index is outside [0, {self.shape[0]})"
        if indices.size > 1 and (np.diff(indices) <= 0).any():
            return "the row indices are not strictly ascending"
        return ""

    def __getitem__(self, key):
        if isinstance(key, slice) and key.start is None and key.stop is None and key.step is None:
            return self
        if isinstance(key, tuple):
            raise ValueError("Multi-dimension indexing is not supported")
        raise ValueError("RowSparseNDArray only supports [:] for __getitem__")

    def retain(self, indices) -> "RowSparseNDArray":
        """The rows of this array whose index is in `indices` (see `mx.nd.sparse.retain`)."""
        from .sparse_ops import retain
        return retain(self, indices)


def _set_whole(target: BaseSparseNDArray, key, value) -> None:
    """`target[:] = value` (the only assignment sparse arrays support, as in MXNet)."""
    if not (isinstance(key, slice) and key.start is None and key.stop is None and key.step is None):
        raise ValueError(f"{type(target).__name__} only supports [:] for assignment")
    from .sparse_ops import assign
    if isinstance(value, NDArray):
        if value is not target:
            if value.shape != target.shape:
                raise ValueError(f"cannot assign an array of shape {value.shape} to one of shape {target.shape}")
            assign(target, value)
    elif isinstance(value, (np.ndarray, np.generic)):
        from .creation import array
        assign(target, array(value, ctx=target.context, dtype=target.dtype))
    elif isinstance(value, (int, float, np.generic)):
        if not isinstance(target, RowSparseNDArray):
            raise ValueError(f"Assigning numeric types to {type(target).__name__} is not implemented yet.")
        # as MXNet: every row becomes stored, filled with the value
        rows = target.shape[0]
        target._replace(make_row_sparse(np.full(target.shape, value, dtype=target.dtype),
                                        np.arange(rows, dtype=AUX_DTYPE), target.shape, target.context))
    else:
        raise TypeError(f"type {type(value).__name__} not supported")


# ------------------------------------------------------------------ construction

def make_csr(values: np.ndarray, indptr: np.ndarray, indices: np.ndarray, shape, ctx: Optional[Context] = None,
             dtype=None) -> CSRNDArray:
    """A CSRNDArray from host components (copied; aux arrays stored as int64)."""
    ctx = ctx or current_context()
    dtype = values.dtype if dtype is None else dtype
    return CSRNDArray(_component(values, ctx, dtype),
                      [_component(indptr, ctx, AUX_DTYPE), _component(indices, ctx, AUX_DTYPE)], shape)


def make_row_sparse(values: np.ndarray, indices: np.ndarray, shape, ctx: Optional[Context] = None,
                    dtype=None) -> RowSparseNDArray:
    """A RowSparseNDArray from host components (copied; indices stored as int64)."""
    ctx = ctx or current_context()
    dtype = values.dtype if dtype is None else dtype
    return RowSparseNDArray(_component(values, ctx, dtype), [_component(indices, ctx, AUX_DTYPE)], shape)


def sparse_zeros(stype: str, shape, ctx: Optional[Context] = None, dtype=None) -> BaseSparseNDArray:
    """An all-zero sparse array (no stored values)."""
    from .creation import _dtype, _shape
    shape, dtype = _shape(shape), _dtype(dtype)
    if stype == "csr":
        if len(shape) != 2:
            raise ValueError(f"csr storage needs a 2-D shape, got {shape}")
        return make_csr(np.zeros(0, dtype), np.zeros(shape[0] + 1, AUX_DTYPE), np.zeros(0, AUX_DTYPE),
                        shape, ctx)
    if stype == "row_sparse":
        if len(shape) < 1:
            raise ValueError("row_sparse storage needs at least one dimension")
        return make_row_sparse(np.zeros((0,) + shape[1:], dtype), np.zeros(0, AUX_DTYPE), shape, ctx)
    raise ValueError(f"unknown storage type {stype!r}; expected 'row_sparse' or 'csr'")


def from_dense_numpy(stype: str, dense: np.ndarray, ctx: Optional[Context] = None) -> BaseSparseNDArray:
    """The sparse array of `stype` holding the non-zeros of a dense host array."""
    if stype == "csr":
        values, indptr, indices = dense_to_csr(dense)
        return make_csr(values, indptr, indices, dense.shape, ctx)
    if stype == "row_sparse":
        values, indices = dense_to_row_sparse(dense)
        return make_row_sparse(values, indices, dense.shape, ctx)
    raise ValueError(f"unknown storage type {stype!r}; expected 'row_sparse' or 'csr'")


def _rebuild(stype: str, shape, components, ctx):
    """Unpickling: a sparse array from host components."""
    if stype == "csr":
        return make_csr(components[0], components[1], components[2], shape, ctx)
    return make_row_sparse(components[0], components[1], shape, ctx)
