"""MXNet's contrib tensor ops (registered under their `_contrib_*` names): arange_like,
div_sqrt_dim, quadratic, index_copy, index_array, allclose, gradientmultiplier."""
from __future__ import annotations

import math

import numpy as np

from ..base import ShapeError
from ._common import copy_kernel, known, no_gradient, norm_axis, same_shape
from ._unary import register_unary
from . import stype
from .registry import Attr, OpDef, register


# -- arange_like ----------------------------------------------------------------------------------
_ARANGE_LIKE = {"start": Attr("float", 0.0), "step": Attr("float", 1.0), "repeat": Attr("int", 1),
                "ctx": Attr("str", ""), "axis": Attr("int_or_none", None)}


def _arange_like_infer(attrs, in_shapes):
    x = in_shapes[0]
    if attrs["repeat"] < 1:
        raise ShapeError(f"_contrib_arange_like: repeat must be >= 1, got {attrs['repeat']}")
    if x is None:
        return in_shapes, [None]
    if attrs["axis"] is None:
        return in_shapes, [tuple(x)]
    return in_shapes, [(x[norm_axis("_contrib_arange_like", attrs["axis"], len(x))],)]


def _arange_like(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    n = out.size
    r = attrs["repeat"]
    idx = ctx.xp.arange(n) // r  # each value repeated `repeat` times, as MXNet
    out[...] = (attrs["start"] + attrs["step"] * idx).reshape(out.shape)


register(OpDef(name="_contrib_arange_like", attrs=_ARANGE_LIKE, infer_shape=_arange_like_infer,
               kernels={"any": _arange_like}, gradient=no_gradient(1),
               doc="start + step * i over data's shape (or along `axis`), each value repeated `repeat` times."))


# -- elementwise helpers ---------------------------------------------------------------------------
def _div_sqrt_dim(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    ctx.xp.divide(x, math.sqrt(x.shape[-1]), out=outputs[0], casting="unsafe")


register_unary("_contrib_div_sqrt_dim", _div_sqrt_dim,
               lambda xp, x, y, a: xp.full_like(x, 1.0 / math.sqrt(x.shape[-1])), uses="in",
               second=lambda F, v, a: None, doc="data / sqrt(data.shape[-1]) (attention scaling).")


def _quadratic(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    outputs[0][...] = (attrs["a"] * x + attrs["b"]) * x + attrs["c"]


register_unary("_contrib_quadratic", _quadratic, lambda xp, x, y, a: 2 * a["a"] * x + a["b"],
               attrs={"a": Attr("float", 0.0), "b": Attr("float", 0.0), "c": Attr("float", 0.0)}, uses="in",
               second=lambda F, v, a: F._mul_scalar(F.ones_like(v), scalar=2.0 * a["a"]),
               infer_stype=stype.quadratic, doc="a * x^2 + b * x + c.")


register_unary("_contrib_gradientmultiplier", copy_kernel, None, attrs={"scalar": Attr("float")},
               gradient=lambda F, a, i, o, g: [F._mul_scalar(g[0], scalar=a["scalar"])],
               doc="Identity forward; the gradient is multiplied by `scalar`.")


# -- index_copy ------------------------------------------------------------------------------------
def _index_copy_infer(attrs, in_shapes):
    old, idx, new = in_shapes
    if known(old) and known(new) and known(idx):
        if len(idx) != 1 or tuple(new) != (idx[0],) + tuple(old[1:]):
            raise ShapeError(f"_contrib_index_copy: new_tensor has shape {tuple(new)}; with index_vector "
                             f"{tuple(idx)} into {tuple(old)} it must be {(idx[0],) + tuple(old[1:])}")
    return in_shapes, [old]


def _rows(xp, idx):
    return idx.astype(np.int64) if idx.dtype.kind not in "iu" else idx


def _index_copy(ctx, attrs, inputs, outputs, aux):
    old, idx, new = inputs
    out = outputs[0]
    if out is not old:
        out[...] = old
    out[_rows(ctx.xp, idx)] = new


def _index_copy_backward(ctx, attrs, inputs, outputs, aux):
    g, idx = inputs
    rows = _rows(ctx.xp, idx)
    outputs[0][...] = g
    outputs[0][rows] = 0
    outputs[1][...] = g[rows]


register(OpDef(name="_backward_index_copy", inputs=["ograd", "index_vector"], outputs=["old_grad", "new_grad"],
               infer_shape=lambda a, s: (s, [s[0], None if s[0] is None or s[1] is None
                                             else (s[1][0],) + tuple(s[0][1:])]),
               infer_type=lambda a, d: (list(d), [d[0], d[0]]), kernels={"any": _index_copy_backward},
               doc="Gradient of _contrib_index_copy."))


def _index_copy_grad(F, attrs, inputs, outputs, out_grads):
    res = F._backward_index_copy(out_grads[0], inputs[1])
    return [res[0], None, res[1]]


register(OpDef(name="_contrib_index_copy", inputs=["old_tensor", "index_vector", "new_tensor"],
               infer_shape=_index_copy_infer, infer_type=lambda a, d: (list(d), [d[0]]),
               kernels={"any": _index_copy}, gradient=_index_copy_grad, inplace=[(0, 0)],
               doc="old_tensor with the rows index_vector replaced by new_tensor."))


# -- index_array ------------------------------------------------------------------------------------
def _index_array_axes(attrs, ndim):
    axes = attrs["axes"]
    if axes is None:
        return tuple(range(ndim))
    return tuple(norm_axis("_contrib_index_array", a, ndim) for a in axes)


def _index_array_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    return in_shapes, [tuple(x) + (len(_index_array_axes(attrs, len(x))),)]


def _index_array(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    grids = ctx.xp.indices(x.shape, dtype=np.int64)
    axes = _index_array_axes(attrs, x.ndim)
    if axes:  # a 0-d input (NumPy shape semantics) has no axes: the (0,) output holds nothing
        outputs[0][...] = ctx.xp.stack([grids[a] for a in axes], axis=-1)


register(OpDef(name="_contrib_index_array", attrs={"axes": Attr("shape_or_none", None)},
               infer_shape=_index_array_infer, infer_type=lambda a, d: (list(d), [np.dtype(np.int64)]),
               kernels={"any": _index_array}, gradient=no_gradient(1),
               doc="For each element of data, its index along `axes` (all axes by default), as int64."))


# -- allclose -----------------------------------------------------------------------------------------
def _allclose(ctx, attrs, inputs, outputs, aux):
    a, b = inputs
    ok = ctx.xp.allclose(a, b, rtol=attrs["rtol"], atol=attrs["atol"], equal_nan=attrs["equal_nan"])
    outputs[0][...] = 1 if bool(ok) else 0


register(OpDef(name="_contrib_allclose", inputs=["a", "b"],
               attrs={"rtol": Attr("float", 1e-5), "atol": Attr("float", 1e-8), "equal_nan": Attr("bool", True)},
               infer_shape=lambda a, s: (same_shape("_contrib_allclose", names=["a", "b"])(a, s)[0], [()]),
               infer_type=lambda a, d: (list(d), [np.dtype(np.uint8)]), kernels={"any": _allclose},
               doc="0-d uint8: 1 when |a - b| <= atol + rtol * |b| everywhere (as numpy.allclose)."))
