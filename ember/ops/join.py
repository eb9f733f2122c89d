"""Joining and splitting: Concat, stack, SliceChannel (split), ElementWiseSum (add_n).

Variable-arity ops take `num_args` (MXNet's key_var_num_args) and name their inputs
arg0, arg1, ...; SliceChannel names its outputs output0, output1, ...
"""
from __future__ import annotations

from typing import List

from ..base import OperatorError, ShapeError
from ._common import known, norm_axis, ograds_or_zeros, same_type, unify, with_backward
from . import stype
from .registry import Attr, OpDef, register


def _args(attrs) -> List[str]:
    n = attrs["num_args"]
    if n < 1:
        raise OperatorError(f"num_args must be >= 1, got {n}")
    return [f"arg{i}" for i in range(n)]


# -- Concat ----------------------------------------------------------------------------------
_CONCAT_ATTRS = {"num_args": Attr("int"), "dim": Attr("int", 1)}


def _concat_infer(attrs, in_shapes):
    ref = next((s for s in in_shapes if s is not None), None)
    if ref is None:
        return in_shapes, [None]
    ndim = len(ref)
    ax = norm_axis("Concat", attrs["dim"], ndim, "dim")
    total = 0
    # every axis but `dim` must agree: compare the shapes with that axis blanked out
    others = [tuple(d if i != ax else None for i, d in enumerate(s)) if s is not None and len(s) == ndim else s
              for s in in_shapes]
    for k, s in enumerate(in_shapes):
        if s is not None and len(s) != ndim:
            raise ShapeError(f"Concat: arg{k} has shape {tuple(s)} but arg0.. have {ndim} dimensions ({tuple(ref)})")
    try:
        common = unify("Concat", others, [f"arg{i}" for i in range(len(in_shapes))])
    except ShapeError:
        shapes = ", ".join(str(tuple(s)) for s in in_shapes if s is not None)
        raise ShapeError(f"Concat: inputs must match on every axis except dim={attrs['dim']}, got {shapes}") from None
    for s in in_shapes:
        if s is None or s[ax] is None:  # the concatenated axis stays unknown; the others are known
            total = None
            break
        total += s[ax]
    return ([common if s is None else s for s in in_shapes],
            [tuple(total if i == ax else d for i, d in enumerate(common))])


def _concat_backward_infer(attrs, in_shapes, out_shapes):
    """Inputs take the output's other axes; one input of unknown length along `dim` takes what is left."""
    out = out_shapes[0]
    if out is None:
        return [None] * len(in_shapes)
    ax = norm_axis("Concat", attrs["dim"], len(out), "dim")
    res = [tuple(None if i == ax else d for i, d in enumerate(out)) if s is None else
           tuple(o if i != ax and d is None else d for i, (d, o) in enumerate(zip(s, out)))
           for s in in_shapes]
    unknown = [k for k, s in enumerate(res) if s[ax] is None]
    if len(unknown) == 1 and out[ax] is not None:
        rest = out[ax] - sum(s[ax] for k, s in enumerate(res) if k != unknown[0])
        if rest <= 0:
            raise ShapeError(f"Concat: output length {out[ax]} along dim={attrs['dim']} leaves {rest} "
                             f"for arg{unknown[0]} (inputs {[tuple(s) if s else None for s in in_shapes]})")
        k = unknown[0]
        res[k] = tuple(rest if i == ax else d for i, d in enumerate(res[k]))
    return res


def _join_kernel(fn: str, axis_attr: str):
    """Kernel calling xp.<fn> (concatenate, stack) on the inputs along attrs[axis_attr], into the output."""
    def kernel(ctx, attrs, inputs, outputs, aux):
        out = outputs[0]
        ax = attrs[axis_attr] % out.ndim
        if out.flags.c_contiguous:
            getattr(ctx.xp, fn)(inputs, axis=ax, out=out)
        else:
            out[...] = getattr(ctx.xp, fn)(inputs, axis=ax)
    return kernel


_concat = _join_kernel("concatenate", "dim")  # also _rnn_param_concat's kernel (nn_rnn.py)


def _concat_backward(ctx, attrs, inputs, outputs, aux):
    g = inputs[0]
    ax = attrs["dim"] % g.ndim
    start = 0
    for o in outputs:
        n = o.shape[ax]
        o[...] = g[(slice(None),) * ax + (slice(start, start + n),)]
        start += n


with_backward(OpDef(name="Concat", aliases=["concat"], attrs=_CONCAT_ATTRS, inputs=_args, key_var_num_args="num_args",
                    infer_shape=_concat_infer, infer_shape_backward=_concat_backward_infer,
                    infer_type=same_type("Concat"), kernels={"any": _concat}, doc="Join the inputs along axis `dim`."),
              _concat_backward, "Gradient of Concat: ograd cut back into the inputs.",
              infer_type=lambda a, d: (list(d), [d[0]] * a["num_args"]),
              # the inputs are read only for their sizes along `dim`
              shape_only_inputs=lambda attrs: tuple(range(1, attrs["num_args"] + 1)))


# -- stack ------------------------------------------------------------------------------------
_STACK_ATTRS = {"num_args": Attr("int"), "axis": Attr("int", 0)}


class _ArgNames:
    """arg0, arg1, ...: the names of a variadic op's `n` inputs, made only for an error message."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> str:
        return f"arg{i}"


def _stack_infer(attrs, in_shapes):
    s = unify("stack", in_shapes, _ArgNames(len(in_shapes)))
    if s is None:
        return in_shapes, [None]
    ax = norm_axis("stack", attrs["axis"], len(s) + 1)
    return [s] * len(in_shapes), [tuple(s[:ax]) + (len(in_shapes),) + tuple(s[ax:])]


def _stack_grad(F, attrs, inputs, outputs, out_grads):
    n = attrs["num_args"]
    parts = F.SliceChannel(out_grads[0], num_outputs=n, axis=attrs["axis"], squeeze_axis=True)
    return [parts] if n == 1 else [parts[i] for i in range(n)]


register(OpDef(name="stack", attrs=_STACK_ATTRS, inputs=_args, key_var_num_args="num_args",
               infer_shape=_stack_infer, infer_type=same_type("stack"), kernels={"any": _join_kernel("stack", "axis")},
               gradient=_stack_grad, doc="Join same-shaped inputs along a new axis."))


# -- SliceChannel -----------------------------------------------------------------------------
_SPLIT_ATTRS = {"num_outputs": Attr("int"), "axis": Attr("int", 1), "squeeze_axis": Attr("bool", False)}


def _split_outputs(attrs):
    n = attrs["num_outputs"]
    if n < 1:
        raise OperatorError(f"SliceChannel: num_outputs must be >= 1, got {n}")
    return [f"output{i}" for i in range(n)]


def _split_infer(attrs, in_shapes):
    x = in_shapes[0]
    n = attrs["num_outputs"]
    if not known(x):
        return in_shapes, [None] * n
    ax = norm_axis("SliceChannel", attrs["axis"], len(x))
    if x[ax] % n:
        raise ShapeError(f"SliceChannel: axis {attrs['axis']} of shape {tuple(x)} (length {x[ax]}) "
                         f"cannot be split into {n} equal parts")
    if attrs["squeeze_axis"] and x[ax] != n:
        raise ShapeError(f"SliceChannel: squeeze_axis needs axis length == num_outputs, got {x[ax]} and {n}")
    part = x[:ax] + (() if attrs["squeeze_axis"] else (x[ax] // n,)) + x[ax + 1:]
    return in_shapes, [tuple(part)] * n


def _split_backward_infer(attrs, in_shapes, out_shapes):
    """The data shape that the (equal) output shapes imply."""
    outs = [o for o in out_shapes if o is not None]
    if not outs:
        return [None]
    part = unify("SliceChannel", outs)
    n = attrs["num_outputs"]
    if attrs["squeeze_axis"]:
        ax = norm_axis("SliceChannel", attrs["axis"], len(part) + 1)
        return [tuple(part[:ax]) + (n,) + tuple(part[ax:])]
    ax = norm_axis("SliceChannel", attrs["axis"], len(part))
    return [tuple(None if d is None else d * n if i == ax else d for i, d in enumerate(part))]


def _split(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    ax = attrs["axis"] % x.ndim
    step = x.shape[ax] // len(outputs)
    for k, o in enumerate(outputs):
        o[...] = x[(slice(None),) * ax + (slice(k * step, (k + 1) * step),)].reshape(o.shape)


def _split_grad(F, attrs, inputs, outputs, out_grads):
    gs = ograds_or_zeros(F, out_grads, outputs, attrs["num_outputs"])
    if attrs["squeeze_axis"]:
        gs = [F.expand_dims(g, axis=attrs["axis"]) for g in gs]
    return [F.Concat(*gs, num_args=len(gs), dim=attrs["axis"])]


register(OpDef(name="SliceChannel", aliases=["split"], attrs=_SPLIT_ATTRS, outputs=_split_outputs,
               infer_shape=_split_infer, infer_shape_backward=_split_backward_infer,
               infer_type=lambda a, d: (list(d), [d[0]] * a["num_outputs"]),
               kernels={"any": _split}, gradient=_split_grad,
               doc="Split into num_outputs equal parts along `axis` (dropping it with squeeze_axis)."))


# -- ElementWiseSum ----------------------------------------------------------------------------
def _add_n(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    xp = ctx.xp
    if len(inputs) == 1:
        if out is not inputs[0]:
            out[...] = inputs[0]
        return
    xp.add(inputs[0], inputs[1], out=out)
    for x in inputs[2:]:
        xp.add(out, x, out=out)


register(OpDef(name="ElementWiseSum", aliases=["add_n"], attrs={"num_args": Attr("int")}, inputs=_args,
               key_var_num_args="num_args", infer_shape=lambda a, s: (
                   [unify("ElementWiseSum", s, _args(a))] * len(s), [unify("ElementWiseSum", s, _args(a))]),
               infer_type=same_type("ElementWiseSum"), kernels={"any": _add_n}, inplace=[(0, 0)],
               infer_stype=stype.elemwise(rsp=True, csr=False),  # MXNet: row_sparse inputs only
               gradient=lambda F, a, i, o, g: [F._copy(g[0]) for _ in i],
               doc="The sum of all inputs (same shapes)."))
