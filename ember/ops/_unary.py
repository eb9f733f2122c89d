"""Registration of elementwise one-input operators together with their `_backward_<name>` op.

An op is given by a forward function and a derivative; `register_unary` builds the
OpDef (same-shape, same-dtype inference, in-place capable), the backward op computing
ograd * f'(x), and the gradient that calls it through F.

The backward op reads only what the derivative needs (`uses`), as MXNet's
ElemwiseGradUseIn / UseOut / UseInOut do, so that the symbolic memory planner does not keep
an input alive for a gradient that never reads it (and the forward op may run in place):

    uses='out'   _backward_<name>(ograd, output)        e.g. exp, sigmoid, tanh, sqrt, relu
    uses='in'    _backward_<name>(ograd, data)          e.g. sin, log, square
    uses='both'  _backward_<name>(ograd, data, output)  e.g. gamma

Second order: when `second(F, v, attrs)` is given (d f'/dv written with registry ops,
v being what the backward op reads), the backward op gets a gradient too, so
`autograd.grad(..., create_graph=True)` can differentiate a first derivative.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence

import numpy as np

from ._common import same_shape, same_type
from .registry import Attr, OpDef, register

_BWD_INPUTS = {"in": ["ograd", "data"], "out": ["ograd", "output"], "both": ["ograd", "data", "output"]}


def ufunc_kernel(name: str) -> Callable:
    """Forward kernel calling the array-module ufunc `name` straight into the output buffer."""
    np_fn = getattr(np, name)

    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        (np_fn if xp is np else getattr(xp, name))(inputs[0], out=outputs[0], casting="unsafe")
    kernel.__name__ = f"{name}_kernel"
    return kernel


def expr_kernel(fn: Callable) -> Callable:
    """Forward kernel for fn(xp, x, attrs) -> array, copied into the output."""
    def kernel(ctx, attrs, inputs, outputs, aux):
        outputs[0][...] = fn(ctx.xp, inputs[0], attrs)
    return kernel


def _pick(uses: str) -> Callable:
    """The forward arrays the backward op reads: [data], [output] or [data, output]."""
    if uses == "in":
        return lambda inputs, outputs: [inputs[0]]
    if uses == "out":
        return lambda inputs, outputs: [outputs[0]]
    return lambda inputs, outputs: [inputs[0], outputs[0]]


def _backward_kernel(deriv: Callable, uses: str) -> Callable:
    def kernel(ctx, a, inputs, outputs, aux):
        g = inputs[0]
        if uses == "in":
            x, y = inputs[1], None
        elif uses == "out":
            x, y = None, inputs[1]
        else:
            x, y = inputs[1], inputs[2]
        ctx.xp.multiply(g, deriv(ctx.xp, x, y, a), out=outputs[0], casting="unsafe")
    return kernel


def _second_order(bwd_name: str, second: Callable) -> Callable:
    """Gradient of ``b = ograd * f'(v)``: db/dograd = f'(v) (the backward op again), db/dv = ograd f''(v)."""
    def gradient(F, attrs, inputs, outputs, out_grads):
        g = out_grads[0]
        ograd, v = inputs[0], inputs[1]
        d_ograd = getattr(F, bwd_name)(g, v, **attrs)
        d2 = second(F, v, attrs)  # None: f' is piecewise constant
        d_v = None if d2 is None else F.elemwise_mul(F.elemwise_mul(g, ograd), d2)
        return [d_ograd, d_v]
    gradient.__doc__ = f"Second-order gradient through {bwd_name}."
    return gradient


def register_unary(name: str, kernel: Callable, deriv: Optional[Callable],
                   attrs: Optional[Dict[str, Attr]] = None, aliases: Sequence[str] = (),
                   doc: str = "", gradient: Optional[Callable] = None, uses: str = "both",
                   second: Optional[Callable] = None, **fields) -> OpDef:
    """Register `name` and, when `deriv(xp, x, y, attrs)` is given, `_backward_<name>`.

    `uses` ('in', 'out', 'both') says which of x (input) and y (output) `deriv` reads; the
    other one is passed as None.  `second(F, v, attrs)`, for uses 'in'/'out', is the
    derivative of f' with respect to the array the backward op reads, written with registry
    ops through F; it makes the backward op differentiable.  `gradient` overrides the
    default (which calls `_backward_<name>`), e.g. for ops whose gradient is another forward
    op; `deriv=None` with no `gradient` means not differentiable.  The forward op is declared
    `elementwise`; `fields` are further OpDef fields for it (`ufunc_form`).
    """
    if uses not in _BWD_INPUTS:
        raise ValueError(f"register_unary({name}): uses must be 'in', 'out' or 'both', not {uses!r}")
    if second is not None and uses == "both":
        raise ValueError(f"register_unary({name}): second-order gradients need uses='in' or 'out'")
    attrs = dict(attrs or {})
    grad = gradient
    if deriv is not None:
        bwd_name = f"_backward_{name}"
        names = _BWD_INPUTS[uses]
        register(OpDef(name=bwd_name, attrs=attrs, inputs=names, outputs=["data_grad"],
                       infer_shape=same_shape(bwd_name, names=names),
                       infer_type=same_type(bwd_name, names=names),
                       kernels={"any": _backward_kernel(deriv, uses)}, inplace=[(0, 0)],
                       gradient=_second_order(bwd_name, second) if second is not None else None,
                       doc=f"Gradient of {name}: ograd * d{name}/dx, from {' and '.join(names[1:])}."))
        if grad is None:
            pick = _pick(uses)

            def grad(F, a, inputs, outputs, out_grads, _bwd=bwd_name, _pick=pick):
                return [getattr(F, _bwd)(out_grads[0], *_pick(inputs, outputs), **a)]
            grad.__doc__ = f"Gradient through the backward op {bwd_name}."
    return register(OpDef(name=name, attrs=attrs, inputs=["data"], outputs=["output"],
                          infer_shape=same_shape(name), infer_type=same_type(name),
                          kernels={"any": kernel}, gradient=grad, inplace=[(0, 0)], elementwise=True,
                          aliases=list(aliases), doc=doc, **fields))
