"""`mx.image.image`: MXNet 1.9.1's image functions (decoding, resizing, cropping, border padding,
normalisation, rotation); the augmenter classes and `ImageIter` are re-exported at the bottom so that
`mx.image.image.<name>` resolves as in MXNet.

Images are HWC NDArrays (uint8 after decoding, RGB order by default).  Resizing runs the registry
operator `_image_resize` (interp 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos: OpenCV's
methods; 9 and 10 choose automatically or at random, as MXNet).  Decoding uses Pillow.
"""
from __future__ import annotations

import os
import random as _random
from numbers import Number
from typing import Tuple

import numpy as np

from .. import ndarray as nd
from .. import recordio as _recordio
from ..base import MXNetError
from ..imperative.ndarray import NDArray

__all__ = ["imread", "imdecode", "imresize", "scale_down", "copyMakeBorder", "resize_short", "fixed_crop",
           "random_crop", "center_crop", "color_normalize", "random_size_crop", "imrotate", "random_rotate"]


def imdecode(buf, flag: int = 1, to_rgb: bool = True, out=None) -> NDArray:
    """Decode an encoded image (bytes or a uint8 NDArray) to an HWC uint8 NDArray; flag 0 gives
    one gray channel (HxWx1); to_rgb=False gives OpenCV's BGR order."""
    if isinstance(buf, NDArray):
        buf = buf.asnumpy().tobytes()
    elif isinstance(buf, np.ndarray):
        buf = buf.tobytes()
    try:
        img = _recordio.decode_image(bytes(buf), 0 if flag == 0 else 1)
    except ValueError as err:  # MXNet's decoder fails in the backend, so callers expect MXNetError
        raise MXNetError(f"imdecode: {err}") from None
    if img.ndim == 2:
        img = img[:, :, None]
    elif not to_rgb:
        img = img[:, :, ::-1]
    res = nd.array(np.ascontiguousarray(img), dtype=np.uint8)
    if out is not None:
        out[:] = res
        return out
    return res


def imread(filename: str, flag: int = 1, to_rgb: bool = True, out=None) -> NDArray:
    """Read and decode an image file (see imdecode); a missing file raises MXNetError, as MXNet's."""
    if not os.path.isfile(filename):
        raise MXNetError(f"imread: cannot find image file {filename!r}")
    with open(filename, "rb") as f:
        return imdecode(f.read(), flag, to_rgb, out)


# OpenCV's border types 0..4 as numpy.pad modes: constant, replicate, reflect (edge repeated),
# wrap, reflect_101 (edge not repeated).
_BORDER_MODES = {0: "constant", 1: "edge", 2: "symmetric", 3: "wrap", 4: "reflect"}


def copyMakeBorder(src: NDArray, top: int, bot: int, left: int, right: int, type: int = 0,
                   value: float = 0.0, values=None, out=None) -> NDArray:  # noqa: A002 (MXNet's name)
    """Pad an HWC image by top/bot rows and left/right columns with OpenCV's border `type`
    (0 constant `value` or per-channel `values`, 1 replicate, 2 reflect, 3 wrap, 4 reflect_101)."""
    if type not in _BORDER_MODES:
        raise MXNetError(f"copyMakeBorder: unknown border type {type} (expected 0..4)")
    img = src.asnumpy()
    pads = ((int(top), int(bot)), (int(left), int(right))) + ((0, 0),) * (img.ndim - 2)
    if type == 0:
        fill = np.asarray(values if values is not None else value, dtype=img.dtype).reshape(-1)
        chans = [np.pad(img[..., c], pads[:2], mode="constant", constant_values=fill[c % fill.size])
                 for c in range(img.shape[-1])] if img.ndim == 3 else None
        res = np.stack(chans, axis=-1) if chans is not None else np.pad(
            img, pads, mode="constant", constant_values=fill[0])
    else:
        res = np.pad(img, pads, mode=_BORDER_MODES[type])
    res = nd.array(res, dtype=img.dtype, ctx=src.context)
    if out is not None:
        out[:] = res
        return out
    return res


def _get_interp_method(interp: int, sizes=()) -> int:
    if interp == 9:  # automatic: area to shrink, bicubic to enlarge, else bilinear
        if sizes:
            oh, ow, nh, nw = sizes
            if nh > oh and nw > ow:
                return 2
            if nh < oh and nw < ow:
                return 3
            return 1
        return 2
    if interp == 10:
        return _random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError("Unknown interp method %d" % interp)
    return interp


def imresize(src: NDArray, w: int, h: int, interp: int = 1, out=None) -> NDArray:
    """Resize an HWC image to width w, height h."""
    # As MXNet's imresize, only the automatic methods (9, 10) are resolved here; the operator
    # rejects any other unknown method with MXNetError (the Python helpers raise ValueError).
    if interp in (9, 10):
        interp = _get_interp_method(interp)
    return nd.image.resize(src, size=(int(w), int(h)), interp=interp, out=out)


def scale_down(src_size: Tuple[int, int], size: Tuple[int, int]) -> Tuple[int, int]:
    """Shrink the crop size (w, h) to fit in src_size (w, h), keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def resize_short(src: NDArray, size: int, interp: int = 2) -> NDArray:
    """Resize so that the shorter side is `size`, keeping the aspect ratio."""
    h, w = src.shape[0], src.shape[1]
    if h > w:
        new_h, new_w = size * h // w, size
    else:
        new_h, new_w = size, size * w // h
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src: NDArray, x0: int, y0: int, w: int, h: int, size=None, interp: int = 2) -> NDArray:
    """The (x0, y0, w, h) box of an HWC image, resized to `size` (w, h) if given."""
    out = nd.image.crop(src, x=int(x0), y=int(y0), width=int(w), height=int(h))
    if size is not None and (w, h) != tuple(size):
        sizes = (h, w, size[1], size[0])
        out = imresize(out, *size, interp=_get_interp_method(interp, sizes))
    return out


def random_crop(src: NDArray, size, interp: int = 2):
    """A random crop of size (w, h) (scaled down to fit); returns (image, (x0, y0, w, h))."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = _random.randint(0, w - new_w)
    y0 = _random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src: NDArray, size, interp: int = 2):
    """The centre crop of size (w, h) (scaled down to fit, then resized); returns (image, box)."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = int((w - new_w) / 2)
    y0 = int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src: NDArray, mean, std=None) -> NDArray:
    """(src - mean) / std."""
    if mean is not None:
        src = src - mean
    if std is not None:
        src = src / std
    return src


def random_size_crop(src: NDArray, size, area, ratio, interp: int = 2, **kwargs):
    """A crop of random area fraction in `area` and aspect ratio in `ratio`, resized to `size`;
    the centre crop after 10 misses.  Returns (image, (x0, y0, w, h))."""
    h, w = src.shape[0], src.shape[1]
    src_area = h * w
    if "min_area" in kwargs:
        area = kwargs.pop("min_area")
    assert not kwargs, "unexpected keyword arguments for `random_size_crop`."
    if isinstance(area, Number):
        area = (area, 1.0)
    for _ in range(10):
        target_area = _random.uniform(area[0], area[1]) * src_area
        log_ratio = (np.log(ratio[0]), np.log(ratio[1]))
        new_ratio = np.exp(_random.uniform(*log_ratio))
        new_w = int(round(np.sqrt(target_area * new_ratio)))
        new_h = int(round(np.sqrt(target_area / new_ratio)))
        if 0 < new_w <= w and 0 < new_h <= h:
            x0 = _random.randint(0, w - new_w)
            y0 = _random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def _bilinear_sample(img: np.ndarray, gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    """img (C, H, W) sampled at pixel coordinates (gx, gy) (H', W'), zero outside."""
    c, h, w = img.shape
    x0, y0 = np.floor(gx).astype(np.int64), np.floor(gy).astype(np.int64)
    fx, fy = gx - x0, gy - y0
    out = np.zeros((c,) + gx.shape, dtype=np.float64)
    for dx, dy, wt in ((0, 0, (1 - fx) * (1 - fy)), (1, 0, fx * (1 - fy)), (0, 1, (1 - fx) * fy), (1, 1, fx * fy)):
        xi, yi = x0 + dx, y0 + dy
        inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
        vals = img[:, np.clip(yi, 0, h - 1), np.clip(xi, 0, w - 1)]
        out += np.where(inside, wt, 0.0) * vals
    return out


def imrotate(src: NDArray, rotation_degrees, zoom_in: bool = False, zoom_out: bool = False) -> NDArray:
    """Rotate a CHW (or NCHW, one angle per image) float32 image counter-clockwise about its centre,
    bilinear, zero outside; zoom_in fills the frame, zoom_out keeps the whole image visible."""
    if zoom_in and zoom_out:
        raise ValueError("`zoom_in` and `zoom_out` cannot be both True")
    if src.dtype != np.float32:
        raise TypeError("Only `float32` images are supported by this function")
    single = src.ndim == 3
    if single and not isinstance(rotation_degrees, Number):
        raise TypeError("When a single image is passed the rotation angle is required to be a scalar.")
    if src.ndim not in (3, 4):
        raise ValueError("Only 3D and 4D are supported by this function")
    imgs = src.asnumpy()[None] if single else src.asnumpy()
    angles = (np.full(len(imgs), float(rotation_degrees)) if isinstance(rotation_degrees, Number)
              else np.asarray(rotation_degrees.asnumpy() if isinstance(rotation_degrees, NDArray)
                              else rotation_degrees, dtype=np.float64).reshape(-1))
    if len(angles) != len(imgs):
        raise ValueError("The number of images must be equal to the number of rotation angles")
    _, _, h, w = imgs.shape
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    yy, xx = np.meshgrid(np.arange(h) - cy, np.arange(w) - cx, indexing="ij")
    out = np.empty(imgs.shape, dtype=np.float32)
    for i, (img, deg) in enumerate(zip(imgs, angles)):
        rad = np.pi * deg / 180.0
        c, s = np.cos(rad), np.sin(rad)
        scale = 1.0
        if zoom_in or zoom_out:  # the rotated frame's bounding box against the frame
            rho, ang = np.hypot(h, w), np.arctan(h / w)
            max_x = max(abs(rho * np.cos(ang + abs(rad))), abs(rho * np.cos(ang - abs(rad))))
            max_y = max(abs(rho * np.sin(ang + abs(rad))), abs(rho * np.sin(ang - abs(rad))))
            scale = max(max_x / w, max_y / h) if zoom_out else min(w / max_x, h / max_y)
        gx = (xx * c - yy * s) * scale + cx
        gy = (xx * s + yy * c) * scale + cy
        out[i] = _bilinear_sample(img.astype(np.float64), gx, gy)
    res = nd.array(out[0] if single else out, dtype=np.float32, ctx=src.context)
    return res


def random_rotate(src: NDArray, angle_limits, zoom_in: bool = False, zoom_out: bool = False) -> NDArray:
    """imrotate by an angle ~ U[angle_limits] (one per image of a batch)."""
    if src.ndim == 3:
        angle = _random.uniform(*angle_limits)
    else:
        angle = np.random.uniform(*angle_limits, size=src.shape[0])
    return imrotate(src, angle, zoom_in=zoom_in, zoom_out=zoom_out)


# MXNet's mxnet.image.image module also holds the augmenters and ImageIter.  They live in their own
# modules here; importing them last (every function above is defined by then) lets
# `mx.image.image.ImageIter` resolve as in MXNet without an import cycle failing.
from .augmenters import *  # noqa: E402,F401,F403
from .augmenters import __all__ as _aug_all  # noqa: E402
from .iterator import ImageIter  # noqa: E402,F401

__all__ += _aug_all + ["ImageIter"]
