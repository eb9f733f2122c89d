"""`mx.image.detection` (also `mx.image.det`): MXNet 1.9.1's object-detection data pipeline.

`ImageDetIter` is an `ImageIter` whose labels are per-image object lists.  A raw label is
[header_width, object_width, header extras..., obj0..., obj1..., ...] with each object
[class id, xmin, ymin, xmax, ymax, extras...] in [0, 1] coordinates (im2rec's detection format);
batches carry labels of shape (batch, max objects, object_width) padded with -1.  The augmenters
live in det_augmenters and are re-exported here, as MXNet keeps them in this module.
"""
from __future__ import annotations

import logging
from typing import Optional, Tuple

import numpy as np

from ..imperative.ndarray import NDArray
from .det_augmenters import *  # noqa: F401,F403
from .det_augmenters import CreateDetAugmenter, __all__ as _det_aug_all
from .iterator import ImageIter

__all__ = _det_aug_all + ["ImageDetIter"]


class ImageDetIter(ImageIter):
    """Batches of augmented images with their bounding-box labels (see the module docstring for the
    label layout).  Sources and last_batch_handle are ImageIter's; `aug_list` replaces the
    augmenters, otherwise the remaining keyword arguments go to `CreateDetAugmenter`."""

    def __init__(self, batch_size: int, data_shape: Tuple[int, int, int], path_imgrec: Optional[str] = None,
                 path_imglist: Optional[str] = None, path_root: Optional[str] = None,
                 path_imgidx: Optional[str] = None, shuffle: bool = False, part_index: int = 0,
                 num_parts: int = 1, aug_list: Optional[list] = None, imglist: Optional[list] = None,
                 data_name: str = "data", label_name: str = "label", last_batch_handle: str = "pad", **kwargs):
        super().__init__(batch_size=batch_size, data_shape=data_shape, path_imgrec=path_imgrec,
                         path_imglist=path_imglist, path_root=path_root, path_imgidx=path_imgidx,
                         shuffle=shuffle, part_index=part_index, num_parts=num_parts, aug_list=[],
                         imglist=imglist, data_name=data_name, label_name=label_name,
                         last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        # The label batch must hold the largest object count of the whole data set.
        self.label_shape = self._estimate_label_shape()
        self.provide_label = [(label_name, (self.batch_size,) + self.label_shape)]

    def _check_valid_label(self, label: np.ndarray) -> None:
        """RuntimeError unless label is (objects >= 1, width >= 5) with at least one valid box."""
        if label.ndim != 2 or label.shape[1] < 5:
            raise RuntimeError(f"Label with shape (1+, 5+) required, {label} received.")
        valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not valid.any():
            raise RuntimeError("Invalid label occurs.")

    def _estimate_label_shape(self) -> Tuple[int, int]:
        """(max objects per image, object width) over one pass of the data."""
        max_count, width = 0, 5
        self.reset()
        try:
            while True:
                label, _ = self.next_sample()
                label = self._parse_label(label)
                max_count, width = max(max_count, label.shape[0]), label.shape[1]
        except StopIteration:
            pass
        self.reset()
        return (max_count, width)

    def _parse_label(self, label) -> np.ndarray:
        """A raw label as an (objects, object_width) array, boxes with no extent removed."""
        raw = (label.asnumpy() if isinstance(label, NDArray) else np.asarray(label)).ravel()
        if raw.size < 7:
            raise RuntimeError(f"Label shape is invalid: {raw.shape}")
        header_width, obj_width = int(raw[0]), int(raw[1])
        if obj_width <= 0 or (raw.size - header_width) % obj_width != 0:
            raise RuntimeError(f"Label shape {raw.shape} inconsistent with annotation width {obj_width}.")
        out = raw[header_width:].reshape(-1, obj_width)
        valid = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2])
        if not valid.any():
            raise RuntimeError("Encounter sample with no valid label.")
        return out[valid]

    def reshape(self, data_shape: Optional[tuple] = None, label_shape: Optional[tuple] = None) -> None:
        """Changes the data shape (3, H, W) and/or the label shape (objects, width) of later batches."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [(self.provide_data[0][0], (self.batch_size,) + tuple(data_shape))]
            self.data_shape = tuple(data_shape)
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [(self.provide_label[0][0], (self.batch_size,) + tuple(label_shape))]
            self.label_shape = tuple(label_shape)

    def _new_batch(self):
        data, label = super()._new_batch()
        label[:] = -1  # rows past an image's objects stay -1
        return data, label

    def _prepare(self, data, label):
        """Parses, augments and checks one sample's boxes; RuntimeError skips it."""
        self.check_valid_image([data])
        data, label = self.augmentation_transform(data, self._parse_label(label))
        self._check_valid_label(label)
        return data, label

    @staticmethod
    def _store_label(batch_label: np.ndarray, i: int, label: np.ndarray) -> None:
        batch_label[i] = -1  # slots past this image's objects
        batch_label[i, :label.shape[0]] = label

    def augmentation_transform(self, data, label):  # pylint: disable=arguments-differ
        """Runs (image, label) through every detection augmenter."""
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def check_label_shape(self, label_shape) -> None:
        """A new label shape may grow the object count but must keep the object width."""
        if len(label_shape) != 2:
            raise ValueError("label_shape should have length 2")
        if label_shape[0] < self.label_shape[0]:
            raise ValueError(f"Attempts to reduce label count from {self.label_shape[0]} to {label_shape[0]}, "
                             "not allowed.")
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError(f"label_shape object width inconsistent: {self.provide_label[0][1][2]} vs "
                             f"{label_shape[1]}.")

    def sync_label_shape(self, it: "ImageDetIter", verbose: bool = False) -> "ImageDetIter":
        """Grows this iterator's and `it`'s label shapes to the larger object count; returns `it`."""
        if not isinstance(it, ImageDetIter):
            raise AssertionError("Synchronize with invalid iterator.")
        mine, theirs = self.label_shape, it.label_shape
        if mine[1] != theirs[1]:
            raise AssertionError("object width mismatch.")
        max_count = max(mine[0], theirs[0])
        if max_count > mine[0]:
            self.reshape(None, (max_count, mine[1]))
        if max_count > theirs[0]:
            it.reshape(None, (max_count, theirs[1]))
        if verbose and max_count > min(mine[0], theirs[0]):
            logging.info("Resized label_shape to (%d, %d).", max_count, mine[1])
        return it
