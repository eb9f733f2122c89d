"""Loss layers whose backward ignores the head gradient (MXNet semantics), MakeLoss and BlockGrad."""
from __future__ import annotations

import numpy as np

from ..base import ShapeError
from ._nn_util import backward_via, float_type_rule, float_types, known, sigmoid
from .registry import Attr, OpDef, register
from ._common import copy_kernel, data_like_output, np_shape


# -- regression outputs ---------------------------------------------------------------
def _reg_shape(name):
    def infer(attrs, in_shapes):
        d, lab = in_shapes
        if not known(d):
            return in_shapes, [None]
        d = tuple(d)
        if known(lab):
            lab = tuple(lab)
            if int(np.prod(lab)) != int(np.prod(d)) or (len(lab) and lab[0] != d[0]):
                raise ShapeError(f"{name}: label shape {lab} does not match data shape {d}")
            return [d, lab], [d]
        return [d, d], [d]
    return infer


def _reg_type(name):
    def infer(attrs, in_dtypes):
        d, lab = in_dtypes
        ins, outs, _ = float_types(name, attrs, [d], 1)
        return [ins[0], lab if lab is not None else ins[0]], outs
    return infer


_REG = {
    "LinearRegressionOutput": (lambda xp, x: x, lambda xp, d: d,
                               "Identity forward; gradient (output - label) * grad_scale / num_output."),
    "LogisticRegressionOutput": (sigmoid, lambda xp, d: d,
                                 "Sigmoid forward; gradient (output - label) * grad_scale / num_output."),
    "MAERegressionOutput": (lambda xp, x: x, lambda xp, d: xp.sign(d),
                            "Identity forward; gradient sign(output - label) * grad_scale / num_output."),
}


def _regression_gradient(bwd_name: str):
    """The gradient of a regression output: the data's through `bwd_name` (whose second output,
    the label's, MXNet's monitor lists as <name>_backward_output1), none for the label."""
    def gradient(F, attrs, inputs, outputs, out_grads):
        return [getattr(F, bwd_name)(outputs[0], inputs[1], **attrs)[0], None]
    return gradient


def _register_regression(name, fwd, dfn, doc):
    attrs = {"grad_scale": Attr("float", 1.0, doc="scale of the gradient")}

    def forward(ctx, attrs, inputs, outputs, aux):
        outputs[0][...] = fwd(ctx.xp, inputs[0])

    def backward(ctx, attrs, inputs, outputs, aux):
        y, label = inputs
        # MXNet divides by the number of outputs per sample (label size / batch size)
        num_output = max(label.size // max(label.shape[0], 1), 1) if label.ndim else 1
        diff = dfn(ctx.xp, y - label.reshape(y.shape).astype(y.dtype, copy=False))
        outputs[0][...] = diff * (attrs["grad_scale"] / num_output)
        outputs[1][...] = 0  # MXNet's backward has a label-gradient output it leaves unset; ember zeroes it

    register(OpDef(
        name=name, attrs=attrs, inputs=["data", "label"], outputs=["output"],
        infer_shape=_reg_shape(name), infer_type=_reg_type(name), kernels={"any": forward}, inplace=[(0, 0)],
        gradient=_regression_gradient(f"_backward_{name}"),
        doc=doc))
    register(OpDef(
        name=f"_backward_{name}", attrs=attrs, inputs=["output", "label"], outputs=["data_grad", "label_grad"],
        infer_shape=lambda a, s: (s, [s[0], s[1]]), kernels={"any": backward}, inplace=[(0, 0)],
        doc=f"Gradient of {name}."))


for _name, (_f, _d, _doc) in _REG.items():
    _register_regression(_name, _f, _d, _doc)


# -- MakeLoss ---------------------------------------------------------------------------
_ML_ATTRS = {
    "grad_scale": Attr("float", 1.0, doc="gradient scale"),
    "valid_thresh": Attr("float", 0.0, doc="normalization='valid' counts elements above this"),
    "normalization": Attr("str", "null", choices=("batch", "null", "valid"), doc="gradient normalisation"),
}


def _same(attrs, in_shapes):
    x = in_shapes[0]
    # under NumPy shape semantics () (a 0-d loss) and 0 are real shapes
    full = known(x) or (np_shape() and x is not None and None not in x)
    return in_shapes, [tuple(x) if full else None]


def _make_loss_backward(ctx, attrs, inputs, outputs, aux):
    y = inputs[0]
    scale = attrs["grad_scale"]
    if attrs["normalization"] == "batch":
        scale /= y.shape[0] if y.ndim else 1
    elif attrs["normalization"] == "valid":
        scale /= max(int((y > attrs["valid_thresh"]).sum()), 1)
    outputs[0][...] = scale


register(OpDef(
    name="MakeLoss", attrs=_ML_ATTRS, inputs=["data"], outputs=["output"], aliases=["make_loss"],
    infer_shape_backward=data_like_output,
    infer_shape=_same, infer_type=float_type_rule("MakeLoss"),
    kernels={"any": copy_kernel}, inplace=[(0, 0)],
    gradient=backward_via("_backward_MakeLoss", lambda a, i, o, g: [o[0]], lambda a: [True]),
    doc="Marks its input as a loss: identity forward, gradient grad_scale (normalised) ignoring the head."))
register(OpDef(
    name="_backward_MakeLoss", attrs=_ML_ATTRS, inputs=["output"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[0]]), kernels={"any": _make_loss_backward}, inplace=[(0, 0)],
    doc="Gradient of MakeLoss."))


# -- BlockGrad ----------------------------------------------------------------------------
register(OpDef(
    name="BlockGrad", attrs={}, inputs=["data"], outputs=["output"], aliases=["stop_gradient"],
    infer_shape=_same, kernels={"any": copy_kernel}, inplace=[(0, 0)],
    gradient=lambda F, attrs, inputs, outputs, out_grads: [None],
    doc="Identity forward; no gradient flows to its input."))
