"""`mx.np.nonzero`, `mx.np.flatnonzero` and `mx.npx.nonzero`, as MXNet 1.9.1 has them.

All run the registry operator `_npx_nonzero` (ember/ops/np_nonzero.py): the (N, ndim) int64 indices of
the non-zero elements.  N depends on the values, so on arrays this reads the input (waiting for it, as
MXNet's operator does) to size the output; on np symbols it builds the node, and a hybridized block
holding it runs op by op (MXNet's dynamic-shape CachedOp).
"""
from __future__ import annotations

from typing import Tuple, Union

import numpy as _np

from ..base import MXNetError
from ..symbolic.np_symbol import _Symbol as _NpSymbol
from .multiarray import _as_np, _call, ndarray

__all__ = ["nonzero", "flatnonzero"]
_I64 = _np.dtype(_np.int64)


def nonzero_rows(x: Union[ndarray, _NpSymbol]):
    """npx.nonzero: the (N, max(x.ndim, 1)) int64 indices of x's non-zero elements, a row each in C order."""
    if isinstance(x, _NpSymbol):
        return _call("_npx_nonzero", (x,), {})
    if not isinstance(x, ndarray):
        raise TypeError(f"nonzero: x must be an mx.np.ndarray, got {type(x).__name__}")
    from ..imperative.invoke import run_value_sized
    from ..ops import registry
    from ..ops.np_nonzero import nonzero_indices
    if x.stype != "default":
        raise MXNetError("nonzero: only default storage is supported")
    rows = nonzero_indices(x.asnumpy()).shape  # the values decide the row count
    return _as_np(run_value_sized(registry.get("_npx_nonzero"), {}, [x], [rows], [_I64])[0])


def nonzero(a: Union[ndarray, _NpSymbol]) -> Tuple:
    """numpy.nonzero: a tuple of int64 index arrays, one per dimension of `a` (one for a 0-d `a`)."""
    rows = nonzero_rows(a)
    if isinstance(rows, _NpSymbol):  # a.ndim raises the clear error when a's shape is unknown
        return tuple(_call("squeeze", (_call("slice_axis", (rows,), {"axis": 1, "begin": k, "end": k + 1}),),
                           {"axis": (1,)}) for k in range(max(a.ndim, 1)))
    cols = rows.T
    return tuple(_as_np(cols[k]) for k in range(cols.shape[0]))


def flatnonzero(a: Union[ndarray, _NpSymbol]):
    """numpy.flatnonzero: the int64 indices of the non-zero elements of the flattened `a`."""
    flat = _call("reshape", (a,), {"shape": (-1,)}) if isinstance(a, _NpSymbol) else a.reshape(-1)
    return nonzero(flat)[0]
