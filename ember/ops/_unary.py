"""Registration of elementwise one-input operators together with their `_backward_<name>` op.

An op is given by a forward function and a derivative; `register_unary` builds the
OpDef (same-shape, same-dtype inference, in-place capable), the backward op
``_backward_<name>(ograd, data, output) -> data_grad`` computing ograd * f'(x), and
the gradient that calls it through F.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence

import numpy as np

from ._common import same_shape, same_type, via
from .registry import Attr, OpDef, register

_BWD_INPUTS = ["ograd", "data", "output"]


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


def register_unary(name: str, kernel: Callable, deriv: Optional[Callable],
                   attrs: Optional[Dict[str, Attr]] = None, aliases: Sequence[str] = (),
                   doc: str = "", gradient: Optional[Callable] = None) -> OpDef:
    """Register `name` and, when `deriv(xp, x, y, attrs)` is given, `_backward_<name>`.

    `gradient` overrides the default (which calls `_backward_<name>`), e.g. for ops whose
    gradient is another forward op; `deriv=None` with no `gradient` means not differentiable.
    """
    attrs = dict(attrs or {})
    grad = gradient
    if deriv is not None:
        bwd_name = f"_backward_{name}"

        def bwd_kernel(ctx, a, inputs, outputs, aux):
            g, x, y = inputs
            d = deriv(ctx.xp, x, y, a)
            ctx.xp.multiply(g, d, out=outputs[0], casting="unsafe")

        register(OpDef(name=bwd_name, attrs=attrs, inputs=_BWD_INPUTS, outputs=["data_grad"],
                       infer_shape=same_shape(bwd_name, names=_BWD_INPUTS),
                       infer_type=same_type(bwd_name, names=_BWD_INPUTS),
                       kernels={"any": bwd_kernel}, inplace=[(0, 0)],
                       doc=f"Gradient of {name}: ograd * d{name}/dx."))
        if grad is None:
            grad = via(bwd_name, lambda i, o, g: [g[0], i[0], o[0]], 1)
    return register(OpDef(name=name, attrs=attrs, inputs=["data"], outputs=["output"],
                          infer_shape=same_shape(name), infer_type=same_type(name),
                          kernels={"any": kernel}, gradient=grad, inplace=[(0, 0)],
                          aliases=list(aliases), doc=doc))
