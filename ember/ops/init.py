"""Creation ops: _zeros, _ones, _full, _arange, _eye (no inputs) and zeros_like / ones_like."""
from __future__ import annotations

import math

import numpy as np

from ..base import OperatorError, ShapeError
from ._common import no_gradient, np_shape, same_shape
from . import stype
from .registry import Attr, OpDef, as_dtype, register

_CREATE = {
    "shape": Attr("shape", (), doc="output shape"),
    "ctx": Attr("str", "", doc="device the array is created on (handled by the caller)"),
    "dtype": Attr("dtype", np.dtype(np.float32), doc="output dtype"),
}


def _shape_of(op: str):
    def infer(attrs, in_shapes):
        shape = attrs["shape"]
        if any(d is not None and d < -1 for d in shape):
            raise ShapeError(f"{op}: shape {shape} must hold non-negative integers (0 or -1: unknown)")
        # MXNet 1.x: 0 (and -1) is a dimension inference fills in from the rest of the graph
        # (begin states zeros(shape=(0, H))); an imperative call cannot, and says so.  Under NumPy
        # shape semantics a 0 is a real, empty dimension (np.zeros((2, 0)) in a hybridized block).
        unknown = (-1,) if np_shape() else (0, -1)
        return [], [tuple(None if d in unknown else d for d in shape)]
    return infer


def _dtype_of(attrs, in_dtypes):
    return [], [attrs["dtype"]]


def _fill(value_of):
    def kernel(ctx, attrs, inputs, outputs, aux):
        outputs[0].fill(value_of(attrs))
    return kernel


for _name, _value, _extra in (("_zeros", lambda a: 0, {}), ("_ones", lambda a: 1, {}),
                              ("_full", lambda a: a["value"], {"value": Attr("float", doc="fill value")})):
    register(OpDef(name=_name, attrs={**_CREATE, **_extra}, inputs=[], outputs=["output"],
                   infer_shape=_shape_of(_name), infer_type=_dtype_of, kernels={"any": _fill(_value)},
                   doc=f"A new array filled with {'the value' if _extra else _value(None)}."))


# -- arange -------------------------------------------------------------------------------
def _arange_bounds(attrs):
    """(start, stop, step); stop None with infer_range (the length comes from the graph, MXNet's)."""
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    if stop is None and not attrs["infer_range"]:
        start, stop = 0.0, start
    if step == 0:
        raise OperatorError("_arange: step must not be 0")
    if attrs["repeat"] < 1:
        raise OperatorError(f"_arange: repeat must be >= 1, got {attrs['repeat']}")
    return start, stop, step


def _arange_shape(attrs, in_shapes):
    start, stop, step = _arange_bounds(attrs)
    if stop is None:  # infer_range: the output's length is what its consumers need (backward inference)
        return [], [None]
    n = max(0, int(math.ceil((stop - start) / step)))
    return [], [(n * attrs["repeat"],)]


def _cast_c(value: float, dtype: np.dtype):
    """`value` cast to `dtype` as C's static_cast does: integers truncate toward zero and wrap
    (a step of -2 in uint8 is 254, so the values wrap as numpy's arange in that dtype does)."""
    if dtype.kind in "iu":
        return np.array(int(value), dtype=np.int64).astype(dtype)
    return dtype.type(value)


def _arange(ctx, attrs, inputs, outputs, aux):
    start, stop, step = _arange_bounds(attrs)
    out = outputs[0]
    n = out.shape[0] // attrs["repeat"]
    # MXNet computes start + i * step in the output dtype (start and step cast first, so an
    # int32 arange with step 1.5 steps by 1); the length comes from the float bounds
    vals = _cast_c(start, out.dtype) + ctx.xp.arange(n, dtype=out.dtype) * _cast_c(step, out.dtype)
    if attrs["repeat"] > 1:
        vals = ctx.xp.repeat(vals, attrs["repeat"])
    out[...] = vals


register(OpDef(
    name="_arange", inputs=[], outputs=["output"],
    attrs={"start": Attr("float", 0.0), "stop": Attr("float_or_none", None), "step": Attr("float", 1.0),
           "repeat": Attr("int", 1),
           "infer_range": Attr("bool", False, doc="stop None: the length is inferred from the graph"),
           "ctx": Attr("str", ""), "dtype": Attr("dtype", np.dtype(np.float32))},
    infer_shape=_arange_shape, infer_type=_dtype_of, kernels={"any": _arange},
    doc="Evenly spaced values in [start, stop) (stop None: [0, start)), each repeated `repeat` times."))


# -- eye ----------------------------------------------------------------------------------
def _eye_shape(attrs, in_shapes):
    n, m = attrs["N"], attrs["M"] or attrs["N"]
    if n < 0 or m < 0:
        raise ShapeError(f"_eye: N and M must be >= 0, got N={attrs['N']}, M={attrs['M']}")
    return [], [(n, m)]


def _eye(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    out[...] = ctx.xp.eye(out.shape[0], out.shape[1], k=attrs["k"], dtype=out.dtype)


register(OpDef(
    name="_eye", inputs=[], outputs=["output"],
    attrs={"N": Attr("int"), "M": Attr("int", 0), "k": Attr("int", 0), "ctx": Attr("str", ""),
           "dtype": Attr("dtype", np.dtype(np.float32))},
    infer_shape=_eye_shape, infer_type=_dtype_of, kernels={"any": _eye},
    doc="An N x M matrix with ones on diagonal k."))


# -- *_like ---------------------------------------------------------------------------------
register(OpDef(name="zeros_like", inputs=["data"], outputs=["output"],
               infer_shape=same_shape("zeros_like"), kernels={"any": _fill(lambda a: 0)}, infer_stype=stype.elemwise(),
               gradient=no_gradient(1), inplace=[(0, 0)], doc="Zeros with the shape and dtype of data."))
register(OpDef(name="ones_like", inputs=["data"], outputs=["output"],
               infer_shape=same_shape("ones_like"), kernels={"any": _fill(lambda a: 1)},
               gradient=no_gradient(1), inplace=[(0, 0)], doc="Ones with the shape and dtype of data."))


# -- linspace / zeros without dtype -----------------------------------------------------------------
def _linspace_shape(attrs, in_shapes):
    if attrs["num"] < 0:
        raise ShapeError(f"_linspace: num must be >= 0, got {attrs['num']}")
    return [], [(attrs["num"],)]


def _linspace(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = ctx.xp.linspace(attrs["start"], attrs["stop"], attrs["num"], endpoint=attrs["endpoint"])


register(OpDef(
    name="_linspace", inputs=[], outputs=["output"],
    attrs={"start": Attr("float"), "stop": Attr("float"), "num": Attr("int"), "endpoint": Attr("bool", True),
           "ctx": Attr("str", ""), "dtype": Attr("dtype", np.dtype(np.float32))},
    infer_shape=_linspace_shape, infer_type=_dtype_of, kernels={"any": _linspace},
    doc="num evenly spaced values from start to stop (included when endpoint)."))

register(OpDef(name="_zeros_without_dtype", attrs=dict(_CREATE, dtype=Attr("any", None)), inputs=[],
               outputs=["output"], infer_shape=_shape_of("_zeros_without_dtype"),
               infer_type=lambda a, d: ([], [np.dtype(np.float32) if a["dtype"] in (None, -1, "-1", "None")
                                             else as_dtype(a["dtype"])]),
               kernels={"any": _fill(lambda a: 0)},
               doc="_zeros whose dtype may be left unset (float32)."))
