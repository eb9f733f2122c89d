"""_contrib_boolean_mask (MXNet's `mx.nd/sym.contrib.boolean_mask`) and its backward op.

The output keeps the slices of `data` along `axis` whose `index` entry is non-zero, so its length
on that axis depends on the index *values*: shape inference leaves it unknown (as MXNet's does),
and the imperative call (`ember/ndarray/legacy_helpers.boolean_mask`) sizes the output from the
index before running the kernel.  MXNet 1.9.1 supports axis 0 only; ember takes any axis.
"""
from __future__ import annotations

from ..base import ShapeError
from ._common import norm_axis, via
from .registry import Attr, OpDef, register

_NAME = "_contrib_boolean_mask"


def _check(attrs, data, index):
    """The normalised axis, after checking index is 1-D with one entry per slice."""
    ax = norm_axis(_NAME, attrs["axis"], len(data))
    if len(index) != 1:
        raise ShapeError(f"{_NAME}: index must be 1-D, got shape {tuple(index)}")
    if index[0] is not None and data[ax] is not None and index[0] != data[ax]:
        raise ShapeError(f"{_NAME}: index has {index[0]} entries but data has {data[ax]} slices along axis {ax}")
    return ax


def _infer_shape(attrs, in_shapes):
    data, index = in_shapes
    if data is None or index is None:
        return in_shapes, [None]
    ax = _check(attrs, data, index)
    out = list(data)
    out[ax] = None  # how many entries of index are non-zero is known only from its values
    return in_shapes, [tuple(out)]


def _infer_type(attrs, in_dtypes):
    return in_dtypes, [in_dtypes[0]]


def selected(xp, index):
    """Positions of the non-zero entries of the 1-D index."""
    return xp.flatnonzero(index)


def _kernel(ctx, attrs, inputs, outputs, aux):
    data, index = inputs
    ax = attrs["axis"] % data.ndim
    ctx.xp.take(data, selected(ctx.xp, index), axis=ax, out=outputs[0])


def _backward_infer(attrs, in_shapes):
    return in_shapes, [in_shapes[1], in_shapes[2]]


def _backward_kernel(ctx, attrs, inputs, outputs, aux):
    ograd, data, index = inputs
    xp = ctx.xp
    ax = attrs["axis"] % data.ndim
    grad = outputs[0]
    grad[...] = 0
    where = [slice(None)] * data.ndim
    where[ax] = selected(xp, index)
    grad[tuple(where)] = ograd  # positions are unique: plain assignment scatters every slice
    outputs[1][...] = 0


register(OpDef(
    name="_backward_contrib_boolean_mask", attrs={"axis": Attr("int", 0)},
    inputs=["ograd", "data", "index"], outputs=["data_grad", "index_grad"],
    infer_shape=_backward_infer, infer_type=lambda a, d: (d, [d[1], d[2]]),
    kernels={"any": _backward_kernel}, shape_only_inputs=(1,),
    doc="Gradient of _contrib_boolean_mask: out_grad scattered back to the selected slices, zero elsewhere."))

register(OpDef(
    name=_NAME, attrs={"axis": Attr("int", 0, doc="the axis whose slices index selects")},
    inputs=["data", "index"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=_infer_type, kernels={"any": _kernel}, value_dependent_shape=True,
    gradient=via("_backward_contrib_boolean_mask", lambda ins, outs, og: [og[0], ins[0], ins[1]], 2),
    doc="The slices of data along axis where the 1-D index is non-zero (output length depends on the "
        "index values)."))
