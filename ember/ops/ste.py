"""MXNet's straight-through estimators `_contrib_round_ste` and `_contrib_sign_ste`
(`mx.nd/sym.contrib.round_ste`, `sign_ste`): the forward pass rounds (half away from zero, as
`round`) or takes the sign; the backward pass lets the gradient through unchanged, as if the op were
the identity (quantization-aware training)."""
from __future__ import annotations

from ._unary import register_unary


def _round(ctx, attrs, inputs, outputs, aux):
    xp, x = ctx.xp, inputs[0]
    if x.dtype.kind != "f":
        outputs[0][...] = x  # integers are already whole
        return
    sign = xp.sign(x)  # read before the output (which may be x itself) is written
    xp.floor(xp.abs(x) + 0.5, out=outputs[0])
    outputs[0] *= sign


def _sign(ctx, attrs, inputs, outputs, aux):
    ctx.xp.sign(inputs[0], out=outputs[0])


def _straight_through(F, attrs, inputs, outputs, out_grads):
    return [F._copy(out_grads[0])]


for _name, _kernel, _what in (("_contrib_round_ste", _round, "round(x), half away from zero"),
                              ("_contrib_sign_ste", _sign, "sign(x)")):
    register_unary(_name, _kernel, None, gradient=_straight_through,
                   doc=f"{_what}; the gradient passes through unchanged (straight-through estimator).")
