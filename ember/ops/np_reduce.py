"""numpy-semantics reductions `_np_sum`, `_np_prod`, `_npi_mean` (MXNet 1.9.1's names): shape and
dtype inference of their own, so a graph built from symbols whose shapes are not known yet (MXNet's
`mx.sym.np.sum(mx.sym.Variable('x'), ...)`) infers them later, as any operator.

numpy's rules: `axis` None reduces every axis, () none, negative axes count from the end; a full
reduction is 0-d; `keepdims` keeps length-1 axes.  dtype: `dtype` if given, else bool sums and
multiplies as int64, `mean` of integers is float32 (MXNet), others keep the input's.  Accumulation
in MXNet's wider type (float16 in float32, int8 in int32...), the result cast to the output dtype.
Gradients: `_backward<op>(ograd, data)` spreads ograd back over the reduced axes (mean / count;
prod * product / x), in the data's dtype.
"""
from __future__ import annotations

from math import prod
from typing import Tuple

import numpy as np

from ._common import via
from .reduce import reduced_axes
from .registry import Attr, OpDef, register

_ATTRS = {
    "axis": Attr("shape_or_none", None, doc="axes to reduce: None every axis, () none"),
    "dtype": Attr("dtype_or_none", None, doc="output dtype (default: numpy's rule, see the module)"),
    "keepdims": Attr("bool", False, doc="keep reduced axes with length 1"),
    "initial": Attr("float_or_none", None, doc="the starting value (sum/prod)"),
}
_ACC = {"float16": np.float32, "float32": np.float64, "int8": np.int32, "uint8": np.int32, "int32": np.int64,
        "bool": np.int64}


def _axes(op: str, attrs: dict, ndim: int) -> Tuple[int, ...]:
    """The sorted axes reduced: numpy's meaning of axis=() (none) over the legacy reductions' rules."""
    axis = attrs["axis"]
    if axis is not None and len(axis) == 0:
        return ()
    return reduced_axes(op, attrs, ndim)


def _out_shape(op: str, attrs: dict, shape) -> tuple:
    axes = _axes(op, attrs, len(shape))
    if attrs["keepdims"]:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _out_dtype(name: str, attrs: dict, dt):
    if attrs["dtype"] is not None:
        return np.dtype(attrs["dtype"])
    if dt is None:
        return None
    dt = np.dtype(dt)
    if name == "mean":
        return dt if dt.kind == "f" else np.dtype(np.float32)
    return np.dtype(np.int64) if dt.kind == "b" else dt


def _infer_shape(op: str):
    def infer(attrs, in_shapes):
        x = in_shapes[0]
        if x is None or None in x:
            return in_shapes, [None]
        return in_shapes, [_out_shape(op, attrs, tuple(x))]
    return infer


def _infer_type(name: str):
    def infer(attrs, in_dtypes):
        return list(in_dtypes), [_out_dtype(name, attrs, in_dtypes[0])]
    return infer


def _kernel(name: str):
    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        x, out = inputs[0], outputs[0]
        axes = _axes(f"reduce {name}", attrs, x.ndim)
        acc = _ACC.get(x.dtype.name, x.dtype)
        if out.dtype.kind == "f" and np.dtype(acc).kind != "f":
            acc = np.float64 if out.dtype == np.float64 else np.float32  # e.g. mean of integers
        with np.errstate(invalid="ignore", divide="ignore"):
            if name == "mean":
                if attrs["dtype"] is not None and np.dtype(attrs["dtype"]).kind != "f":
                    acc = attrs["dtype"]  # numpy (and MXNet) accumulate an integer mean in the dtype asked for
                res = xp.mean(x, axis=axes, dtype=acc, keepdims=True) if x.size or not axes else \
                    xp.full([1 if i in axes else d for i, d in enumerate(x.shape)], np.nan, dtype=acc)
            else:
                res = getattr(xp, name)(x, axis=axes, dtype=acc, keepdims=True)
                if attrs["initial"] is not None:
                    res = res + attrs["initial"] if name == "sum" else res * attrs["initial"]
        out[...] = res.reshape(out.shape).astype(out.dtype, copy=False)
    return kernel


def _backward_kernel(name: str):
    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        g, x = inputs[0], inputs[1]
        axes = _axes(f"reduce {name}", attrs, x.ndim)
        kshape = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
        g = g.reshape(kshape).astype(outputs[0].dtype, copy=False)  # computed in the data's dtype
        if name == "sum":
            res = xp.broadcast_to(g, x.shape)
        elif name == "mean":
            res = xp.broadcast_to(g / max(prod(x.shape[a] for a in axes), 1), x.shape)
        else:  # prod: the product of the other elements
            with np.errstate(invalid="ignore", divide="ignore"):
                total = xp.prod(x, axis=axes, keepdims=True)
                res = g * total / x
        outputs[0][...] = res.astype(outputs[0].dtype, copy=False)
    return kernel


for _name in ("sum", "prod", "mean"):
    # MXNet 1.9.1's names: _np_sum / _np_prod, and _npi_mean (an internal operator there)
    _op = f"_npi_{_name}" if _name == "mean" else f"_np_{_name}"
    _bwd = f"_backward{_op}"
    register(OpDef(name=_bwd, attrs=_ATTRS, inputs=["ograd", "data"], outputs=["data_grad"],
                   infer_shape=lambda a, s: (s, [s[1]]),
                   infer_type=lambda a, d: (list(d), [d[1]]),
                   kernels={"any": _backward_kernel(_name)},
                   # sum/mean spread ograd over data's shape: data is read for its shape only
                   shape_only_inputs=(1,) if _name in ("sum", "mean") else (),
                   doc=f"Gradient of {_op}: ograd spread back over the reduced axes."))
    register(OpDef(name=_op, attrs=_ATTRS, inputs=["a"], outputs=["out"],
                   infer_shape=_infer_shape(_op), infer_type=_infer_type(_name),
                   kernels={"any": _kernel(_name)},
                   gradient=via(_bwd, lambda i, o, g: [g[0], i[0]], 1),
                   doc=f"numpy.{_name} over `axis` with numpy's shapes and dtypes (mx.np.{_name})."))
