"""Shape manipulation: Reshape, reshape_like, transpose, SwapAxis, expand_dims, squeeze, Flatten,
broadcast_to / broadcast_like / broadcast_axis, tile, repeat, reverse (flip), Cast, shape_array,
size_array.

Gradients that only move elements (reshape, transpose, flip) are written with forward ops;
the ones that must sum (broadcast_*, tile, repeat) use dedicated `_backward_*` ops.
"""
from __future__ import annotations

from math import prod
from typing import List, Sequence, Tuple

import numpy as np

from ..base import ShapeError
from ._common import copy_kernel, data_like_output, first_input_type, known, no_gradient, norm_axis, ograds_or_zeros
from ._common import sum_to, via, with_backward
from ._common import np_shape as _np_shape
from . import stype
from .registry import Attr, OpDef, register

Shape = Tuple[int, ...]


def _copy_into(ctx, attrs, inputs, outputs, aux):
    """Kernel of every pure reshape: the elements keep their order."""
    out = outputs[0]
    x = inputs[0]
    if out is not x:
        out[...] = x.reshape(out.shape)


def _grad_like_input(F, attrs, inputs, outputs, out_grads):
    return [F.reshape_like(out_grads[0], inputs[0])]


# -- Reshape ----------------------------------------------------------------------------
def reshape_target(op: str, dshape: Shape, spec: Sequence[int], reverse: bool = False) -> Shape:
    """MXNet's Reshape shape rule: 0 copy, -1 infer, -2 copy the rest, -3 merge two, -4 split one."""
    src = list(dshape)[::-1] if reverse else list(dshape)
    spec = list(spec)
    if reverse:  # as MXNet: both shapes reversed (a -4 then reads its two values before it), result reversed
        spec = spec[::-1]
    out: List[int] = []
    s = 0
    infer_at = -1
    i = 0

    def src_dim(k):
        if k >= len(src):
            raise ShapeError(f"{op}: shape {tuple(spec)} refers to more dimensions than the input "
                             f"{tuple(dshape)} has")
        return src[k]

    while i < len(spec):
        v = spec[i]
        if v == 0:
            out.append(src_dim(s))
            s += 1
        elif v == -1:
            if infer_at >= 0:
                raise ShapeError(f"{op}: shape {tuple(spec)} has more than one -1")
            infer_at = len(out)
            out.append(1)
            s += 1
        elif v == -2:
            out.extend(src[s:])
            s = len(src)
        elif v == -3:
            out.append(src_dim(s) * src_dim(s + 1))
            s += 2
        elif v == -4:
            if i + 2 >= len(spec):
                raise ShapeError(f"{op}: -4 in shape {tuple(spec)} must be followed by two values")
            d0 = src_dim(s)
            s += 1
            d1, d2 = spec[i + 1], spec[i + 2]
            i += 2
            if d1 == -1 and d2 == -1:
                raise ShapeError(f"{op}: -4 split of {d0} cannot have two -1 values")
            if d1 == -1:
                d1 = d0 // d2 if d2 else 0
            if d2 == -1:
                d2 = d0 // d1 if d1 else 0
            if d1 * d2 != d0:
                raise ShapeError(f"{op}: cannot split dimension {d0} into ({spec[i - 1]}, {spec[i]})")
            out.extend([d1, d2])
        elif v > 0:
            out.append(v)
            s += 1
        else:
            raise ShapeError(f"{op}: invalid value {v} in shape {tuple(spec)}")
        i += 1
    total = prod(dshape)
    if infer_at >= 0:
        rest = prod(out[:infer_at] + out[infer_at + 1:])
        if rest == 0 or total % rest:
            raise ShapeError(f"{op}: cannot reshape array of shape {tuple(dshape)} into {tuple(spec)}")
        out[infer_at] = total // rest
    if reverse:
        out = out[::-1]
    if prod(out) != total:
        raise ShapeError(f"{op}: cannot reshape array of shape {tuple(dshape)} (size {total}) "
                         f"into shape {tuple(out)} (size {prod(out)}) from shape={tuple(spec)}")
    return tuple(out)


def _legacy_target_shape(x: Shape, target, keep_highest: bool) -> Shape:
    """MXNet's deprecated target_shape (used when shape is empty): one 0 is inferred from the size;
    keep_highest keeps data's first dimension."""
    out = list(target)
    if keep_highest:
        out[0] = x[0]
    zeros = [i for i in range(1 if keep_highest else 0, len(out)) if out[i] == 0]
    if len(zeros) == 1:
        out[zeros[0]] = 1
        out[zeros[0]] = prod(x) // prod(out)
    if prod(out) != prod(x):
        raise ShapeError(f"Reshape: target_shape {tuple(target)} does not match the size of {tuple(x)}")
    return tuple(out)


def _reshape_infer(attrs, in_shapes):
    x = in_shapes[0]
    if not known(x):
        return in_shapes, [None]
    if attrs["target_shape"] and not attrs["shape"]:
        return in_shapes, [_legacy_target_shape(tuple(x), attrs["target_shape"], attrs["keep_highest"])]
    return in_shapes, [reshape_target("Reshape", x, attrs["shape"], attrs["reverse"])]


def _reshape_backward_infer(attrs, in_shapes, out_shapes):
    """A known output fills the one unknown dimension of the data (MXNet's reverse reshape inference:
    a deferred-shape weight flattened with reshape(-1) learns its shape from its consumer)."""
    x, out = in_shapes[0], out_shapes[0]
    if x is None or not known(out) or sum(d is None for d in x) != 1:
        return [None] * len(in_shapes)
    rest = prod([d for d in x if d is not None])
    total = prod(out)
    if rest == 0 or total % rest:
        return [None] * len(in_shapes)
    return [tuple(total // rest if d is None else d for d in x)] + [None] * (len(in_shapes) - 1)


register(OpDef(
    name="Reshape", aliases=["reshape"],
    attrs={"shape": Attr("shape", ()), "reverse": Attr("bool", False),
           "target_shape": Attr("shape", ()), "keep_highest": Attr("bool", False)},
    infer_shape=_reshape_infer, infer_shape_backward=_reshape_backward_infer, kernels={"any": _copy_into},
    gradient=_grad_like_input, inplace=[(0, 0)],
    doc="Reshape with MXNet's special values 0 (copy), -1 (infer), -2 (rest), -3 (merge), -4 (split)."))


def numpy_reshape_target(size: int, old_shape, newshape) -> Shape:
    """numpy's reshape rule: `newshape` with its one -1 inferred from `size`; 0 is a zero-size dimension."""
    if isinstance(newshape, (int, np.integer)):
        newshape = (int(newshape),)
    newshape = tuple(int(d) for d in newshape)
    bad = f"cannot reshape array of size {size} (shape {tuple(old_shape)}) into shape {newshape}"
    if newshape.count(-1) > 1 or any(d < -1 for d in newshape):
        raise ShapeError(bad + ": numpy shapes allow one -1 and no other negative value")
    fixed = prod([d for d in newshape if d != -1])
    if -1 in newshape:
        if fixed == 0 or size % fixed:
            raise ShapeError(bad)
        return tuple(size // fixed if d == -1 else d for d in newshape)
    if fixed != size:
        raise ShapeError(bad)
    return newshape


def _np_reshape_infer(attrs, in_shapes):
    x = in_shapes[0]
    if not known(x):
        return in_shapes, [None]
    return in_shapes, [numpy_reshape_target(prod(x), x, attrs["newshape"])]


register(OpDef(
    name="_np_reshape", attrs={"newshape": Attr("shape"), "order": Attr("str", "C")},
    infer_shape=_np_reshape_infer, infer_shape_backward=_reshape_backward_infer, kernels={"any": _copy_into},
    gradient=_grad_like_input, inplace=[(0, 0)],
    doc="Reshape with numpy's rules (mx.np.reshape): one -1 is inferred, 0 is a zero-size dimension."))


def _axis_span(begin, end, ndim: int, side: str):
    b = 0 if begin is None else begin + ndim if begin < 0 else begin
    e = ndim if end is None else end + ndim if end < 0 else end
    if not 0 <= b <= e <= ndim:
        raise ShapeError(f"reshape_like: {side}_begin/{side}_end ({begin}, {end}) do not select axes of a "
                         f"{ndim}-D {side}")
    return b, e


def _reshape_like_infer(attrs, in_shapes):
    a, b = in_shapes
    spans = [attrs[k] for k in ("lhs_begin", "lhs_end", "rhs_begin", "rhs_end")]
    if all(v is None for v in spans):  # the whole of rhs's shape (needs nothing from lhs)
        target = None if b is None else tuple(b)
    elif known(a) and known(b):  # lhs's axes [lhs_begin, lhs_end) become rhs's [rhs_begin, rhs_end)
        lb, le = _axis_span(spans[0], spans[1], len(a), "lhs")
        rb, re_ = _axis_span(spans[2], spans[3], len(b), "rhs")
        target = tuple(a[:lb]) + tuple(b[rb:re_]) + tuple(a[le:])
    else:
        return in_shapes, [None]
    if known(a) and target is not None and known(target) and prod(a) != prod(target):
        raise ShapeError(f"reshape_like: cannot reshape lhs of shape {tuple(a)} into {target}")
    return in_shapes, [target]


def _reshape_like_grad(F, attrs, inputs, outputs, out_grads):
    return [F.reshape_like(out_grads[0], inputs[0]), None]


register(OpDef(name="reshape_like", inputs=["lhs", "rhs"], infer_shape=_reshape_like_infer,
               attrs={k: Attr("int_or_none", None) for k in ("lhs_begin", "lhs_end", "rhs_begin", "rhs_end")},
               infer_type=first_input_type, kernels={"any": _copy_into},
               gradient=_reshape_like_grad, inplace=[(0, 0)], shape_only_inputs=(1,),
               doc="lhs reshaped to the shape of rhs (rhs only gives the shape)."))


# -- Flatten / expand_dims / squeeze -------------------------------------------------------
def _flatten_infer(attrs, in_shapes):
    x = in_shapes[0]
    if not known(x):
        return in_shapes, [None]
    if len(x) == 0:
        return in_shapes, [(1, 1)]
    return in_shapes, [(x[0], prod(x[1:]))]


register(OpDef(name="Flatten", aliases=["flatten"], infer_shape=_flatten_infer, kernels={"any": _copy_into},
               gradient=_grad_like_input, inplace=[(0, 0)],
               doc="(d0, d1, ..., dn) -> (d0, d1*...*dn)."))


def _expand_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    a = norm_axis("expand_dims", attrs["axis"], len(x) + 1)
    return in_shapes, [tuple(x[:a]) + (1,) + tuple(x[a:])]


register(OpDef(name="expand_dims", attrs={"axis": Attr("int")}, infer_shape=_expand_infer,
               kernels={"any": _copy_into}, gradient=_grad_like_input, inplace=[(0, 0)],
               doc="Insert a length-1 axis at `axis`."))


def _squeeze_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    axis = attrs["axis"]
    if axis is None:
        drop = {i for i, d in enumerate(x) if d == 1}
    else:
        drop = set()
        for a in axis:
            n = norm_axis("squeeze", a, len(x))
            if x[n] is not None and x[n] != 1:
                raise ShapeError(f"squeeze: cannot squeeze axis {a} of shape {tuple(x)}: its length is {x[n]}, not 1")
            drop.add(n)
    out = tuple(d for i, d in enumerate(x) if i not in drop)
    return in_shapes, [out if out else (1,)]


register(OpDef(name="squeeze", attrs={"axis": Attr("shape_or_none", None)}, infer_shape=_squeeze_infer,
               kernels={"any": _copy_into}, gradient=_grad_like_input, inplace=[(0, 0)],
               doc="Remove length-1 axes (all of them, or those in `axis`)."))


# -- transpose / SwapAxis / reverse -------------------------------------------------------
def _perm(attrs, ndim) -> Tuple[int, ...]:
    axes = attrs["axes"]
    if not axes:
        return tuple(range(ndim - 1, -1, -1))
    if len(axes) != ndim:
        raise ShapeError(f"transpose: axes {tuple(axes)} do not match a {ndim}-D input")
    perm = tuple(norm_axis("transpose", a, ndim) for a in axes)
    if sorted(perm) != list(range(ndim)):
        raise ShapeError(f"transpose: axes {tuple(axes)} are not a permutation of {ndim} axes")
    return perm


def _transpose_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    return in_shapes, [tuple(x[p] for p in _perm(attrs, len(x)))]


def _transpose_infer_backward(attrs, in_shapes, out_shapes):
    """A (partly) known output tells the input: input axis perm[i] is output axis i (MXNet infers back)."""
    out = out_shapes[0]
    if out is None:
        return [None]
    perm = _perm(attrs, len(out))
    x = [None] * len(out)
    for i, p in enumerate(perm):
        x[p] = out[i]
    return [tuple(x)]


def _transpose(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    outputs[0][...] = ctx.xp.transpose(x, _perm(attrs, x.ndim))


def _transpose_grad(F, attrs, inputs, outputs, out_grads):
    axes = attrs["axes"]
    if not axes:
        return [F.transpose(out_grads[0])]
    ndim = len(axes)
    perm = [a % ndim for a in axes]
    inverse = [0] * ndim
    for i, p in enumerate(perm):
        inverse[p] = i
    return [F.transpose(out_grads[0], axes=tuple(inverse))]


register(OpDef(name="transpose", attrs={"axes": Attr("shape", ())}, infer_shape=_transpose_infer,
               infer_shape_backward=_transpose_infer_backward,
               kernels={"any": _transpose}, gradient=_transpose_grad,
               doc="Permute the axes (reverse them when `axes` is empty)."))


def _swap_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    a = norm_axis("SwapAxis", attrs["dim1"], len(x), "dim1")
    b = norm_axis("SwapAxis", attrs["dim2"], len(x), "dim2")
    out = list(x)
    out[a], out[b] = out[b], out[a]
    return in_shapes, [tuple(out)]


def _swap(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = ctx.xp.swapaxes(inputs[0], attrs["dim1"], attrs["dim2"])


register(OpDef(name="SwapAxis", aliases=["swapaxes"], attrs={"dim1": Attr("int", 0), "dim2": Attr("int", 0)},
               infer_shape=_swap_infer, kernels={"any": _swap},
               gradient=lambda F, a, i, o, g: [F.SwapAxis(g[0], dim1=a["dim1"], dim2=a["dim2"])],
               doc="Swap two axes."))


def _reverse_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is not None:
        for a in attrs["axis"]:
            norm_axis("reverse", a, len(x))
    return in_shapes, [x]


def _reverse(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = ctx.xp.flip(inputs[0], axis=tuple(attrs["axis"]))


register(OpDef(name="reverse", aliases=["flip"], attrs={"axis": Attr("shape")}, infer_shape=_reverse_infer,
               kernels={"any": _reverse}, gradient=lambda F, a, i, o, g: [F.reverse(g[0], axis=a["axis"])],
               doc="Reverse the order of elements along `axis`."))


# -- broadcasting ops --------------------------------------------------------------------------
def _check_broadcastable(op: str, x: Shape, target: Shape) -> Shape:
    if len(x) != len(target):
        raise ShapeError(f"{op}: cannot broadcast shape {tuple(x)} to {tuple(target)}: ranks differ")
    out = []
    for d, t in zip(x, target):
        t = d if t == 0 else t
        if d != t and d != 1:
            raise ShapeError(f"{op}: cannot broadcast shape {tuple(x)} to {tuple(target)}")
        out.append(t)
    return tuple(out)


def _broadcast_kernel(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    out[...] = ctx.xp.broadcast_to(inputs[0], out.shape)


def _sum_to_like(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = sum_to(ctx.xp, inputs[0], outputs[0].shape)


register(OpDef(name="_backward_broadcast_to", inputs=["ograd", "data"], outputs=["data_grad"],
               infer_shape=lambda a, s: (s, [s[1]]), infer_type=first_input_type,
               kernels={"any": _sum_to_like}, shape_only_inputs=(1,),
               doc="ograd summed over the axes broadcasting expanded, down to data's shape."))


def _sum_back_grad(F, attrs, inputs, outputs, out_grads):
    res = [F._backward_broadcast_to(out_grads[0], inputs[0])]
    return res + [None] * (len(inputs) - 1)


def _broadcast_to_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    return in_shapes, [_check_broadcastable("broadcast_to", x, attrs["shape"])]


register(OpDef(name="broadcast_to", attrs={"shape": Attr("shape")}, infer_shape=_broadcast_to_infer,
               kernels={"any": _broadcast_kernel}, gradient=_sum_back_grad,
               doc="Broadcast length-1 axes to `shape` (0 keeps the input's length)."))


def _broadcast_axis_infer(attrs, in_shapes):
    x = in_shapes[0]
    axis, size = attrs["axis"], attrs["size"]
    if len(axis) != len(size):
        raise ShapeError(f"broadcast_axis: axis {tuple(axis)} and size {tuple(size)} differ in length")
    if x is None:
        return in_shapes, [None]
    out = list(x)
    for a, s in zip(axis, size):
        n = norm_axis("broadcast_axis", a, len(x))
        if x[n] != 1:
            raise ShapeError(f"broadcast_axis: axis {a} of shape {tuple(x)} has length {x[n]}, not 1")
        out[n] = s
    return in_shapes, [tuple(out)]


register(OpDef(name="broadcast_axis", aliases=["broadcast_axes"],
               attrs={"axis": Attr("shape", ()), "size": Attr("shape", ())},
               infer_shape=_broadcast_axis_infer, kernels={"any": _broadcast_kernel}, gradient=_sum_back_grad,
               doc="Broadcast the length-1 axes `axis` to lengths `size`."))


def _broadcast_like_infer(attrs, in_shapes):
    x, like = in_shapes
    if x is None or like is None:
        return in_shapes, [None]
    la, ra = attrs["lhs_axes"], attrs["rhs_axes"]
    if la is None:  # rhs_axes alone is ignored, as in MXNet
        return in_shapes, [_check_broadcastable("broadcast_like", x, like)]
    if len(la) == 0:
        raise ShapeError("broadcast_like: empty lhs_axes is not allowed (leave lhs_axes and rhs_axes unset "
                         "to broadcast every axis)")
    ra = ra or ()
    if len(la) != len(ra):
        raise ShapeError(f"broadcast_like: lhs_axes {tuple(la)} and rhs_axes {tuple(ra)} differ in length")
    out = list(x)
    for a, b in zip(la, ra):
        n = norm_axis("broadcast_like", a, len(x), "lhs axis")
        m = norm_axis("broadcast_like", b, len(like), "rhs axis")
        if x[n] != 1 and x[n] != like[m]:
            raise ShapeError(f"broadcast_like: axis {a} of lhs {tuple(x)} has length {x[n]}, "
                             f"cannot broadcast to {like[m]} (rhs {tuple(like)})")
        out[n] = like[m]
    return in_shapes, [tuple(out)]


register(OpDef(name="broadcast_like", inputs=["lhs", "rhs"],
               attrs={"lhs_axes": Attr("shape_or_none", None), "rhs_axes": Attr("shape_or_none", None)},
               infer_shape=_broadcast_like_infer, infer_type=first_input_type,
               kernels={"any": _broadcast_kernel}, gradient=_sum_back_grad,
               doc="Broadcast lhs to the shape of rhs (or only the axes given)."))


# -- tile / repeat -------------------------------------------------------------------------------
def _tile_dims(x: Shape, reps: Sequence[int]):
    n = max(len(x), len(reps))
    xs = (1,) * (n - len(x)) + tuple(x)
    rs = (1,) * (n - len(reps)) + tuple(reps)
    return xs, rs


def _tile_infer(attrs, in_shapes):
    x = in_shapes[0]
    reps = attrs["reps"]
    if any(r is None or r < 0 for r in reps):
        raise ShapeError(f"tile: reps {tuple(reps)} must be non-negative integers")
    if 0 in reps and not _np_shape():
        raise ShapeError(f"tile: reps {tuple(reps)} has a 0, an unknown size without NumPy shape semantics")
    if x is None:
        return in_shapes, [None]
    xs, rs = _tile_dims(x, reps)
    return in_shapes, [tuple(a * b for a, b in zip(xs, rs))]


def _tile(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = ctx.xp.tile(inputs[0], tuple(attrs["reps"]))


def _tile_backward(ctx, attrs, inputs, outputs, aux):
    g, x = inputs
    xs, rs = _tile_dims(x.shape, attrs["reps"])
    inter = []
    for r, d in zip(rs, xs):
        inter += [r, d]
    summed = g.reshape(inter).sum(axis=tuple(range(0, 2 * len(xs), 2)))
    outputs[0][...] = summed.reshape(x.shape)


with_backward(OpDef(name="tile", attrs={"reps": Attr("shape")}, infer_shape=_tile_infer, kernels={"any": _tile},
                    doc="Repeat the whole array `reps` times along each axis (numpy.tile)."),
              _tile_backward, "Gradient of tile: the sum over all tiles.", infer_type=first_input_type)


def _repeat_infer(attrs, in_shapes):
    x = in_shapes[0]
    r = attrs["repeats"]
    if r < 0:
        raise ShapeError(f"repeat: repeats must be >= 0, got {r}")
    if x is None:
        return in_shapes, [None]
    axis = attrs["axis"]
    if axis is None:
        return in_shapes, [(prod(x) * r,)]
    a = norm_axis("repeat", axis, len(x))
    return in_shapes, [tuple(d * r if i == a else d for i, d in enumerate(x))]


def _repeat(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = ctx.xp.repeat(inputs[0], attrs["repeats"], axis=attrs["axis"])


def _repeat_backward(ctx, attrs, inputs, outputs, aux):
    g, x = inputs
    r, axis = attrs["repeats"], attrs["axis"]
    if axis is None:
        outputs[0][...] = g.reshape(-1, r).sum(axis=1).reshape(x.shape)
        return
    a = axis % x.ndim
    shape = x.shape[:a + 1] + (r,) + x.shape[a + 1:]
    outputs[0][...] = g.reshape(shape).sum(axis=a + 1)


_REPEAT_ATTRS = {"repeats": Attr("int"), "axis": Attr("int_or_none", None)}
with_backward(OpDef(name="repeat", attrs=_REPEAT_ATTRS, infer_shape=_repeat_infer, kernels={"any": _repeat},
                    doc="Repeat each element `repeats` times along `axis` (flattened when axis is None)."),
              _repeat_backward, "Gradient of repeat: the sum over the copies.", infer_type=first_input_type)


# -- Cast -------------------------------------------------------------------------------------
register(OpDef(name="_backward_Cast", inputs=["ograd", "data"], outputs=["data_grad"],
               infer_shape=lambda a, s: (s, [s[1] if s[1] is not None else s[0]]),
               infer_type=lambda a, d: (list(d), [d[1]]), kernels={"any": copy_kernel}, shape_only_inputs=(1,),
               doc="Gradient of Cast: ograd cast back to the input's dtype."))
register(OpDef(name="Cast", aliases=["cast"], attrs={"dtype": Attr("dtype")},
               infer_shape=lambda a, s: (s, [s[0]]), infer_shape_backward=data_like_output,
               infer_type=lambda a, d: (list(d), [a["dtype"]]),
               kernels={"any": copy_kernel}, elementwise=True, infer_stype=stype.elemwise(),
               gradient=via("_backward_Cast", lambda i, o, g: [g[0], i[0]], 1, False),
               doc="Convert to `dtype`."))


# -- shape_array / size_array -------------------------------------------------------------------
def _shape_array(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = ctx.xp.asarray(inputs[0].shape, dtype=outputs[0].dtype)


def _size_array(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = inputs[0].size


register(OpDef(name="shape_array", infer_shape=lambda a, s: (s, [None if s[0] is None else (len(s[0]),)]),
               infer_type=lambda a, d: (list(d), [np.dtype(np.int64)]), kernels={"any": _shape_array},
               gradient=no_gradient(1), doc="The shape of data as a 1-D int64 array."))
register(OpDef(name="size_array", infer_shape=lambda a, s: (s, [(1,)]),
               infer_type=lambda a, d: (list(d), [np.dtype(np.int64)]), kernels={"any": _size_array},
               gradient=no_gradient(1), doc="The number of elements of data as a (1,) int64 array."))


# -- diag ---------------------------------------------------------------------------------------
_DIAG_ATTRS = {"k": Attr("int", 0), "axis1": Attr("int", 0), "axis2": Attr("int", 1)}


def _diag_infer(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    k = attrs["k"]
    if len(x) == 1:
        n = x[0] + abs(k)
        return in_shapes, [(n, n)]
    if len(x) < 1:
        raise ShapeError("diag: input must have at least 1 dimension")
    a1 = norm_axis("diag", attrs["axis1"], len(x), "axis1")
    a2 = norm_axis("diag", attrs["axis2"], len(x), "axis2")
    if a1 == a2:
        raise ShapeError(f"diag: axis1 and axis2 must differ, got {attrs['axis1']} and {attrs['axis2']}")
    if k > x[a2] or -k > x[a1]:  # |k| up to the side length gives an empty diagonal; beyond, MXNet refuses
        raise ShapeError(f"diag: diagonal k={k} does not exist for axes of lengths {x[a1]} and {x[a2]} "
                         f"(input {tuple(x)})")
    n = max(0, min(x[a1] + min(k, 0), x[a2] - max(k, 0)))
    rest = tuple(d for i, d in enumerate(x) if i not in (a1, a2))
    return in_shapes, [rest + (n,)]


def _diag(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    if x.ndim == 1:
        outputs[0][...] = ctx.xp.diag(x, attrs["k"])
    else:
        outputs[0][...] = ctx.xp.diagonal(x, attrs["k"], attrs["axis1"], attrs["axis2"])


def _diag_backward(ctx, attrs, inputs, outputs, aux):
    g, x = inputs
    xp = ctx.xp
    out = outputs[0]
    if x.ndim == 1:
        out[...] = xp.diagonal(g, attrs["k"])
        return
    out[...] = 0
    a1, a2 = attrs["axis1"] % x.ndim, attrs["axis2"] % x.ndim
    view = xp.moveaxis(out, (a1, a2), (-2, -1))  # a view of out with the two axes last
    k = attrs["k"]
    n = g.shape[-1]
    rows = xp.arange(n) - min(k, 0)
    cols = xp.arange(n) + max(k, 0)
    view[..., rows, cols] = g


with_backward(OpDef(name="diag", attrs=_DIAG_ATTRS, infer_shape=_diag_infer, kernels={"any": _diag},
                    doc="1-D input: a matrix with it on diagonal k; N-D: diagonal k of axes (axis1, axis2)."),
              _diag_backward, "Gradient of diag.", infer_type=first_input_type)


# -- depth_to_space / space_to_depth ------------------------------------------------------------------
def _d2s_infer(op, to_space):
    def infer(attrs, in_shapes):
        x = in_shapes[0]
        b = attrs["block_size"]
        if b < 1:
            raise ShapeError(f"{op}: block_size must be >= 1, got {b}")
        if x is None:
            return in_shapes, [None]
        if len(x) != 4:
            raise ShapeError(f"{op}: input must be 4-D (N, C, H, W), got {tuple(x)}")
        if 0 in x:
            raise ShapeError(f"{op}: every dimension of the input must be > 0, got {tuple(x)}")
        n, c, h, w = x
        if to_space:
            if c % (b * b):
                raise ShapeError(f"{op}: channels {c} must be divisible by block_size^2 = {b * b}")
            return in_shapes, [(n, c // (b * b), h * b, w * b)]
        if h % b or w % b:
            raise ShapeError(f"{op}: height {h} and width {w} must be divisible by block_size {b}")
        return in_shapes, [(n, c * b * b, h // b, w // b)]
    return infer


def _depth_to_space(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    b = attrs["block_size"]
    n, c, h, w = x.shape
    y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    outputs[0][...] = y.reshape(outputs[0].shape)


def _space_to_depth(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    b = attrs["block_size"]
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4)
    outputs[0][...] = y.reshape(outputs[0].shape)


register(OpDef(name="depth_to_space", attrs={"block_size": Attr("int")}, infer_shape=_d2s_infer("depth_to_space", True),
               kernels={"any": _depth_to_space},
               gradient=lambda F, a, i, o, g: [F.space_to_depth(g[0], block_size=a["block_size"])],
               doc="Move channel blocks into block_size x block_size spatial tiles (N, C, H, W)."))
register(OpDef(name="space_to_depth", attrs={"block_size": Attr("int")},
               infer_shape=_d2s_infer("space_to_depth", False), kernels={"any": _space_to_depth},
               gradient=lambda F, a, i, o, g: [F.depth_to_space(g[0], block_size=a["block_size"])],
               doc="Inverse of depth_to_space."))


# -- Pad ----------------------------------------------------------------------------------------------
_PAD_ATTRS = {"mode": Attr("str", "constant", choices=("constant", "edge", "reflect")),
              "pad_width": Attr("shape"), "constant_value": Attr("float", 0.0)}


def _pad_widths(attrs, shape):
    pw = attrs["pad_width"]
    if len(shape) not in (4, 5):
        raise ShapeError(f"Pad: input must be 4-D or 5-D, got shape {tuple(shape)}")
    if len(pw) != 2 * len(shape):
        raise ShapeError(f"Pad: pad_width {tuple(pw)} must have 2 entries per axis of {tuple(shape)}")
    if any(pw[:4]):
        raise ShapeError(f"Pad: padding on the first two axes must be zero, got pad_width {tuple(pw)}")
    widths = [(pw[2 * i], pw[2 * i + 1]) for i in range(len(shape))]
    if attrs["mode"] == "reflect":
        for (b, a), d in zip(widths[2:], shape[2:]):
            if b >= d or a >= d:
                raise ShapeError(f"Pad: reflect padding {(b, a)} must be smaller than the axis length {d}")
    return widths


def _pad_infer(attrs, in_shapes):
    x = in_shapes[0]
    if not known(x):
        return in_shapes, [None]
    widths = _pad_widths(attrs, x)
    return in_shapes, [tuple(d + b + a for d, (b, a) in zip(x, widths))]


def _pad(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    widths = _pad_widths(attrs, x.shape)
    if attrs["mode"] == "constant":
        res = ctx.xp.pad(x, widths, mode="constant", constant_values=attrs["constant_value"])
    else:
        res = ctx.xp.pad(x, widths, mode=attrs["mode"])
    outputs[0][...] = res


def _pad_backward(ctx, attrs, inputs, outputs, aux):
    g, x = inputs
    xp = ctx.xp
    widths = _pad_widths(attrs, x.shape)
    mode = attrs["mode"]
    for axis, ((b, a), n) in enumerate(zip(widths, x.shape)):
        if not b and not a:
            continue
        if mode == "constant":
            g = xp.take(g, xp.arange(b, b + n), axis=axis)
            continue
        # the padded position i copies source position src[i] (per axis for edge/reflect): add back
        src = np.pad(np.arange(n), (b, a), mode=mode)
        acc = xp.zeros(g.shape[:axis] + (n,) + g.shape[axis + 1:], dtype=g.dtype)
        add_at = np.add.at if xp is np else xp.add.at
        add_at(xp.moveaxis(acc, axis, 0), xp.asarray(src), xp.moveaxis(g, axis, 0))
        g = acc
    outputs[0][...] = g


with_backward(OpDef(name="Pad", aliases=["pad"], attrs=_PAD_ATTRS, infer_shape=_pad_infer, kernels={"any": _pad},
                    doc="Pad the spatial axes of a 4-D/5-D array (constant, edge or reflect)."),
              _pad_backward, "Gradient of Pad: padded copies added back to their source.", infer_type=first_input_type)


# -- mixed precision casts ---------------------------------------------------------------------------
def _amp_target(attrs, dtype):
    """amp_cast only converts floating point arrays; integers pass through unchanged."""
    return attrs["dtype"] if dtype is not None and np.dtype(dtype).kind == "f" else dtype


register(OpDef(name="amp_cast", attrs={"dtype": Attr("dtype")},
               infer_shape=lambda a, s: (s, [s[0]]), infer_shape_backward=data_like_output,
               infer_type=lambda a, d: (list(d), [_amp_target(a, d[0])]),
               kernels={"any": copy_kernel}, inplace=[(0, 0)],
               gradient=via("_backward_Cast", lambda i, o, g: [g[0], i[0]], 1, False),
               doc="Cast floating point data to `dtype` (other dtypes unchanged), for AMP."))


def _multicast_outputs(attrs):
    return [f"output{i}" for i in range(attrs["num_outputs"])]


def _multicast_type(attrs, in_dtypes):
    floats = [np.dtype(d) for d in in_dtypes if d is not None and np.dtype(d).kind == "f"]
    if not floats:
        return list(in_dtypes), list(in_dtypes)
    pick = min if attrs["cast_narrow"] else max
    target = pick(floats, key=lambda d: d.itemsize)
    return list(in_dtypes), [target if d is not None and np.dtype(d).kind == "f" else d for d in in_dtypes]


def _multicast(ctx, attrs, inputs, outputs, aux):
    for x, o in zip(inputs, outputs):
        if o is not x:
            o[...] = x


def _multicast_grad(F, attrs, inputs, outputs, out_grads):
    gs = ograds_or_zeros(F, out_grads, outputs, len(inputs))
    return [F._backward_Cast(g, x) for g, x in zip(gs, inputs)]


register(OpDef(name="amp_multicast", attrs={"num_outputs": Attr("int"), "cast_narrow": Attr("bool", False)},
               inputs=lambda a: [f"data{i}" for i in range(a["num_outputs"])], outputs=_multicast_outputs,
               key_var_num_args="num_outputs",
               infer_shape=lambda a, s: (s, list(s)), infer_type=_multicast_type, kernels={"any": _multicast},
               gradient=_multicast_grad,
               doc="Cast all floating point inputs to the widest (narrowest with cast_narrow) of their types."))


# -- cast_storage -----------------------------------------------------------------------------------
# Imperatively mx.nd.cast_storage / tostype convert between storage types (imperative/sparse_ops.py);
# this registry op is what a graph runs, and graphs compute densely: every stype is a copy there (the
# executor reads sparse arguments densely and casts sparse gradient arrays after the backward)
register(OpDef(name="cast_storage", attrs={"stype": Attr("str", choices=("default", "row_sparse", "csr"))},
               infer_shape=lambda attrs, in_shapes: (in_shapes, [in_shapes[0]]), kernels={"any": _copy_into},
               infer_stype=stype.requested,
               inplace=[(0, 0)], gradient=lambda F, a, i, o, g: [F._copy(g[0])],
               doc="Storage conversion; in a graph (computed densely) a copy of the values."))
