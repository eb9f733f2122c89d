"""MXNet 1.9.1's object-detection augmenters (`mx.image.DetAugmenter` and subclasses,
`CreateMultiRandCropAugmenter`, `CreateDetAugmenter`).

A detection augmenter maps (image NDArray HWC, label) to (image, label); the label is a numpy array
with one row per object, [class id, xmin, ymin, xmax, ymax, extra...] with coordinates normalised
to [0, 1], so crops, pads and flips move the boxes with the image.  Random choices use Python's
`random`, as MXNet's.
"""
from __future__ import annotations

import logging
import random
import warnings
from math import sqrt
from numbers import Number
from typing import List

import numpy as np

from .. import ndarray as nd
from ..imperative.ndarray import NDArray
from .augmenters import (Augmenter, CastAug, ColorJitterAug, ColorNormalizeAug, ForceResizeAug, HueJitterAug,
                         LightingAug, RandomGrayAug, ResizeAug, _IMAGENET_EIGVAL, _IMAGENET_EIGVEC,
                         _IMAGENET_MEAN, _IMAGENET_STD, _Described, _channel_stats)
from .image import copyMakeBorder, fixed_crop

__all__ = ["DetAugmenter", "DetBorrowAug", "DetRandomSelectAug", "DetHorizontalFlipAug", "DetRandomCropAug",
           "DetRandomPadAug", "CreateMultiRandCropAugmenter", "CreateDetAugmenter"]


class DetAugmenter(_Described):
    """Base class of the detection augmenters: keeps its constructor arguments for `dumps()`."""
    def __call__(self, src: NDArray, label: np.ndarray):
        raise NotImplementedError("DetAugmenter subclasses must implement __call__.")


class DetBorrowAug(DetAugmenter):
    """Wraps a classification `Augmenter` that leaves the boxes unchanged (resize, colour...)."""

    def __init__(self, augmenter: Augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError(f"DetBorrowAug needs an mx.image.Augmenter, got {type(augmenter).__name__}")
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self) -> list:
        """[class name, the wrapped augmenter's dumps()]."""
        return [self.__class__.__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """Applies one augmenter of `aug_list` picked at random, or none with probability skip_prob."""

    def __init__(self, aug_list, skip_prob: float = 0):
        super().__init__(skip_prob=skip_prob)
        if not isinstance(aug_list, (list, tuple)):
            aug_list = [aug_list]
        for aug in aug_list:
            if not isinstance(aug, DetAugmenter):
                raise ValueError("Allow DetAugmenter in list only")
        self.aug_list = list(aug_list)
        self.skip_prob = skip_prob if aug_list else 1  # an empty list always skips

    def dumps(self) -> list:
        """[class name, [each choice's dumps()]]."""
        return [self.__class__.__name__.lower(), [aug.dumps() for aug in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)  # MXNet picks the first after shuffling; same RNG draws
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """With probability p, mirrors the image and the boxes (x -> 1 - x)."""

    def __init__(self, p: float):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
            self._flip_label(label)
        return src, label

    @staticmethod
    def _flip_label(label: np.ndarray) -> None:
        """Mirror the boxes in place: new xmin = 1 - xmax, new xmax = 1 - xmin."""
        label[:, 1], label[:, 3] = 1.0 - label[:, 3], 1.0 - label[:, 1].copy()


def _as_range(value, name: str, owner: str):
    """A (lo, hi) range from a range or a single number (lo = hi)."""
    if isinstance(value, (tuple, list)):
        return value
    if not isinstance(value, Number):
        raise AssertionError(f"{owner}: {name} must be a number or a (min, max) pair, got {value!r}")
    logging.info("Using fixed %s: %s in %s", name, value, owner)
    return (value, value)


def _box_areas(boxes: np.ndarray) -> np.ndarray:
    """Areas of [xmin, ymin, xmax, ymax, ...] rows (0 for inverted boxes)."""
    return np.maximum(0, boxes[:, 3] - boxes[:, 1]) * np.maximum(0, boxes[:, 2] - boxes[:, 0])


def _proposals(aug, height: int, width: int):
    """The (ratio, min_area, max_area, lowest height, highest height) trials of a crop or pad
    augmenter: up to max_attempts aspect ratios drawn from its range, none when it is disabled."""
    if not aug.enabled or height <= 0 or width <= 0:
        return
    min_area = aug.area_range[0] * height * width
    max_area = aug.area_range[1] * height * width
    for _ in range(aug.max_attempts):
        ratio = random.uniform(*aug.aspect_ratio_range)
        if ratio <= 0:
            continue
        yield ratio, min_area, max_area, int(round(sqrt(min_area / ratio))), int(round(sqrt(max_area / ratio)))


class DetRandomCropAug(DetAugmenter):
    """A random crop whose area fraction lies in area_range and aspect ratio in aspect_ratio_range,
    covering at least min_object_covered of some box; boxes left with less than min_eject_coverage
    of their area are dropped.  After max_attempts misses the sample is left as it is."""

    def __init__(self, min_object_covered: float = 0.1, aspect_ratio_range=(0.75, 1.33),
                 area_range=(0.05, 1.0), min_eject_coverage: float = 0.3, max_attempts: int = 50):
        aspect_ratio_range = _as_range(aspect_ratio_range, "aspect ratio", "DetRandomCropAug")
        area_range = _as_range(area_range, "area range", "DetRandomCropAug")
        super().__init__(min_object_covered=min_object_covered, aspect_ratio_range=aspect_ratio_range,
                         area_range=area_range, min_eject_coverage=min_eject_coverage,
                         max_attempts=max_attempts)
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        # Invalid ranges disable the augmenter with a warning, as MXNet's.
        self.enabled = False
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            warnings.warn(f"Skip DetRandomCropAug due to invalid area_range: {area_range}")
        elif aspect_ratio_range[0] > aspect_ratio_range[1] or aspect_ratio_range[0] <= 0:
            warnings.warn(f"Skip DetRandomCropAug due to invalid aspect_ratio_range: {aspect_ratio_range}")
        else:
            self.enabled = True

    def __call__(self, src, label):
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _satisfies(self, label, box, width: int, height: int) -> bool:
        """Whether the pixel box (xmin, ymin, xmax, ymax) covers enough of the valid objects."""
        xmin, ymin, xmax, ymax = box
        if (xmax - xmin) * (ymax - ymin) < 2:
            return False  # a single pixel
        areas = _box_areas(label[:, 1:])
        valid = np.where(areas * width * height > 2)[0]
        if valid.size < 1:
            return False
        objs = label[valid, 1:]
        left, right = np.maximum(objs[:, 0], xmin / width), np.minimum(objs[:, 2], xmax / width)
        top, bot = np.maximum(objs[:, 1], ymin / height), np.minimum(objs[:, 3], ymax / height)
        inter = np.where((left < right) & (top < bot), (right - left) * (bot - top), 0.0)
        coverages = inter / areas[valid]
        coverages = coverages[coverages > 0]
        return coverages.size > 0 and np.amin(coverages) > self.min_object_covered

    def _update_labels(self, label, crop_box, height: int, width: int):
        """Boxes in the crop's coordinates, clipped; None when no box keeps enough of itself."""
        xmin, ymin = crop_box[0] / width, crop_box[1] / height
        w, h = crop_box[2] / width, crop_box[3] / height
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] - xmin) / w
        out[:, (2, 4)] = (out[:, (2, 4)] - ymin) / h
        out[:, 1:5] = np.clip(out[:, 1:5], 0, 1)
        coverage = _box_areas(out[:, 1:]) * w * h / _box_areas(label[:, 1:])
        keep = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]) & (coverage > self.min_eject_coverage)
        return out[keep] if keep.any() else None

    def _random_crop_proposal(self, label, height: int, width: int):
        """(x, y, w, h, new label) of an acceptable crop, or () after max_attempts."""
        for ratio, min_area, max_area, h, max_h in _proposals(self, height, width):
            if round(max_h * ratio) > width:
                max_h = int((width + 0.4999999) / ratio)  # the tallest crop whose width fits
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            # Rounding may leave the area just outside the limits; nudge the height once.
            if w * h < min_area:
                h += 1
                w = int(round(h * ratio))
            if w * h > max_area:
                h -= 1
                w = int(round(h * ratio))
            if not (min_area <= w * h <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._satisfies(label, (x, y, x + w, y + h), width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return (x, y, w, h, new_label)
        return ()


class DetRandomPadAug(DetAugmenter):
    """Places the image at a random spot of a larger canvas filled with pad_val (area factor in
    area_range, which must exceed 1, aspect ratio in aspect_ratio_range); boxes shrink to match."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0), max_attempts: int = 50,
                 pad_val=(128, 128, 128)):
        if not isinstance(pad_val, (list, tuple)) and not isinstance(pad_val, Number):
            raise AssertionError(f"DetRandomPadAug: pad_val must be a number or per-channel values, got {pad_val!r}")
        aspect_ratio_range = _as_range(aspect_ratio_range, "aspect ratio", "DetRandomPadAug")
        area_range = _as_range(area_range, "area range", "DetRandomPadAug")
        super().__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         max_attempts=max_attempts, pad_val=pad_val)
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.enabled = False
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            warnings.warn(f"Skip DetRandomPadAug due to invalid parameters: {area_range}")
        elif aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            warnings.warn(f"Skip DetRandomPadAug due to invalid aspect_ratio_range: {aspect_ratio_range}")
        else:
            self.enabled = True

    def __call__(self, src, label):
        height, width = src.shape[0], src.shape[1]
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            values = self.pad_val if isinstance(self.pad_val, (list, tuple)) else [self.pad_val]
            src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 0, values=values)
        return src, label

    @staticmethod
    def _update_labels(label, pad_box, height: int, width: int):
        """Boxes in the padded canvas' coordinates."""
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label, height: int, width: int):
        """(x, y, w, h, new label) of a canvas at least 2 pixels larger each way, or ()."""
        for ratio, _, _, h, max_h in _proposals(self, height, width):
            if round(h * ratio) < width:
                h = int((width + 0.499999) / ratio)  # the shortest canvas whose width holds the image
            h = min(max(h, height), max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if (h - height) < 2 or (w - width) < 2:
                continue  # a marginal pad is not worth it
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return (x, y, w, h, self._update_labels(label, (x, y, w, h), height, width))
        return ()


def CreateMultiRandCropAugmenter(min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0),
                                 min_eject_coverage=0.3, max_attempts=50, skip_prob: float = 0) -> DetRandomSelectAug:
    """One DetRandomCropAug per set of parameters (lists are zipped, single values repeated),
    wrapped in a DetRandomSelectAug that picks one per sample or skips with skip_prob."""
    params = [p if isinstance(p, list) else [p]
              for p in (min_object_covered, aspect_ratio_range, area_range, min_eject_coverage, max_attempts)]
    num = max(len(p) for p in params)
    for pos, p in enumerate(params):
        if len(p) != num:
            if len(p) != 1:
                raise AssertionError(f"CreateMultiRandCropAugmenter: parameter lists must have 1 or {num} entries")
            params[pos] = p * num
    augs = [DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar,
                             min_eject_coverage=mec, max_attempts=ma) for moc, arr, ar, mec, ma in zip(*params)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def CreateDetAugmenter(data_shape, resize: int = 0, rand_crop: float = 0, rand_pad: float = 0, rand_gray: float = 0,
                       rand_mirror: bool = False, mean=None, std=None, brightness: float = 0, contrast: float = 0,
                       saturation: float = 0, pca_noise: float = 0, hue: float = 0, inter_method: int = 2,
                       min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 3.0),
                       min_eject_coverage=0.3, max_attempts=50, pad_val=(127, 127, 127)) -> List[DetAugmenter]:
    """The standard detection augmenter list, in MXNet's order: resize of the shorter edge, random
    crop (probability rand_crop), mirror, random pad (probability rand_pad), forced resize to
    data_shape's (W, H), cast to float32, colour/hue jitter, PCA noise, random gray, normalisation."""
    auglist: List[DetAugmenter] = []
    if resize > 0:
        auglist.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        auglist.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range, area_range,
                                                    min_eject_coverage, max_attempts, skip_prob=1 - rand_crop))
    if rand_mirror > 0:
        auglist.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:  # padding late keeps the earlier steps on the smaller image
        pad_aug = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        auglist.append(DetRandomSelectAug([pad_aug], 1 - rand_pad))
    auglist.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    auglist.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        auglist.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        auglist.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        auglist.append(DetBorrowAug(LightingAug(pca_noise, _IMAGENET_EIGVAL, _IMAGENET_EIGVEC)))
    if rand_gray > 0:
        auglist.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = _channel_stats("mean", mean, _IMAGENET_MEAN)
    std = _channel_stats("std", std, _IMAGENET_STD)
    if mean is not None or std is not None:
        auglist.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return auglist
