"""`mx.np.bincount`, `mx.np.percentile` and `mx.np.quantile`, as MXNet 1.9.1 has them.

`bincount` runs the registry operator `_npi_bincount` (ember/ops/np_stats.py).  Its output length is
max(max(x) + 1, minlength), which depends on the values: on arrays this reads `x` (waiting for it, as
MXNet's operator does) to size the output, then runs the op through the ordinary dispatch (engine
dependencies, autograd taping); on np symbols it builds the node, and a hybridized block holding it
runs op by op (MXNet's dynamic-shape CachedOp), each call sized anew.

`percentile` / `quantile` run `_npi_percentile` (MXNet's: quantile is percentile at 100 q), whose output
shape q.shape + the reduced shape is known from shapes, so they hybridize as any operator: q a Python
number (the op's `q_scalar` attribute) or a 0-d / 1-D array (symbol).
"""
from __future__ import annotations

import numbers
from typing import Optional, Union

import numpy as _np

from ..base import MXNetError
from ..symbolic.np_symbol import _Symbol as _NpSymbol
from . import functions as _f
from .multiarray import _as_np, _call, ndarray

__all__ = ["bincount", "percentile", "quantile"]


def _bincount_of_array(x: ndarray, weights: Optional[ndarray], attrs: dict) -> ndarray:
    from ..imperative.invoke import run_value_sized
    from ..ops import registry
    from ..ops.np_stats import bincount_length
    opdef = registry.get("_npi_bincount")
    attrs = opdef.parse_attrs(attrs)
    inputs = [x] if weights is None else [x, weights]
    if any(a.stype != "default" for a in inputs):
        raise MXNetError("bincount: only default storage is supported")
    dtypes = opdef.dtypes(attrs, [a.dtype for a in inputs])[1]  # checks data is integer
    opdef.shapes(attrs, [a.shape for a in inputs])  # checks weights against data
    length = bincount_length(x.asnumpy(), attrs["minlength"])  # the values decide the output length
    return _as_np(run_value_sized(opdef, attrs, inputs, [(length,)], dtypes)[0])


def bincount(x: Union[ndarray, _NpSymbol], weights=None, minlength: int = 0):
    """numpy.bincount: how often each value 0..max(x) of the non-negative integer array `x` occurs (the
    sum of its `weights` when given), at least `minlength` bins; x's dtype without weights (MXNet's)."""
    if not isinstance(x, (ndarray, _NpSymbol)):
        raise TypeError("Input data should be NDarray")
    if minlength < 0:
        raise ValueError("Minlength value should greater than 0")
    attrs = {"minlength": int(minlength), "has_weights": weights is not None}
    if isinstance(x, _NpSymbol) or isinstance(weights, _NpSymbol):
        return _call("_npi_bincount", (x,) if weights is None else (x, weights), attrs)
    if weights is not None and not isinstance(weights, ndarray):
        weights = _f.asarray(weights, ctx=x.context)
    return _bincount_of_array(x, weights, attrs)


def _axis_attr(axis):
    if axis is None:
        return None
    return (int(axis),) if isinstance(axis, (numbers.Integral, _np.integer)) else tuple(int(a) for a in axis)


def _percentile(a, q, scale: float, axis, out, overwrite_input, interpolation: str, keepdims: bool):
    """`_npi_percentile` of a at q * scale (percent)."""
    if overwrite_input is not None:
        raise NotImplementedError("overwrite_input is not supported yet")
    attrs = {"axis": _axis_attr(axis), "interpolation": interpolation, "keepdims": bool(keepdims)}
    if isinstance(q, (numbers.Number, _np.generic)) and not isinstance(q, _np.ndarray):
        res = _call("_npi_percentile", (_f.asarray(a),), dict(attrs, q_scalar=float(q) * scale))
    else:
        q = _f.asarray(q) if not isinstance(q, _NpSymbol) else q
        q = q if scale == 1 else _f.multiply(q, scale)
        res = _call("_npi_percentile", (_f.asarray(a), q), dict(attrs, q_scalar=None))
    res = _as_np(res)
    if out is not None:
        out[...] = res
        return out
    return res


def percentile(a, q, axis=None, out=None, overwrite_input=None, interpolation: str = "linear",
               keepdims: bool = False):
    """numpy.percentile: the q-th percentiles (q in [0, 100], a number or a 0-d/1-D array) of a along
    axis (None: all), interpolated as `interpolation` says; float64 for float64 input, else float32."""
    return _percentile(a, q, 1.0, axis, out, overwrite_input, interpolation, keepdims)


def quantile(a, q, axis=None, out=None, overwrite_input=None, interpolation: str = "linear",
             keepdims: bool = False):
    """numpy.quantile: percentile at 100 q (q in [0, 1])."""
    return _percentile(a, q, 100.0, axis, out, overwrite_input, interpolation, keepdims)
