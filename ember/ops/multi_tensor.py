"""Ops over many arrays at once that MXNet 1.9.1's Gluon and AMP call: `reset_arrays` (zero
every input in place: `ParameterDict.zero_grad`), `multi_all_finite` / `all_finite` (the
overflow checks of AMP's loss scaler and Trainer), and `_square_sum` (sum of squares over axes,
MXNet's fused square + sum, kept for scripts that call it).
"""
from __future__ import annotations

import numpy as np

from ..base import DTypeError, OperatorError
from ._common import with_backward
from .reduce import _REDUCE_ATTRS, reduced_axes, reduced_shape
from . import stype
from .registry import Attr, OpDef, register

_F32 = np.dtype(np.float32)


def _count(op: str):
    def count(attrs) -> int:
        n = attrs["num_arrays"]
        if n < 1:
            raise OperatorError(f"{op}: num_arrays must be >= 1, got {n}")
        return n
    return count


def _array_names(op: str):
    count = _count(op)
    return lambda attrs: [f"array_{i}" for i in range(count(attrs))]


# -- reset_arrays --------------------------------------------------------------------------------------
def _reset_arrays(ctx, attrs, inputs, outputs, aux):
    for x in inputs:
        x[...] = 0


register(OpDef(name="reset_arrays", attrs={"num_arrays": Attr("int", doc="number of input arrays")},
               inputs=_array_names("reset_arrays"), outputs=[],
               infer_shape=lambda a, s: (list(s), []), infer_type=lambda a, d: (list(d), []),
               kernels={"any": _reset_arrays}, key_var_num_args="num_arrays",
               mutates=lambda a: tuple(range(_count("reset_arrays")(a))),
               doc="Set every input array to zero in place (one op for many arrays); returns nothing."))


# -- all_finite / multi_all_finite ---------------------------------------------------------------------
def _finite_types(op: str):
    """Floating-point inputs of one dtype (MXNet's kernels read every input as the first one's
    type and refuse integers); the output is a float32 flag."""
    def infer(attrs, in_dtypes):
        known = next((np.dtype(d) for d in in_dtypes if d is not None), None)
        for i, d in enumerate(in_dtypes):
            if d is None:
                continue
            d = np.dtype(d)
            if d.kind != "f":
                raise DTypeError(f"{op}: only floating-point arrays can be checked, input {i} is {d.name}")
            if d != known:
                raise DTypeError(f"{op}: every array must have one dtype; input {i} is {d.name} but input 0 "
                                 f"is {known.name}")
        return [known] * len(in_dtypes), [_F32]
    return infer


def _all_finite_kernel(ctx, attrs, inputs, outputs, aux):
    """out = 1 first when init_output; then 0 if any element of any input is inf or NaN.  Without
    init_output a finite check keeps out's value, so several calls can AND into one flag."""
    if attrs["init_output"]:
        outputs[0][...] = 1.0
    xp = ctx.xp
    for x in inputs:
        if x.size and not bool(xp.isfinite(x).all()):
            outputs[0][...] = 0.0
            return


_INIT_OUTPUT = Attr("bool", True, doc="set the output to 1 before checking")
register(OpDef(name="all_finite", attrs={"init_output": _INIT_OUTPUT}, inputs=["data"], outputs=["output"],
               infer_shape=lambda a, s: (list(s), [(1,)]), infer_type=_finite_types("all_finite"),
               kernels={"any": _all_finite_kernel},
               doc="(1,) float32: 1 when every element is finite, else 0 (see init_output)."))
register(OpDef(name="multi_all_finite",
               attrs={"num_arrays": Attr("int", 1, doc="number of input arrays"), "init_output": _INIT_OUTPUT},
               inputs=_array_names("multi_all_finite"), outputs=["output"],
               infer_shape=lambda a, s: (list(s), [(1,)]), infer_type=_finite_types("multi_all_finite"),
               kernels={"any": _all_finite_kernel}, key_var_num_args="num_arrays",
               doc="(1,) float32: 1 when every element of every input is finite, else 0 (see init_output)."))


# -- _square_sum ---------------------------------------------------------------------------------------
def _square_sum_infer(attrs, in_shapes):
    x = in_shapes[0]
    return in_shapes, [None if x is None else reduced_shape("_square_sum", attrs, x)]


def _keepdims_shape(attrs, shape):
    axes = reduced_axes("_square_sum", attrs, len(shape))
    return axes, tuple(1 if i in axes else d for i, d in enumerate(shape))


def _square_sum(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    axes, kshape = _keepdims_shape(attrs, x.shape)
    res = ctx.xp.sum(ctx.xp.square(x), axis=axes, keepdims=True) if x.ndim else ctx.xp.square(x)
    outputs[0][...] = res.reshape(outputs[0].shape)


def _square_sum_backward(ctx, attrs, inputs, outputs, aux):
    g, x = inputs
    _, kshape = _keepdims_shape(attrs, x.shape)
    ctx.xp.multiply(x, 2 * g.reshape(kshape), out=outputs[0])


with_backward(OpDef(name="_square_sum", attrs=dict(_REDUCE_ATTRS), inputs=["data"], outputs=["output"],
                     infer_shape=_square_sum_infer, infer_type=lambda a, d: (list(d), [d[0]]),
                     kernels={"any": _square_sum}, infer_stype=stype.square_sum,
                     doc="sum(data ** 2) over `axis` (sum's axis/keepdims/exclude); MXNet computes it for "
                         "row_sparse data, ember for any (its sparse arrays are dense underneath)."),
              _square_sum_backward, "Gradient of _square_sum: 2 * data * ograd (broadcast over the reduced axes).")
