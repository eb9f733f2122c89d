"""FullyConnected: y = x W^T + b as one GEMM, with its dedicated backward op."""
from __future__ import annotations

import math

from ..base import ShapeError
from ._nn_util import call_op, float32_on_cpu, float_types, known, matmul_into, merge
from .registry import Attr, OpDef, register

_ATTRS = {
    "num_hidden": Attr("int", doc="number of output units"),
    "no_bias": Attr("bool", False, doc="drop the bias input"),
    "flatten": Attr("bool", True, doc="flatten every axis after the first before the product"),
}


def _inputs(attrs):
    return ["data", "weight"] if attrs["no_bias"] else ["data", "weight", "bias"]


def _split(attrs, dshape):
    """(rows, K, output shape) for a data shape."""
    nh = attrs["num_hidden"]
    if attrs["flatten"]:  # (math.prod: numpy's prod costs ~5 us on a shape tuple, twice per call)
        k = math.prod(dshape[1:])
        return dshape[0], k, (dshape[0], nh)
    rows = math.prod(dshape[:-1])
    return rows, dshape[-1], tuple(dshape[:-1]) + (nh,)


def _check(attrs):
    if attrs["num_hidden"] <= 0:
        raise ShapeError(f"FullyConnected: num_hidden must be > 0, got {attrs['num_hidden']}")


def _infer_shape(attrs, in_shapes):
    _check(attrs)
    nh = attrs["num_hidden"]
    dshape = in_shapes[0]
    ins = list(in_shapes)
    if not known(dshape):
        return ins, [None]
    if len(dshape) < 1:
        raise ShapeError(f"FullyConnected: data must be at least 1-D, got {tuple(dshape)}")
    # 1-D data with flatten=True is a batch of one-feature rows, as in MXNet: (N,) -> (N, num_hidden)
    _, k, oshape = _split(attrs, tuple(dshape))
    ins[1] = merge("FullyConnected", "weight", ins[1], (nh, k))
    if not attrs["no_bias"]:
        if not (known(ins[2]) and tuple(ins[2]) == (nh, 1)):  # MXNet also takes a (num_hidden, 1) bias
            ins[2] = merge("FullyConnected", "bias", ins[2], (nh,))
    return ins, [oshape]


def _infer_backward(attrs, in_shapes, out_shapes):
    """Data dimensions that the output (rows) and the weight (input size) determine."""
    d, w, out = in_shapes[0], in_shapes[1], out_shapes[0]
    k = w[1] if w is not None and len(w) == 2 else None
    if attrs["flatten"]:
        if d is None:
            return [None] * len(in_shapes)
        d = list(d)
        if out is not None and d[0] is None:
            d[0] = out[0]
        if len(d) == 2 and d[1] is None:
            d[1] = k
    else:
        if d is None and out is None:
            return [None] * len(in_shapes)
        d = list(d) if d is not None else [None] * len(out)
        if out is not None and len(out) == len(d):
            d[:-1] = [a if a is not None else b for a, b in zip(d[:-1], out[:-1])]
        if d[-1] is None:
            d[-1] = k
    return [tuple(d)] + [None] * (len(in_shapes) - 1)


def _infer_type(attrs, in_dtypes):
    ins, outs, _ = float_types("FullyConnected", attrs, in_dtypes, 1)
    return ins, outs


@float32_on_cpu
def _forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x, w = inputs[0], inputs[1]
    out = outputs[0]
    rows, k, _ = _split(attrs, x.shape)
    x2 = x.reshape(rows, k)
    o2 = out.reshape(rows, attrs["num_hidden"]) if out.flags.c_contiguous else out
    # (a (num_hidden, 1) bias too)
    matmul_into(xp, x2, w.T, o2, None if attrs["no_bias"] else inputs[2].reshape(-1))


@float32_on_cpu
def _backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    dy, x, w = inputs
    rows, k, _ = _split(attrs, x.shape)
    dy2 = dy.reshape(rows, attrs["num_hidden"])
    x2 = x.reshape(rows, k)
    dx = outputs[0]
    if attrs["no_data_grad"]:  # nobody reads it (MXNet leaves such an output unwritten): no GEMM
        dx[...] = 0
    else:
        matmul_into(xp, dy2, w, dx.reshape(rows, k) if dx.flags.c_contiguous else dx)
    matmul_into(xp, dy2.T, x2, outputs[1])
    if not attrs["no_bias"]:
        outputs[2][...] = dy2.sum(axis=0)


def _backward_shape(attrs, in_shapes):
    dy, x, w = in_shapes
    outs = [x, w] + ([] if attrs["no_bias"] else [(attrs["num_hidden"],)])
    return in_shapes, outs


def _backward_outputs(attrs):
    return ["data_grad", "weight_grad"] + ([] if attrs["no_bias"] else ["bias_grad"])


def _gradient(F, attrs, inputs, outputs, out_grads, needed=None):
    """Gradients through `_backward_FullyConnected`.  `needed` (per input, from the gradient pass or
    the tape) lets the backward skip the data gradient GEMM when no one wants it (the first
    layer's input), as MXNet's kernel skips an output whose req is null."""
    skip = needed is not None and not needed[0]
    res = call_op(F, "_backward_FullyConnected", [out_grads[0], inputs[0], inputs[1]],
                  dict(attrs, no_data_grad=skip), 2 if attrs["no_bias"] else 3)
    res = [None if skip else res[0]] + list(res[1:])
    if not attrs["no_bias"] and len(getattr(inputs[2], "shape", ())) == 2:
        res[2] = res[2].reshape(inputs[2].shape)  # the gradient of a (num_hidden, 1) bias has its shape
    return res


def _rows(F, flatten: bool, a):
    """`a` as the (rows, features) matrix the op multiplies: every axis after the first merged
    (flatten) or every axis before the last."""
    return F.flatten(a) if flatten else F.reshape(a, shape=(-1, 0), reverse=True)


def _backward_gradient(F, attrs, inputs, outputs, out_grads):
    """Gradients through `_backward_FullyConnected` itself (autograd.grad(create_graph=True) of a
    gradient, as MXNet supports), written in differentiable ops.  With dX = dY W, dW = dY^T X,
    db = the row sum of dY and head gradients gX, gW, gb:
    d/d(dY) = gX W^T + X gW^T + gb,  d/dX = dY gW,  d/dW = dY^T gX."""
    dy, x, w = inputs
    g_x, g_w = out_grads[0], out_grads[1]
    no_bias, flat, nh = attrs["no_bias"], attrs["flatten"], attrs["num_hidden"]
    has_dx = not attrs["no_data_grad"]   # without it dX is no function of anything
    d_dy = F.FullyConnected(x, g_w, *([] if no_bias else [out_grads[2]]), num_hidden=nh, no_bias=no_bias,
                            flatten=flat)
    if has_dx:
        d_dy = d_dy + F.FullyConnected(g_x, w, num_hidden=nh, no_bias=True, flatten=flat)
    dy2 = _rows(F, flat, dy)
    d_x = F.reshape_like(F.dot(dy2, g_w), x)
    d_w = F.dot(dy2, _rows(F, flat, g_x), transpose_a=True) if has_dx else None
    return [d_dy, d_x, d_w]


def _writable(dest, arr) -> bool:
    return dest is not None and dest.grad_req == "write" and dest.grad.shape == arr.shape \
        and dest.grad.dtype == arr.dtype


def _gradient_into(F, attrs, inputs, outputs, out_grads, dests, needed=None):
    """Autograd's direct form: when the weight's (and bias's) variable takes the gradient by
    'write', the backward op writes into their `.grad` buffers (MXNet's req=write into the
    variable's buffer), instead of a fresh array that backward() would copy there."""
    targets = dests[1:len(inputs)]
    if not all(_writable(d, a) for d, a in zip(targets, inputs[1:])):
        return _gradient(F, attrs, inputs, outputs, out_grads, needed)
    from ..imperative.autograd_tape import WRITTEN  # imported here: the tape imports the ops
    skip = needed is not None and not needed[0]
    x = inputs[0]
    # (a (num_hidden, 1) bias's buffer is written through its (num_hidden,) view)
    outs = [F.empty(x.shape, ctx=x.context, dtype=x.dtype)] + [d.grad.reshape((-1,)) if d.grad.ndim == 2 and i == 1
                                                                else d.grad for i, d in enumerate(targets)]
    F._backward_FullyConnected(out_grads[0], inputs[0], inputs[1], out=outs, **dict(attrs, no_data_grad=skip))
    return [None if skip else outs[0]] + [WRITTEN] * len(targets)


register(OpDef(
    name="FullyConnected", attrs=_ATTRS, inputs=_inputs, outputs=["output"],
    infer_shape=_infer_shape, infer_shape_backward=_infer_backward, infer_type=_infer_type, kernels={"any": _forward},
    expensive=True, gradient=_gradient, gradient_into=_gradient_into, gradient_takes_needed=True,
    doc="Fully connected layer: output = dot(data, weight.T) + bias."))

_BACKWARD_ATTRS = dict(_ATTRS, no_data_grad=Attr("bool", False, doc="skip the data gradient (nobody needs it)"))

register(OpDef(
    name="_backward_FullyConnected", attrs=_BACKWARD_ATTRS, inputs=["out_grad", "data", "weight"],
    outputs=_backward_outputs,
    infer_shape=_backward_shape, kernels={"any": _backward}, gradient=_backward_gradient,
    doc="Gradients of FullyConnected w.r.t. data, weight and bias."))
