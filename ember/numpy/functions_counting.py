"""`mx.np.unique` and `mx.np.histogram`, as MXNet 1.9.1 has them.

`unique` runs the registry operator `_npi_unique` (ember/ops/np_unique.py).  How many values are unique
depends on the data, so on arrays this reads the input (waiting for it, as MXNet's operator does) to size
the outputs, then runs the op through the ordinary dispatch (engine dependencies, autograd taping: its
gradient is zero).  On np symbols (`F.np.unique` in a hybridized block) it builds the node; the op is
value-dependent, so such a block runs op by op (MXNet's dynamic-shape CachedOp), each call sized anew.

`histogram` runs the registry's `_histogram` (MXNet's `_npi_histogram`): `bins` an int with `range`
given, or an array (symbol) of bin edges; MXNet's NotImplementedError for `normed`, `weights`,
`density`, an automatic range, list or string bins.  Both forms hybridize (their output shapes are
known from the shapes).
"""
from __future__ import annotations

import numbers
from typing import Tuple, Union

import numpy as _np

from ..base import MXNetError
from ..symbolic.np_symbol import _Symbol as _NpSymbol
from .multiarray import _as_np, _call, ndarray

__all__ = ["unique", "histogram"]


def _unique_of_array(ar: ndarray, attrs: dict):
    from ..imperative.invoke import run_value_sized
    from ..ops import registry
    from ..ops.np_unique import unique_results
    opdef = registry.get("_npi_unique")
    attrs = opdef.parse_attrs(attrs)
    if ar.stype != "default":
        raise MXNetError("unique: only default storage is supported")
    sized = unique_results(ar.asnumpy(), attrs)  # the values decide the output sizes
    outputs = run_value_sized(opdef, attrs, [ar], [r.shape for r in sized], [r.dtype for r in sized])
    return [_as_np(o) for o in outputs]


def unique(ar: Union[ndarray, _NpSymbol], return_index: bool = False, return_inverse: bool = False,
           return_counts: bool = False, axis=None):
    """numpy.unique: the sorted unique values of `ar` (flattened when `axis` is None) and, as asked, the
    int64 indices of their first occurrences, the 1-D inverse indices (MXNet 1.9.1's and numpy 1.x's
    shape, also for a multi-dimensional input) and the counts: one array, or a tuple of them."""
    if not isinstance(ar, (ndarray, _NpSymbol)):
        raise TypeError(f"unique: ar must be an mx.np.ndarray, got {type(ar).__name__}")
    if axis is not None and (isinstance(axis, bool) or not isinstance(axis, (numbers.Integral, _np.integer))):
        raise TypeError(f"unique: axis must be an integer or None, got {type(axis).__name__}")
    attrs = {"return_index": bool(return_index), "return_inverse": bool(return_inverse),
             "return_counts": bool(return_counts), "axis": None if axis is None else int(axis)}
    if isinstance(ar, _NpSymbol):
        node = _call("_npi_unique", (ar,), attrs)
        res = list(node) if len(node._outputs) > 1 else [node]
    else:
        res = _unique_of_array(ar, attrs)
    return res[0] if len(res) == 1 else tuple(res)


def histogram(a: Union[ndarray, _NpSymbol], bins=10, range=None, normed=None, weights=None,  # noqa: A002
              density=None) -> Tuple:
    """numpy.histogram of the flattened `a`: (int64 counts, bin edges) for `bins` equal bins over `range`
    (required), or for the bin edges `bins` (an array, or a symbol while tracing)."""
    if normed is True:
        raise NotImplementedError("normed is not supported yet...")
    if weights is not None:
        raise NotImplementedError("weights is not supported yet...")
    if density is True:
        raise NotImplementedError("density is not supported yet...")
    if isinstance(bins, (numbers.Number, _np.generic)) and not isinstance(bins, _np.ndarray):
        if range is None:
            raise NotImplementedError("automatic range is not supported yet...")
        res = _call("_histogram", (a,), {"bin_cnt": bins, "range": tuple(range)})
    elif isinstance(bins, (list, tuple)):
        raise NotImplementedError("array_like bins is not supported yet...")
    elif isinstance(bins, str):
        raise NotImplementedError("string bins is not supported yet...")
    elif isinstance(bins, (ndarray, _NpSymbol)):
        res = _call("_histogram", (a, bins), {})
    else:
        raise ValueError("np.histogram fails with", locals())
    return list(_as_np(res))  # [counts, edges], as MXNet's list of the op's two outputs
