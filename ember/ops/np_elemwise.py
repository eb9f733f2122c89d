"""mx.np's broadcasting binary ufuncs that the legacy operator set lacks: `_npi_arctan2`,
`_npi_copysign`, `_npi_ldexp` (float; ldexp also integers, as MXNet), `_npi_lcm`, `_npi_bitwise_and/or/xor` (integer or bool), with
MXNet 1.9.1's names.  numpy broadcasting; both inputs share one dtype (mx.np casts them first).

Gradients (as MXNet's): arctan2 d/dx1 = x2/(x1^2+x2^2), d/dx2 = -x1/(x1^2+x2^2); copysign d/dx1 =
sign agreement (+1/-1), d/dx2 = 0; ldexp d/dx1 = 2^x2, d/dx2 = out*ln 2; the integer ops have none
(zeros).  The backward op `_backward_npi_<name>(ograd, lhs, rhs)` sums each gradient back over the
broadcast axes.
"""
from __future__ import annotations

from typing import Callable, Dict

import numpy as np

from ..base import OperatorError
from ._common import no_gradient, sum_to, with_backward
from .elemwise import _broadcast_infer
from .registry import OpDef, register

_INPUTS = ["x1", "x2"]


def _infer_type(op: str, kinds: str):
    def infer(attrs, in_dtypes):
        a, b = in_dtypes
        dt = a if a is not None else b
        if a is not None and b is not None and np.dtype(a) != np.dtype(b):
            raise OperatorError(f"{op}: inputs must share one dtype, got {np.dtype(a).name} and {np.dtype(b).name}")
        if dt is not None and np.dtype(dt).kind not in kinds:
            what = "floating point" if kinds == "f" else "integer or bool"
            raise OperatorError(f"{op}: {what} inputs expected, got {np.dtype(dt).name}")
        return [dt, dt], [dt]
    return infer


def _ldexp(xp, a, b):
    # x1 * 2**x2 in x1's type (numpy's ldexp wants integer exponents; MXNet takes x1's type for both,
    # integers included: computed in float64 and truncated back)
    if a.dtype.kind == "f":
        return a * xp.exp2(b)
    return (a.astype(np.float64) * xp.exp2(b.astype(np.float64))).astype(a.dtype)


def _lcm(xp, a, b):
    return xp.lcm(a, b) if a.dtype.kind != "b" else xp.logical_and(a, b)


# name: (forward(xp, a, b), kinds, derivative(xp, g, a, b, out) -> (ga, gb) or None)
_OPS: Dict[str, tuple] = {
    "arctan2": (lambda xp, a, b: xp.arctan2(a, b), "f",
                lambda xp, g, a, b, o: (g * b / (a * a + b * b), -g * a / (a * a + b * b))),
    "copysign": (lambda xp, a, b: xp.copysign(a, b), "f",
                 lambda xp, g, a, b, o: (g * xp.where((a * b) >= 0, 1, -1).astype(g.dtype), xp.zeros_like(g))),
    "ldexp": (_ldexp, "iuf",
              lambda xp, g, a, b, o: (g * xp.exp2(b), g * o * a.dtype.type(np.log(2.0)))),
    "lcm": (_lcm, "iub", None),
    "bitwise_and": (lambda xp, a, b: xp.bitwise_and(a, b), "iub", None),
    "bitwise_or": (lambda xp, a, b: xp.bitwise_or(a, b), "iub", None),
    "bitwise_xor": (lambda xp, a, b: xp.bitwise_xor(a, b), "iub", None),
}


def _kernel(fn: Callable):
    def kernel(ctx, attrs, inputs, outputs, aux):
        a, b = inputs
        if outputs[0].size:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                outputs[0][...] = fn(ctx.xp, a, b)
    return kernel


def _backward_kernel(fn: Callable, deriv: Callable):
    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        g, a, b = inputs
        full = g.shape
        a_b, b_b = xp.broadcast_to(a, full), xp.broadcast_to(b, full)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            out = fn(xp, a_b, b_b)
            ga, gb = deriv(xp, g, a_b, b_b, out)
        outputs[0][...] = sum_to(xp, ga, outputs[0].shape)
        outputs[1][...] = sum_to(xp, gb, outputs[1].shape)
    return kernel


for _name, (_fn, _kinds, _deriv) in _OPS.items():
    _op = f"_npi_{_name}"
    _fwd = OpDef(name=_op, inputs=_INPUTS, outputs=["out"], infer_shape=_broadcast_infer(_op),
                 infer_type=_infer_type(_op, _kinds), kernels={"any": _kernel(_fn)}, gradient=no_gradient(2),
                 doc=f"numpy.{_name} with numpy broadcasting (mx.np.{_name}).")
    if _deriv is None:
        register(_fwd)
    else:
        with_backward(_fwd, _backward_kernel(_fn, _deriv),
                      f"Gradient of {_op}: each input's gradient summed over its broadcast axes.",
                      infer_type=lambda a, d: ([d[0], d[0], d[0]], [d[0], d[0]]))
