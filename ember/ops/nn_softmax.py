"""softmax, log_softmax, SoftmaxActivation and SoftmaxOutput (MXNet's loss-layer gradient)."""
from __future__ import annotations

import math

import numpy as np

from ..base import OperatorError, ShapeError
from ..engine import native
from ._nn_util import backward_via, data_axis, float_type_rule, known, merge
from .registry import Attr, OpDef, as_dtype, register
from ._common import data_like_output, np_shape


def _softmax(xp, x, axis, temperature=None, log=False, out=None):
    """Numerically stable (log-)softmax along `axis`; into `out` (which may be x itself) when it
    has the result's shape and dtype: the same operations in the same order, without three
    full-size temporaries (each a fresh allocation the kernel writes once and frees)."""
    if temperature is not None and temperature != 1.0:
        x = x / x.dtype.type(temperature)
    m = x.max(axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)  # fully masked rows (use_length) stay finite
    if out is not None and out.shape == x.shape and out.dtype == x.dtype:
        xp.subtract(x, m, out=out)
        with np.errstate(divide="ignore", invalid="ignore"):
            if log:
                return xp.subtract(out, xp.log(xp.exp(out).sum(axis=axis, keepdims=True)), out=out)
            xp.exp(out, out=out)
            return xp.divide(out, out.sum(axis=axis, keepdims=True), out=out)
    z = x - m
    with np.errstate(divide="ignore", invalid="ignore"):
        if log:
            return z - xp.log(xp.exp(z).sum(axis=axis, keepdims=True))
        e = xp.exp(z)
        return e / e.sum(axis=axis, keepdims=True)


# -- softmax / log_softmax ------------------------------------------------------------
_SM_ATTRS = {
    "axis": Attr("int", -1, doc="axis along which to normalise"),
    "temperature": Attr("float_or_none", None, doc="divide the input by this first"),
    "dtype": Attr("dtype_or_none", None, doc="output dtype (default: the input's)"),
    "use_length": Attr("bool", False, doc="softmax only: mask positions >= length along axis"),
}


def _sm_inputs(attrs):
    return ["data", "length"] if attrs["use_length"] else ["data"]


def _sm_shape(name):
    def infer(attrs, in_shapes):
        if attrs["use_length"] and name != "softmax":
            raise OperatorError(f"{name}: use_length=True is not supported (MXNet's {name} takes no length "
                                "input; use softmax)")
        d = in_shapes[0]
        # under NumPy shape semantics a 0 is a real (empty) length, and an empty input gives an empty output
        if not (known(d) or (np_shape() and d is not None and len(d) > 0 and None not in d)):
            return in_shapes, [None]
        d = tuple(d)
        ax = data_axis(name, attrs["axis"], len(d))
        ins = list(in_shapes)
        if attrs["use_length"]:
            ins[1] = merge(name, "length", ins[1], d[:ax] + d[ax + 1:])
        return ins, [d]
    return infer


def _sm_type(name):
    def infer(attrs, in_dtypes):
        dt = in_dtypes[0]
        if dt is not None and np.dtype(dt).kind != "f":
            raise OperatorError(f"{name}: floating point data expected, got {np.dtype(dt).name}")
        out = attrs["dtype"] if attrs["dtype"] is not None else dt
        ins = list(in_dtypes)
        if attrs["use_length"] and ins[1] is None:
            ins[1] = np.dtype(np.int32)
        return ins, [None if out is None else as_dtype(out)]
    return infer


def _length_mask(xp, x, length, ax):
    """Boolean mask, True where the position along `ax` is < length."""
    pos = xp.arange(x.shape[ax]).reshape((-1,) + (1,) * (x.ndim - ax - 1))
    return pos < xp.expand_dims(length.astype(np.int64), ax)


def _native_rows(xp, attrs, ax, *arrays) -> bool:
    """Whether the native row kernels may take these arrays: float32 numpy ones along the last axis,
    no temperature (the entry points check the rest and answer False where they do not fit)."""
    return (xp is np and ax == arrays[0].ndim - 1 and attrs["temperature"] in (None, 1.0)
            and all(a.dtype == np.float32 for a in arrays))


def _make_sm_kernel(log):
    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        x = inputs[0]
        ax = attrs["axis"] % x.ndim
        if x.size == 0:  # an empty input (NumPy shape semantics): nothing to normalise
            return
        work = x.astype(np.float32) if x.dtype == np.float16 else x
        if not attrs["use_length"] and _native_rows(xp, attrs, ax, work, outputs[0]) \
                and native.softmax_rows_f32(work, outputs[0], log):
            return
        if attrs["use_length"]:
            mask = _length_mask(xp, work, inputs[1], ax)
            work = xp.where(mask, work, -np.inf)
            res = _softmax(xp, work, ax, attrs["temperature"], log)
            res = xp.where(mask, res, 0)
        else:
            res = _softmax(xp, work, ax, attrs["temperature"], log, out=outputs[0])
            if res is outputs[0]:
                return
        outputs[0][...] = res
    return kernel


def _make_sm_backward(log):
    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        dy, y = inputs[0], inputs[1]
        ax = attrs["axis"] % y.ndim
        t = attrs["temperature"] if attrs["temperature"] is not None else 1.0
        out = outputs[0]
        if _native_rows(xp, attrs, ax, dy, y, out) and native.softmax_rows_backward_f32(dy, y, out, log):
            return
        if log and t == 1.0 and out.shape == y.shape and out.dtype == y.dtype == dy.dtype \
                and not xp.may_share_memory(out, y):
            # the expression below, computed into `out` (unless out is dy's buffer: then exp(y)
            # needs a buffer of its own) instead of three fresh temporaries and a copy
            s = dy.sum(axis=ax, keepdims=True)
            e = xp.exp(y) if xp.may_share_memory(out, dy) else xp.exp(y, out=out)
            xp.multiply(e, s, out=e)
            xp.subtract(dy, e, out=out)
            return
        if log:
            g = dy - xp.exp(y) * dy.sum(axis=ax, keepdims=True)
        else:
            g = y * (dy - (dy * y).sum(axis=ax, keepdims=True))
        outputs[0][...] = g / t if t != 1.0 else g
    return kernel


def _register_softmax(name, log, doc):
    register(OpDef(
        name=name, attrs=_SM_ATTRS, inputs=["data"] if log else _sm_inputs, outputs=["output"],
        infer_shape_backward=data_like_output,
        infer_shape=_sm_shape(name), infer_type=_sm_type(name), kernels={"any": _make_sm_kernel(log)},
        inplace=[(0, 0)],
        gradient=backward_via(f"_backward_{name}",
                              lambda a, i, o, g: [g[0], o[0]] + ([i[1]] if a["use_length"] else []),
                              lambda a: [True] + ([False] if a["use_length"] else [])),
        doc=doc))
    register(OpDef(
        name=f"_backward_{name}", attrs=_SM_ATTRS,
        inputs=lambda a: ["out_grad", "output"] + (["length"] if a["use_length"] and not log else []),
        outputs=["data_grad"], infer_shape=lambda a, s: (s, [s[1]]), kernels={"any": _make_sm_backward(log)},
        inplace=[(0, 0)],
        doc=f"Gradient of {name}."))


_register_softmax("softmax", False, "Softmax along `axis`: exp(x/T) / sum(exp(x/T)).")
_register_softmax("log_softmax", True, "Log-softmax along `axis`: x/T - logsumexp(x/T).")


# -- SoftmaxActivation ---------------------------------------------------------------
_SA_ATTRS = {"mode": Attr("str", "instance", choices=("channel", "instance"),
                          doc="instance: over the last axis; channel: over axis 1")}


def _sa_view(x, mode):
    return x.reshape(-1, x.shape[-1]) if mode == "instance" else x


def _sa_forward(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    res = _softmax(ctx.xp, _sa_view(x, attrs["mode"]), 1)
    outputs[0][...] = res.reshape(x.shape)


def _sa_backward(ctx, attrs, inputs, outputs, aux):
    dy, y = (_sa_view(a, attrs["mode"]) for a in inputs)
    outputs[0][...] = (y * (dy - (dy * y).sum(axis=1, keepdims=True))).reshape(inputs[1].shape)


def _sa_shape(attrs, in_shapes):
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None]
    if len(d) < 2:
        raise ShapeError(f"SoftmaxActivation: data must be at least 2-D, got {tuple(d)}")
    return in_shapes, [tuple(d)]


register(OpDef(
    name="SoftmaxActivation", attrs=_SA_ATTRS, inputs=["data"], outputs=["output"],
    infer_shape_backward=data_like_output,
    infer_shape=_sa_shape, infer_type=float_type_rule("SoftmaxActivation"),
    kernels={"any": _sa_forward}, inplace=[(0, 0)],
    gradient=backward_via("_backward_SoftmaxActivation", lambda a, i, o, g: [g[0], o[0]], lambda a: [True]),
    doc="Softmax over the last axis (mode='instance', as MXNet computes it) or over channels (axis 1)."))
register(OpDef(
    name="_backward_SoftmaxActivation", attrs=_SA_ATTRS, inputs=["out_grad", "output"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[1]]), kernels={"any": _sa_backward}, inplace=[(0, 0)],
    doc="Gradient of SoftmaxActivation."))


# -- SoftmaxOutput -------------------------------------------------------------------
_SO_ATTRS = {
    "grad_scale": Attr("float", 1.0, doc="scale of the gradient"),
    "ignore_label": Attr("float", -1.0, doc="label ignored when use_ignore"),
    "multi_output": Attr("bool", False, doc="softmax over axis 1 of (N, C, ...) with labels (N, ...)"),
    "use_ignore": Attr("bool", False, doc="zero the gradient of samples labelled ignore_label"),
    "preserve_shape": Attr("bool", False, doc="softmax over the last axis, keeping the shape"),
    "normalization": Attr("str", "null", choices=("batch", "null", "valid"),
                          doc="divide the gradient by nothing, the batch size or the valid label count"),
    "out_grad": Attr("bool", False, doc="multiply the gradient by the head gradient"),
    "smooth_alpha": Attr("float", 0.0, doc="label smoothing: move alpha of the target mass to other classes"),
}


def _so_view_shape(attrs, shape):
    """(M, C, S) view of the data: softmax runs along axis 1."""
    if attrs["preserve_shape"]:  # (math.prod: numpy's costs ~5 us on a shape, on every call)
        return (math.prod(shape[:-1]), shape[-1], 1)
    if attrs["multi_output"]:
        return (shape[0], shape[1], math.prod(shape[2:]))
    return (shape[0], math.prod(shape[1:]), 1)


def _so_label_shapes(attrs, shape):
    """Label shapes MXNet accepts (the first is what it infers)."""
    if attrs["multi_output"]:
        n, rest = shape[0], tuple(shape[2:])
        return [(n, math.prod(rest)), (n,) + rest, (n, 1) + rest]
    return [tuple(shape[:-1])]


def _so_shape(attrs, in_shapes):
    d, lab = in_shapes
    if not known(d):
        return in_shapes, [None]
    d = tuple(d)
    if len(d) < 2:
        raise ShapeError(f"SoftmaxOutput: data must be at least 2-D, got {d}")
    if known(lab) and tuple(lab) == d:
        return [d, d], [d]  # probability labels
    allowed = _so_label_shapes(attrs, d)
    if known(lab) and attrs["multi_output"]:
        if tuple(lab) not in allowed:
            raise ShapeError(f"SoftmaxOutput: label shape {tuple(lab)} does not match data {d}; "
                             f"expected one of {allowed} (or {d} for probabilities)")
        return [d, tuple(lab)], [d]
    return [d, merge("SoftmaxOutput", "label", lab, allowed[0])], [d]


def _so_type(attrs, in_dtypes):
    d, lab = in_dtypes
    if d is not None and np.dtype(d).kind != "f":
        raise OperatorError(f"SoftmaxOutput: floating point data expected, got {np.dtype(d).name}")
    return [d, lab if lab is not None else d], [d]


def _so_forward(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    v = x.reshape(_so_view_shape(attrs, x.shape))
    outputs[0][...] = _softmax(ctx.xp, v, 1).reshape(x.shape)


def _so_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    y, label = inputs[0], inputs[1]
    scale = attrs["grad_scale"]
    if label.shape == y.shape:  # probability labels: no normalisation, as in MXNet
        grad = (y - label) * scale
        if attrs["out_grad"]:
            grad = grad * inputs[2]
        outputs[0][...] = grad
        return
    m, c, s = _so_view_shape(attrs, y.shape)
    p = y.reshape(m, c, s)
    # MXNet reads the first m*s labels (for >2-D data without multi_output only the first N count)
    lab = label.reshape(-1)[:m * s].reshape(m, s)
    idx = lab.astype(np.int64)
    a = attrs["smooth_alpha"] if c > 1 else 0.0
    off = a / (c - 1) if a > 0 else 0.0
    # out-of-range labels (e.g. -1 without use_ignore) select no class
    hit = xp.arange(c).reshape(1, c, 1) == idx[:, None, :]
    grad = p - xp.where(hit, 1.0 - a, off).astype(p.dtype)
    if attrs["use_ignore"]:
        grad = grad * (lab != attrs["ignore_label"])[:, None, :]
    norm = attrs["normalization"]
    if norm == "valid":  # counts every label != ignore_label, whether or not use_ignore is set
        scale /= max(int((lab.astype(np.int64) != int(attrs["ignore_label"])).sum()), 1)
    else:
        if norm == "batch":
            scale /= m
        if attrs["multi_output"]:
            scale /= s  # MXNet also divides multi-output gradients by the spatial size
    grad = grad * scale
    if attrs["out_grad"]:
        grad = grad * inputs[2].reshape(m, c, s)
    outputs[0][...] = grad.reshape(y.shape)


register(OpDef(
    name="SoftmaxOutput", attrs=_SO_ATTRS, inputs=["data", "label"], outputs=["output"], aliases=["Softmax"],
    infer_shape_backward=data_like_output,
    infer_shape=_so_shape, infer_type=_so_type, kernels={"any": _so_forward}, inplace=[(0, 0)], expensive=True,
    gradient=backward_via("_backward_SoftmaxOutput",
                          lambda a, i, o, g: [o[0], i[1]] + ([g[0]] if a["out_grad"] else []),
                          lambda a: [True, False]),
    doc="Softmax forward; backward is (softmax - onehot(label)) * grad_scale / normalisation, "
        "ignoring the head gradient (MXNet's loss-layer semantics)."))
register(OpDef(
    name="_backward_SoftmaxOutput", attrs=_SO_ATTRS,
    inputs=lambda a: ["output", "label"] + (["out_grad"] if a["out_grad"] else []), outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[0]]), kernels={"any": _so_backward}, inplace=[(0, 0)],
    doc="Gradient of SoftmaxOutput."))
