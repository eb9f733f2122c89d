"""mx.np.bincount and mx.np.percentile/quantile as registry operators under MXNet 1.9.1's names.

* `_npi_bincount(data[, weights], minlength, has_weights)`: counts (or summed weights) of each value of
  the flattened non-negative `data`, of length max(max(data) + 1, minlength).  That length depends on
  the data's *values*: shape inference leaves it unknown (`value_dependent_shape`), `mx.np.bincount`
  sizes the output from the values before running the op, and a hybridized block holding it runs op
  by op (MXNet's dynamic-shape CachedOp).  dtype: data's (MXNet's, not numpy's int64) without weights,
  the weights' with them.  A negative value is a MXNetError when the op runs.  Zero gradients (MXNet's).
* `_npi_percentile(a[, q], axis, interpolation, keepdims, q_scalar)`: numpy.percentile of a over `axis`
  (None: all) at q in [0, 100] (a 0-d or 1-D array input, or the scalar attribute `q_scalar`), with
  interpolation linear/lower/higher/midpoint/nearest; shape q.shape + the reduced shape.  float64 for a
  float64 input, float32 otherwise (MXNet's), computed in the data's own float dtype (numpy's, MXNet's).
  q outside [0, 100] is a MXNetError when the op runs.  Zero gradients (MXNet's).
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from ..base import DTypeError, MXNetError, ShapeError
from ._common import host, norm_axis
from .registry import Attr, OpDef, register


# -- bincount ---------------------------------------------------------------------------------------------
def _bincount_inputs(attrs):
    return ["data", "weights"] if attrs["has_weights"] else ["data"]


def _bincount_shape(attrs, in_shapes):
    if attrs["minlength"] < 0:
        raise ShapeError(f"_npi_bincount: minlength must be non-negative, got {attrs['minlength']}")
    if attrs["has_weights"] and in_shapes[0] is not None and in_shapes[1] is not None \
            and None not in in_shapes[0] and None not in in_shapes[1] \
            and int(np.prod(in_shapes[0])) != int(np.prod(in_shapes[1])):
        raise ShapeError(f"_npi_bincount: weights of shape {tuple(in_shapes[1])} do not match data of shape "
                         f"{tuple(in_shapes[0])}")
    return in_shapes, [(None,)]  # the length is max(data) + 1 or minlength: known from the values only


def _bincount_type(attrs, in_dtypes):
    d = in_dtypes[0]
    if d is not None and np.dtype(d).kind not in "biu":
        raise DTypeError(f"_npi_bincount: data must be an integer array, got {np.dtype(d).name}")
    out = in_dtypes[1] if attrs["has_weights"] else d
    return list(in_dtypes), [None if out is None else np.dtype(out)]


def bincount_length(data: np.ndarray, minlength: int) -> int:
    """The output length of bincount: max(max(data) + 1, minlength); MXNetError for a negative value."""
    flat = np.asarray(data).reshape(-1)
    if flat.size == 0:
        return int(minlength)
    if flat.min() < 0:
        raise MXNetError("_npi_bincount: input should be nonnegative number")
    return max(int(flat.max()) + 1, int(minlength))


def _bincount_kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    out = outputs[0]
    data = inputs[0].reshape(-1)
    if data.size and int(data.min()) < 0:
        raise MXNetError("_npi_bincount: input should be nonnegative number")
    weights = inputs[1].reshape(-1).astype(np.float64) if attrs["has_weights"] else None
    counts = xp.bincount(data.astype(np.int64), weights=weights, minlength=out.shape[0])
    if counts.shape[0] != out.shape[0]:
        raise MXNetError(f"_npi_bincount: the data needs {counts.shape[0]} bins, the output has {out.shape[0]}")
    out[...] = counts.astype(out.dtype)


register(OpDef(name="_npi_bincount", attrs={"minlength": Attr("int", 0, doc="the least output length"),
                                            "has_weights": Attr("bool", False, doc="whether weights is given")},
               inputs=_bincount_inputs, infer_shape=_bincount_shape, infer_type=_bincount_type,
               kernels={"any": _bincount_kernel}, value_dependent_shape=True,
               gradient=lambda F, a, i, o, g: [F.zeros_like(x) for x in i],
               doc="Counts (or summed weights) of each non-negative value of data; its length depends on "
                   "the values."))


# -- percentile -------------------------------------------------------------------------------------------
_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _percentile_inputs(attrs):
    return ["a"] if attrs["q_scalar"] is not None else ["a", "q"]


def _reduced_axes(axis, ndim: int) -> Optional[Tuple[int, ...]]:
    """The normalised axes reduced (None: all), ShapeError for an out-of-range or repeated one."""
    if axis is None:
        return None
    axes = tuple(norm_axis("_npi_percentile", ax, ndim) for ax in axis)
    if len(set(axes)) != len(axes):
        raise ShapeError(f"_npi_percentile: repeated axis in {tuple(axis)}")
    return axes


def _percentile_shape(attrs, in_shapes):
    a = in_shapes[0]
    q = () if attrs["q_scalar"] is not None else in_shapes[1]
    if q is not None and len(q) > 1:
        raise ShapeError(f"_npi_percentile: q must be a scalar or 1-D, got shape {tuple(q)}")
    if a is None or q is None:
        return in_shapes, [None]
    axes = _reduced_axes(attrs["axis"], len(a))
    axes = tuple(range(len(a))) if axes is None else axes
    if attrs["keepdims"]:
        kept = tuple(1 if i in axes else d for i, d in enumerate(a))
    else:
        kept = tuple(d for i, d in enumerate(a) if i not in axes)
    return in_shapes, [tuple(q) + kept]


def _percentile_type(attrs, in_dtypes):
    d = in_dtypes[0]
    if d is None:
        return list(in_dtypes), [None]
    return list(in_dtypes), [np.dtype(np.float64 if np.dtype(d) == np.float64 else np.float32)]


def _numpy_percentile(a, q, axis, method: str, keepdims: bool):
    """numpy.percentile with `method` (numpy >= 1.22's name; older numpy calls it interpolation)."""
    try:
        return np.percentile(a, q, axis=axis, method=method, keepdims=keepdims)
    except TypeError:  # numpy < 1.22
        return np.percentile(a, q, axis=axis, interpolation=method, keepdims=keepdims)


def _percentile_kernel(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    a = host(inputs[0])
    q = np.float64(attrs["q_scalar"]) if attrs["q_scalar"] is not None else host(inputs[1]).astype(np.float64)
    if np.any(q < 0) or np.any(q > 100) or np.any(np.isnan(q)):
        raise MXNetError("_npi_percentile: q must be in the range [0, 100]")
    # floating data in its own dtype, as numpy's percentile and MXNet's kernel compute (a float16 midpoint
    # is rounded to float16: the test's numpy reference), integers in float64
    work = a if a.dtype.kind == "f" else a.astype(np.float64)
    axes = _reduced_axes(attrs["axis"], a.ndim)
    res = _numpy_percentile(work, q, axes, attrs["interpolation"], attrs["keepdims"])
    out[...] = ctx.xp.asarray(np.asarray(res).astype(out.dtype).reshape(out.shape))


register(OpDef(name="_npi_percentile",
               attrs={"axis": Attr("shape_or_none", None, doc="axes reduced (None: all)"),
                      "interpolation": Attr("str", "linear", choices=_METHODS,
                                            doc="how a percentile between two data points is taken"),
                      "keepdims": Attr("bool", False), "q_scalar": Attr("float_or_none", None,
                                                                       doc="q when it is a scalar")},
               inputs=_percentile_inputs, infer_shape=_percentile_shape, infer_type=_percentile_type,
               kernels={"any": _percentile_kernel},
               gradient=lambda F, a, i, o, g: [F.zeros_like(x) for x in i],
               doc="The q-th percentiles of a over axis (numpy.percentile)."))
