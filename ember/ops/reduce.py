"""Reductions: sum, mean, max, min, prod, nansum, nanprod, norm, argmax, argmin, argmax_channel.

MXNet 1.x semantics: `axis` None or () reduces every axis, `exclude=True` reduces every axis
*not* listed, and a reduction to a scalar has shape (1,) (there are no 0-d arrays).
Each differentiable reduction has ``_backward_<name>(ograd, data, output)`` with the same
attributes, which broadcasts ograd back over the reduced axes.
"""
from __future__ import annotations

import ast
from math import prod
from typing import Tuple

import numpy as np

from ..base import OperatorError, ShapeError
from ._common import no_gradient, norm_axis, ograds_or_zeros, same_type, via
from .registry import Attr, OpDef, register

_REDUCE_ATTRS = {
    "axis": Attr("shape_or_none", None, doc="axes to reduce (None or (): all)"),
    "keepdims": Attr("bool", False, doc="keep reduced axes with length 1"),
    "exclude": Attr("bool", False, doc="reduce every axis except those listed"),
}


def reduced_axes(op: str, attrs: dict, ndim: int) -> Tuple[int, ...]:
    """The sorted axes a reduction with these attributes sums over."""
    axis = attrs.get("axis")
    if axis is None or len(axis) == 0:
        return tuple(range(ndim))
    listed = set()
    for a in axis:
        if a is None:
            raise OperatorError(f"{op}: axis {axis} must hold integers")
        n = norm_axis(op, a, ndim)
        if n in listed:
            raise ShapeError(f"{op}: axis {a} is listed twice in {axis}")
        listed.add(n)
    if attrs.get("exclude"):
        return tuple(i for i in range(ndim) if i not in listed)
    return tuple(sorted(listed))


def reduced_shape(op: str, attrs: dict, shape) -> Tuple[int, ...]:
    axes = reduced_axes(op, attrs, len(shape))
    if attrs.get("keepdims"):
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    out = tuple(d for i, d in enumerate(shape) if i not in axes)
    return out if out else (1,)


def _keep_shape(op, attrs, shape):
    axes = reduced_axes(op, attrs, len(shape))
    return axes, tuple(1 if i in axes else d for i, d in enumerate(shape))


def _reduce_infer(op: str):
    def infer(attrs, in_shapes):
        x = in_shapes[0]
        if x is None:
            return in_shapes, [None]
        if op in ("max", "min") and any(x[a] == 0 for a in reduced_axes(op, attrs, len(x)) if x[a] is not None):
            raise ShapeError(f"{op}: cannot reduce over a zero-size axis of {tuple(x)} (no identity)")
        return in_shapes, [reduced_shape(op, attrs, x)]
    return infer


def _reduce_kernel(op: str, fn_name: str):
    method = fn_name in ("sum", "max", "min", "prod")  # ndarray methods skip numpy's dispatch layer

    def kernel(ctx, attrs, inputs, outputs, aux):
        x = inputs[0]
        out = outputs[0]
        if not attrs["axis"]:  # every axis (the common loss.sum() case): numpy's fastest path
            out[...] = getattr(x, fn_name)() if method else getattr(ctx.xp, fn_name)(x)
            return
        axes = reduced_axes(op, attrs, x.ndim)
        res = getattr(ctx.xp, fn_name)(x, axis=axes, keepdims=True) if x.ndim else x
        out[...] = res.reshape(out.shape)
    return kernel


def _mean_kernel(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    axes = reduced_axes("mean", attrs, x.ndim)
    dtype = x.dtype if x.dtype.kind == "f" else None  # integers: float mean, truncated on store
    res = ctx.xp.mean(x, axis=axes, keepdims=True, dtype=dtype)
    outputs[0][...] = res.reshape(outputs[0].shape)


def _backward_infer(op: str):
    def infer(attrs, in_shapes):
        g, x, y = in_shapes
        if x is not None and g is not None:
            want = reduced_shape(op, attrs, x)
            if tuple(g) != want:
                raise ShapeError(f"{op}: ograd has shape {tuple(g)} but the reduction of {tuple(x)} has shape {want}")
        return [g, x, y if y is not None else g], [x]
    return infer


def _backward_kernel(op: str, deriv):
    """Kernel computing deriv(xp, g, x, y, count) with g, y reshaped to keep the reduced axes."""
    def kernel(ctx, attrs, inputs, outputs, aux):
        g, x, y = inputs
        axes, kshape = _keep_shape(op, attrs, x.shape)
        res = deriv(ctx.xp, g.reshape(kshape), x, y.reshape(kshape), prod(x.shape[a] for a in axes))
        outputs[0][...] = res
    return kernel


def _d_max(xp, g, x, y, count):
    return g * (x == y)


def _d_prod(xp, g, x, y, count):
    with np.errstate(divide="ignore", invalid="ignore"):
        return g * y / x


_REDUCERS = {
    # name: (kernel, derivative, aliases)
    "sum": (_reduce_kernel("sum", "sum"), lambda xp, g, x, y, n: xp.broadcast_to(g, x.shape), ["sum_axis"]),
    "mean": (_mean_kernel, lambda xp, g, x, y, n: xp.broadcast_to(g / max(n, 1), x.shape), []),
    "max": (_reduce_kernel("max", "max"), _d_max, ["max_axis"]),
    "min": (_reduce_kernel("min", "min"), _d_max, ["min_axis"]),
    "prod": (_reduce_kernel("prod", "prod"), _d_prod, []),
    "nansum": (_reduce_kernel("nansum", "nansum"), lambda xp, g, x, y, n: g * ~xp.isnan(x), []),
    "nanprod": (_reduce_kernel("nanprod", "nanprod"),
                lambda xp, g, x, y, n: xp.where(xp.isnan(x), 0, _d_prod(xp, g, x, y, n)), []),
}

for _name, (_kernel, _deriv, _aliases) in _REDUCERS.items():
    _bwd = f"_backward_{_name}"
    register(OpDef(name=_bwd, attrs=_REDUCE_ATTRS, inputs=["ograd", "data", "output"], outputs=["data_grad"],
                   infer_shape=_backward_infer(_bwd), infer_type=same_type(_bwd),
                   kernels={"any": _backward_kernel(_bwd, _deriv)},
                   # sum/mean spread ograd over data's shape: data and output are read for their shapes only
                   shape_only_inputs=(1, 2) if _name in ("sum", "mean") else (),
                   doc=f"Gradient of {_name}: ograd spread back over the reduced axes."))
    register(OpDef(name=_name, attrs=_REDUCE_ATTRS, inputs=["data"], outputs=["output"],
                   infer_shape=_reduce_infer(_name), infer_type=same_type(_name),
                   kernels={"any": _kernel}, aliases=_aliases,
                   gradient=via(_bwd, lambda i, o, g: [g[0], i[0], o[0]], 1),
                   doc=f"{_name} over `axis` (all axes by default)."))


# -- norm ------------------------------------------------------------------------------------
_NORM_ATTRS = {
    "ord": Attr("int", 2, doc="1 or 2"),
    "axis": Attr("shape_or_none", None),
    "out_dtype": Attr("str", "None"),
    "keepdims": Attr("bool", False),
}


def _norm_check(attrs):
    if attrs["ord"] not in (1, 2):
        raise OperatorError(f"norm: ord must be 1 or 2, got {attrs['ord']}")


def _norm_infer(attrs, in_shapes):
    _norm_check(attrs)
    x = in_shapes[0]
    return in_shapes, [None if x is None else reduced_shape("norm", attrs, x)]


def _norm_type(attrs, in_dtypes):
    od = attrs["out_dtype"]
    if od not in ("None", ""):
        return list(in_dtypes), [np.dtype(od)]
    return list(in_dtypes), [in_dtypes[0]]


def _norm(ctx, attrs, inputs, outputs, aux):
    _norm_check(attrs)
    xp = ctx.xp
    x = inputs[0]
    axes = reduced_axes("norm", attrs, x.ndim)
    if attrs["ord"] == 1:
        res = xp.sum(xp.abs(x), axis=axes, keepdims=True)
    else:
        res = xp.sqrt(xp.sum(xp.square(x), axis=axes, keepdims=True))
    outputs[0][...] = res.reshape(outputs[0].shape)


def _norm_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, x, y = inputs
    _, kshape = _keep_shape("norm", attrs, x.shape)
    g = g.reshape(kshape)
    if attrs["ord"] == 1:
        outputs[0][...] = g * xp.sign(x)
    else:
        y = y.reshape(kshape)
        with np.errstate(divide="ignore", invalid="ignore"):
            outputs[0][...] = xp.where(y == 0, 0, g * x / y)


register(OpDef(name="_backward_norm", attrs=_NORM_ATTRS, inputs=["ograd", "data", "output"],
               outputs=["data_grad"], infer_shape=_backward_infer("_backward_norm"),
               infer_type=lambda a, d: ([d[0], d[1], d[2]], [d[1]]),
               kernels={"any": _norm_backward}, doc="Gradient of norm."))
register(OpDef(name="norm", attrs=_NORM_ATTRS, inputs=["data"], outputs=["output"],
               infer_shape=_norm_infer, infer_type=_norm_type, kernels={"any": _norm},
               gradient=via("_backward_norm", lambda i, o, g: [g[0], i[0], o[0]], 1),
               doc="L1 or L2 norm over `axis` (all axes: the flattened array's norm)."))


# -- argmax / argmin -----------------------------------------------------------------------
_ARG_ATTRS = {"axis": Attr("int_or_none", None, doc="axis (None: the flattened array)"),
              "keepdims": Attr("bool", False)}


def _arg_shape(op):
    def infer(attrs, in_shapes):
        x = in_shapes[0]
        if x is None:
            return in_shapes, [None]
        axis = attrs["axis"]
        if axis is None:
            return in_shapes, [(1,) * len(x) if attrs["keepdims"] and x else (1,)]
        a = norm_axis(op, axis, len(x))
        if attrs["keepdims"]:
            return in_shapes, [tuple(1 if i == a else d for i, d in enumerate(x))]
        out = tuple(d for i, d in enumerate(x) if i != a)
        return in_shapes, [out if out else (1,)]
    return infer


def _arg_kernel(fn_name):
    def kernel(ctx, attrs, inputs, outputs, aux):
        x = inputs[0]
        if x.size == 0:
            raise ShapeError(f"{fn_name}: attempt to get {fn_name} of an empty array")
        axis = attrs["axis"]
        res = getattr(ctx.xp, fn_name)(x.reshape(-1) if axis is None else x, axis=None if axis is None else axis)
        outputs[0][...] = ctx.xp.reshape(res, outputs[0].shape)
    return kernel


for _name in ("argmax", "argmin"):
    register(OpDef(name=_name, attrs=_ARG_ATTRS, inputs=["data"], outputs=["output"],
                   infer_shape=_arg_shape(_name), kernels={"any": _arg_kernel(_name)},
                   gradient=no_gradient(1),
                   doc=f"Index of the {_name[3:]}imum along `axis`, in the input dtype (float32 for float32)."))


def _argmax_channel_shape(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    if len(x) < 1:
        raise ShapeError(f"argmax_channel: input must have at least 1 dimension, got {tuple(x)}")
    out = tuple(x[:-1])
    return in_shapes, [out if out else (1,)]


def _argmax_channel(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = ctx.xp.argmax(inputs[0], axis=-1).reshape(outputs[0].shape)


register(OpDef(name="argmax_channel", inputs=["data"], outputs=["output"], infer_shape=_argmax_channel_shape,
               kernels={"any": _argmax_channel}, gradient=no_gradient(1),
               doc="argmax over the last axis."))


# -- moments -----------------------------------------------------------------------------------
_MOMENTS_ATTRS = {"axes": Attr("shape_or_none", None), "keepdims": Attr("bool", False)}


def _moments_attrs(attrs):
    return {"axis": attrs["axes"], "keepdims": attrs["keepdims"], "exclude": False}


def _moments_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None, None]
    s = reduced_shape("moments", _moments_attrs(attrs), x)
    return in_shapes, [s, s]


def _moments(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    axes = reduced_axes("moments", _moments_attrs(attrs), x.ndim)
    mean = ctx.xp.mean(x, axis=axes, keepdims=True)
    var = ctx.xp.mean(ctx.xp.square(x - mean), axis=axes, keepdims=True)
    outputs[0][...] = mean.reshape(outputs[0].shape)
    outputs[1][...] = var.reshape(outputs[1].shape)


def _moments_backward(ctx, attrs, inputs, outputs, aux):
    g_mean, g_var, x, mean = inputs
    a = _moments_attrs(attrs)
    axes, kshape = _keep_shape("moments", a, x.shape)
    n = prod(x.shape[ax] for ax in axes)
    m = mean.reshape(kshape)
    outputs[0][...] = (g_mean.reshape(kshape) + 2.0 * g_var.reshape(kshape) * (x - m)) / n


register(OpDef(name="_backward_moments", attrs=_MOMENTS_ATTRS, inputs=["ograd_mean", "ograd_var", "data", "mean"],
               outputs=["data_grad"], infer_shape=lambda a, s: (s, [s[2]]),
               infer_type=lambda a, d: (list(d), [d[2]]), kernels={"any": _moments_backward},
               doc="Gradient of moments w.r.t. data."))
register(OpDef(name="moments", attrs=_MOMENTS_ATTRS, outputs=["mean", "var"], infer_shape=_moments_infer,
               infer_type=lambda a, d: (list(d), [d[0], d[0]]), kernels={"any": _moments},
               gradient=lambda F, a, i, o, g: [F._backward_moments(*ograds_or_zeros(F, g, o, 2), i[0], o[0], **a)],
               doc="Mean and (biased) variance over `axes`."))


# -- histogram ---------------------------------------------------------------------------------------
def _hist_inputs(attrs):
    return ["data"] if attrs["bin_cnt"] is not None else ["data", "bins"]


def _hist_range(attrs):
    r = attrs["range"]
    if isinstance(r, str):  # symbol JSON keeps it as text
        r = None if r.strip() in ("None", "") else ast.literal_eval(r)
    if r is None or len(r) != 2 or not r[0] < r[1]:
        raise OperatorError(f"_histogram: bin_cnt needs range=(low, high) with low < high, got {attrs['range']!r}")
    return float(r[0]), float(r[1])


def _hist_infer(attrs, in_shapes):
    if attrs["bin_cnt"] is not None:
        _hist_range(attrs)
        n = attrs["bin_cnt"]
    else:
        b = in_shapes[1]
        if b is None:
            return in_shapes, [None, None]
        n = b[0] - 1
    return in_shapes, [(n,), (n + 1,)]


def _histogram(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x = inputs[0].reshape(-1)
    if attrs["bin_cnt"] is not None:
        counts, edges = xp.histogram(x, bins=attrs["bin_cnt"], range=_hist_range(attrs))
    else:
        counts, edges = xp.histogram(x, bins=inputs[1])
    outputs[0][...] = counts
    outputs[1][...] = edges


register(OpDef(name="_histogram", inputs=_hist_inputs, outputs=["counts", "bin_edges"],
               attrs={"bin_cnt": Attr("int_or_none", None), "range": Attr("any", None)},
               infer_shape=_hist_infer,
               infer_type=lambda a, d: (list(d), [np.dtype(np.int64), d[0]]), kernels={"any": _histogram},
               doc="Counts of data in bin_cnt equal bins over range (or in the given bin edges)."))
