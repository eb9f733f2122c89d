"""numpy-semantics products and reshapes with shape/dtype inference of their own (MXNet 1.9.1's names), so
graphs built from symbols whose shapes are not known yet (`mx.sym.np.dot(mx.sym.Variable('a'), ...)`)
are inferred at bind time as any other operator's:

* `_np_dot(a, b)`: numpy.dot (0-d operands multiply; 1-d . 1-d is 0-d; N-d . 1-d contracts a's last
  axis; N-d . M-d contracts a's last with b's second-to-last).  A contracted dimension known on one
  side fills the other's (as MXNet's inference).
* `_npi_tensordot(a, b, a_axes_summed, b_axes_summed)` / `_npi_tensordot_int_axes(a, b, axes)`:
  numpy.tensordot (negative axes count from the end).
* `_np_roll(data, shift, axis)`: numpy.roll (axis None rolls the flattened array).
* `_npx_reshape(a, newshape, reverse)`: npx.reshape with MXNet's special values (-1 infer, -2 copy,
  -3 drop a size-1 dimension, -4 copy the rest, -5 merge two, -6 split one into the next two values;
  `reverse` applies them from the right).

Gradients: the products' through `_backward_np_dot` / `_backward_npi_tensordot*` (tensordots of the
output gradient with the other operand), roll's a roll back, reshape's a reshape to the input's shape.
"""
from __future__ import annotations

from typing import List, Tuple

import numpy as np

from ..base import MXNetError, ShapeError
from ._common import known, with_backward
from .registry import Attr, OpDef, register


def _norm_axes(op: str, axes, ndim: int) -> List[int]:
    out = []
    for x in axes:
        if not -ndim <= x < ndim:
            raise ShapeError(f"{op}: axis {x} is out of range for an input of {ndim} dimensions")
        out.append(x % ndim)
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: repeated axis in {tuple(axes)}")
    return out


def _dot_axes(sa, sb) -> Tuple[List[int], List[int]]:
    """dot's contracted axes as tensordot's (for operands of ndim >= 1)."""
    return [len(sa) - 1], [len(sb) - 2 if len(sb) >= 2 else 0]


def _td_axes(op: str, attrs: dict, na: int, nb: int):
    if "axes" in attrs:
        n = attrs["axes"]
        if n < 0 or n > na or n > nb:
            raise ShapeError(f"{op}: axes={n} is out of range for inputs of {na} and {nb} dimensions")
        return list(range(na - n, na)), list(range(n))
    aa, ba = attrs["a_axes_summed"], attrs["b_axes_summed"]
    if len(aa) != len(ba):
        raise ShapeError(f"{op}: a_axes_summed {tuple(aa)} and b_axes_summed {tuple(ba)} differ in length")
    return _norm_axes(op, aa, na), _norm_axes(op, ba, nb)


def _axes_of(op, attrs, sa, sb):
    if op == "_np_dot":
        return _dot_axes(sa, sb)
    return _td_axes(op, attrs, len(sa), len(sb))


def _product_infer(op: str):
    def infer(attrs, in_shapes):
        sa, sb = in_shapes
        if sa is None or sb is None:
            return in_shapes, [None]
        sa, sb = list(sa), list(sb)
        if op == "_np_dot" and (len(sa) == 0 or len(sb) == 0):
            other = sb if len(sa) == 0 else sa
            return [tuple(sa), tuple(sb)], [tuple(other) if known(other) else None]
        ax_a, ax_b = _axes_of(op, attrs, sa, sb)
        for i, j in zip(ax_a, ax_b):
            if sa[i] is None:
                sa[i] = sb[j]
            elif sb[j] is None:
                sb[j] = sa[i]
            elif sa[i] != sb[j]:
                raise ShapeError(f"{op}: shapes {tuple(sa)} and {tuple(sb)} not aligned: dimension {i} of a "
                                 f"({sa[i]}) != dimension {j} of b ({sb[j]})")
        out = [d for i, d in enumerate(sa) if i not in ax_a] + [d for i, d in enumerate(sb) if i not in ax_b]
        return [tuple(sa), tuple(sb)], [tuple(out) if None not in out else None]
    return infer


def _product_type(op: str):
    def infer(attrs, in_dtypes):
        da, db = in_dtypes
        dt = da if da is not None else db
        if da is not None and db is not None and np.dtype(da) != np.dtype(db):
            raise MXNetError(f"{op}: operands must have one dtype, got {np.dtype(da).name} and {np.dtype(db).name}")
        return [dt, dt], [dt]
    return infer


def _contract(xp, op, attrs, a, b):
    if op == "_np_dot" and (a.ndim == 0 or b.ndim == 0):
        return xp.multiply(a, b)
    ax_a, ax_b = _axes_of(op, attrs, a.shape, b.shape)
    return xp.tensordot(a, b, axes=(ax_a, ax_b))


def _forward(op: str):
    def kernel(ctx, attrs, inputs, outputs, aux):
        a, b = inputs
        out = outputs[0]
        out[...] = _contract(ctx.xp, op, attrs, a, b).reshape(out.shape).astype(out.dtype, copy=False)
    return kernel


def _backward(op: str):
    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        g, a, b = inputs
        ga, gb = outputs
        if op == "_np_dot" and (a.ndim == 0 or b.ndim == 0):
            if a.ndim == 0:
                ga[...] = xp.sum(g * b)
                gb[...] = g * a
            else:
                ga[...] = g * b
                gb[...] = xp.sum(g * a)
            return
        ax_a, ax_b = _axes_of(op, attrs, a.shape, b.shape)
        free_a = [i for i in range(a.ndim) if i not in ax_a]
        free_b = [i for i in range(b.ndim) if i not in ax_b]
        g = g.reshape(tuple(a.shape[i] for i in free_a) + tuple(b.shape[i] for i in free_b))
        nfa = len(free_a)
        # d a: g's b-free axes with b's free axes -> a's free axes + the contracted ones
        da = xp.tensordot(g, b, axes=(list(range(nfa, g.ndim)), free_b))
        # (tensordot leaves the other operand's remaining axes in ascending order)
        order_a = free_a + [ax_a[ax_b.index(j)] for j in sorted(ax_b)]
        ga[...] = xp.transpose(da, np.argsort(order_a)).astype(ga.dtype, copy=False)
        db = xp.tensordot(a, g, axes=(free_a, list(range(nfa))))
        order_b = [ax_b[ax_a.index(i)] for i in sorted(ax_a)] + free_b
        gb[...] = xp.transpose(db, np.argsort(order_b)).astype(gb.dtype, copy=False)
    return kernel


_TD_ATTRS = {"a_axes_summed": Attr("shape"), "b_axes_summed": Attr("shape")}
_TD_INT_ATTRS = {"axes": Attr("int", 2)}

for _op, _attrs, _doc in (
        ("_np_dot", {}, "numpy.dot of a and b (see ember/ops/np_products.py)."),
        ("_npi_tensordot", _TD_ATTRS, "numpy.tensordot over a_axes_summed of a and b_axes_summed of b."),
        ("_npi_tensordot_int_axes", _TD_INT_ATTRS, "numpy.tensordot over a's last `axes` and b's first `axes`.")):
    with_backward(OpDef(name=_op, attrs=_attrs, inputs=["a", "b"], outputs=["out"],
                        infer_shape=_product_infer(_op), infer_type=_product_type(_op),
                        kernels={"any": _forward(_op)}, expensive=True, doc=_doc),
                  _backward(_op), f"Gradient of {_op} w.r.t. a and b.")


# -- roll ---------------------------------------------------------------------------------------------
def _roll_pairs(op, attrs, ndim):
    shift, axis = attrs["shift"], attrs["axis"]
    if shift is None:
        raise ShapeError(f"{op}: shift is required")
    if axis is None:
        if len(shift) != 1:
            raise ShapeError(f"{op}: shift must be one integer when axis is None")
        return None, shift[0]
    if len(shift) == 1 and len(axis) > 1:
        shift = shift * len(axis)
    if len(axis) == 1 and len(shift) > 1:
        axis = axis * len(shift)
    if len(shift) != len(axis):
        raise ShapeError(f"{op}: 'shift' and 'axis' must be scalars or sequences of one length")
    for a in axis:
        if not -ndim <= a < ndim:
            raise ShapeError(f"{op}: axis {a} is out of range for an input of {ndim} dimensions")
    return tuple(a % ndim for a in axis), tuple(shift)


def _roll_infer(attrs, in_shapes):
    s = in_shapes[0]
    if s is not None:
        _roll_pairs("_np_roll", attrs, len(s))
    return in_shapes, [tuple(s) if s is not None else None]


def _roll(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    axis, shift = _roll_pairs("_np_roll", attrs, x.ndim)
    outputs[0][...] = ctx.xp.roll(x, shift, axis=axis)


def _roll_gradient(F, attrs, inputs, outputs, out_grads):
    shift = attrs["shift"]
    return [F._np_roll(out_grads[0], shift=tuple(-s for s in shift), axis=attrs["axis"])]


register(OpDef(name="_np_roll", attrs={"shift": Attr("shape_or_none", None), "axis": Attr("shape_or_none", None)},
               inputs=["data"], outputs=["output"], infer_shape=_roll_infer,
               infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _roll}, gradient=_roll_gradient,
               doc="numpy.roll: elements shifted cyclically by shift along axis (the flattened array when None)."))


# -- npx.reshape ----------------------------------------------------------------------------------------
def npx_reshape_target(shape: tuple, newshape, reverse: bool = False) -> tuple:
    """npx.reshape's special values over `shape` (see the module docstring)."""
    from .shape import numpy_reshape_target
    spec = tuple(int(d) for d in newshape)
    bad = f"npx.reshape: cannot reshape shape {tuple(shape)} with {spec}" + (" (reverse)" if reverse else "")
    if reverse:
        shape, spec = tuple(reversed(shape)), tuple(reversed(spec))
    out, i, j = [], 0, 0
    while j < len(spec):
        d = spec[j]
        if d >= 0 or d == -1:
            out.append(d)
            i += 1
        elif d == -2:
            if i >= len(shape):
                raise ShapeError(bad + ": -2 has no input dimension to copy")
            out.append(shape[i])
            i += 1
        elif d == -3:
            if i >= len(shape) or shape[i] != 1:
                raise ShapeError(bad + ": -3 skips an input dimension of size 1")
            i += 1
        elif d == -4:
            out.extend(shape[i:])
            i = len(shape)
        elif d == -5:
            if i + 1 >= len(shape):
                raise ShapeError(bad + ": -5 needs two input dimensions to merge")
            out.append(shape[i] * shape[i + 1])
            i += 2
        elif d == -6:
            if j + 2 >= len(spec) or i >= len(shape):
                raise ShapeError(bad + ": -6 must be followed by two values and split an input dimension")
            a, b = spec[j + 1], spec[j + 2]
            if a == -1 and b == -1 or (a != -1 and b != -1 and a * b != shape[i]):
                raise ShapeError(bad + f": cannot split {shape[i]} into ({a}, {b})")
            a = shape[i] // b if a == -1 else a
            b = shape[i] // a if b == -1 else b
            out.extend((a, b))
            i += 1
            j += 2
        else:
            raise ShapeError(bad + f": invalid value {d}")
        j += 1
    try:
        res = tuple(numpy_reshape_target(int(np.prod(shape)), shape, out))
    except Exception as e:
        raise ShapeError(f"{bad}: {e}") from None
    return tuple(reversed(res)) if reverse else res


def _npx_reshape_infer(attrs, in_shapes):
    s = in_shapes[0]
    if not known(s):
        return in_shapes, [None]
    return in_shapes, [npx_reshape_target(tuple(s), attrs["newshape"], attrs["reverse"])]


def _npx_reshape(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = inputs[0].reshape(outputs[0].shape)


register(OpDef(name="_npx_reshape", attrs={"newshape": Attr("shape"), "reverse": Attr("bool", False),
                                           "order": Attr("str", "C", choices=("C",))},
               inputs=["a"], outputs=["out"], infer_shape=_npx_reshape_infer,
               infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _npx_reshape},
               gradient=lambda F, a, i, o, g: [F.reshape_like(g[0], i[0])],
               doc="npx.reshape: numpy's reshape with MXNet's special values -1..-6 and reverse."))
