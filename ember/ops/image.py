"""Image operators (`_image_*`, visible as mx.nd.image.* and mx.sym.image.*), as MXNet 1.9.1's.

Images are HWC (or NHWC batches where MXNet accepts them); `to_tensor` turns them into CHW
float32 in [0, 1] and `normalize` works on CHW/NCHW.  Colour ops weigh RGB as ITU-R 601-2 luma
(0.299, 0.587, 0.114); integer images are clipped to [0, 255] and truncated, as MXNet's kernels.
Random ops draw their factors from the device RNG (`ctx.rng`), one draw per call.
"""
from __future__ import annotations

import numpy as np

from ..backend import to_host
from ..base import OperatorError, ShapeError
from ..engine import native
from ._common import generator, same_shape, same_type, store, with_backward
from .registry import Attr, OpDef, register

_LUMA = np.array([0.299, 0.587, 0.114])
# AlexNet's PCA of ImageNet RGB values (MXNet's adjust_lighting constants)
_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])


def _check_ndim(op, shape, dims=(3, 4), layout="(H, W, C) or (N, H, W, C)"):
    if shape is not None and len(shape) not in dims:
        raise ShapeError(f"{op}: input image must have shape {layout}, got {tuple(shape)}")


def _write_image(out, values, dtype) -> None:
    # integer images: clip to the pixel range and truncate (MXNet's saturate casts)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        values = np.clip(values, max(info.min, 0), min(info.max, 255))
    out[...] = values


# -- to_tensor, normalize ------------------------------------------------------------------------
def _to_tensor_shape(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    _check_ndim("_image_to_tensor", x)
    if len(x) == 3:
        return in_shapes, [(x[2], x[0], x[1])]
    return in_shapes, [(x[0], x[3], x[1], x[2])]


_FLOAT32_255 = np.float32(255.0)


def _to_tensor(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    out = outputs[0]
    if type(x) is np.ndarray and native.bytes_to_unit_chw(x, out):
        return  # one pass over a uint8 image (a lookup of v / 255 per pixel): the same bits
    axes = (2, 0, 1) if x.ndim == 3 else (0, 3, 1, 2)
    # the transposing cast, then the division in place: the same values as one mixed-type divide,
    # which numpy runs through casting buffers at a higher cost
    out[...] = x.transpose(axes)
    ctx.xp.divide(out, _FLOAT32_255, out=out)


register(OpDef(name="_image_to_tensor", inputs=["data"], outputs=["output"], infer_shape=_to_tensor_shape,
               infer_type=lambda a, d: (d, [np.dtype(np.float32)]), kernels={"any": _to_tensor},
               doc="HWC (NHWC) image with values in [0, 255] -> CHW (NCHW) float32 in [0, 1]"))


def _channel_params(op, attrs, channels):
    mean, std = tuple(attrs["mean"]), tuple(attrs["std"])
    out = []
    for name, v in (("mean", mean), ("std", std)):
        if len(v) == 1:
            v = v * channels
        elif len(v) == 4 and channels < 4 and v in ((0.0,) * 4, (1.0,) * 4):
            v = v[:channels]  # the attribute defaults
        if len(v) != channels:
            raise OperatorError(f"{op}: {name} must have 1 or {channels} (channels) values, got {len(v)}")
        out.append(np.asarray(v, dtype=np.float64))
    return out


def _normalize_shape(attrs, in_shapes):
    x = in_shapes[0]
    _check_ndim("_image_normalize", x, layout="(C, H, W) or (N, C, H, W)")
    if x is not None:
        c = x[0] if len(x) == 3 else x[1]
        if c is not None and c not in (1, 3, 4):
            raise ShapeError(f"_image_normalize: the channel dimension must be 1, 3 or 4, got {c} in {tuple(x)}")
        if c is not None:  # checks mean/std against the channels (and keeps the kernel's constants)
            _normalize_constants(attrs, x, np.dtype(np.float32))
    return same_shape("_image_normalize")(attrs, in_shapes)


def _normalize_arrays(attrs, x_shape):
    c = x_shape[0] if len(x_shape) == 3 else x_shape[1]
    mean, std = _channel_params("_image_normalize", attrs, c)
    shape = (c, 1, 1)
    return mean.reshape(shape), std.reshape(shape)


def _constants(table: dict, key, make, limit: int):
    """The read-only arrays `make()` gives for `key`, made once and kept in `table` (at most `limit` keys)."""
    found = table.get(key)
    if found is None:
        found = make()
        for arr in found:
            arr.flags.writeable = False
        if len(table) >= limit:
            table.clear()
        table[key] = found
    return found


# (mean, std, channels, dtype) -> the (C, 1, 1) host arrays in that dtype: a DataLoader normalizes
# every sample with the same attributes, so they are made once rather than per call
_NORMALIZE_CONSTANTS: dict = {}


def _normalize_constants(attrs, x_shape, dtype):
    def make():
        mean, std = _normalize_arrays(attrs, x_shape)
        return mean.astype(dtype), std.astype(dtype)
    c = x_shape[0] if len(x_shape) == 3 else x_shape[1]
    return _constants(_NORMALIZE_CONSTANTS, (attrs["mean"], attrs["std"], c, dtype), make, 64)


# the constants spread over a whole small tensor (CHW, one sample): numpy's loops over full arrays
# cost half its broadcasting ones at a DataLoader's per-sample sizes; larger inputs broadcast
_FULL_CONSTANTS_MAX = 1 << 16
_FULL_CONSTANTS: dict = {}


def _full_normalize_constants(attrs, shape, dtype):
    def make():
        return tuple(np.broadcast_to(c, shape).copy() for c in _normalize_constants(attrs, shape, dtype))
    return _constants(_FULL_CONSTANTS, (attrs["mean"], attrs["std"], shape, dtype), make, 16)


def _normalize(ctx, attrs, inputs, outputs, aux):
    x, out = inputs[0], outputs[0]
    if type(x) is np.ndarray and type(out) is np.ndarray and native.normalize_f32(x, out, attrs["mean"], attrs["std"]):
        return  # float32: one pass, the subtraction then the division of the numpy code below (its bits)
    xp = ctx.xp
    if xp is np and x.dtype.kind == "f" and out.dtype == x.dtype:
        # in place in the output: the same float arithmetic as (x - mean) / std, no temporaries
        if x.size <= _FULL_CONSTANTS_MAX and len(x.shape) == 3:
            mean, std = _full_normalize_constants(attrs, x.shape, x.dtype)
        else:
            mean, std = _normalize_constants(attrs, x.shape, x.dtype)
        np.subtract(x, mean, out=out)
        np.divide(out, std, out=out)
        return
    mean, std = _normalize_constants(attrs, x.shape, x.dtype)
    out[...] = (x - xp.asarray(mean)) / xp.asarray(std)


def _normalize_backward(ctx, attrs, inputs, outputs, aux):
    g = inputs[0]
    _, std = _normalize_arrays(attrs, g.shape)
    outputs[0][...] = g / ctx.xp.asarray(std, dtype=g.dtype)


def _float_tuple(v):
    if isinstance(v, str):
        import ast
        v = ast.literal_eval(v)
    if isinstance(v, (int, float)):
        v = (v,)
    return tuple(float(e) for e in v)


class _FloatTupleAttr(Attr):
    def parse(self, value, op, name):
        try:
            return _float_tuple(value)
        except Exception:
            raise OperatorError(f"{op}: invalid value {value!r} for attribute '{name}' "
                                "(tuple of floats expected)") from None

    def format(self, value):
        return "(" + ", ".join(repr(float(v)) for v in _float_tuple(value)) + ")"


register(OpDef(name="_backward_image_normalize",
               attrs={"mean": _FloatTupleAttr("any", (0.0, 0.0, 0.0, 0.0)),
                      "std": _FloatTupleAttr("any", (1.0, 1.0, 1.0, 1.0))},
               inputs=["ograd"], outputs=["data_grad"], infer_shape=same_shape("_backward_image_normalize"),
               infer_type=same_type("_backward_image_normalize"), kernels={"any": _normalize_backward}))
register(OpDef(name="_image_normalize",
               attrs={"mean": _FloatTupleAttr("any", (0.0, 0.0, 0.0, 0.0), doc="per-channel mean"),
                      "std": _FloatTupleAttr("any", (1.0, 1.0, 1.0, 1.0), doc="per-channel standard deviation")},
               inputs=["data"], outputs=["output"], infer_shape=_normalize_shape,
               infer_type=same_type("_image_normalize"), kernels={"any": _normalize},
               gradient=lambda F, a, ins, outs, og: [F._backward_image_normalize(og[0], mean=a["mean"], std=a["std"])],
               doc="(data - mean[c]) / std[c] over the channels of a CHW (NCHW) tensor"))


# -- flips ------------------------------------------------------------------------------------------
_REVERSED = slice(None, None, -1)


def _flip_into(x, out, axis: int) -> None:
    # numpy copies an HWC image's 3-byte pixels one by one through its general iterator
    if type(x) is not np.ndarray or not native.reverse_axis(x, out, axis):
        # a reversed slice is the flipped view (xp.flip builds the same view at a higher per-call cost)
        out[...] = x[(slice(None),) * axis + (_REVERSED,)]


def _flip_kernel(axis_from_end):
    def kernel(ctx, attrs, inputs, outputs, aux):
        x = inputs[0]
        _flip_into(x, outputs[0], x.ndim - axis_from_end)
    return kernel


def _random_flip_kernel(op, axis_from_end):
    def kernel(ctx, attrs, inputs, outputs, aux):
        x = inputs[0]
        if generator(op, ctx).random() < 0.5:
            _flip_into(x, outputs[0], x.ndim - axis_from_end)
        else:
            outputs[0][...] = x
    return kernel


def _image_shape(op, dims=(3, 4)):
    def infer(attrs, in_shapes):
        _check_ndim(op, in_shapes[0], dims, "(H, W, C)" if dims == (3,) else "(H, W, C) or (N, H, W, C)")
        return same_shape(op)(attrs, in_shapes)
    return infer


for _name, _axis in (("flip_left_right", 2), ("flip_top_bottom", 3)):
    _op = f"_image_{_name}"
    register(OpDef(name=_op, inputs=["data"], outputs=["output"], infer_shape=_image_shape(_op, (3,)),
                   infer_type=same_type(_op), kernels={"any": _flip_kernel(_axis)},
                   gradient=(lambda op: lambda F, a, ins, outs, og: [getattr(F, op)(og[0])])(_op),
                   doc=f"{_name.replace('_', ' ')} of an HWC image"))
    _rop = f"_image_random_{_name}"
    register(OpDef(name=_rop, inputs=["data"], outputs=["output"], infer_shape=_image_shape(_rop, (3,)),
                   infer_type=same_type(_rop), kernels={"any": _random_flip_kernel(_rop, _axis)},
                   resources=("rng",), doc=f"{_name.replace('_', ' ')} of an HWC image with probability 0.5"))


# -- resize, crop -----------------------------------------------------------------------------------
def _resize_target(attrs, h, w):
    size = tuple(attrs["size"])
    if len(size) == 0:
        raise OperatorError("_image_resize: size must be given")
    if len(size) not in (1, 2):
        raise OperatorError(f"_image_resize: size must be (size,) or (width, height), got {size}")
    if len(size) == 2:
        return size[1], size[0]
    s = size[0]
    if not attrs["keep_ratio"]:
        return s, s
    if h is None or w is None:
        return None, None
    if h > w:  # the short side becomes `size`
        return int(h * s / w), s
    return s, int(w * s / h)


def _resize_shape(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    _check_ndim("_image_resize", x)
    if attrs["interp"] not in (0, 1, 2, 3, 4):
        raise OperatorError(f"_image_resize: unknown interp {attrs['interp']} (0 nearest, 1 bilinear, "
                            "2 bicubic, 3 area, 4 Lanczos)")
    if any(v <= 0 for v in attrs["size"]):
        raise OperatorError(f"_image_resize: size must be positive, got {tuple(attrs['size'])}")
    h, w = x[-3], x[-2]
    oh, ow = _resize_target(attrs, h, w)
    return in_shapes, [tuple(x[:-3]) + (oh, ow, x[-1])]


def _cubic(t, a=-0.75):
    t = np.abs(t)
    return np.where(t <= 1, ((a + 2) * t - (a + 3)) * t * t + 1,
                    np.where(t < 2, ((a * t - 5 * a) * t + 8 * a) * t - 4 * a, 0.0))


def _lanczos4(t):
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(np.abs(t) < 1e-12, 1.0, 4 * np.sin(np.pi * t) * np.sin(np.pi * t / 4) / (np.pi * np.pi * t * t))
    return np.where(np.abs(t) < 4, w, 0.0)


def resize_weights(n_in: int, n_out: int, interp: int, box: bool = True) -> np.ndarray:
    """The (n_out, n_in) matrix that resamples one axis, with OpenCV's rules for each method
    (OpenCV's numbering, as MXNet): 0 nearest (floor(dst * scale)), 1 bilinear, 2 bicubic
    (a = -0.75) and 4 Lanczos-4 on half-pixel centres, 3 area: exact box averaging when both
    axes shrink (`box`), else OpenCV's linear-area rule."""
    scale = n_in / n_out
    dst = np.arange(n_out)
    m = np.zeros((n_out, n_in))
    if interp == 0:
        m[dst, np.minimum(np.floor(dst * scale).astype(np.int64), n_in - 1)] = 1
        return m
    if interp == 3 and box:
        lo, hi = dst * scale, (dst + 1) * scale
        for i in range(n_in):  # overlap of [lo, hi) with the source cell [i, i + 1)
            m[:, i] = np.clip(np.minimum(hi, i + 1) - np.maximum(lo, i), 0, None)
        return m / scale
    if interp == 3:
        sx = np.floor(dst * scale).astype(np.int64)
        fx = (dst + 1) - (sx + 1) / scale
        fx = np.where(fx <= 0, 0.0, fx - np.floor(fx))
        np.add.at(m, (dst, np.clip(sx, 0, n_in - 1)), 1 - fx)
        np.add.at(m, (dst, np.clip(sx + 1, 0, n_in - 1)), fx)
        return m
    src = (dst + 0.5) * scale - 0.5
    if interp == 1:
        src = np.clip(src, 0, None)
        i0 = np.floor(src).astype(np.int64)
        f = src - i0
        np.add.at(m, (dst, np.minimum(i0, n_in - 1)), 1 - f)
        np.add.at(m, (dst, np.minimum(i0 + 1, n_in - 1)), f)
        return m
    taps, kernel = (2, _cubic) if interp == 2 else (4, _lanczos4)
    i0 = np.floor(src).astype(np.int64)
    for k in range(-taps + 1, taps + 1):
        idx = i0 + k
        w = kernel(src - idx)
        np.add.at(m, (dst, np.clip(idx, 0, n_in - 1)), w)
    return m / m.sum(axis=1, keepdims=True)


def resize_hwc(x: np.ndarray, oh: int, ow: int, interp: int = 1) -> np.ndarray:
    """Resize the H, W axes (-3, -2) of an HWC / NHWC numpy array (float64 result)."""
    if interp not in (0, 1, 2, 3, 4):
        raise OperatorError(f"_image_resize: unknown interp {interp} (0-4)")
    h, w = x.shape[-3], x.shape[-2]
    box = h >= oh and w >= ow  # OpenCV averages boxes only when no axis grows
    wh = resize_weights(h, oh, interp, box)
    ww = resize_weights(w, ow, interp, box)
    return np.einsum("oh,...hwc,pw->...opc", wh, x.astype(np.float64), ww, optimize=True)


def _resize(ctx, attrs, inputs, outputs, aux):
    x = to_host(inputs[0])
    out = outputs[0]
    res = resize_hwc(x, out.shape[-3], out.shape[-2], attrs["interp"])
    if np.dtype(x.dtype).kind in "iu":
        res = np.clip(np.rint(res), 0, 255)  # integer images: rounded, as OpenCV's fixed-point resize
    store(ctx, out, res.astype(out.dtype))


register(OpDef(name="_image_resize",
               attrs={"size": Attr("shape", ()), "keep_ratio": Attr("bool", False),
                      "interp": Attr("int", 1, doc="0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos")},
               inputs=["data"], outputs=["output"], infer_shape=_resize_shape,
               infer_type=same_type("_image_resize"), kernels={"any": _resize},
               doc="resize an HWC (NHWC) image to size=(width, height), or its short side (keep_ratio)"))


def _crop_shape(attrs, in_shapes):
    x = in_shapes[0]
    if x is None:
        return in_shapes, [None]
    _check_ndim("_image_crop", x)
    h, w = x[-3], x[-2]
    cx, cy, cw, ch = attrs["x"], attrs["y"], attrs["width"], attrs["height"]
    if cx < 0 or cy < 0 or cw <= 0 or ch <= 0 or (w is not None and cx + cw > w) or (h is not None and cy + ch > h):
        raise ShapeError(f"_image_crop: the box x={cx}, y={cy}, width={cw}, height={ch} does not fit in "
                         f"the image of shape {tuple(x)}")
    return in_shapes, [tuple(x[:-3]) + (ch, cw, x[-1])]


def _crop(ctx, attrs, inputs, outputs, aux):
    cx, cy = attrs["x"], attrs["y"]
    outputs[0][...] = inputs[0][..., cy:cy + attrs["height"], cx:cx + attrs["width"], :]


_CROP_ATTRS = {"x": Attr("int"), "y": Attr("int"), "width": Attr("int"), "height": Attr("int")}


def _crop_backward(ctx, attrs, inputs, outputs, aux):
    g, out = inputs[0], outputs[0]
    cx, cy = attrs["x"], attrs["y"]
    out[...] = 0
    out[..., cy:cy + attrs["height"], cx:cx + attrs["width"], :] = g


with_backward(OpDef(name="_image_crop", attrs=dict(_CROP_ATTRS), inputs=["data"], outputs=["output"],
                    infer_shape=_crop_shape, infer_type=same_type("_image_crop"), kernels={"any": _crop},
                    doc="the box (x, y, width, height) of an HWC (NHWC) image"),
              _crop_backward, "", infer_type=lambda a, d: (d, [d[1] if d[1] is not None else d[0]]),
              shape_only_inputs=(1,))  # data: its shape only


# -- colour --------------------------------------------------------------------------------------------
def _brightness(x, alpha):
    return x * alpha


def _contrast(x, alpha):
    gray_mean = (x[..., :3] * _LUMA).sum(axis=-1).mean()
    return x * alpha + (1 - alpha) * gray_mean


def _saturation(x, alpha):
    gray = (x[..., :3] * _LUMA).sum(axis=-1, keepdims=True)
    return x * alpha + (1 - alpha) * gray


def _hue(x, alpha):
    """Rotate the hue by `alpha` turns (HLS space, as MXNet's kernel)."""
    rgb = x[..., :3] / 255.0
    mx_, mn = rgb.max(axis=-1), rgb.min(axis=-1)
    light = (mx_ + mn) / 2
    delta = mx_ - mn
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = np.where(delta == 0, 0, np.where(light < 0.5, delta / (mx_ + mn), delta / (2 - mx_ - mn)))
        r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
        hue = np.where(mx_ == r, (g - b) / delta, np.where(mx_ == g, 2 + (b - r) / delta, 4 + (r - g) / delta))
    hue = np.where(delta == 0, 0, hue) / 6.0
    hue = (hue + alpha) % 1.0
    q = np.where(light < 0.5, light * (1 + sat), light + sat - light * sat)
    p = 2 * light - q

    def channel(t):
        t = t % 1.0
        return np.where(t < 1 / 6, p + (q - p) * 6 * t,
                        np.where(t < 0.5, q, np.where(t < 2 / 3, p + (q - p) * (2 / 3 - t) * 6, p)))
    out = np.array(x, dtype=np.float64)
    out[..., 0] = channel(hue + 1 / 3) * 255
    out[..., 1] = channel(hue) * 255
    out[..., 2] = channel(hue - 1 / 3) * 255
    return out


def _lighting(x, alpha):
    pca = _EIGVEC @ (np.asarray(alpha, dtype=np.float64) * _EIGVAL)
    out = np.array(x, dtype=np.float64)
    out[..., :3] += pca
    return out


def _color_kernel(op, fn, draw):
    def kernel(ctx, attrs, inputs, outputs, aux):
        x = to_host(inputs[0])
        alpha = draw(op, ctx, attrs)
        # float32 arithmetic, as MXNet's kernels (it decides how integer results truncate)
        xf = x.astype(np.float32)
        if alpha is not None and np.ndim(alpha) == 0:
            alpha = np.float32(alpha)
        res = xf if alpha is None else fn(xf, alpha)
        host = np.empty(x.shape, dtype=x.dtype)
        _write_image(host, res, x.dtype)
        store(ctx, outputs[0], host)
    return kernel


def _uniform_factor(op, ctx, attrs):
    lo, hi = attrs["min_factor"], attrs["max_factor"]
    if lo > hi:
        raise OperatorError(f"{op}: min_factor {lo} must not exceed max_factor {hi}")
    return generator(op, ctx).uniform(lo, hi)


def _need_rgb(op):
    def infer(attrs, in_shapes):
        x = in_shapes[0]
        _check_ndim(op, x, (3,), "(H, W, C)")
        if "min_factor" in attrs and attrs["min_factor"] > attrs["max_factor"]:
            raise OperatorError(f"{op}: min_factor {attrs['min_factor']} must not exceed "
                                f"max_factor {attrs['max_factor']}")
        if x is not None and x[-1] is not None and x[-1] not in (1, 3) and op != "_image_random_brightness":
            raise ShapeError(f"{op}: the image must have 3 (RGB) channels, got {tuple(x)}")
        return same_shape(op)(attrs, in_shapes)
    return infer


for _name, _fn in (("brightness", _brightness), ("contrast", _contrast), ("saturation", _saturation),
                   ("hue", _hue)):
    _op = f"_image_random_{_name}"
    register(OpDef(name=_op, attrs={"min_factor": Attr("float"), "max_factor": Attr("float")},
                   inputs=["data"], outputs=["output"], infer_shape=_need_rgb(_op),
                   infer_type=same_type(_op), kernels={"any": _color_kernel(_op, _fn, _uniform_factor)},
                   resources=("rng",), doc=f"random {_name} of an HWC image, factor ~ U[min_factor, max_factor]"))


def _jitter(x, factors):
    for fn, f in zip((_brightness, _contrast, _saturation, _hue), factors):
        if f is not None:
            x = fn(x, f)
    return x


def _jitter_draw(op, ctx, attrs):
    rng = generator(op, ctx)
    out = []
    for name in ("brightness", "contrast", "saturation"):
        v = attrs[name]
        out.append(rng.uniform(max(0.0, 1 - v), 1 + v) if v > 0 else None)
    h = attrs["hue"]
    out.append(rng.uniform(-h, h) if h > 0 else None)
    return out


register(OpDef(name="_image_random_color_jitter",
               attrs={n: Attr("float") for n in ("brightness", "contrast", "saturation", "hue")},
               inputs=["data"], outputs=["output"], infer_shape=_need_rgb("_image_random_color_jitter"),
               infer_type=same_type("_image_random_color_jitter"),
               kernels={"any": _color_kernel("_image_random_color_jitter", _jitter, _jitter_draw)},
               resources=("rng",),
               doc="random brightness, contrast, saturation (factors ~ U[1-v, 1+v]) and hue (~ U[-v, v] turns)"))

register(OpDef(name="_image_adjust_lighting", attrs={"alpha": _FloatTupleAttr("any")},
               inputs=["data"], outputs=["output"], infer_shape=_need_rgb("_image_adjust_lighting"),
               infer_type=same_type("_image_adjust_lighting"),
               kernels={"any": _color_kernel("_image_adjust_lighting", _lighting,
                                             lambda op, ctx, a: _check_alpha(a["alpha"]))},
               doc="AlexNet-style PCA lighting: add eigvec @ (alpha * eigval) to the RGB channels"))


def _check_alpha(alpha):
    if len(alpha) != 3:
        raise OperatorError(f"_image_adjust_lighting: alpha must hold 3 values, got {len(alpha)}")
    return alpha


register(OpDef(name="_image_random_lighting", attrs={"alpha_std": Attr("float", 0.05)},
               inputs=["data"], outputs=["output"], infer_shape=_need_rgb("_image_random_lighting"),
               infer_type=same_type("_image_random_lighting"),
               kernels={"any": _color_kernel("_image_random_lighting", _lighting,
                                             lambda op, ctx, a: generator(op, ctx).normal(0, a["alpha_std"], 3))},
               resources=("rng",), doc="adjust_lighting with alpha ~ N(0, alpha_std) per channel"))
