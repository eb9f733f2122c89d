"""Helpers shared by the tensor operator modules: shape/dtype inference and gradient plumbing.

Unknown shapes are None (a whole shape) during symbolic inference; a dimension of a
partially known shape may be None too.  Every inference error is a ShapeError or
DTypeError whose message names the operator and the shapes/dtypes in conflict.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from ..base import DTypeError, OperatorError, ShapeError
from ._nn_util import call_op
from .registry import OpDef, register

Shape = Tuple[int, ...]


def known(shape) -> bool:
    """True when `shape` is fully known (not None and no None dimension)."""
    return shape is not None and None not in shape


def np_shape() -> bool:
    """Whether NumPy shape semantics are on (`npx.set_np()`): a 0 dimension is then a real, empty
    size and () a scalar's shape, where MXNet 1.x reads both as unknown."""
    from ..util import is_np_shape
    return is_np_shape()


def fmt(shape) -> str:
    return "unknown" if shape is None else str(tuple(shape))


def norm_axis(op: str, axis: int, ndim: int, what: str = "axis") -> int:
    """`axis` in [0, ndim), accepting negative values; IndexError-like ShapeError otherwise."""
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{op}: {what} {axis} is out of range for a {ndim}-D input")
    return axis + ndim if axis < 0 else axis


# -- shape inference ----------------------------------------------------------------
def broadcast_shape(op: str, a: Optional[Shape], b: Optional[Shape]) -> Optional[Shape]:
    """numpy/MXNet broadcasting of two shapes (None if either is unknown)."""
    if a == b or a is None or b is None:  # equal shapes (the common case) need no work
        return None if a is None or b is None else tuple(a)
    n = max(len(a), len(b))
    pa = (1,) * (n - len(a)) + tuple(a)
    pb = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb):
        if x == y:
            out.append(x)
        elif x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        else:
            raise ShapeError(f"{op}: operands could not be broadcast together with shapes "
                             f"{tuple(a)} and {tuple(b)}")
    return tuple(out)


def unify(op: str, shapes: Sequence[Optional[Shape]], names: Sequence[str] = ()) -> Optional[Shape]:
    """The one shape all of `shapes` must have (None entries are unknown); ShapeError on conflict."""
    if shapes and type(shapes[0]) is tuple and None not in shapes[0]:
        first = shapes[0]  # the usual case, every shape known and equal: one comparison each
        if all(s == first for s in shapes):
            return first
    result = None
    first = None
    for i, s in enumerate(shapes):
        if s is None:
            continue
        s = tuple(s)
        if result is None:
            result, first = s, i
            continue
        if len(s) != len(result):
            _conflict(op, names, first, result, i, s)
        merged = []
        for x, y in zip(result, s):
            if x is None:
                merged.append(y)
            elif y is None or x == y:
                merged.append(x)
            else:
                _conflict(op, names, first, result, i, s)
        result = tuple(merged)
    return result


def _conflict(op, names, i, a, j, b):
    na = names[i] if i < len(names) else f"input {i}"
    nb = names[j] if j < len(names) else f"input {j}"
    raise ShapeError(f"{op}: shapes must be equal, but {na} has shape {a} and {nb} has shape {b}")


def same_shape(op: str, n_out: int = 1, names: Sequence[str] = ()) -> Callable:
    """infer_shape for elementwise ops: every input and output shares one shape (inferred both ways)."""
    def infer(attrs, in_shapes, *aux):
        if in_shapes:  # all known and equal (the common case): no merging needed
            first = in_shapes[0]
            if first is not None and None not in first:
                for x in in_shapes:
                    if x is not first and x != first:
                        break
                else:
                    first = tuple(first)
                    return [first] * len(in_shapes), [first] * n_out
        s = unify(op, in_shapes, names)
        return [s] * len(in_shapes), [s] * n_out

    def backward(attrs, in_shapes, out_shapes):  # every input has the outputs' shape
        s = unify(op, list(out_shapes) + list(in_shapes))
        return [s] * len(in_shapes)
    infer.backward = backward
    return infer


def data_like_output(attrs, in_shapes, out_shapes):
    """Backward shape inference of ops whose output 0 has the shape of input 0 (activations,
    normalizations, softmax outputs): the data takes the output's shape."""
    return [out_shapes[0] if out_shapes else None] + [None] * (len(in_shapes) - 1)


# -- dtype inference ----------------------------------------------------------------
def same_type(op: str, n_out: int = 1, names: Sequence[str] = ()) -> Callable:
    """infer_type: all inputs and outputs share one dtype (DTypeError naming the op on a mix)."""
    def infer(attrs, in_dtypes):
        if in_dtypes:  # one known dtype everywhere (the common case)
            first = in_dtypes[0]
            if first is not None:
                for d in in_dtypes:
                    if d is not first and d != first:  # numpy dtypes are mostly singletons
                        break
                else:
                    if not isinstance(first, np.dtype):
                        first = np.dtype(first)
                    return [first] * len(in_dtypes), [first] * n_out
        dt = None
        for i, d in enumerate(in_dtypes):
            if d is None:
                continue
            d = np.dtype(d)
            if dt is None:
                dt = d
            elif d != dt:
                label = names[i] if i < len(names) else f"input {i}"
                raise DTypeError(f"{op}: {label} has dtype {d.name} but the other inputs are {dt.name}")
        return [dt] * len(in_dtypes), [dt] * n_out

    def backward(attrs, in_dtypes, out_dtypes):  # every input has the outputs' dtype
        dt = next((d for d in out_dtypes if d is not None), None)
        return [dt] * len(in_dtypes)
    infer.backward = backward
    return infer


# -- kernels ------------------------------------------------------------------------
def sum_to(xp, g, shape: Shape):
    """Sum `g` over the axes that broadcasting expanded so that the result has `shape`."""
    if g.shape == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and g.shape[i + lead] != 1)
    r = g.sum(axis=axes, keepdims=True) if axes else g
    return r.reshape(shape)


def host(x):
    """x's values as a numpy array (a CuPy array copied to the host)."""
    return x.get() if hasattr(x, "get") else np.asarray(x)


def store(ctx, out, values) -> None:
    """out[...] = values, computed on the host (numpy), copied to out's device."""
    out[...] = ctx.xp.asarray(values)


def generator(op: str, ctx):
    """The call's random generator; OperatorError naming `op` when the op was not given the 'rng' resource."""
    if ctx.rng is None:
        raise OperatorError(f"{op}: no random generator given (the op needs the 'rng' resource)")
    return ctx.rng


def as_scalar(x, value):
    """The attribute `value` converted to x's element type, as MXNet does (DType(scalar))."""
    return value if x.dtype.kind == "f" else x.dtype.type(value)


# -- gradient plumbing -----------------------------------------------------------------
def via(bwd: str, pick_inputs: Callable, n_grads: int, pass_attrs: bool = True) -> Callable:
    """A gradient that calls op `bwd` on pick_inputs(inputs, outputs, out_grads) through F.

    `bwd` returns n_grads arrays, one per forward input in order.
    """
    def gradient(F, attrs, inputs, outputs, out_grads):
        return call_op(F, bwd, pick_inputs(inputs, outputs, out_grads), attrs if pass_attrs else {}, n_grads)
    gradient.__doc__ = f"Gradient through the backward op {bwd}."
    return gradient


def first_input_type(attrs, in_dtypes):
    """infer_type of ops whose one output has input 0's dtype (backward ops: the gradient has ograd's)."""
    return list(in_dtypes), [in_dtypes[0]]


def _input_shapes(attrs, in_shapes):
    return in_shapes, list(in_shapes[1:])


def _input_types(attrs, in_dtypes):
    return list(in_dtypes), list(in_dtypes[1:])


def with_backward(op: OpDef, kernel: Callable, doc: str, name: str = "", ograd: str = "ograd",
                  grads: Sequence[str] = (), infer_type: Optional[Callable] = _input_types, **fields) -> OpDef:
    """Register `op` and the op of its gradient, `name` (default `_backward_<op.name, leading _ dropped>`):
    that op has op's attributes, takes (ograd, *op's inputs) and gives one gradient per input (named `grads`,
    default '<input>_grad'), each of its input's shape and by default of its dtype (infer_type=None: the
    registry's default); `fields` are its other OpDef fields.  op's gradient calls it through F.  For an op
    whose inputs depend on its attributes (a callable `inputs`), the gradient op's names do too."""
    bwd = name or f"_backward_{op.name.lstrip('_')}"
    if callable(op.inputs):
        inputs, outputs = (lambda a: [ograd] + op.input_names(a)), (lambda a: [f"{x}_grad" for x in op.input_names(a)])
    else:
        inputs, outputs = [ograd] + list(op.inputs), list(grads) or [f"{x}_grad" for x in op.inputs]
    register(OpDef(name=bwd, attrs=op.attrs, inputs=inputs, outputs=outputs, infer_shape=_input_shapes,
                   infer_type=infer_type, kernels={"any": kernel}, doc=doc, **fields))

    def gradient(F, attrs, inputs, outputs, out_grads):
        return call_op(F, bwd, [out_grads[0], *inputs], attrs, len(inputs))
    gradient.__doc__ = f"Gradient through the backward op {bwd}."
    op.gradient = gradient
    return register(op)


def copy_kernel(ctx, attrs, inputs, outputs, aux) -> None:
    """Kernel of ops whose output is their first input's values (written unless it is that array; a cast
    to an integer dtype truncates towards zero, as MXNet's static_cast)."""
    if outputs[0] is not inputs[0]:
        outputs[0][...] = inputs[0]


def no_gradient(n_in: int) -> Callable:
    """Gradient of ops that are piecewise constant (comparisons, rounding): zeros."""
    def gradient(F, attrs, inputs, outputs, out_grads):
        return [F.zeros_like(x) for x in inputs[:n_in]]
    return gradient


def need(op: str, cond: bool, message: str) -> None:
    """Raise OperatorError(op: message) unless `cond`."""
    if not cond:
        raise OperatorError(f"{op}: {message}")


def ograds_or_zeros(F, out_grads, outputs, n: int) -> list:
    """The first n output gradients, with zeros for outputs no gradient reached (callers may pass None)."""
    return [g if g is not None else F.zeros_like(outputs[i]) for i, g in enumerate(list(out_grads)[:n])]
