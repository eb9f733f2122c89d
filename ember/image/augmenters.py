"""MXNet 1.9.1's image augmenters (`mx.image.Augmenter` and subclasses) and `CreateAugmenter`.

An augmenter is a callable taking one HWC image NDArray and returning the augmented image.  The
random ones draw from Python's `random` (numpy's for LightingAug), as MXNet's do, so runs seeded the
same way pick the same crops, flips and jitters.  The colour augmenters expect float input (put a
`CastAug` first, as `CreateAugmenter` does) and, like MXNet's, may update that input in place.
"""
from __future__ import annotations

import json
import random
from typing import List, Optional, Sequence, Tuple

import numpy as np

from .. import ndarray as nd
from ..imperative.ndarray import NDArray
from .image import center_crop, color_normalize, imresize, random_crop, random_size_crop, resize_short
from .image import _get_interp_method

__all__ = ["Augmenter", "SequentialAug", "RandomOrderAug", "ResizeAug", "ForceResizeAug", "RandomCropAug",
           "RandomSizedCropAug", "CenterCropAug", "BrightnessJitterAug", "ContrastJitterAug",
           "SaturationJitterAug", "HueJitterAug", "ColorJitterAug", "LightingAug", "ColorNormalizeAug",
           "RandomGrayAug", "HorizontalFlipAug", "CastAug", "CreateAugmenter"]

# ITU-R BT.601 luma weights (R, G, B), used for the gray reference of contrast/saturation jitter.
_LUMA = (0.299, 0.587, 0.114)


def _jsonable(kwargs: dict) -> dict:
    """Constructor arguments with arrays turned into lists, so that dumps() can write them as JSON."""
    out = {}
    for key, val in kwargs.items():
        if isinstance(val, NDArray):
            val = val.asnumpy()
        out[key] = val.tolist() if isinstance(val, np.ndarray) else val
    return out


class _Described:
    """What the image and detection augmenters share: the constructor arguments, kept for `dumps()`."""

    def __init__(self, **kwargs):
        self._kwargs = _jsonable(kwargs)

    def dumps(self) -> str:
        """A JSON string `[lower-case class name, constructor arguments]` describing the augmenter."""
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])


class Augmenter(_Described):
    """Base class of the image augmenters: keeps its constructor arguments for `dumps()`."""
    def __call__(self, src: NDArray) -> NDArray:
        raise NotImplementedError("Augmenter subclasses must implement __call__.")


class SequentialAug(Augmenter):
    """Applies the augmenters `ts` one after the other."""

    def __init__(self, ts: Sequence[Augmenter]):
        super().__init__()
        self.ts = ts

    def dumps(self) -> list:
        """[class name, [each child's dumps()]] (a list, not a string, as MXNet's)."""
        return [self.__class__.__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src: NDArray) -> NDArray:
        for aug in self.ts:
            src = aug(src)
        return src


class RandomOrderAug(SequentialAug):
    """Applies the augmenters `ts` in a random order (the list itself is shuffled, as MXNet's)."""

    def __call__(self, src: NDArray) -> NDArray:
        random.shuffle(self.ts)
        return super().__call__(src)


class _SizedAug(Augmenter):
    """Shared constructor of the augmenters parameterised by a target size and an interp method."""

    def __init__(self, size, interp: int = 2):
        super().__init__(size=size, interp=interp)
        self.size = size
        self.interp = interp


class ResizeAug(_SizedAug):
    """Resizes the shorter edge to `size` (an int), keeping the aspect ratio."""

    def __call__(self, src: NDArray) -> NDArray:
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(_SizedAug):
    """Resizes to `size` = (width, height), ignoring the aspect ratio."""

    def __call__(self, src: NDArray) -> NDArray:
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, *self.size, interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(_SizedAug):
    """A random crop of `size` = (width, height) (see `random_crop`)."""

    def __call__(self, src: NDArray) -> NDArray:
        return random_crop(src, self.size, self.interp)[0]


class CenterCropAug(_SizedAug):
    """The centre crop of `size` = (width, height) (see `center_crop`)."""

    def __call__(self, src: NDArray) -> NDArray:
        return center_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """A crop of random area (`area`: min fraction or (min, max)) and aspect ratio (`ratio`: (min,
    max)), resized to `size` = (width, height) (see `random_size_crop`)."""

    def __init__(self, size, area, ratio, interp: int = 2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.size = size
        self.area = kwargs.pop("min_area", area)  # MXNet's deprecated spelling of `area`
        self.ratio = ratio
        self.interp = interp
        if kwargs:
            raise AssertionError(f"unexpected keyword arguments for `RandomSizedCropAug`: {sorted(kwargs)}")

    def __call__(self, src: NDArray) -> NDArray:
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


def _jitter_alpha(amount: float) -> float:
    """1 + U(-amount, amount): the scale factor the brightness/contrast/saturation jitters draw."""
    return 1.0 + random.uniform(-amount, amount)


class BrightnessJitterAug(Augmenter):
    """Scales the image by 1 + U(-brightness, brightness)."""

    def __init__(self, brightness: float):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src: NDArray) -> NDArray:
        src *= _jitter_alpha(self.brightness)
        return src


class ContrastJitterAug(Augmenter):
    """Blends the image with its mean luma: alpha * src + (1 - alpha) * mean_gray,
    alpha = 1 + U(-contrast, contrast)."""

    def __init__(self, contrast: float):
        super().__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd.array([[list(_LUMA)]])

    def __call__(self, src: NDArray) -> NDArray:
        alpha = _jitter_alpha(self.contrast)
        weighted = src * self.coef
        # The mean over pixels of the luma (sum of the weighted channels), times (1 - alpha).
        gray = 3.0 * (1.0 - alpha) / weighted.size * float(nd.sum(weighted).asscalar())
        src *= alpha
        src += gray
        return src


class SaturationJitterAug(Augmenter):
    """Blends each pixel with its own luma: alpha * src + (1 - alpha) * gray,
    alpha = 1 + U(-saturation, saturation)."""

    def __init__(self, saturation: float):
        super().__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd.array([[list(_LUMA)]])

    def __call__(self, src: NDArray) -> NDArray:
        alpha = _jitter_alpha(self.saturation)
        gray = nd.sum(src * self.coef, axis=2, keepdims=True) * (1.0 - alpha)
        src *= alpha
        src += gray
        return src


# RGB <-> YIQ matrices; a hue shift is a rotation of the (I, Q) chroma plane.
_RGB2YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321], [0.211, -0.523, 0.311]])
_YIQ2RGB = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])


class HueJitterAug(Augmenter):
    """Rotates the hue by U(-hue, hue) * 180 degrees (a linear approximation in YIQ space)."""

    def __init__(self, hue: float):
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq = _RGB2YIQ
        self.ityiq = _YIQ2RGB

    def __call__(self, src: NDArray) -> NDArray:
        angle = random.uniform(-self.hue, self.hue) * np.pi
        cos, sin = np.cos(angle), np.sin(angle)
        rot = np.array([[1.0, 0.0, 0.0], [0.0, cos, -sin], [0.0, sin, cos]])
        # Pixels are rows (HWC), so the colour transform is applied transposed on the right.
        mat = (self.ityiq @ rot @ self.tyiq).T
        return nd.dot(src, nd.array(mat))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0) in a random order."""

    def __init__(self, brightness: float, contrast: float, saturation: float):
        ts: List[Augmenter] = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet-style PCA lighting noise: adds eigvec @ (alpha * eigval), alpha ~ N(0, alphastd)
    per component (drawn from numpy's RNG, as MXNet's)."""

    def __init__(self, alphastd: float, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd = alphastd
        self.eigval = eigval
        self.eigvec = eigvec

    def __call__(self, src: NDArray) -> NDArray:
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        rgb = np.dot(self.eigvec * alpha, self.eigval)
        src += nd.array(rgb)
        return src


class ColorNormalizeAug(Augmenter):
    """(src - mean) / std per channel; either may be None (skipped)."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, NDArray) else nd.array(std)

    def __call__(self, src: NDArray) -> NDArray:
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability p, replaces every channel by the gray value 0.21 R + 0.72 G + 0.07 B
    (three channels are kept)."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = p
        self.mat = nd.array([[0.21] * 3, [0.72] * 3, [0.07] * 3])

    def __call__(self, src: NDArray) -> NDArray:
        if random.random() < self.p:
            src = nd.dot(src, self.mat)
        return src


class HorizontalFlipAug(Augmenter):
    """With probability p, mirrors the image left-right."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src: NDArray) -> NDArray:
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
        return src


class CastAug(Augmenter):
    """Casts the image to `typ` (float32 by default)."""

    def __init__(self, typ: str = "float32"):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src: NDArray) -> NDArray:
        return src.astype(self.typ)


# ImageNet's RGB PCA (eigenvalues, eigenvectors as columns) and mean/std, MXNet's defaults for
# pca_noise, mean=True and std=True.
_IMAGENET_EIGVAL = np.array([55.46, 4.794, 1.148])
_IMAGENET_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009], [-0.5808, -0.0045, -0.8140], [-0.5836, -0.6948, 0.4203]])
_IMAGENET_MEAN = (123.68, 116.28, 103.53)
_IMAGENET_STD = (58.395, 57.12, 57.375)


def _check_channel_stats(name: str, value):
    """mean/std given explicitly must be an array of 1 or 3 values (MXNet asserts the same)."""
    if not (isinstance(value, (np.ndarray, NDArray)) and value.shape[0] in (1, 3)):
        raise AssertionError(f"CreateAugmenter: `{name}` must be True, None or an np.ndarray/NDArray of "
                             f"1 or 3 values, got {value!r}")


def CreateAugmenter(data_shape: Tuple[int, int, int], resize: int = 0, rand_crop: bool = False,
                    rand_resize: bool = False, rand_mirror: bool = False, mean=None, std=None,
                    brightness: float = 0, contrast: float = 0, saturation: float = 0, hue: float = 0,
                    pca_noise: float = 0, rand_gray: float = 0, inter_method: int = 2) -> List[Augmenter]:
    """The standard augmenter list for images of `data_shape` (C, H, W), in MXNet's order: resize of
    the shorter edge (resize > 0), a crop to (W, H) (random-sized, random or centre), mirror, cast to
    float32, colour jitter, hue jitter, PCA lighting noise, random gray, mean/std normalisation
    (mean=True / std=True give ImageNet's values)."""
    auglist: List[Augmenter] = []
    if resize > 0:
        auglist.append(ResizeAug(resize, inter_method))
    crop_size = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise AssertionError("CreateAugmenter: rand_resize requires rand_crop=True")
        auglist.append(RandomSizedCropAug(crop_size, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        auglist.append(RandomCropAug(crop_size, inter_method))
    else:
        auglist.append(CenterCropAug(crop_size, inter_method))
    if rand_mirror:
        auglist.append(HorizontalFlipAug(0.5))
    auglist.append(CastAug())
    if brightness or contrast or saturation:
        auglist.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        auglist.append(HueJitterAug(hue))
    if pca_noise > 0:
        auglist.append(LightingAug(pca_noise, _IMAGENET_EIGVAL, _IMAGENET_EIGVEC))
    if rand_gray > 0:
        auglist.append(RandomGrayAug(rand_gray))
    mean = _channel_stats("mean", mean, _IMAGENET_MEAN)
    std = _channel_stats("std", std, _IMAGENET_STD)
    if mean is not None or std is not None:
        auglist.append(ColorNormalizeAug(mean, std))
    return auglist


def _channel_stats(name: str, value, default: Sequence[float]) -> Optional[object]:
    """True -> ImageNet's default as an NDArray; None stays None; anything else is checked."""
    if value is True:
        return nd.array(default)
    if value is not None:
        _check_channel_stats(name, value)
    return value
