"""Image transforms (MXNet 1.9.1's gluon.data.vision.transforms): blocks over the `_image_*`
registry operators; those MXNet makes hybridizable are HybridBlocks here too."""
from __future__ import annotations

import random

import numpy as np

from .... import image
from ....base import numeric_types
from ...block import Block, HybridBlock
from ...nn import HybridSequential, Sequential

__all__ = ["Compose", "Cast", "ToTensor", "Normalize", "Resize", "CenterCrop", "CropResize",
           "Rotate", "RandomRotation",
           "RandomResizedCrop", "RandomFlipLeftRight", "RandomFlipTopBottom", "RandomBrightness",
           "RandomContrast", "RandomSaturation", "RandomHue", "RandomColorJitter", "RandomLighting",
           "RandomApply"]


class Compose(Sequential):
    """Applies `transforms` in order; runs of consecutive HybridBlocks are grouped into one
    hybridized HybridSequential."""

    def __init__(self, transforms):
        super().__init__()
        run = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock):
                run.append(t)
                continue
            if len(run) == 1:
                self.add(run[0])
            elif len(run) > 1:
                block = HybridSequential()
                block.add(*run)
                block.hybridize()
                self.add(block)
            run = []
            if t is not None:
                self.add(t)


class Cast(HybridBlock):
    """Casts the input to `dtype`."""

    def __init__(self, dtype="float32"):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(HybridBlock):
    """HWC (NHWC) image in [0, 255] -> CHW (NCHW) float32 in [0, 1]."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """(x - mean[c]) / std[c] over the channels of a CHW (NCHW) tensor."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean = mean
        self._std = std

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, self._mean, self._std)


class Resize(HybridBlock):
    """Resizes to size (int: square, or the short side with keep_ratio; (width, height))."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._keep = keep_ratio
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        return F.image.resize(x, self._size, self._keep, self._interpolation)


class CropResize(HybridBlock):
    """Crops the box (x, y, width, height), then resizes to `size` if given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._x, self._y, self._width, self._height = x, y, width, height
        self._size = size
        self._interpolation = interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, self._x, self._y, self._width, self._height)
        if self._size:
            out = F.image.resize(out, self._size, False, 1 if self._interpolation is None else self._interpolation)
        return out


class CenterCrop(Block):
    """Crops the centre `size` (w, h) box (scaled down to fit a smaller image, then resized back
    to `size`), as mx.image.center_crop."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        if isinstance(size, numeric_types):
            size = (size, size)
        self._args = (size, interpolation)

    def forward(self, x):
        return image.center_crop(x, *self._args)[0]


class RandomResizedCrop(Block):
    """Crops a random box of area fraction in `scale` and aspect ratio in `ratio`, resized to
    `size` (mx.image.random_size_crop; the centre crop after 10 failed tries)."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        if isinstance(size, numeric_types):
            size = (size, size)
        self._args = (size, scale, ratio, interpolation)

    def forward(self, x):
        return image.random_size_crop(x, *self._args)[0]


class Rotate(Block):
    """Rotates a CHW / NCHW float32 image by `rotation_degrees` counter-clockwise (mx.image.imrotate)."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        if x.dtype != np.float32:
            raise TypeError("This transformation only supports float32. Consider calling it after ToTensor, "
                            "given: {}".format(x.dtype))
        return image.imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotates by an angle ~ U[angle_limits] with probability rotate_with_proba (mx.image.random_rotate)."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError("`angle_limits` must be an ordered tuple")
        if rotate_with_proba < 0 or rotate_with_proba > 1:
            raise ValueError("Probability of rotating the image should be between 0 and 1")
        self._args = (angle_limits, zoom_in, zoom_out)
        self._rotate_with_proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._rotate_with_proba:
            return x
        if x.dtype != np.float32:
            raise TypeError("This transformation only supports float32. Consider calling it after ToTensor")
        return image.random_rotate(x, *self._args)


class RandomFlipLeftRight(HybridBlock):
    """Flips an HWC image left-right with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_left_right(x)


class RandomFlipTopBottom(HybridBlock):
    """Flips an HWC image top-bottom with probability 0.5."""

    def hybrid_forward(self, F, x):
        return F.image.random_flip_top_bottom(x)


class _RandomFactor(HybridBlock):
    _op = ""

    def __init__(self, amount):
        super().__init__()
        self._args = (max(0, 1 - amount), 1 + amount)

    def hybrid_forward(self, F, x):
        return getattr(F.image, self._op)(x, *self._args)


class RandomBrightness(_RandomFactor):
    """Multiplies the image by a factor ~ U[max(0, 1-brightness), 1+brightness]."""
    _op = "random_brightness"


class RandomContrast(_RandomFactor):
    """Blends the image with its mean gray level, factor ~ U[max(0, 1-contrast), 1+contrast]."""
    _op = "random_contrast"


class RandomSaturation(_RandomFactor):
    """Blends each pixel with its gray level, factor ~ U[max(0, 1-saturation), 1+saturation]."""
    _op = "random_saturation"


class RandomHue(_RandomFactor):
    """Rotates the hue by a factor ~ U[max(0, 1-hue), 1+hue] turns."""
    _op = "random_hue"


class RandomColorJitter(HybridBlock):
    """Random brightness, contrast, saturation and hue in one operator."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        return F.image.random_color_jitter(x, *self._args)


class RandomLighting(HybridBlock):
    """AlexNet-style PCA lighting noise with alpha ~ N(0, alpha) per channel."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, self._alpha)


class RandomApply(Sequential):
    """Applies `transforms` with probability p."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms = transforms
        self.p = p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)
