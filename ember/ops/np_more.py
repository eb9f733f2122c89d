"""numpy's index-plan operators (MXNet 1.9.1's names): delete, insert, unravel_index and pad, each with
shape/dtype inference of its own and a gradient where MXNet has one.

* `_npi_delete(arr, start, stop, step, int_ind, axis, indices)`: numpy.delete of the slice
  start:stop:step, of the index int_ind, or of the integer positions `indices` (ember keeps an index
  array given as a constant in this attribute, so the output shape is known from attributes; MXNet
  takes it as an input and sizes the output at run time).  Negative and too large positions in `indices`
  are ignored, as MXNet's (numpy counts negative ones from the end); an out-of-range int_ind is an IndexError.  axis None deletes from the
  flattened array.
* `_npi_insert_scalar(arr, values, int_ind, axis)`, `_npi_insert_slice(arr, values, start, stop, step,
  axis)`, `_npi_insert_tensor(arr, values, obj, axis)`: numpy.insert of `values` (cast to arr's dtype)
  before int_ind / the positions of the slice / the positions in the integer array obj.  The output
  shape depends only on shapes (len(obj), or values' extent on axis for a single position), so graphs
  infer it; the tensor form reads obj's values when it runs.
* `_npi_unravel_index_fallback(indices, shape)`: numpy.unravel_index as one int64 array of shape
  (len(shape),) + indices.shape (row i: the coordinates on axis i).
* `_npi_pad(data, pad_width, mode, constant_value)`: numpy.pad with modes constant, edge, reflect,
  symmetric, maximum, minimum; pad_width is flattened ((before, after) per axis).

Gradients: delete and insert scatter/gather the output gradient back through the same index plan (the
values' gradient summed over the axes they were broadcast along); pad's is the adjoint of its index map
(constant: the inner slice; edge/reflect/symmetric: sums over every output position copying an input
element); maximum/minimum have none (MXNetError, as MXNet's backward supports constant mode only
among the statistic modes).  unravel_index has none (integer outputs).
"""
from __future__ import annotations

import numpy as np

from ..base import MXNetError
from ._common import host, known, sum_to, with_backward
from .registry import Attr, OpDef, register


def _flat_axis(op: str, shape, axis):
    """(the shape the op works on, the normalised axis): axis None works on the flattened array."""
    if axis is None:
        return (int(np.prod(shape, dtype=np.int64)),), 0
    nd = len(shape)
    if not -nd <= axis < nd:
        raise MXNetError(f"{op}: axis {axis} is out of bounds for an array of dimension {nd}")
    return tuple(shape), axis % nd


# -- delete ---------------------------------------------------------------------------------------------
_DELETE_ATTRS = {"start": Attr("int_or_none", None), "stop": Attr("int_or_none", None),
                 "step": Attr("int_or_none", None), "int_ind": Attr("int_or_none", None),
                 "axis": Attr("int_or_none", None), "indices": Attr("shape_or_none", None)}


def _delete_keep(attrs, n: int) -> np.ndarray:
    """The positions along the axis (of length n) that delete keeps."""
    drop = np.zeros(n, dtype=bool)
    if attrs["int_ind"] is not None:
        i = attrs["int_ind"]
        if not -n <= i < n:
            raise IndexError(f"index {i} is out of bounds for axis with size {n}")
        drop[i % n] = True
    elif attrs["indices"] is not None:
        idx = np.asarray(attrs["indices"], dtype=np.int64)
        drop[idx[(idx >= 0) & (idx < n)]] = True  # MXNet ignores negative and too large positions
    else:
        step = attrs["step"]
        if step == 0:
            raise MXNetError("_npi_delete: slice step cannot be zero")
        drop[np.arange(*slice(attrs["start"], attrs["stop"], step).indices(n))] = True
    return np.flatnonzero(~drop)


def _delete_infer(attrs, in_shapes):
    s = in_shapes[0]
    if not known(s):
        return in_shapes, [None]
    work, ax = _flat_axis("_npi_delete", s, attrs["axis"])
    out = list(work)
    out[ax] = len(_delete_keep(attrs, work[ax]))
    return in_shapes, [tuple(out)]


def _delete(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    work, ax = _flat_axis("_npi_delete", x.shape, attrs["axis"])
    keep = ctx.xp.asarray(_delete_keep(attrs, work[ax]))
    outputs[0][...] = ctx.xp.take(x.reshape(work), keep, axis=ax)


def _delete_backward(ctx, attrs, inputs, outputs, aux):
    g, x = inputs
    work, ax = _flat_axis("_npi_delete", x.shape, attrs["axis"])
    keep = _delete_keep(attrs, work[ax])
    grad = ctx.xp.zeros(work, dtype=outputs[0].dtype)
    where = [slice(None)] * len(work)
    where[ax] = ctx.xp.asarray(keep)
    grad[tuple(where)] = g
    outputs[0][...] = grad.reshape(x.shape)


with_backward(OpDef(name="_npi_delete", attrs=_DELETE_ATTRS, inputs=["arr"], outputs=["out"],
                     infer_shape=_delete_infer, infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _delete},
                     doc="numpy.delete: arr without the slice start:stop:step, the index int_ind or the positions "
                         "`indices` along axis (the flattened array when axis is None)."),
              _delete_backward, "Gradient of _npi_delete: the output gradient at the kept positions, zero elsewhere.",
              shape_only_inputs=(1,))


# -- insert ---------------------------------------------------------------------------------------------
class _InsertPlan:
    """Where numpy.insert puts arr's elements and the (broadcast) values along the working axis."""

    def __init__(self, op: str, attrs: dict, arr_shape, v_shape, obj_shape=None, obj=None):
        work, ax = _flat_axis(op, arr_shape, attrs["axis"])
        n = work[ax]
        nd = len(work)
        self.work, self.axis = work, ax
        if len(v_shape) > nd:
            raise MXNetError(f"{op}: values of shape {tuple(v_shape)} have more dimensions than arr ({nd})")
        self.v_padded = (1,) * (nd - len(v_shape)) + tuple(v_shape)
        if op == "_npi_insert_scalar":
            single, positions, scalar = True, None, True
            index = attrs["int_ind"]
        elif op == "_npi_insert_slice":
            step = attrs["step"]
            if step == 0:
                raise MXNetError(f"{op}: slice step cannot be zero")
            positions = np.arange(*slice(attrs["start"], attrs["stop"], step).indices(n), dtype=np.int64)
            single, scalar = positions.size == 1, False
            index = int(positions[0]) if single else None
        else:
            if len(obj_shape) > 1:
                raise MXNetError(f"{op}: index array argument obj to insert must be one dimensional or scalar")
            size = int(np.prod(obj_shape, dtype=np.int64))
            single, scalar = size == 1, len(obj_shape) == 0
            positions = None if obj is None else np.asarray(obj).astype(np.int64).reshape(-1)
            index = None if (obj is None or not single) else int(positions[0])
        # values shape as placed: moved so that its first axis runs along `axis` for a scalar index
        self.moved = scalar
        vs = list(self.v_padded)
        if scalar:
            vs.insert(ax, vs.pop(0))
        self.v_moved = tuple(vs)
        if single:
            numnew = vs[ax]
        else:
            numnew = int(positions.size) if positions is not None else int(np.prod(obj_shape, dtype=np.int64))
        block = list(work)
        block[ax] = numnew
        self.block = tuple(block)
        try:  # values must broadcast to the block they fill
            np.broadcast_shapes(self.v_moved, self.block)
        except ValueError:
            raise MXNetError(f"{op}: values of shape {tuple(v_shape)} cannot be broadcast to {self.block}") from None
        out = list(work)
        out[ax] = n + numnew
        self.out = tuple(out)
        self.new_pos = self.old_pos = None
        if single and index is not None:
            if not -n <= index <= n:
                raise IndexError(f"index {index} is out of bounds for axis {ax} with size {n}")
            if index < 0:
                index += n
            new = np.arange(index, index + numnew)
        elif positions is not None:
            if positions.size and (positions.min() < -n or positions.max() > n):
                bad = positions[(positions < -n) | (positions > n)][0]
                raise IndexError(f"index {bad} is out of bounds for axis {ax} with size {n}")
            pos = np.where(positions < 0, positions + n, positions)
            order = np.argsort(pos, kind="mergesort")
            new = pos.copy()
            new[order] += np.arange(numnew)
        else:
            return
        is_new = np.zeros(n + numnew, dtype=bool)
        is_new[new] = True
        self.new_pos, self.old_pos = new, np.flatnonzero(~is_new)

    def index(self, xp, pos):
        where = [slice(None)] * len(self.work)
        where[self.axis] = xp.asarray(pos)
        return tuple(where)


_INSERT_FORMS = {
    "_npi_insert_scalar": ({"int_ind": Attr("int"), "axis": Attr("int_or_none", None)}, ["arr", "values"]),
    "_npi_insert_slice": ({"start": Attr("int_or_none", None), "stop": Attr("int_or_none", None),
                           "step": Attr("int_or_none", None), "axis": Attr("int_or_none", None)}, ["arr", "values"]),
    "_npi_insert_tensor": ({"axis": Attr("int_or_none", None)}, ["arr", "values", "obj"]),
}


def _insert_infer(op):
    def infer(attrs, in_shapes):
        if not all(known(s) for s in in_shapes):
            return in_shapes, [None]
        plan = _InsertPlan(op, attrs, in_shapes[0], in_shapes[1], in_shapes[2] if len(in_shapes) > 2 else None)
        return in_shapes, [plan.out]
    return infer


def _insert_type(op):
    def infer(attrs, in_dtypes):
        if len(in_dtypes) > 2 and in_dtypes[2] is not None and np.dtype(in_dtypes[2]).kind not in "iu":
            raise MXNetError(f"{op}: index array obj must be of integer type, got {np.dtype(in_dtypes[2]).name}")
        return list(in_dtypes), [in_dtypes[0]]
    return infer


def _plan_of(op, attrs, inputs, arr_shape):
    obj = inputs[2] if len(inputs) > 2 else None
    return _InsertPlan(op, attrs, arr_shape, inputs[1].shape,
                       None if obj is None else obj.shape, None if obj is None else host(obj))


def _insert_kernel(op):
    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        arr, values = inputs[0], inputs[1]
        plan = _plan_of(op, attrs, inputs, arr.shape)
        out = outputs[0].reshape(plan.out)
        out[plan.index(xp, plan.old_pos)] = arr.reshape(plan.work)
        v = values.astype(out.dtype, copy=False).reshape(plan.v_padded)
        if plan.moved:
            v = xp.moveaxis(v, 0, plan.axis)
        out[plan.index(xp, plan.new_pos)] = xp.broadcast_to(v, plan.block)
    return kernel


def _insert_backward(op):
    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        g, arr = inputs[0], inputs[1]
        plan = _plan_of(op, attrs, inputs[1:], arr.shape)
        g = g.reshape(plan.out)
        outputs[0][...] = g[plan.index(xp, plan.old_pos)].reshape(arr.shape)
        gv = sum_to(xp, g[plan.index(xp, plan.new_pos)], plan.v_moved)
        if plan.moved:
            gv = xp.moveaxis(gv, plan.axis, 0)
        outputs[1][...] = gv.reshape(outputs[1].shape).astype(outputs[1].dtype, copy=False)
        for extra in outputs[2:]:
            extra[...] = 0
    return kernel


for _op, (_attrs, _inputs) in _INSERT_FORMS.items():
    with_backward(OpDef(name=_op, attrs=_attrs, inputs=_inputs, outputs=["out"], infer_shape=_insert_infer(_op),
                        infer_type=_insert_type(_op), kernels={"any": _insert_kernel(_op)},
                        doc="numpy.insert: values (cast to arr's dtype) inserted along axis before the given "
                            "position(s) (see ember/ops/np_more.py)."),
                  _insert_backward(_op), f"Gradient of {_op}: the output gradient at arr's positions, and at the "
                  "inserted positions summed back to values' shape.", shape_only_inputs=(1,))


# -- unravel_index --------------------------------------------------------------------------------------
def _unravel_infer(attrs, in_shapes):
    s = in_shapes[0]
    if s is None:
        return in_shapes, [None]
    return in_shapes, [(len(attrs["shape"]),) + tuple(s)]


def _unravel_type(attrs, in_dtypes):
    d = in_dtypes[0]
    if d is not None and np.dtype(d).kind not in "iub":
        raise MXNetError(f"_npi_unravel_index_fallback: indices must be integers, got {np.dtype(d).name}")
    return list(in_dtypes), [np.dtype(np.int64)]


def _unravel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    dims = attrs["shape"]
    idx = inputs[0].astype(np.int64)
    total = int(np.prod(dims, dtype=np.int64))
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= total):
        raise ValueError(f"index {int(idx.max()) if int(idx.max()) >= total else int(idx.min())} is out of bounds "
                         f"for array with size {total}")
    out = outputs[0]
    for i in range(len(dims) - 1, -1, -1):
        out[i] = idx % dims[i]
        idx = idx // dims[i]


register(OpDef(name="_npi_unravel_index_fallback", attrs={"shape": Attr("shape")}, inputs=["indices"],
               outputs=["out"], infer_shape=_unravel_infer, infer_type=_unravel_type, kernels={"any": _unravel},
               doc="numpy.unravel_index: the coordinates of flat indices in an array of `shape`, stacked (int64)."))


# -- pad ------------------------------------------------------------------------------------------------
_PAD_MODES = ("constant", "edge", "reflect", "symmetric", "maximum", "minimum")
_PAD_ATTRS = {"pad_width": Attr("shape"), "mode": Attr("str", "constant", choices=_PAD_MODES),
              "constant_value": Attr("float", 0.0), "reflect_type": Attr("str", "even", choices=("even",))}


def _pad_pairs(attrs, nd: int):
    pw = attrs["pad_width"]
    if len(pw) != 2 * nd or any(p < 0 for p in pw):
        raise MXNetError(f"_npi_pad: pad_width {pw} must hold non-negative (before, after) pairs for each of "
                         f"the {nd} axes")
    return [(pw[2 * i], pw[2 * i + 1]) for i in range(nd)]


def _pad_infer(attrs, in_shapes):
    s = in_shapes[0]
    if not known(s):
        return in_shapes, [None]
    pairs = _pad_pairs(attrs, len(s))
    for d, (b, a) in zip(s, pairs):
        if d == 0 and (b or a) and attrs["mode"] != "constant":
            raise MXNetError(f"_npi_pad: cannot pad an empty axis in mode {attrs['mode']!r}")
    return in_shapes, [tuple(d + b + a for d, (b, a) in zip(s, pairs))]


def _pad(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    pairs = _pad_pairs(attrs, x.ndim)
    mode = attrs["mode"]
    if mode == "constant":
        r = ctx.xp.pad(x, pairs, mode="constant", constant_values=x.dtype.type(attrs["constant_value"])
                       if x.dtype.kind != "f" else attrs["constant_value"])
    else:
        r = ctx.xp.pad(x, pairs, mode=mode)
    outputs[0][...] = r


def _pad_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    g, x = inputs
    pairs = _pad_pairs(attrs, x.ndim)
    mode = attrs["mode"]
    if mode == "constant":
        outputs[0][...] = g[tuple(slice(b, b + d) for (b, _), d in zip(pairs, x.shape))]
        return
    if mode in ("maximum", "minimum"):
        raise MXNetError(f"_npi_pad: mode {mode!r} has no gradient")
    # every output position copies one input element: pad the element numbers the same way and sum
    src = np.pad(np.arange(x.size, dtype=np.int64).reshape(x.shape), pairs, mode=mode)
    flat = xp.zeros(x.size, dtype=g.dtype)
    if hasattr(xp, "add") and hasattr(xp.add, "at"):
        xp.add.at(flat, xp.asarray(src.reshape(-1)), g.reshape(-1))
    else:
        flat = xp.bincount(xp.asarray(src.reshape(-1)), weights=g.reshape(-1), minlength=x.size).astype(g.dtype)
    outputs[0][...] = flat.reshape(x.shape)


with_backward(OpDef(name="_npi_pad", attrs=_PAD_ATTRS, inputs=["data"], outputs=["out"], infer_shape=_pad_infer,
                     infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": _pad},
                     doc="numpy.pad: data padded by pad_width ((before, after) per axis, flattened) in `mode`."),
              _pad_backward, "Gradient of _npi_pad: the adjoint of its index map.", shape_only_inputs=(1,))
