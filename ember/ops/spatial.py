"""Spatial and normalisation layers of MXNet 1.x: L2Normalization, SVMOutput, UpSampling,
_contrib_BilinearResize2D and _contrib_AdaptiveAvgPooling2D.

Resizing and adaptive pooling are separable linear maps: each is out = A_h @ x @ A_w^T per image
(A built from MXNet's index rules), so the gradient is the transposed map A_h^T @ g @ A_w, exact
by construction.  Bilinear UpSampling is MXNet's fixed-kernel grouped Deconvolution and runs
(and differentiates) through the registry's Deconvolution.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..base import OperatorError, ShapeError
from ._common import data_like_output, known, with_backward
from ._nn_util import backward_via, call_op, float_type_rule, merge
from .registry import Attr, OpDef, get, register


# -- L2Normalization ---------------------------------------------------------------------------------
_L2_ATTRS = {
    "eps": Attr("float", 1e-10, doc="added to the sum of squares before the square root"),
    "mode": Attr("str", "instance", choices=("channel", "instance", "spatial"),
                 doc="instance: over all but axis 0; channel: over axis 1; spatial: over axes 2+"),
}


def _l2_axes(mode, ndim):
    if mode == "instance":
        return tuple(range(1, ndim))
    if mode == "channel":
        return (1,)
    return tuple(range(2, ndim))


def _l2_norm_shape(mode, d):
    if mode == "instance":
        return (d[0],)
    if mode == "channel":
        return (d[0],) + tuple(d[2:])
    return (d[0], d[1])


def _l2_shape(attrs, in_shapes):
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None, None]
    d = tuple(d)
    need = 2 if attrs["mode"] == "instance" else 3 if attrs["mode"] == "spatial" else 2
    if len(d) < need:
        raise ShapeError(f"L2Normalization: mode '{attrs['mode']}' needs at least {need}-D data, got {d}")
    return [d], [d, _l2_norm_shape(attrs["mode"], d)]


def _l2_forward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x = inputs[0]
    axes = _l2_axes(attrs["mode"], x.ndim)
    norm = xp.sqrt((x * x).sum(axis=axes, keepdims=True) + x.dtype.type(attrs["eps"]))
    outputs[0][...] = x / norm
    outputs[1][...] = norm.reshape(outputs[1].shape)


def _l2_backward(ctx, attrs, inputs, outputs, aux):
    g, y, norm = inputs
    axes = _l2_axes(attrs["mode"], y.ndim)
    keep = [1 if i in axes else n for i, n in enumerate(y.shape)]
    norm = norm.reshape(keep)
    outputs[0][...] = (g - y * (g * y).sum(axis=axes, keepdims=True)) / norm


register(OpDef(
    name="L2Normalization", attrs=_L2_ATTRS, inputs=["data"], outputs=["output", "norm"],
    num_visible_outputs=lambda a: 1, infer_shape=_l2_shape, infer_shape_backward=data_like_output,
    infer_type=float_type_rule("L2Normalization", 2), kernels={"any": _l2_forward},
    gradient=backward_via("_backward_L2Normalization", lambda a, i, o, g: [g[0], o[0], o[1]], lambda a: [True]),
    doc="data / sqrt(sum(data^2) + eps) over the mode's axes; hidden output norm."))
register(OpDef(
    name="_backward_L2Normalization", attrs=_L2_ATTRS, inputs=["out_grad", "output", "norm"],
    outputs=["data_grad"], infer_shape=lambda a, s: (s, [s[1]]), kernels={"any": _l2_backward},
    doc="Gradient of L2Normalization: (g - y * sum(g * y)) / norm."))


# -- SVMOutput -----------------------------------------------------------------------------------------
_SVM_ATTRS = {
    "margin": Attr("float", 1.0, doc="margin of the hinge loss"),
    "regularization_coefficient": Attr("float", 1.0, doc="scale of the gradient"),
    "use_linear": Attr("bool", False, doc="L1-SVM (hinge) instead of L2-SVM (squared hinge)"),
}


def _svm_shape(attrs, in_shapes):
    d, lab = in_shapes
    if not known(d):
        return in_shapes, [None]
    d = tuple(d)
    if len(d) < 2:
        raise ShapeError(f"SVMOutput: data must be at least 2-D, got {d}")
    return [d, merge("SVMOutput", "label", lab, d[:1] + d[2:])], [d]


def _svm_forward(ctx, attrs, inputs, outputs, aux):
    outputs[0][...] = inputs[0]


def _svm_backward(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    y, label = inputs[0], inputs[1]
    n, c = y.shape[0], y.shape[1]
    src = y.reshape(n, c, -1)
    lab = label.reshape(n, -1).astype(np.int64)
    hit = xp.arange(c).reshape(1, c, 1) == lab[:, None, :]
    m = y.dtype.type(attrs["margin"])
    reg = y.dtype.type(attrs["regularization_coefficient"])
    if attrs["use_linear"]:  # hinge: -reg where the true class is under the margin, +reg for others over -margin
        grad = xp.where(hit, -(m > src).astype(y.dtype), (m > -src).astype(y.dtype)) * reg
    else:  # squared hinge
        grad = xp.where(hit, -2 * xp.maximum(m - src, 0), 2 * xp.maximum(m + src, 0)) * reg
    outputs[0][...] = grad.reshape(y.shape)


register(OpDef(
    name="SVMOutput", attrs=_SVM_ATTRS, inputs=["data", "label"], outputs=["output"],
    infer_shape=_svm_shape, infer_shape_backward=data_like_output,
    infer_type=lambda a, d: ([d[0], d[1] if d[1] is not None else d[0]], [d[0]]),
    kernels={"any": _svm_forward}, inplace=[(0, 0)],
    gradient=backward_via("_backward_SVMOutput", lambda a, i, o, g: [o[0], i[1]], lambda a: [True, False]),
    doc="Identity forward; backward is the (L1 or L2) SVM hinge-loss gradient, ignoring the head "
        "gradient (MXNet's loss-layer semantics)."))
register(OpDef(
    name="_backward_SVMOutput", attrs=_SVM_ATTRS, inputs=["output", "label"], outputs=["data_grad"],
    infer_shape=lambda a, s: (s, [s[0]]), kernels={"any": _svm_backward}, doc="Gradient of SVMOutput."))


# -- UpSampling ----------------------------------------------------------------------------------------
_UP_ATTRS = {
    "scale": Attr("int", doc="up-sampling factor"),
    "num_filter": Attr("int", 0, doc="channels (bilinear: the Deconvolution's num_filter/num_group)"),
    "sample_type": Attr("str", doc="nearest or bilinear", choices=("nearest", "bilinear")),
    "multi_input_mode": Attr("str", "concat", choices=("concat", "sum"),
                             doc="nearest with several inputs: concatenate channels or sum"),
    "num_args": Attr("int", doc="inputs (nearest: data arrays; bilinear: 2, data and weight)"),
    "workspace": Attr("int", 512, doc="unused (MXNet's temporary workspace limit, MB)"),
}


def _up_inputs(attrs):
    if attrs["sample_type"] == "bilinear":
        return ["data", "weight"]
    return [f"arg{i}" for i in range(attrs["num_args"])]


def _bilinear_kernel_size(scale):
    return 2 * scale - scale % 2


def _deconv_attrs(attrs):
    s = attrs["scale"]
    k = _bilinear_kernel_size(s)
    p = int(math.ceil((s - 1) / 2.0))
    return {"kernel": (k, k), "stride": (s, s), "pad": (p, p), "num_filter": attrs["num_filter"],
            "num_group": attrs["num_filter"], "no_bias": True, "workspace": attrs["workspace"]}


def _up_shape(attrs, in_shapes):
    s = attrs["scale"]
    if s < 1:
        raise ShapeError(f"UpSampling: scale must be >= 1, got {s}")
    if attrs["sample_type"] == "bilinear":
        d = in_shapes[0]
        if not known(d):
            return in_shapes, [None]
        if len(d) != 4:
            raise ShapeError(f"UpSampling: data must be 4-D (N, C, H, W), got {tuple(d)}")
        k = _bilinear_kernel_size(s)
        w = merge("UpSampling", "weight", in_shapes[1], (d[1], 1, k, k))
        return [tuple(d), w], [(d[0], d[1], d[2] * s, d[3] * s)]
    if any(not known(x) for x in in_shapes):
        return in_shapes, [None]
    first = tuple(in_shapes[0])
    if len(first) != 4:
        raise ShapeError(f"UpSampling: data must be 4-D (N, C, H, W), got {first}")
    oh, ow = first[2] * s, first[3] * s
    channels = 0
    for x in in_shapes:
        x = tuple(x)
        if len(x) != 4 or x[0] != first[0] or oh % x[2] or ow % x[3] or oh // x[2] != ow // x[3]:
            raise ShapeError(f"UpSampling: input of shape {x} cannot be scaled to ({oh}, {ow}) with the "
                             f"batch of {first}")
        channels += x[1]
        if attrs["multi_input_mode"] == "sum" and x[1] != first[1]:
            raise ShapeError(f"UpSampling: multi_input_mode='sum' needs equal channels, got {x} and {first}")
    c = channels if attrs["multi_input_mode"] == "concat" else first[1]
    return [tuple(x) for x in in_shapes], [(first[0], c, oh, ow)]


def _nearest(xp, x, f):
    return xp.repeat(xp.repeat(x, f, axis=2), f, axis=3)


def _up_forward(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    if attrs["sample_type"] == "bilinear":
        deconv = get("Deconvolution")
        deconv.kernel("cpu" if ctx.xp is np else "gpu")(ctx, deconv.parse_attrs(_deconv_attrs(attrs)),
                                                          inputs, outputs, aux)
        return
    oh = out.shape[2]
    if attrs["multi_input_mode"] == "sum":
        out[...] = 0
        for x in inputs:
            out += _nearest(ctx.xp, x, oh // x.shape[2])
        return
    c0 = 0
    for x in inputs:
        out[:, c0:c0 + x.shape[1]] = _nearest(ctx.xp, x, oh // x.shape[2])
        c0 += x.shape[1]


def _up_backward(ctx, attrs, inputs, outputs, aux):
    g = inputs[0]
    oh = g.shape[2]
    c0 = 0
    for out in outputs:
        n, c, h, w = out.shape
        f = oh // h
        part = g if attrs["multi_input_mode"] == "sum" else g[:, c0:c0 + c]
        out[...] = part.reshape(n, c, h, f, w, f).sum(axis=(3, 5))
        c0 += c


def _up_gradient(F, attrs, inputs, outputs, out_grads):
    if attrs["sample_type"] == "bilinear":
        deconv = get("Deconvolution")
        return deconv.gradient(F, deconv.parse_attrs(_deconv_attrs(attrs)), inputs, outputs, out_grads)
    return call_op(F, "_backward_UpSampling", [out_grads[0], *inputs], attrs, len(inputs))


register(OpDef(
    name="UpSampling", attrs=_UP_ATTRS, inputs=_up_inputs, outputs=["output"], key_var_num_args="num_args",
    infer_shape=_up_shape, infer_type=float_type_rule("UpSampling"), kernels={"any": _up_forward},
    gradient=_up_gradient,
    doc="Nearest-neighbour (several inputs, concatenated or summed) or bilinear (a grouped "
        "Deconvolution with a (C, 1, k, k) weight, k = 2*scale - scale%2) up-sampling of NCHW data."))
register(OpDef(
    name="_backward_UpSampling", attrs=_UP_ATTRS, inputs=lambda a: ["out_grad"] + _up_inputs(a),
    outputs=lambda a: [f"arg{i}_grad" for i in range(a["num_args"])],
    infer_shape=lambda a, s: (s, list(s[1:])), infer_type=lambda a, d: (list(d), list(d[1:])),
    kernels={"any": _up_backward},
    doc="Gradient of nearest UpSampling: each input's block sums (inputs read for their shapes)."))


# -- separable linear maps: bilinear resize and adaptive average pooling -------------------------------
@functools.lru_cache(maxsize=256)
def _bilinear_matrix(n_in, n_out, align_corners):
    """(n_out, n_in) matrix of MXNet's bilinear resize along one axis."""
    a = np.zeros((n_out, n_in))
    if align_corners:
        scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        scale = n_in / n_out
    for i in range(n_out):
        src = scale * i if align_corners else max(scale * (i + 0.5) - 0.5, 0.0)
        i0 = min(int(src), n_in - 1)
        step = 1 if i0 < n_in - 1 else 0
        lam = src - i0
        a[i, i0] += 1.0 - lam
        a[i, i0 + step] += lam
    a.flags.writeable = False  # cached: shared by every call
    return a


@functools.lru_cache(maxsize=256)
def _adaptive_matrix(n_in, n_out):
    """(n_out, n_in) averaging matrix: bin i covers [floor(i*n_in/n_out), ceil((i+1)*n_in/n_out))."""
    a = np.zeros((n_out, n_in))
    for i in range(n_out):
        s = (i * n_in) // n_out
        e = -((-(i + 1) * n_in) // n_out)
        a[i, s:e] = 1.0 / (e - s)
    a.flags.writeable = False  # cached: shared by every call
    return a


def _apply_separable(xp, x, ah, aw, out):
    """out = ah @ x @ aw^T over the last two axes (two matrix products, not one 3-operand einsum)."""
    ah = xp.asarray(ah, dtype=np.float64)
    aw = xp.asarray(aw, dtype=np.float64)
    out[...] = xp.matmul(xp.matmul(ah, x.astype(np.float64)), aw.T)


_RESIZE_MODES = ("size", "odd_scale", "like", "to_even_down", "to_even_up", "to_odd_down", "to_odd_up")
_RESIZE_ATTRS = {
    "height": Attr("int", 1, doc="output height (mode 'size')"),
    "width": Attr("int", 1, doc="output width (mode 'size')"),
    "scale_height": Attr("float_or_none", None, doc="height factor (overrides height)"),
    "scale_width": Attr("float_or_none", None, doc="width factor (overrides width)"),
    "mode": Attr("str", "size", choices=_RESIZE_MODES, doc="how the output size is chosen"),
    "align_corners": Attr("bool", True, doc="corner pixels of input and output are aligned"),
}


def _resize_inputs(attrs):
    return ["data", "like"] if attrs["mode"] == "like" else ["data"]


def _resize_out_hw(attrs, h, w, like=None):
    mode = attrs["mode"]
    sh, sw = attrs["scale_height"], attrs["scale_width"]
    if mode == "size":
        oh = int(h * sh) if sh is not None else attrs["height"]
        ow = int(w * sw) if sw is not None else attrs["width"]
    elif mode == "like":
        oh, ow = like[2], like[3]
    elif mode == "odd_scale":
        def odd(n, f):  # odd sizes keep their centre pixel: (n - 1) * f + 1; even ones scale plainly
            return n if f is None else int((n - 1) * f) + 1 if n % 2 else int(n * f)
        oh, ow = odd(h, sh), odd(w, sw)
    else:
        def adjust(n):
            even = mode.startswith("to_even")
            want_odd = not even
            if (n % 2 == 1) == want_odd:
                return n
            if mode.endswith("down"):
                return n - 1 if n > 1 or even else n
            return n + 1
        oh, ow = adjust(h), adjust(w)
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"_contrib_BilinearResize2D: output size ({oh}, {ow}) must be positive")
    return oh, ow


def _resize_shape(attrs, in_shapes):
    d = in_shapes[0]
    if not known(d):
        return in_shapes, [None]
    if len(d) != 4:
        raise ShapeError(f"_contrib_BilinearResize2D: data must be 4-D (N, C, H, W), got {tuple(d)}")
    like = None
    if attrs["mode"] == "like":
        like = in_shapes[1]
        if not known(like):
            return in_shapes, [None]
        if len(like) != 4:
            raise ShapeError(f"_contrib_BilinearResize2D: like must be 4-D, got {tuple(like)}")
    oh, ow = _resize_out_hw(attrs, d[2], d[3], like)
    return list(in_shapes), [(d[0], d[1], oh, ow)]


def _resize_mats(attrs, h, w, oh, ow):
    ac = attrs["align_corners"]
    return _bilinear_matrix(h, oh, ac), _bilinear_matrix(w, ow, ac)


def _resize_forward(ctx, attrs, inputs, outputs, aux):
    x, out = inputs[0], outputs[0]
    ah, aw = _resize_mats(attrs, x.shape[2], x.shape[3], out.shape[2], out.shape[3])
    _apply_separable(ctx.xp, x, ah, aw, out)


def _resize_backward(ctx, attrs, inputs, outputs, aux):
    g, dx = inputs[0], outputs[0]
    ah, aw = _resize_mats(attrs, dx.shape[2], dx.shape[3], g.shape[2], g.shape[3])
    _apply_separable(ctx.xp, g, ah.T, aw.T, dx)
    if len(outputs) > 1:
        outputs[1][...] = 0


def _resize_gradient(F, attrs, inputs, outputs, out_grads):  # inputs: data (and like)
    return call_op(F, "_backward_contrib_BilinearResize2D", [out_grads[0], *inputs], attrs, len(inputs))


register(OpDef(
    name="_contrib_BilinearResize2D", attrs=_RESIZE_ATTRS, inputs=_resize_inputs, outputs=["output"],
    infer_shape=_resize_shape, infer_type=float_type_rule("_contrib_BilinearResize2D"),
    kernels={"any": _resize_forward}, gradient=_resize_gradient,
    doc="Bilinear resize of NCHW data to a size, a scale, another array's size or the nearest even/odd size."))
register(OpDef(
    name="_backward_contrib_BilinearResize2D", attrs=_RESIZE_ATTRS,
    inputs=lambda a: ["out_grad"] + _resize_inputs(a),
    outputs=lambda a: ["data_grad", "like_grad"] if a["mode"] == "like" else ["data_grad"],
    infer_shape=lambda a, s: (s, list(s[1:])), infer_type=lambda a, d: (list(d), list(d[1:])),
    kernels={"any": _resize_backward},
    doc="Gradient of _contrib_BilinearResize2D: the transposed interpolation (like gets zeros)."))


_AP_ATTRS = {"output_size": Attr("shape", (), doc="(size,) or (height, width); () means (1, 1)")}


def _ap_out_hw(attrs):
    s = attrs["output_size"]
    if len(s) == 0:
        return 1, 1
    if len(s) == 1:
        return s[0], s[0]
    if len(s) == 2:
        return s[0], s[1]
    raise OperatorError(f"_contrib_AdaptiveAvgPooling2D: output_size must have 1 or 2 values, got {s}")


def _ap_shape(attrs, in_shapes):
    d = in_shapes[0]
    oh, ow = _ap_out_hw(attrs)
    if d is None:
        return in_shapes, [None]
    if len(d) != 4:
        raise ShapeError(f"_contrib_AdaptiveAvgPooling2D: data must be 4-D (N, C, H, W), got {tuple(d)}")
    return [tuple(d)], [(d[0], d[1], oh, ow)]


def _ap_forward(ctx, attrs, inputs, outputs, aux):
    x, out = inputs[0], outputs[0]
    _apply_separable(ctx.xp, x, _adaptive_matrix(x.shape[2], out.shape[2]),
                     _adaptive_matrix(x.shape[3], out.shape[3]), out)


def _ap_backward(ctx, attrs, inputs, outputs, aux):
    g, dx = inputs[0], outputs[0]
    _apply_separable(ctx.xp, g, _adaptive_matrix(dx.shape[2], g.shape[2]).T,
                     _adaptive_matrix(dx.shape[3], g.shape[3]).T, dx)


with_backward(OpDef(
    name="_contrib_AdaptiveAvgPooling2D", attrs=_AP_ATTRS, inputs=["data"], outputs=["output"],
    infer_shape=_ap_shape, infer_type=float_type_rule("_contrib_AdaptiveAvgPooling2D"),
    kernels={"any": _ap_forward},
    doc="Average pooling of NCHW data into output_size bins (bin i: floor(i*H/oh) to ceil((i+1)*H/oh))."),
    _ap_backward, "Gradient of _contrib_AdaptiveAvgPooling2D (data read for its shape).", ograd="out_grad",
    infer_type=None)
