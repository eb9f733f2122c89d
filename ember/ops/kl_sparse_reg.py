"""IdentityAttachKLSparseReg (MXNet 1.x): a KL-divergence sparseness penalty on sigmoid activations.

Forward: the identity.  Backward, on (N, D) data whose aux state moving_avg holds each unit's running mean
activation rho: first rho = momentum * rho + (1 - momentum) * mean over the batch, then
grad = out_grad + penalty * (-target / rho + (1 - target) / (1 - rho)), per unit (Hinton's practical guide,
p. 11).  As in MXNet 1.9.1 the backward, not the forward, updates moving_avg (once per backward), and data of
more than two dimensions runs forward only: MXNet's backward flattens it to (N, rest) against a
moving_avg of data.shape[1] values and fails."""
from __future__ import annotations

from ..base import OperatorError, ShapeError
from ._nn_util import float_type_rule, merge
from .registry import Attr, OpDef, register

_OP = "IdentityAttachKLSparseReg"
_ATTRS = {
    "sparseness_target": Attr("float", 0.1, doc="the target mean activation (0..1)"),
    "penalty": Attr("float", 0.001, doc="the penalty's weight"),
    "momentum": Attr("float", 0.9, doc="of the running mean activation (0..1)"),
}


def _check(attrs) -> None:
    for name in ("sparseness_target", "momentum"):
        if not 0.0 <= attrs[name] <= 1.0:
            raise OperatorError(f"{_OP}: {name} must be in [0, 1], got {attrs[name]}")


def _shapes(attrs, in_shapes, aux_shapes):
    _check(attrs)
    d = in_shapes[0]
    if d is None or len(d) == 0 or d[1 if len(d) > 1 else 0] in (0, None):
        if d is not None and len(d) == 1:
            raise ShapeError(f"{_OP}: data must be at least 2-D (batch, units), got {tuple(d)}")
        return in_shapes, [d], aux_shapes
    if len(d) < 2:
        raise ShapeError(f"{_OP}: data must be at least 2-D (batch, units), got {tuple(d)}")
    return [tuple(d)], [tuple(d)], [merge(_OP, "moving_avg", aux_shapes[0], (d[1],))]


def _forward(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = inputs[0]


def _backward(ctx, attrs, inputs, outputs, aux):
    gout, data, moving = inputs
    if data.ndim != 2:
        raise OperatorError(f"{_OP}: the backward takes 2-D data (batch, units) as MXNet's does, got shape "
                            f"{tuple(data.shape)}")
    m, target, penalty = attrs["momentum"], attrs["sparseness_target"], attrs["penalty"]
    moving[...] = m * moving + (1 - m) * (data.sum(axis=0) / data.shape[0])
    outputs[0][...] = gout + penalty * (-target / moving + (1 - target) / (1 - moving))


register(OpDef(
    name="_backward_" + _OP, attrs=_ATTRS, inputs=["out_grad", "data", "moving_avg"], outputs=["data_grad"],
    mutates=[2], infer_shape=lambda a, s: (s, [s[1]]),
    infer_type=float_type_rule(_OP), kernels={"any": _backward},
    doc="Gradient of IdentityAttachKLSparseReg: updates moving_avg (an input it writes), then adds the "
        "sparseness penalty's gradient to out_grad."))
register(OpDef(
    name=_OP, attrs=_ATTRS, inputs=["data"], outputs=["output"], aux=["moving_avg"], inplace=[(0, 0)],
    infer_shape=_shapes, infer_type=float_type_rule(_OP), kernels={"any": _forward},
    gradient_takes_aux=True,
    gradient=lambda F, a, i, o, g, aux: [getattr(F, "_backward_" + _OP)(g[0], i[0], aux[0], **a)],
    doc="The identity, whose backward adds a KL sparseness penalty towards sparseness_target and updates "
        "the running mean activation moving_avg (aux state)."))
