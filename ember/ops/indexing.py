"""Slicing and indexing: slice, slice_axis, slice_like, take, pick, one_hot, where, gather_nd.

Index arrays may be any numeric dtype (MXNet passes float32 indices); they are truncated
to integers.  Backward ops scatter ograd into a zero array of the data's shape.
"""
from __future__ import annotations

from typing import Tuple

import numpy as np

from ..base import DTypeError, IndexRangeError, OperatorError, ShapeError
from ._common import first_input_type, known, no_gradient, norm_axis, unify, with_backward
from . import stype
from .registry import Attr, OpDef, register


def _int(xp, idx):
    return idx if idx.dtype.kind in "iu" else idx.astype(np.int64)


def _keep_input_type(attrs, in_dtypes):
    return list(in_dtypes), [in_dtypes[0]]


def _grad_shape_of_data(attrs, in_shapes):
    """Backward ops (ograd, data, ...) -> data_grad shaped like data."""
    return in_shapes, [in_shapes[1]]


# -- slice ------------------------------------------------------------------------------------
_SLICE_ATTRS = {"begin": Attr("shape"), "end": Attr("shape"), "step": Attr("shape", ())}


def slice_index(op: str, attrs: dict, shape) -> Tuple[slice, ...]:
    """The tuple of python slices `slice` applies to an array of `shape`."""
    begin, end, step = attrs["begin"], attrs["end"], attrs["step"]
    if len(begin) != len(end):
        raise ShapeError(f"{op}: begin {tuple(begin)} and end {tuple(end)} must have the same length")
    if step and len(step) != len(begin):
        raise ShapeError(f"{op}: step {tuple(step)} must have the length of begin {tuple(begin)}")
    if len(begin) > len(shape):
        raise ShapeError(f"{op}: begin {tuple(begin)} has more entries than the input has axes {tuple(shape)}")
    out = []
    for i in range(len(begin)):
        s = step[i] if step and step[i] is not None else 1
        if s == 0:
            raise ShapeError(f"{op}: step must not be 0 (axis {i})")
        out.append(slice(begin[i], end[i], s))
    return tuple(out)


def _slice_len(sl: slice, dim: int) -> int:
    return len(range(*sl.indices(dim)))


_UNKNOWN_STAND_IN = 2 ** 40  # computes the known axes of a shape with unknown ones; never reported


def _slice_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    # an unknown input axis gives an unknown output axis, as MXNet (even when begin/end would fix it)
    whole = tuple(_UNKNOWN_STAND_IN if d is None else d for d in x)
    idx = slice_index("slice", attrs, whole)
    out = tuple(None if d is None else _slice_len(sl, d) for sl, d in zip(idx, x)) + tuple(x[len(idx):])
    return in_shapes, [out]


def _register_slicing(name: str, index, doc: str, backward_doc: str, **fields) -> None:
    """Register op `name`, x[index(name, attrs, x.shape)], and its gradient op (ograd put back in zeros)."""
    def forward(ctx, attrs, inputs, outputs, aux):
        x = inputs[0]
        outputs[0][...] = x[index(name, attrs, x.shape)]

    def backward(ctx, attrs, inputs, outputs, aux):
        g, x = inputs
        out = outputs[0]
        out[...] = 0
        out[index(f"_backward_{name}", attrs, x.shape)] = g
    with_backward(OpDef(name=name, kernels={"any": forward}, doc=doc, **fields), backward, backward_doc,
                  infer_type=first_input_type)


_register_slicing("slice", slice_index, "x[begin:end:step] per axis (None entries: the whole axis).",
                  "Gradient of slice: ograd placed in a zero array.", aliases=["crop"], attrs=_SLICE_ATTRS,
                  infer_shape=_slice_infer, infer_stype=stype.csr_unit_step_slice)


# -- slice_axis ---------------------------------------------------------------------------------
_SLICE_AXIS_ATTRS = {"axis": Attr("int"), "begin": Attr("int"), "end": Attr("int_or_none")}


def _axis_index(op, attrs, shape):
    a = norm_axis(op, attrs["axis"], len(shape))
    d = shape[a]
    b, e = attrs["begin"], attrs["end"]
    b = b + d if b < 0 else b
    e = d if e is None else (e + d if e < 0 else e)
    if not (0 <= b < e <= d) and not (b == e == 0 and d == 0):
        raise ShapeError(f"{op}: slice [{attrs['begin']}, {attrs['end']}) is invalid for axis "
                         f"{attrs['axis']} of length {d} (shape {tuple(shape)})")
    return (slice(None),) * a + (slice(b, e),)


def _slice_axis_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    idx = _axis_index("slice_axis", attrs, tuple(_UNKNOWN_STAND_IN if d is None else d for d in x))
    a = len(idx) - 1
    size = None if x[a] is None else idx[a].stop - idx[a].start
    return in_shapes, [tuple(x[:a]) + (size,) + tuple(x[a + 1:])]


_register_slicing("slice_axis", _axis_index, "x[begin:end] along `axis` (end None: to the end).",
                  "Gradient of slice_axis.", attrs=_SLICE_AXIS_ATTRS, infer_shape=_slice_axis_infer)


# -- slice_like -----------------------------------------------------------------------------------
def _like_index(op, attrs, shape, like):
    axes = attrs["axes"]
    if not axes:
        if len(like) > len(shape):
            raise ShapeError(f"{op}: shape_like {tuple(like)} has more axes than data {tuple(shape)}")
        axes = range(len(like))
    idx = [slice(None)] * len(shape)
    for a in axes:
        n = norm_axis(op, a, len(shape))
        if n >= len(like):
            raise ShapeError(f"{op}: axis {a} is out of range for shape_like {tuple(like)}")
        if like[n] > shape[n]:
            raise ShapeError(f"{op}: shape_like {tuple(like)} is larger than data {tuple(shape)} on axis {n}")
        idx[n] = slice(0, like[n])
    return tuple(idx)


def _slice_like_infer(attrs, in_shapes):
    x, like = in_shapes
    if not known(x) or not known(like):
        return in_shapes, [None]
    idx = _like_index("slice_like", attrs, x, like)
    return in_shapes, [tuple(_slice_len(sl, d) for sl, d in zip(idx, x))]


def _slice_like(ctx, attrs, inputs, outputs, aux):
    x, like = inputs
    outputs[0][...] = x[_like_index("slice_like", attrs, x.shape, like.shape)]


def _slice_like_backward(ctx, attrs, inputs, outputs, aux):
    g, x = inputs
    out = outputs[0]
    out[...] = 0
    out[tuple(slice(0, n) for n in g.shape)] = g


register(OpDef(name="_backward_slice_like", attrs={"axes": Attr("shape", ())}, inputs=["ograd", "data"],
               outputs=["data_grad"], infer_shape=_grad_shape_of_data, infer_type=first_input_type,
               kernels={"any": _slice_like_backward}, doc="Gradient of slice_like."))
register(OpDef(name="slice_like", attrs={"axes": Attr("shape", ())}, inputs=["data", "shape_like"],
               infer_shape=_slice_like_infer, infer_type=_keep_input_type, kernels={"any": _slice_like},
               gradient=lambda F, a, i, o, g: [F._backward_slice_like(g[0], i[0], axes=a["axes"]), None],
               doc="data cut to the shape of shape_like (on `axes`, or every axis), starting at 0."))


# -- take ------------------------------------------------------------------------------------------
_TAKE_ATTRS = {"axis": Attr("int", 0), "mode": Attr("str", "clip", choices=("clip", "wrap", "raise"))}


def _take_infer(attrs, in_shapes):
    a, idx = in_shapes
    if a is None or idx is None:
        return in_shapes, [None]
    ax = norm_axis("take", attrs["axis"], len(a))
    return in_shapes, [tuple(a[:ax]) + tuple(idx) + tuple(a[ax + 1:])]


def _take_indices(op, xp, idx, dim, mode):
    i = _int(xp, idx)
    if mode == "clip":
        return xp.clip(i, 0, dim - 1)
    if mode == "wrap":
        return xp.mod(i, dim)
    if i.size and (int(i.min()) < 0 or int(i.max()) >= dim):
        bad = int(i.min()) if int(i.min()) < 0 else int(i.max())
        raise IndexRangeError(f"{op}: index {bad} is out of bounds for axis of size {dim}")
    return i


def _take(ctx, attrs, inputs, outputs, aux):
    a, idx = inputs
    ax = attrs["axis"] % a.ndim
    i = _take_indices("take", ctx.xp, idx, a.shape[ax], attrs["mode"])
    out = outputs[0]
    if out.flags.c_contiguous:
        ctx.xp.take(a, i, axis=ax, out=out)
    else:
        out[...] = ctx.xp.take(a, i, axis=ax)


def _take_backward(ctx, attrs, inputs, outputs, aux):
    g, idx, a = inputs
    xp = ctx.xp
    out = outputs[0]
    ax = attrs["axis"] % a.ndim
    i = _take_indices("_backward_take", xp, idx, a.shape[ax], attrs["mode"])
    out[...] = 0
    moved = xp.moveaxis(out, ax, 0)  # a view: scatter along the first axis
    gm = g.reshape(a.shape[:ax] + (i.size,) + a.shape[ax + 1:])
    gm = xp.moveaxis(gm, ax, 0)
    add_at = np.add.at if xp is np else xp.add.at
    add_at(moved, i.reshape(-1), gm)


register(OpDef(name="_backward_take", attrs=_TAKE_ATTRS, inputs=["ograd", "indices", "a"], outputs=["a_grad"],
               infer_shape=lambda at, s: (s, [s[2]]), infer_type=first_input_type,
               kernels={"any": _take_backward}, doc="Gradient of take w.r.t. a: ograd summed into the taken rows."))
register(OpDef(name="take", attrs=_TAKE_ATTRS, inputs=["a", "indices"], infer_shape=_take_infer,
               infer_type=_keep_input_type, kernels={"any": _take}, infer_stype=stype.csr_rows,
               gradient=lambda F, at, i, o, g: [F._backward_take(g[0], i[1], i[0], **at), None],
               doc="Elements of `a` at `indices` along `axis`; out-of-range indices clip, wrap or raise."))


# -- pick ------------------------------------------------------------------------------------------
_PICK_ATTRS = {"axis": Attr("int_or_none", -1), "keepdims": Attr("bool", False),
               "mode": Attr("str", "clip", choices=("clip", "wrap"))}


def _pick_axis(op, attrs, ndim):
    if attrs["axis"] is None:
        raise OperatorError(f"{op}: axis=None is not supported; give the axis to pick along")
    return norm_axis(op, attrs["axis"], ndim)


def _pick_infer(attrs, in_shapes):
    x, idx = in_shapes
    if x is None:
        return in_shapes, [None]
    ax = _pick_axis("pick", attrs, len(x))
    keep = tuple(1 if i == ax else d for i, d in enumerate(x))
    drop = tuple(d for i, d in enumerate(x) if i != ax)
    want = keep if attrs["keepdims"] else drop
    if idx is not None and known(idx) and tuple(idx) not in (keep, drop):
        raise ShapeError(f"pick: index has shape {tuple(idx)} but data {tuple(x)} needs {drop} (axis {ax})")
    return [x, idx if idx is not None else want], [want if want else (1,)]


def _pick_index(xp, x, idx, ax, mode):
    i = _int(xp, idx)
    dim = x.shape[ax]
    i = xp.clip(i, 0, dim - 1) if mode == "clip" else xp.mod(i, dim)
    return xp.expand_dims(i.reshape(x.shape[:ax] + x.shape[ax + 1:]), ax)


def _flat_picks(xp, x, idx, ax, mode, out):
    """For the usual pick (along the last axis of a C-contiguous numpy array, into a C-contiguous
    result: a classifier's label scores) the positions of the picked elements in x.reshape(-1),
    found with two ufuncs (np.clip's and take_along_axis's wrappers cost ten times the work on a
    batch of labels); None otherwise."""
    dim = x.shape[-1] if x.ndim else 0
    if xp is not np or ax != x.ndim - 1 or not dim or not x.flags.c_contiguous or not out.flags.c_contiguous:
        return None
    i = _int(xp, idx).reshape(-1)
    i = xp.minimum(xp.maximum(i, 0), dim - 1) if mode == "clip" else xp.mod(i, dim)
    return i + xp.arange(0, i.size * dim, dim)


def _pick(ctx, attrs, inputs, outputs, aux):
    x, idx = inputs
    ax = _pick_axis("pick", attrs, x.ndim)
    flat = _flat_picks(ctx.xp, x, idx, ax, attrs["mode"], outputs[0])
    if flat is not None:
        np.take(x.reshape(-1), flat, out=outputs[0].reshape(-1), mode="clip")  # (in range: no checks)
        return
    res = ctx.xp.take_along_axis(x, _pick_index(ctx.xp, x, idx, ax, attrs["mode"]), axis=ax)
    outputs[0][...] = res.reshape(outputs[0].shape)


def _pick_backward(ctx, attrs, inputs, outputs, aux):
    g, x, idx = inputs
    xp = ctx.xp
    ax = _pick_axis("_backward_pick", attrs, x.ndim)
    out = outputs[0]
    out[...] = 0
    flat = _flat_picks(xp, x, idx, ax, attrs["mode"], out)
    if flat is not None:
        out.reshape(-1)[flat] = g.reshape(-1)
        return
    i = _pick_index(xp, x, idx, ax, attrs["mode"])
    xp.put_along_axis(out, i, g.reshape(i.shape), axis=ax)


register(OpDef(name="_backward_pick", attrs=_PICK_ATTRS, inputs=["ograd", "data", "index"], outputs=["data_grad"],
               infer_shape=_grad_shape_of_data, infer_type=first_input_type,
               kernels={"any": _pick_backward}, doc="Gradient of pick."))
register(OpDef(name="pick", attrs=_PICK_ATTRS, inputs=["data", "index"], infer_shape=_pick_infer,
               infer_type=_keep_input_type, kernels={"any": _pick},
               gradient=lambda F, at, i, o, g: [F._backward_pick(g[0], i[0], i[1], **at), None],
               doc="data[..., index, ...] along `axis`: one element per position of index."))


# -- one_hot ------------------------------------------------------------------------------------
_ONE_HOT_ATTRS = {"depth": Attr("int"), "on_value": Attr("float", 1.0), "off_value": Attr("float", 0.0),
                  "dtype": Attr("dtype", np.dtype(np.float32))}


def _one_hot_infer(attrs, in_shapes):
    if attrs["depth"] < 0:
        raise ShapeError(f"one_hot: depth must be >= 0, got {attrs['depth']}")
    idx = in_shapes[0]
    return in_shapes, [None if idx is None else tuple(idx) + (attrs["depth"],)]


def _one_hot(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    out = outputs[0]
    i = _int(xp, inputs[0])
    hit = i[..., None] == xp.arange(attrs["depth"])  # out-of-range indices give all off_value rows
    out[...] = xp.where(hit, attrs["on_value"], attrs["off_value"])


register(OpDef(name="one_hot", attrs=_ONE_HOT_ATTRS, inputs=["indices"], infer_shape=_one_hot_infer,
               infer_type=lambda a, d: (list(d), [a["dtype"]]), kernels={"any": _one_hot},
               gradient=no_gradient(1), doc="One-hot rows of length depth (on_value at the index)."))


# -- where -------------------------------------------------------------------------------------------
def _where_infer(attrs, in_shapes):
    c, x, y = in_shapes
    s = unify("where", [x, y], ["x", "y"])
    if c is not None and s is not None and known(c) and known(s):
        if tuple(c) != tuple(s) and not (len(c) == 1 and len(s) >= 1 and c[0] == s[0]):
            raise ShapeError(f"where: condition has shape {tuple(c)}; it must equal x's shape {tuple(s)} "
                             f"or be 1-D of length {s[0] if s else '?'}")
    # as MXNet, the output is known only once the condition's shape is (x/y's still follow each other)
    return [c if c is not None else s, s, s], [s if known(c) else None]


def _where_cond(xp, c, ndim):
    # a 1-D condition selects whole rows (first axis)
    return c.reshape(c.shape + (1,) * (ndim - 1)) if c.ndim == 1 and ndim > 1 else c


def _where(ctx, attrs, inputs, outputs, aux):
    c, x, y = inputs
    outputs[0][...] = ctx.xp.where(_where_cond(ctx.xp, c, x.ndim) != 0, x, y)


def _where_backward(ctx, attrs, inputs, outputs, aux):
    g, c = inputs
    m = _where_cond(ctx.xp, c, g.ndim) != 0
    outputs[0][...] = ctx.xp.where(m, g, 0)
    outputs[1][...] = ctx.xp.where(m, 0, g)


def _where_type(attrs, in_dtypes):
    c, x, y = in_dtypes
    dt = x if x is not None else y
    if x is not None and y is not None and np.dtype(x) != np.dtype(y):
        raise DTypeError(f"where: x has dtype {np.dtype(x).name} but y has {np.dtype(y).name}")
    return [c, dt, dt], [dt]


register(OpDef(name="_backward_where", inputs=["ograd", "condition"], outputs=["x_grad", "y_grad"],
               infer_shape=lambda a, s: (s, [s[0], s[0]]), infer_type=lambda a, d: (list(d), [d[0], d[0]]),
               kernels={"any": _where_backward}, doc="Gradient of where: ograd routed by the condition."))
register(OpDef(name="where", inputs=["condition", "x", "y"], infer_shape=_where_infer, infer_type=_where_type,
               kernels={"any": _where}, probe_partial_shapes=False,
               gradient=lambda F, a, i, o, g: [None] + list(F._backward_where(g[0], i[0])),
               doc="x where condition is non-zero, else y."))


# -- gather_nd -----------------------------------------------------------------------------------------
def _gather_infer(attrs, in_shapes):
    d, idx = in_shapes
    if d is None or idx is None:
        return in_shapes, [None]
    m = idx[0]
    if len(idx) < 1 or m > len(d):
        raise ShapeError(f"gather_nd: indices of shape {tuple(idx)} index {m} axes of data {tuple(d)}")
    out = tuple(idx[1:]) + tuple(d[m:])
    return in_shapes, [out if out else (1,)]


def _gather_nd(ctx, attrs, inputs, outputs, aux):
    d, idx = inputs
    i = _int(ctx.xp, idx)
    outputs[0][...] = d[tuple(i[k] for k in range(i.shape[0]))].reshape(outputs[0].shape)


def _gather_backward(ctx, attrs, inputs, outputs, aux):
    g, idx, d = inputs
    xp = ctx.xp
    out = outputs[0]
    out[...] = 0
    i = _int(xp, idx)
    m = i.shape[0]
    g = g.reshape(i.shape[1:] + d.shape[m:])
    add_at = np.add.at if xp is np else xp.add.at
    add_at(out, tuple(i[k] for k in range(m)), g)


register(OpDef(name="_backward_gather_nd", inputs=["ograd", "indices", "data"], outputs=["data_grad"],
               infer_shape=lambda a, s: (s, [s[2]]), infer_type=first_input_type,
               kernels={"any": _gather_backward}, doc="Gradient of gather_nd (scatter-add)."))
register(OpDef(name="gather_nd", inputs=["data", "indices"], infer_shape=_gather_infer,
               infer_type=_keep_input_type, kernels={"any": _gather_nd},
               gradient=lambda F, a, i, o, g: [F._backward_gather_nd(g[0], i[1], i[0]), None],
               doc="data[indices[0], indices[1], ...]: indices has shape (M, ...) addressing M axes."))


# -- ravel / unravel ---------------------------------------------------------------------------------
def _ravel_infer(attrs, in_shapes):
    d = in_shapes[0]
    shape = attrs["shape"]
    if d is None:
        return in_shapes, [None]
    if len(d) < 1 or d[0] != len(shape):
        raise ShapeError(f"_ravel_multi_index: data {tuple(d)} must have {len(shape)} rows (one per axis of {shape})")
    return in_shapes, [tuple(d[1:]) or (1,)]


def _strides(shape):
    """Row-major strides of `shape`; the leading size is never read, so it may be -1 (unknown), as MXNet."""
    strides, acc = [], 1
    for n in reversed(tuple(shape)[1:]):
        strides.append(acc)
        acc *= n
    return [acc] + strides[::-1]


def _ravel(ctx, attrs, inputs, outputs, aux):
    # MXNet sums index * stride without bounds checks (so a leading -1 in `shape` works)
    i = _int(ctx.xp, inputs[0])
    flat = sum(i[k] * st for k, st in enumerate(_strides(attrs["shape"])))
    outputs[0][...] = ctx.xp.asarray(flat).reshape(outputs[0].shape)


def _unravel_infer(attrs, in_shapes):
    d = in_shapes[0]
    return in_shapes, [None if d is None else (len(attrs["shape"]),) + tuple(d)]


def _unravel(ctx, attrs, inputs, outputs, aux):
    # as MXNet: trailing coordinates wrap by their sizes, the leading one is the remaining quotient
    # (unbounded, so a leading -1 in `shape` works)
    idx = _int(ctx.xp, inputs[0])
    shape = tuple(attrs["shape"])
    out = outputs[0]
    for j in range(len(shape) - 1, 0, -1):
        out[j] = idx % shape[j]
        idx = idx // shape[j]
    out[0] = idx


register(OpDef(name="_ravel_multi_index", aliases=["ravel_multi_index"], attrs={"shape": Attr("shape")},
               infer_shape=_ravel_infer, kernels={"any": _ravel}, gradient=no_gradient(1),
               doc="Flat indices of the (M, ...) coordinates in data for an array of `shape`."))
register(OpDef(name="_unravel_index", aliases=["unravel_index"], attrs={"shape": Attr("shape")},
               infer_shape=_unravel_infer, kernels={"any": _unravel}, gradient=no_gradient(1),
               doc="Coordinates (M, ...) of the flat indices in data for an array of `shape`."))


# -- scatter_nd / _scatter_set_nd ---------------------------------------------------------------------
def _nd_index(xp, idx):
    i = _int(xp, idx)
    return tuple(i[k] for k in range(i.shape[0]))


def _scatter_infer(attrs, in_shapes):
    d, idx = in_shapes
    shape = tuple(attrs["shape"])
    if d is not None and idx is not None:
        m = idx[0]
        want = tuple(idx[1:]) + shape[m:]
        if m > len(shape) or tuple(d) != (want or (1,)) and tuple(d) != want:
            raise ShapeError(f"scatter_nd: data has shape {tuple(d)} but indices {tuple(idx)} into shape {shape} "
                             f"need {want}")
    return in_shapes, [shape]


def _scatter_nd(ctx, attrs, inputs, outputs, aux):
    d, idx = inputs
    out = outputs[0]
    out[...] = 0
    i = _nd_index(ctx.xp, idx)
    out[i] = d.reshape(i[0].shape + out.shape[len(i):])


register(OpDef(name="scatter_nd", attrs={"shape": Attr("shape")}, inputs=["data", "indices"],
               infer_shape=_scatter_infer, infer_type=_keep_input_type, kernels={"any": _scatter_nd},
               gradient=lambda F, a, i, o, g: [F.reshape_like(F.gather_nd(g[0], i[1]), i[0]), None],
               doc="A zero array of `shape` with data written at indices (M, ...) (inverse of gather_nd)."))


def _scatter_set(ctx, attrs, inputs, outputs, aux):
    lhs, rhs, idx = inputs
    out = outputs[0]
    i = _nd_index(ctx.xp, idx)
    vals = rhs.reshape(i[0].shape + out.shape[len(i):])
    if out is not lhs:
        out[...] = lhs
    out[i] = vals


def _scatter_set_grad(F, attrs, inputs, outputs, out_grads):
    g = out_grads[0]
    lhs_grad = F._scatter_set_nd(g, F.zeros_like(F.gather_nd(g, inputs[2])), inputs[2], shape=attrs["shape"])
    return [lhs_grad, F.reshape_like(F.gather_nd(g, inputs[2]), inputs[1]), None]


register(OpDef(name="_scatter_set_nd", attrs={"shape": Attr("shape")}, inputs=["lhs", "rhs", "indices"],
               infer_shape=lambda a, s: (s, [s[0]]), infer_type=first_input_type,
               kernels={"any": _scatter_set}, inplace=[(0, 0)], gradient=_scatter_set_grad,
               doc="lhs with rhs written at indices (M, ...) (MXNet's nd[...] = value with advanced indices)."))


# -- slice assignment ------------------------------------------------------------------------------
def _assign_infer(attrs, in_shapes):
    lhs, rhs = in_shapes
    if lhs is not None and rhs is not None:
        idx = slice_index("_slice_assign", attrs, lhs)
        want = tuple(_slice_len(sl, d) for sl, d in zip(idx, lhs)) + tuple(lhs[len(idx):])
        if tuple(rhs) != want:
            raise ShapeError(f"_slice_assign: rhs has shape {tuple(rhs)} but the slice of lhs {tuple(lhs)} "
                             f"has shape {want}")
    return in_shapes, [lhs]


def _slice_assign(ctx, attrs, inputs, outputs, aux):
    lhs, rhs = inputs
    out = outputs[0]
    if out is not lhs:
        out[...] = lhs
    out[slice_index("_slice_assign", attrs, lhs.shape)] = rhs


def _slice_assign_scalar(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    out = outputs[0]
    if out is not x:
        out[...] = x
    out[slice_index("_slice_assign_scalar", attrs, x.shape)] = attrs["scalar"]


def _slice_assign_grad(F, attrs, inputs, outputs, out_grads):
    g = out_grads[0]
    sl = {k: attrs[k] for k in ("begin", "end", "step")}
    return [F._slice_assign_scalar(g, scalar=0.0, **sl), F.slice(g, **sl)]


register(OpDef(name="_slice_assign", aliases=["_crop_assign"], attrs=_SLICE_ATTRS, inputs=["lhs", "rhs"],
               infer_shape=_assign_infer, infer_type=first_input_type,
               kernels={"any": _slice_assign}, inplace=[(0, 0)], gradient=_slice_assign_grad,
               doc="lhs with lhs[begin:end:step] replaced by rhs."))
register(OpDef(name="_slice_assign_scalar", aliases=["_crop_assign_scalar"],
               attrs=dict(_SLICE_ATTRS, scalar=Attr("float", 0.0)),
               infer_shape=lambda a, s: (s, [s[0]]), kernels={"any": _slice_assign_scalar}, inplace=[(0, 0)],
               gradient=lambda F, a, i, o, g: [F._slice_assign_scalar(g[0], scalar=0.0, begin=a["begin"],
                                                                      end=a["end"], step=a["step"])],
               doc="data with data[begin:end:step] set to scalar."))
