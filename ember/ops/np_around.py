"""`_npi_around` (mx.np.around / round / round_, MXNet 1.9.1's operator): x rounded to `decimals` places,
computed as MXNet's kernel computes it: the value scaled by 10 once per place in its own dtype (integers
divided with C's truncating integer division for negative decimals), rounded half to even (numpy's rule:
around(2.5) = 2, around(3.5) = 4), and scaled back the same way.  It differs from numpy's single scaling
by 10**decimals only in the last bit of some values (MXNet's around(2.675, 2) is 2.68, numpy's 2.67) and
for integers with negative decimals (MXNet's around(15, -1) is 10, numpy's 20).  Zero gradient (MXNet's).
The legacy `rint` op keeps MXNet's own rule (halves towards the floor), which around must not use."""
from __future__ import annotations

import numpy as np

from ..base import DTypeError
from ._common import no_gradient, same_shape
from .registry import Attr, OpDef, register


def _scale(xp, v, times: int, up: bool):
    """v multiplied (up) or divided by 10 `times` times, one step at a time in v's dtype."""
    ten = v.dtype.type(10)
    for _ in range(times):
        if up:
            v = v * ten
        elif v.dtype.kind in "iu":  # C's integer division: truncation toward zero (floor, then up for
            q = v // ten               # an inexact negative quotient; no negation, which overflows at the minimum)
            v = q + ((v < 0) & (q * ten != v)).astype(v.dtype)
        else:
            v = v / ten
    return v


def _kernel(ctx, attrs, inputs, outputs, aux):
    xp, x, out, d = ctx.xp, inputs[0], outputs[0], attrs["decimals"]
    if x.dtype.kind in "iu" and d >= 0:
        out[...] = x
        return
    scaled = _scale(xp, x, abs(d), up=d > 0)
    rounded = scaled if x.dtype.kind in "iu" else xp.rint(scaled)  # rint: half to even
    out[...] = _scale(xp, rounded, abs(d), up=d < 0)


def _infer_type(attrs, in_dtypes):
    d = in_dtypes[0]
    if d is not None and np.dtype(d).kind == "b":
        raise DTypeError("_npi_around: the bool dtype is not supported")
    return list(in_dtypes), [d]


register(OpDef(
    name="_npi_around", attrs={"decimals": Attr("int", 0, doc="places to round to (negative: tens, ...)")},
    inputs=["x"], outputs=["out"], infer_shape=same_shape("_npi_around"), infer_type=_infer_type,
    kernels={"any": _kernel}, gradient=no_gradient(1), elementwise=True,
    doc="Round half to even to `decimals` places, scaling one place at a time as MXNet's kernel."))
