"""`_npx_constraint_check(input, msg)` (MXNet 1.9.1): a 0-d bool True when every element of the boolean
input is true; otherwise the op fails with ValueError(msg) (raised where the result is waited on)."""
from __future__ import annotations

import numpy as np

from ..base import OperatorError
from .registry import Attr, OpDef, register


class ConstraintViolated(OperatorError, ValueError):
    """A constraint_check found a false element (MXNet raises ValueError)."""


def _kernel(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    ok = bool(ctx.xp.all(x))
    if not ok:
        raise ConstraintViolated(attrs["msg"])
    outputs[0][...] = True


register(OpDef(name="_npx_constraint_check", attrs={"msg": Attr("str", "Constraint violated.")},
               inputs=["input"], outputs=["output"],
               infer_shape=lambda a, s: (s, [()]),
               infer_type=lambda a, d: (list(d), [np.dtype(np.bool_)]),
               kernels={"any": _kernel},
               gradient=lambda F, a, i, o, g: [F.zeros_like(i[0])],
               doc="True (0-d bool) when every element of input is true, else ValueError(msg)."))
