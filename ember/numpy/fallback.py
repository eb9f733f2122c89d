"""`mx.np.fallback`: the numpy functions mx.np runs through official NumPy (MXNet 1.9.1's list).

As in MXNet, each name is numpy's own function: called with mx.np arrays it dispatches to
`ndarray.__array_function__` (NEP 18), which runs it on host copies and hands array results back as
mx.np arrays on the inputs' device (refused while autograd records).  mx.np keeps its own function
where it has one (`flatnonzero`, ...).  Names NumPy has since removed behave as NumPy 1.23's (the one
MXNet 1.9.1 ran on): `alltrue` is `all`, `msort` sorts along axis 0, `trapz` is `trapezoid`, `in1d` is
`isin` flattened; the
financial functions (`mirr`, `npv`, `pmt`, `ppmt`, `pv`, `rate`), removed in NumPy 1.20, raise as there.
"""
from __future__ import annotations

from typing import Callable

import numpy as onp

__all__ = [
    "allclose", "alltrue", "apply_along_axis", "apply_over_axes", "argpartition", "argwhere", "array_equal",
    "array_equiv", "choose", "compress", "corrcoef", "correlate", "count_nonzero", "cov", "digitize", "divmod",
    "extract", "flatnonzero", "float_power", "frexp", "heaviside", "histogram2d", "histogram_bin_edges",
    "histogramdd", "i0", "in1d", "interp", "intersect1d", "isclose", "isin", "ix_", "lexsort", "min_scalar_type",
    "mirr", "modf", "msort", "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmedian", "nanmin",
    "nanpercentile", "nanprod", "nanquantile", "ndim", "npv", "partition",
    "packbits", "piecewise", "poly", "polyadd", "polydiv", "polyfit", "polyint", "polymul", "polysub",
    "positive", "ppmt", "promote_types", "ptp", "pv", "rate", "real", "result_type", "rollaxis", "roots",
    "searchsorted", "select", "setdiff1d", "setxor1d", "signbit", "size", "spacing", "take_along_axis", "trapz",
    "tril_indices_from", "trim_zeros", "triu_indices_from", "union1d", "unpackbits", "unwrap", "vander",
]

_FINANCIAL = ("mirr", "npv", "pmt", "ppmt", "pv", "rate")


def _removed(name: str) -> Callable:
    def expired(*args, **kwargs):
        raise RuntimeError(f"In accordance with NEP 32, the function {name} was removed from NumPy version 1.20. "
                           "A replacement for this function is available in the numpy_financial library: "
                           "https://pypi.org/project/numpy-financial")
    expired.__name__ = name
    return expired


def _in1d(ar1, ar2, assume_unique=False, invert=False):
    """numpy 1.x's in1d: isin over the flattened ar1."""
    return onp.isin(ar1, ar2, assume_unique=assume_unique, invert=invert).ravel()


def _msort(a):
    """numpy 1.x's msort: a copy of `a` sorted along its first axis."""
    return onp.sort(a, axis=0)


_SINCE_REMOVED = {"alltrue": getattr(onp, "alltrue", onp.all), "msort": getattr(onp, "msort", _msort),
                  "trapz": getattr(onp, "trapz", None) or getattr(onp, "trapezoid")}

# (MXNet's module also has these, outside its __all__)
_EXTRA = ("nanstd", "nansum", "nanvar", "pmt")

for _name in __all__ + list(_EXTRA):
    if _name in _FINANCIAL:
        globals()[_name] = _removed(_name)
    elif _name in _SINCE_REMOVED:
        globals()[_name] = _SINCE_REMOVED[_name]
    elif _name == "in1d":
        globals()[_name] = getattr(onp, "in1d", _in1d)
    else:
        globals()[_name] = getattr(onp, _name)
