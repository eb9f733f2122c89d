"""MXNet's legacy `Pooling_v1` (still in 1.9.1 and in old model files): 2-D max, avg or sum pooling with the
valid/full conventions, as `Pooling` computes it except that avg divides every window's sum by the whole
kernel's area (the input's area with global_pool), also where a `full`-convention window reaches past the
padded input; `Pooling` divides those by the part inside.  It runs Pooling's kernels (avg as sum pooling,
scaled) and Pooling's gradient op."""
from __future__ import annotations

import math

from ..base import ShapeError
from ._nn_util import float_type_rule
from .nn_pool import _forward as _pool_forward, _infer_shape as _pool_infer_shape
from .registry import Attr, OpDef, get, register

_ATTRS = {
    "kernel": Attr("shape", (), doc="window size (ignored with global_pool)"),
    "pool_type": Attr("str", "max", choices=("avg", "max", "sum")),
    "global_pool": Attr("bool", False, doc="pool over the whole spatial extent"),
    "pooling_convention": Attr("str", "valid", choices=("full", "valid"),
                               doc="valid: floor; full: ceil when computing the output size"),
    "stride": Attr("shape", (), doc="window step (default 1)"),
    "pad": Attr("shape", (), doc="padding on both sides (default 0)"),
}


def _scaled_sum(attrs) -> bool:
    """avg over windows: run as sum pooling, then scaled by 1 / the kernel's area (a global avg is
    Pooling's own: one window, the whole input, no padding)."""
    return attrs["pool_type"] == "avg" and not attrs["global_pool"]


def _as_pooling(attrs) -> dict:
    """Pooling's parsed attributes for this call (a windowed avg as sum pooling, see _scaled_sum)."""
    kind = "sum" if _scaled_sum(attrs) else attrs["pool_type"]
    if not attrs["global_pool"] and len(attrs["kernel"]) not in (0, 2):
        raise ShapeError(f"Pooling_v1: only 2-D kernels are implemented, got kernel {attrs['kernel']}")
    return get("Pooling").parse_attrs({"kernel": attrs["kernel"], "pool_type": kind, "global_pool": attrs["global_pool"],
                                       "pooling_convention": attrs["pooling_convention"], "stride": attrs["stride"],
                                       "pad": attrs["pad"]})


def _avg_scale(attrs) -> float:
    """1 / the divisor of every windowed avg: the kernel's area."""
    return 1.0 / math.prod(attrs["kernel"])


def _infer_shape(attrs, in_shapes):
    data = in_shapes[0]
    if data is not None and len(data) != 4:
        raise ShapeError(f"Pooling_v1: data must be 4-D (batch, channel, y, x), got shape {tuple(data)}")
    return _pool_infer_shape(_as_pooling(attrs), in_shapes)


def _forward(ctx, attrs, inputs, outputs, aux):
    _pool_forward(ctx, _as_pooling(attrs), inputs, outputs, aux)
    if _scaled_sum(attrs):
        outputs[0] *= outputs[0].dtype.type(_avg_scale(attrs))


def _gradient(F, attrs, inputs, outputs, out_grads):
    pooling = _as_pooling(attrs)
    og = out_grads[0]
    if _scaled_sum(attrs):
        og = F._mul_scalar(og, scalar=_avg_scale(attrs))
    return [F._backward_Pooling(og, inputs[0], outputs[0], **pooling)]


register(OpDef(
    name="Pooling_v1", attrs=_ATTRS, inputs=["data"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=float_type_rule("Pooling_v1"),
    kernels={"any": _forward}, gradient=_gradient,
    doc="Legacy 2-D pooling (MXNet 1.9.1's Pooling_v1): max, avg (every window over the kernel's area) or sum."))
