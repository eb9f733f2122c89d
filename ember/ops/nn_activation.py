"""Activation and LeakyReLU (leaky, elu, selu, gelu, prelu, rrelu) with their backward ops."""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from ..engine import native
from ._nn_util import (INV_SQRT_2PI, SQRT_2, backward_via, erf, float_type_rule, float_types, known, merge, sigmoid,
                       softplus)
from .registry import Attr, OpDef, register
from ._common import data_like_output

_ACT_TYPES = ("relu", "sigmoid", "tanh", "softrelu", "softsign")  # MXNet 1.9.1's choices


# -- Activation -----------------------------------------------------------------------
def _act_forward(xp, kind, x):
    if kind == "relu":
        return xp.maximum(x, 0)
    if kind == "sigmoid":
        return sigmoid(xp, x)
    if kind == "tanh":
        return xp.tanh(x)
    if kind == "softrelu":
        return softplus(xp, x)
    return x / (1 + xp.abs(x))  # softsign


def _act_derivative(xp, kind, y):
    """d act / d x from the output y alone, so the forward may overwrite its input."""
    if kind == "relu":  # 1 above 0, NaN at NaN (MXNet's relu_grad passes NaN through), else 0
        return xp.where(xp.isnan(y), y, y > 0).astype(y.dtype, copy=False)
    if kind == "sigmoid":
        return y * (1 - y)
    if kind == "tanh":
        return 1 - y * y
    if kind == "softrelu":  # y = log(1 + e^x)  =>  sigmoid(x) = 1 - e^-y
        return -xp.expm1(-y)
    d = 1 - xp.abs(y)  # softsign: y = x / (1 + |x|)  =>  1 / (1 + |x|)^2 = (1 - |y|)^2
    return d * d


def _same_shape(name):
    def infer(attrs, in_shapes):
        s = next((x for x in in_shapes if known(x)), None)
        if s is None:
            return in_shapes, [None]
        return [merge(name, "input", x, s) for x in in_shapes], [tuple(s)]
    return infer


def _activation(ctx, attrs, inputs, outputs, aux):
    x, out = inputs[0], outputs[0]
    if attrs["act_type"] == "relu" and out.dtype == x.dtype:
        relu_into(ctx.xp, x, out)
        return
    out[...] = _act_forward(ctx.xp, attrs["act_type"], x)


def relu_into(xp, x, out) -> None:
    """out = relu(x) in one pass, no temporary (x may be out: in place): the native kernel on float32
    CPU arrays (numpy's maximum with a scalar zero runs its scalar loop), else maximum(x, 0)."""
    if xp is not np or not native.relu_f32(x, out):
        xp.maximum(x, 0, out=out)


def _activation_backward(ctx, attrs, inputs, outputs, aux):
    dy, y = inputs
    if attrs["act_type"] == "relu" and ctx.xp is np and native.relu_backward_f32(dy, y, outputs[0]):
        return
    d = _act_derivative(ctx.xp, attrs["act_type"], y)
    ctx.xp.multiply(dy, d, out=outputs[0])


_ACT_ATTRS = {"act_type": Attr("str", choices=_ACT_TYPES, doc="activation function")}

register(OpDef(
    name="Activation", attrs=_ACT_ATTRS, inputs=["data"], outputs=["output"],
    infer_shape_backward=data_like_output,
    infer_shape=_same_shape("Activation"), infer_type=float_type_rule("Activation"),
    kernels={"any": _activation}, inplace=[(0, 0)],
    gradient=backward_via("_backward_Activation", lambda a, i, o, g: [g[0], o[0]], lambda a: [True]),
    doc="Elementwise activation: relu, sigmoid, tanh, softrelu, softsign."))

register(OpDef(
    name="_backward_Activation", attrs=_ACT_ATTRS, inputs=["out_grad", "output"],
    outputs=["data_grad"], infer_shape=_same_shape("_backward_Activation"),
    kernels={"any": _activation_backward}, inplace=[(0, 0)],
    doc="Gradient of Activation."))


# -- LeakyReLU ------------------------------------------------------------------------
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_LAMBDA = 1.0507009873554804934193349852946

_LEAKY_ATTRS = {
    "act_type": Attr("str", "leaky", choices=("elu", "gelu", "leaky", "prelu", "rrelu", "selu")),
    "slope": Attr("float", 0.25, doc="negative slope (leaky), alpha (elu)"),
    "lower_bound": Attr("float", 0.125, doc="rrelu: lower bound of the random slope"),
    "upper_bound": Attr("float", 0.334, doc="rrelu: upper bound of the random slope"),
}


def _leaky_inputs(attrs):
    return ["data", "gamma"] if attrs["act_type"] == "prelu" else ["data"]


def _leaky_outputs(attrs):
    return ["output", "mask"] if attrs["act_type"] == "rrelu" else ["output"]


def _gamma_shape(dshape):
    return (dshape[1],) if len(dshape) >= 2 else (1,)


def _leaky_infer_shape(attrs, in_shapes):
    ins = list(in_shapes)
    d = ins[0]
    nout = 2 if attrs["act_type"] == "rrelu" else 1
    if not known(d):
        return ins, [None] * nout
    d = tuple(d)
    if attrs["act_type"] == "prelu":
        g = ins[1]
        # (1,), (C,), or (as MXNet) the leading dimensions of data (N, C, ...), broadcast over the rest
        if known(g) and tuple(g) not in ((1,), _gamma_shape(d)) and not (1 < len(g) <= len(d) and tuple(g) == d[:len(g)]):
            raise ShapeError(f"LeakyReLU: prelu gamma must have shape (1,), {_gamma_shape(d)} or data's leading "
                             f"dimensions {d[:2]}..., got {tuple(g)}")
        ins[1] = tuple(g) if known(g) else _gamma_shape(d)
    return ins, [d] * nout


def _gamma_view(x, gamma):
    """gamma shaped to broadcast over x: along axis 1 (one slope per channel), or over x's leading axes."""
    if gamma.size == 1 or x.ndim < 2:
        return gamma.reshape((1,) * x.ndim) if x.ndim else gamma.reshape(())
    if gamma.ndim > 1:
        return gamma.reshape(gamma.shape + (1,) * (x.ndim - gamma.ndim))
    return gamma.reshape((1, -1) + (1,) * (x.ndim - 2))


def _rrelu_slope(ctx, attrs, x):
    lo, hi = attrs["lower_bound"], attrs["upper_bound"]
    if ctx.is_train:
        if ctx.rng is None:
            raise OperatorError("LeakyReLU(rrelu): training needs the 'rng' resource")
        draws = ctx.rng.uniform(lo, hi, size=x.shape)
        return ctx.xp.asarray(draws, dtype=x.dtype)
    return ctx.xp.full(x.shape, (lo + hi) / 2, dtype=x.dtype)


def _leaky(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    kind = attrs["act_type"]
    x = inputs[0]
    out = outputs[0]
    s = attrs["slope"]
    if kind == "leaky":
        out[...] = xp.where(x > 0, x, x * x.dtype.type(s))
    elif kind == "elu":
        out[...] = xp.where(x > 0, x, s * xp.expm1(xp.minimum(x, 0)))
    elif kind == "selu":
        out[...] = _SELU_LAMBDA * xp.where(x > 0, x, _SELU_ALPHA * xp.expm1(xp.minimum(x, 0)))
    elif kind == "gelu":
        out[...] = 0.5 * x * (1 + erf(xp, x / x.dtype.type(SQRT_2)))
    elif kind == "prelu":
        out[...] = xp.where(x > 0, x, x * _gamma_view(x, inputs[1]))
    else:  # rrelu
        slope = _rrelu_slope(ctx, attrs, x)
        # the visible mask holds the drawn slopes while training and zeros in inference, as in MXNet
        outputs[1][...] = slope if ctx.is_train else 0
        out[...] = xp.where(x > 0, x, x * slope)


def _reads_output(attrs) -> bool:
    """Whether the gradient can be computed from the output alone (sign(y) == sign(x))."""
    kind = attrs["act_type"]
    return kind == "selu" or (kind in ("leaky", "elu") and attrs["slope"] > 0)


def _leaky_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    kind = attrs["act_type"]
    dy, v = inputs[0], inputs[1]   # v: the output if _reads_output(attrs), else the input
    s = attrs["slope"]
    pos = v > 0
    if _reads_output(attrs):       # for x <= 0: elu y = s(e^x - 1) => s e^x = y + s; selu likewise
        if kind == "leaky":
            d = xp.where(pos, 1, s)
        elif kind == "elu":
            d = xp.where(pos, 1, v + s)
        else:
            d = xp.where(pos, _SELU_LAMBDA, v + _SELU_LAMBDA * _SELU_ALPHA)
    elif kind == "leaky":
        d = xp.where(pos, 1, s)
    elif kind == "elu":
        d = xp.where(pos, 1, s * xp.exp(xp.minimum(v, 0)))
    elif kind == "gelu":
        d = 0.5 * (1 + erf(xp, v / v.dtype.type(SQRT_2))) + v * INV_SQRT_2PI * xp.exp(-0.5 * v * v)
    elif kind == "prelu":
        gamma = inputs[2]
        d = xp.where(pos, 1, _gamma_view(v, gamma))
        dg = xp.where(pos, 0, v * dy)
        if gamma.size == 1 or v.ndim < 2:
            outputs[1][...] = dg.sum()
        elif gamma.ndim > 1:
            outputs[1][...] = dg.sum(axis=tuple(range(gamma.ndim, v.ndim))) if v.ndim > gamma.ndim else dg
        else:
            outputs[1][...] = dg.sum(axis=tuple(a for a in range(v.ndim) if a != 1))
    else:  # rrelu: the slopes saved by a training forward pass; a zero mask means inference
        mean_slope = (attrs["lower_bound"] + attrs["upper_bound"]) / 2
        d = xp.where(pos, 1, xp.where(inputs[2] > 0, inputs[2], mean_slope))
    outputs[0][...] = dy * d.astype(v.dtype, copy=False)


def _leaky_backward_inputs(attrs, inputs, outputs, out_grads):
    if attrs["act_type"] == "prelu":
        return [out_grads[0], inputs[0], inputs[1]]
    if attrs["act_type"] == "rrelu":
        return [out_grads[0], inputs[0], outputs[1]]
    return [out_grads[0], outputs[0] if _reads_output(attrs) else inputs[0]]


def _leaky_backward_names(attrs):
    kind = attrs["act_type"]
    second = "output" if _reads_output(attrs) else "data"
    return ["out_grad", second] + (["gamma"] if kind == "prelu" else ["mask"] if kind == "rrelu" else [])


def _leaky_backward_shape(attrs, in_shapes):
    outs = [in_shapes[1]] + ([in_shapes[2]] if attrs["act_type"] == "prelu" else [])
    return in_shapes, outs


register(OpDef(
    name="LeakyReLU", attrs=_LEAKY_ATTRS, inputs=_leaky_inputs, outputs=_leaky_outputs,
    num_visible_outputs=lambda a: len(_leaky_outputs(a)),  # MXNet returns rrelu's mask too
    infer_shape_backward=data_like_output, infer_shape=_leaky_infer_shape,
    infer_type=lambda a, d: float_types("LeakyReLU", a, d, 2 if a["act_type"] == "rrelu" else 1)[:2],
    kernels={"any": _leaky}, resources=("rng",), inplace=[(0, 0)],
    gradient=backward_via("_backward_LeakyReLU", _leaky_backward_inputs,
                          lambda a: [True, True] if a["act_type"] == "prelu" else [True]),
    input_var_attrs={"gamma": {"__init__": '["Constant", {"value": 0.25}]'}},  # MXNet's prelu default slope
    doc="Leaky rectifiers: leaky, elu, selu, gelu, prelu (learned gamma), rrelu (random slope when training)."))

register(OpDef(
    name="_backward_LeakyReLU", attrs=_LEAKY_ATTRS,
    inputs=_leaky_backward_names,
    outputs=lambda a: ["data_grad"] + (["gamma_grad"] if a["act_type"] == "prelu" else []),
    infer_shape=_leaky_backward_shape, kernels={"any": _leaky_backward}, inplace=[(0, 0)],
    doc="Gradient of LeakyReLU."))
