"""_contrib_getnnz: the number of stored values of a CSR matrix (in all, per column or per row).

Only CSR input is accepted, as in MXNet 1.9.1; the kernel reads the CSR structure directly (it is
installed as the op's sparse kernel), so explicitly stored zeros count, as they do in MXNet.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from .registry import Attr, OpDef, register

_ATTRS = {"axis": Attr("int_or_none", None, doc="None: all stored values; 0: per column; 1: per row")}


def _shape(attrs, in_shapes):
    d = in_shapes[0]
    axis = attrs["axis"]
    if axis not in (None, 0, 1):
        raise OperatorError(f"_contrib_getnnz: axis must be None, 0 or 1, got {axis}")
    if d is None:
        return in_shapes, [None]
    if len(d) != 2:
        raise ShapeError(f"_contrib_getnnz: data must be a 2-D csr matrix, got shape {tuple(d)}")
    return [tuple(d)], [(1,) if axis is None else (d[1],) if axis == 0 else (d[0],)]


def _dense_kernel(ctx, attrs, inputs, outputs, aux):
    raise OperatorError("_contrib_getnnz: data must have csr storage (MXNet has no dense kernel)")


def nnz_counts(indptr: np.ndarray, indices: np.ndarray, shape, axis) -> np.ndarray:
    """Stored-value counts of a CSR structure: all (shape (1,)), per column (axis 0) or per row (axis 1)."""
    if axis is None:
        return np.array([int(indptr[-1])], dtype=np.int64)
    if axis == 0:
        return np.bincount(indices.astype(np.int64), minlength=shape[1]).astype(np.int64)
    return np.diff(indptr).astype(np.int64)


register(OpDef(
    name="_contrib_getnnz", attrs=_ATTRS, inputs=["data"], outputs=["output"], infer_shape=_shape,
    infer_type=lambda a, d: (list(d), [np.dtype(np.int64)]), kernels={"any": _dense_kernel},
    doc="Number of stored values of a csr matrix (axis None), per column (0) or per row (1); int64."))
