"""Operators on sparse arrays: the sparse kernels, and MXNet's storage fallback for the rest.

`run` is what the imperative invoke path calls when an input (or `out=`) is sparse:

* a registry op with a sparse kernel here (`SPARSE_KERNELS`) for the given storage types
  runs it and returns a sparse (or, where MXNet's storage inference says so, dense) result;
* any other op sees dense copies of its sparse inputs and runs its ordinary kernel (MXNet's
  "storage fallback"); a sparse `out=` receives the dense result converted to its format.

The kernels compute on the host with numpy/scipy after waiting for their inputs.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

import numpy as np

from ..base import MXNetError
from .ndarray import ARITHMETIC, COMPARISONS, OPERATOR_ALIASES, NDArray, _is_scalar
from .sparse_ndarray import (AUX_DTYPE, BaseSparseNDArray, CSRNDArray, RowSparseNDArray, _check_stype,
                             dense_to_csr, dense_to_row_sparse, from_dense_numpy, make_csr, make_row_sparse,
                             sparse_zeros)


def stype_of(x) -> str:
    return x.stype if isinstance(x, NDArray) else "default"


def densify(x: NDArray) -> NDArray:
    """A dense copy of a sparse array (a dense array is returned as is)."""
    if not isinstance(x, BaseSparseNDArray):
        return x
    from .creation import array
    return array(x.asnumpy(), ctx=x.context, dtype=x.dtype)


# ------------------------------------------------------------------ storage conversion

def cast_storage(x: NDArray, stype: str) -> NDArray:
    """A copy of `x` with storage type `stype` (MXNet's cast_storage / tostype)."""
    _check_stype(stype)
    src = stype_of(x)
    if {src, stype} == {"csr", "row_sparse"}:
        raise ValueError(f"cast_storage from {src} to {stype} is not supported")
    if stype == "default":
        return densify(x) if src != "default" else x.copy()
    if src == stype:
        return x.copy()
    return from_dense_numpy(stype, x.asnumpy(), x.context)


def assign(target: NDArray, source: NDArray) -> None:
    """Write `source`'s values into `target` (same shape), converting storage to `target`'s."""
    if isinstance(target, BaseSparseNDArray):
        converted = cast_storage(source, target.stype) if stype_of(source) != target.stype else source
        converted = converted.as_in_context(target.context)
        values = converted._values()
        if values.dtype != target.dtype or converted is source:  # a copy: target must not share source's
            values = values.astype(target.dtype)
        target._replace(type(target)(values, [a.copy() for a in converted._aux], target.shape))
    else:
        densify(source).copyto(target)


# ------------------------------------------------------------------ sparse kernels

def retain(data: NDArray, indices) -> RowSparseNDArray:
    """Row_sparse `data` restricted to the rows `indices` (MXNet's sparse.retain): the result stores
    exactly those rows, in the given order, with zeros for rows `data` does not store."""
    if not isinstance(data, RowSparseNDArray):
        raise MXNetError(f"retain expects a row_sparse array as data, got storage type {stype_of(data)}")
    wanted = np.asarray(indices.asnumpy() if isinstance(indices, NDArray) else indices).astype(AUX_DTYPE).ravel()
    if wanted.size and (wanted.min() < 0 or wanted.max() >= data.shape[0]):
        raise MXNetError(f"retain: row indices must be in [0, {data.shape[0]}), got {wanted.tolist()}")
    values, rows = data._host_components()
    # as MXNet: the result stores exactly the requested rows, zero where `data` stores none
    out = np.zeros((wanted.size,) + tuple(data.shape[1:]), values.dtype)
    pos = np.searchsorted(rows, wanted)
    found = pos < rows.size
    found[found] = rows[pos[found]] == wanted[found]
    out[found] = values[pos[found]]
    return make_row_sparse(out, wanted, data.shape, data.context)


def _read_view(x: NDArray) -> np.ndarray:
    """x's values for reading only, without a copy where they live on the host (waits for writes)."""
    x.wait_to_read()
    data = x._data
    if not isinstance(data, np.ndarray):
        return NDArray.asnumpy(x)
    view = data.view()
    view.flags.writeable = False
    return view


def _scipy_csr_view(x: CSRNDArray):
    """A scipy CSR matrix over read-only views of x's components: no copies, and no index-dtype
    conversion (scipy's constructor would copy int64 indices that fit into int32; its kernels
    take either), so a product costs what scipy's own does."""
    import scipy.sparse as spsp
    m = spsp.csr_matrix(x.shape, dtype=x.dtype)
    m.data, m.indptr, m.indices = _read_view(x), _read_view(x._aux[0]), _read_view(x._aux[1])
    return m


def dot(lhs: NDArray, rhs: NDArray, transpose_a: bool = False, transpose_b: bool = False,
        forward_stype: Optional[str] = None) -> Optional[NDArray]:
    """dot with a sparse operand, with MXNet's output storage types:

    csr . dense -> dense; csr.T . dense -> row_sparse; csr . row_sparse -> dense;
    dense . csr -> csr (dense with transpose_b); `forward_stype` overrides the output storage.
    None for combinations without a sparse kernel (the caller falls back to dense).
    """
    ls, rs = stype_of(lhs), stype_of(rhs)
    if ls == "csr" and rs in ("default", "row_sparse"):
        if lhs.ndim != 2 or rhs.ndim != 2:
            return None
        if rs == "default" and not transpose_a and (forward_stype or "default") == "default":
            fast = _csr_times_dense(lhs, rhs, transpose_b)
            if fast is not None:
                return _as_stype(fast, "default", lhs.context)
        a = _scipy_csr_view(lhs)
        b = _read_view(rhs) if rs == "default" else rhs.asnumpy()
        if transpose_b:
            b = b.T
        a = a.T if transpose_a else a
        if a.shape[1] != b.shape[0]:
            raise MXNetError(f"dot: shape mismatch, lhs{'.T' if transpose_a else ''} {a.shape} and "
                             f"rhs{'.T' if transpose_b else ''} {b.shape}")
        result = np.asarray(a @ b, dtype=np.result_type(lhs.dtype, rhs.dtype))
        default_out = "row_sparse" if (transpose_a and rs == "default") else "default"
        out_stype = forward_stype or default_out
        if out_stype == "row_sparse" and transpose_a:
            # the rows that can be non-zero are the csr's columns that hold a value
            rows = np.unique(lhs._host_components()[2])
            return make_row_sparse(result[rows], rows, result.shape, lhs.context)
        return _as_stype(result, out_stype, lhs.context)
    if ls == "default" and rs == "csr" and not transpose_a:
        if lhs.ndim != 2:
            return None
        b = rhs.asscipy()
        b = b.T if transpose_b else b
        a = lhs.asnumpy()
        if a.shape[1] != b.shape[0]:
            raise MXNetError(f"dot: shape mismatch, lhs {a.shape} and rhs{'.T' if transpose_b else ''} {b.shape}")
        result = np.asarray((b.T @ a.T).T, dtype=np.result_type(lhs.dtype, rhs.dtype))
        out_stype = forward_stype or ("default" if transpose_b else "csr")
        return _as_stype(result, out_stype, lhs.context)
    return None


def _csr_times_dense(lhs: CSRNDArray, rhs: NDArray, transpose_b: bool) -> Optional[np.ndarray]:
    """csr . dense computed by scipy's own CSR kernel (`csr_matvecs`, what `csr @ dense` runs) on
    views of the components, without building a scipy matrix (its constructor costs tens of
    microseconds, more than the product of a small matrix); None where that kernel does not apply
    (mixed dtypes, other index types, no such kernel in this scipy), and the general path runs."""
    try:
        from scipy.sparse import _sparsetools
        kernel = _sparsetools.csr_matvecs
    except (ImportError, AttributeError):
        return None
    indptr_nd, indices_nd = lhs._aux
    dt = lhs._data.dtype
    if rhs._data.dtype != dt or dt.kind != "f" or indptr_nd._data.dtype != indices_nd._data.dtype:
        return None
    b = _read_view(rhs)
    if transpose_b:
        b = b.T
    rows, cols = lhs.shape
    if cols != b.shape[0]:
        raise MXNetError(f"dot: shape mismatch, lhs {lhs.shape} and rhs{'.T' if transpose_b else ''} {b.shape}")
    b = np.ascontiguousarray(b)
    result = np.zeros((rows, b.shape[1]), dtype=dt)
    kernel(rows, cols, b.shape[1], _read_view(indptr_nd), _read_view(indices_nd), _read_view(lhs), b.ravel(),
           result.ravel())
    return result


def _as_stype(dense: np.ndarray, stype: str, ctx) -> NDArray:
    if stype == "default":
        from .creation import array, from_numpy
        if ctx.device_type == "cpu" and dense.flags.c_contiguous and dense.flags.owndata:
            return from_numpy(dense)  # a fresh result: the NDArray takes its memory over, no copy
        return array(dense, ctx=ctx, dtype=dense.dtype)
    return from_dense_numpy(stype, dense, ctx)


def _same_format_elemwise(ufunc: Callable, scipy_op: Callable) -> Callable:
    """lhs (op) rhs for two sparse arrays of one format and shape; the result keeps that format.

    row_sparse: computed on the union of the stored rows; csr: with scipy.sparse (`scipy_op`)."""
    def kernel(inputs, attrs):
        lhs, rhs = inputs
        if not (isinstance(lhs, BaseSparseNDArray) and lhs.stype == stype_of(rhs)) or lhs.shape != rhs.shape:
            return None
        dtype = np.result_type(lhs.dtype, rhs.dtype)
        if isinstance(lhs, RowSparseNDArray):
            (lv, li), (rv, ri) = lhs._host_components(), rhs._host_components()
            rows = np.union1d(li, ri).astype(AUX_DTYPE)
            a = np.zeros((rows.size,) + lhs.shape[1:], dtype)
            b = np.zeros_like(a)
            a[np.searchsorted(rows, li)] = lv
            b[np.searchsorted(rows, ri)] = rv
            return make_row_sparse(ufunc(a, b).astype(dtype, copy=False), rows, lhs.shape, lhs.context)
        result = scipy_op(lhs.asscipy(), rhs.asscipy()).tocsr()
        result.sum_duplicates()  # canonical: one entry per position, columns ascending
        return make_csr(result.data.astype(dtype, copy=False), result.indptr, result.indices, lhs.shape,
                        lhs.context)
    return kernel


def _with_dense(sparse: BaseSparseNDArray, dense: NDArray, ufunc: Callable, sparse_first: bool = True):
    """`sparse (op) dense` for an op with 0 (op) y == 0: the sparse pattern, values from the dense
    operand (broadcast to the sparse shape) at the stored positions.  None if they do not broadcast."""
    try:
        other = np.broadcast_to(dense.asnumpy(), sparse.shape)
    except ValueError:
        return None  # the dense path reports the shape error
    dtype = np.result_type(sparse.dtype, dense.dtype)
    comps = sparse._host_components()
    if isinstance(sparse, CSRNDArray):
        values, indptr, indices = comps
        at = other[np.repeat(np.arange(sparse.shape[0]), np.diff(indptr)), indices]
    else:
        values, indices = comps
        at = other[indices]
    out = ufunc(values, at) if sparse_first else ufunc(at, values)
    out = np.asarray(out, dtype=dtype)
    aux = [a.copy() for a in sparse._aux]
    from .creation import array
    return type(sparse)(array(out, ctx=sparse.context, dtype=dtype), aux, sparse.shape)


def _elemwise_mul_kernel(inputs, attrs):
    lhs, rhs = inputs
    if isinstance(lhs, BaseSparseNDArray) and stype_of(rhs) == "default" and lhs.shape == rhs.shape:
        return _with_dense(lhs, rhs, np.multiply)
    if isinstance(rhs, BaseSparseNDArray) and stype_of(lhs) == "default" and lhs.shape == rhs.shape:
        return _with_dense(rhs, lhs, np.multiply, sparse_first=False)
    return _same_format_elemwise(np.multiply, lambda a, b: a.multiply(b))(inputs, attrs)


def _broadcast_with_csr(ufunc: Callable) -> Callable:
    """broadcast_mul/div(csr, dense): csr, as MXNet (the dense operand broadcast over the csr shape)."""
    def kernel(inputs, attrs):
        lhs, rhs = inputs
        if not isinstance(lhs, CSRNDArray) or stype_of(rhs) != "default" or rhs.ndim > 2:
            return None
        return _with_dense(lhs, rhs, ufunc)
    return kernel


def _take_kernel(inputs, attrs):
    """take(csr, indices, axis=0): the selected rows as a csr array (MXNet's sparse take)."""
    data, idx = inputs
    if not isinstance(data, CSRNDArray) or isinstance(idx, BaseSparseNDArray) or attrs["axis"] != 0:
        return None
    rows = data.shape[0]
    want = idx.asnumpy().astype(np.int64).ravel()
    if attrs["mode"] == "wrap":
        want = np.mod(want, rows)
    elif attrs["mode"] == "clip":
        want = np.clip(want, 0, rows - 1)
    elif want.size and (want.min() < -rows or want.max() >= rows):
        raise MXNetError(f"take: an index is outside the {rows} rows (mode='raise')")
    picked = data.asscipy()[want % rows if rows else want]
    return make_csr(picked.data.astype(data.dtype, copy=False), picked.indptr, picked.indices,
                    (want.size, data.shape[1]), data.context)


def _slice_kernel(inputs, attrs):
    """slice of a csr array with unit steps: a csr array (MXNet; other steps use the dense fallback)."""
    x = inputs[0]
    if not isinstance(x, CSRNDArray):
        return None
    begin, end, step = tuple(attrs["begin"]), tuple(attrs["end"]), tuple(attrs.get("step") or ())
    if any(st not in (None, 1) for st in step) or len(begin) != len(end) or not 1 <= len(begin) <= 2:
        return None
    ranges = [slice(b, e).indices(n)[:2] for b, e, n in zip(begin, end, x.shape)]
    (r0, r1), (c0, c1) = ranges[0], (ranges[1] if len(ranges) == 2 else (0, x.shape[1]))
    part = x.asscipy()[r0:max(r0, r1), c0:max(c0, c1)].tocsr()
    part.sort_indices()
    return make_csr(part.data.astype(x.dtype, copy=False), part.indptr, part.indices, part.shape, x.context)


def _dot_kernel(inputs, attrs):
    return dot(inputs[0], inputs[1], bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b")),
               attrs.get("forward_stype"))


def _retain_kernel(inputs, attrs):
    data, indices = inputs
    return retain(data, indices) if isinstance(data, RowSparseNDArray) else None


def _zeros_like_kernel(inputs, attrs):
    x = inputs[0]
    return sparse_zeros(x.stype, x.shape, x.context, x.dtype) if isinstance(x, BaseSparseNDArray) else None


def _cast_storage_kernel(inputs, attrs):
    return cast_storage(inputs[0], attrs["stype"])


# Sparse kernels of ops whose results are not just their elementwise op on the stored values (those
# run through `_on_stored_values`, decided by the op's storage-type rule); output storage types follow
# each op's `infer_stype`.
SPARSE_KERNELS: Dict[str, Callable] = {
    "dot": _dot_kernel,
    "_sparse_retain": _retain_kernel,
    "take": _take_kernel,
    "slice": _slice_kernel,
    "cast_storage": _cast_storage_kernel,
    "zeros_like": _zeros_like_kernel,
    "elemwise_add": _same_format_elemwise(np.add, lambda a, b: a + b),
    "elemwise_sub": _same_format_elemwise(np.subtract, lambda a, b: a - b),
    "elemwise_mul": _elemwise_mul_kernel,
    "broadcast_mul": _broadcast_with_csr(np.multiply),
    "broadcast_div": _broadcast_with_csr(np.divide),
}


# ------------------------------------------------------------------ the invoke hook

def run(opdef, inputs, attrs: dict, out=None, ctx=None):
    """Run registry op `opdef` where an input or `out=` is sparse (see the module docstring).

    The results have the storage types the op's `infer_stype` gives for the inputs' (the registry's
    rule, which executors follow too): a sparse kernel's result is checked against it, a dense
    fallback's result converted to it.  Under autograd.record() the sparse kernels are skipped and the
    dense result is returned as is (the tape records dense arrays)."""
    from . import autograd_state
    from .invoke import run as dense_run
    recording = autograd_state.is_recording()
    wanted = opdef.stypes(attrs, [stype_of(x) for x in inputs])  # raises for combinations the op refuses
    if not recording and _on_stored_values(opdef, inputs, attrs, wanted):
        return _deliver(type(inputs[0])(dense_run(opdef, [inputs[0]._values()], attrs), [a.copy() for a in inputs[0]._aux],
                                        inputs[0].shape), out)
    kernel = SPARSE_KERNELS.get(opdef.name)
    if kernel is not None and not recording:
        result = kernel(list(inputs), attrs)
        if result is not None:
            return _deliver(_as_wanted(result, wanted), out)
    dense_inputs = [_densify_recorded(x) for x in inputs]
    targets = [out] if isinstance(out, NDArray) else list(out) if out is not None else []
    sparse_out = any(isinstance(t, BaseSparseNDArray) for t in targets)
    result = dense_run(opdef, dense_inputs, attrs, None if sparse_out else out, ctx)
    # ops that write their inputs in place (optimizer states) or their aux states (BN statistics, a
    # custom op's aux) wrote the dense copies
    n_in = len(opdef.input_names(attrs))
    for i in [*opdef.mutated_inputs(attrs), *range(n_in, len(inputs))]:
        if i < len(inputs) and isinstance(inputs[i], BaseSparseNDArray):
            assign(inputs[i], dense_inputs[i])
    if not recording and out is None:
        pattern = opdef.keeps_pattern_of
        if pattern is not None and isinstance(inputs[pattern], BaseSparseNDArray) \
                and isinstance(result, NDArray) and wanted[0] == inputs[pattern].stype:
            return restrict_to_pattern(result, inputs[pattern])
        result = _as_wanted(result, wanted)
    return _deliver(result, out) if sparse_out else result


def _on_stored_values(opdef, inputs, attrs: dict, wanted) -> bool:
    """Whether the op runs on a sparse array's stored values alone: an elementwise op of one input
    whose storage-type rule keeps that input's format (so it maps 0 to 0, as abs or `x * 2`, or keeps
    the pattern by definition, as `_scatter_plus_scalar`)."""
    return (len(inputs) == 1 and opdef.elementwise and isinstance(inputs[0], BaseSparseNDArray)
            and len(wanted) == 1 and wanted[0] == inputs[0].stype)


def _as_wanted(result, wanted):
    """`result` (one array or a list) with each output converted to its inferred storage type."""
    def convert(r, w):
        src = stype_of(r)
        if src == w:
            return r
        if src != "default" and w != "default":  # csr <-> row_sparse only through dense values
            r = densify(r)
        return cast_storage(r, w)
    if isinstance(result, NDArray):
        return convert(result, wanted[0])
    return [convert(r, w) for r, w in zip(result, wanted)]


def restrict_to_pattern(dense: NDArray, pattern: BaseSparseNDArray) -> BaseSparseNDArray:
    """`dense`'s values at the positions `pattern` stores, in `pattern`'s format and sparsity
    pattern (MXNet's _scatter_* ops: the result keeps the sparse input's pattern)."""
    values = dense.asnumpy()
    if isinstance(pattern, RowSparseNDArray):
        rows = pattern._host_components()[1]
        return make_row_sparse(values[rows], rows.copy(), pattern.shape, pattern.context)
    _, indptr, indices = pattern._host_components()
    row_of = np.repeat(np.arange(pattern.shape[0]), np.diff(indptr))
    return make_csr(values[row_of, indices], indptr.copy(), indices.copy(), pattern.shape, pattern.context)


def _densify_recorded(x: NDArray) -> NDArray:
    """`densify(x)`; under autograd.record() a sparse variable's dense copy is taped as a
    cast_storage of it, so gradients flow back to the sparse array (MXNet's storage fallback
    does the same cast)."""
    from . import autograd_state
    dense = densify(x)
    if dense is not x and autograd_state.needs_record(x):
        from ..ops.registry import get
        from .invoke import _record
        _record(get("cast_storage"), {"stype": "default"}, [x], [dense], autograd_state.is_training())
    return dense


def _deliver(result, out):
    if out is None:
        return result
    if isinstance(out, NDArray):
        assign(out, result if isinstance(result, NDArray) else result[0])
        return out
    results = [result] if isinstance(result, NDArray) else list(result)
    for t, r in zip(out, results):
        assign(t, r)
    return list(out)


# ------------------------------------------------------------------ Python operators on sparse arrays

_ELEMWISE = {"broadcast_add": "elemwise_add", "broadcast_sub": "elemwise_sub",
             "broadcast_mul": "elemwise_mul", "broadcast_div": "elemwise_div"}


def binary(lhs: NDArray, rhs, array_op: Optional[str], scalar_op: str, reflected: bool = False):
    """`lhs <op> rhs` (or `rhs <op> lhs` when `reflected`) where `lhs` is sparse."""
    from .invoke import invoke
    if isinstance(rhs, NDArray):
        a, b = (rhs, lhs) if reflected else (lhs, rhs)
        name = _ELEMWISE.get(array_op, array_op) if a.shape == b.shape else array_op
        return invoke(name, [a, b])
    if _is_scalar(rhs):
        return invoke(scalar_op, [lhs], {"scalar": float(rhs)})
    raise TypeError(f"type {type(rhs).__name__} is not supported with NDArray; use an NDArray or a scalar")


def _install_operators() -> None:
    """Python operators of BaseSparseNDArray, each routed through `binary` (NDArray's fast path
    reads the dense buffer directly, which a sparse array does not have)."""
    for stem, array_op, scalar_op, rscalar_op in ARITHMETIC:
        def forward(self, other, _a=array_op, _s=scalar_op):
            return binary(self, other, _a, _s)

        def reflected(self, other, _a=array_op, _s=rscalar_op):
            return binary(self, other, _a, _s, reflected=True)

        def inplace(self, other, _a=array_op, _s=scalar_op):
            assign(self, binary(self, other, _a, _s))
            return self
        setattr(BaseSparseNDArray, f"__{stem}__", forward)
        setattr(BaseSparseNDArray, f"__r{stem}__", reflected)
        setattr(BaseSparseNDArray, f"__i{stem}__", inplace)
    for alias, method in OPERATOR_ALIASES.items():
        setattr(BaseSparseNDArray, alias, getattr(BaseSparseNDArray, method))
    for stem, array_op, scalar_op in COMPARISONS:
        def compare(self, other, _a=array_op, _s=scalar_op):
            return binary(self, other, _a, _s)
        setattr(BaseSparseNDArray, f"__{stem}__", compare)
    BaseSparseNDArray.__hash__ = NDArray.__hash__


_install_operators()
