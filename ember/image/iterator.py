"""`mx.image.ImageIter`: MXNet 1.9.1's image data iterator over a RecordIO file (.rec, with an
optional .idx for shuffling and partitioning) or an image list (a .lst file or a Python list) with
image files under `path_root`.  Each image is decoded, run through the augmenter list and
transposed to CHW; batches are ember `DataBatch`es of float32 data and labels.
"""
from __future__ import annotations

import logging
import os
import random
from numbers import Number
from typing import Optional, Tuple

import numpy as np

from .. import io
from .. import ndarray as nd
from .. import recordio
from ..imperative.ndarray import NDArray
from .augmenters import CreateAugmenter
from .image import imdecode

__all__ = ["ImageIter"]

_LABEL_DTYPES = ("int32", "float32", "int64", "float64")
_LAST_BATCH_MODES = ("pad", "discard", "roll_over")


def _as_numpy(value) -> np.ndarray:
    """A label (NDArray, numpy array or number) as a numpy array."""
    return value.asnumpy() if isinstance(value, NDArray) else np.asarray(value)


def _read_lst(path: str, dtype: str) -> Tuple[dict, list]:
    """An im2rec .lst file (index \\t label(s) \\t relative path per line) as ({key: (label, path)},
    keys in file order)."""
    imglist, keys = {}, []
    with open(path) as fin:
        for line in fin:
            fields = line.strip().split("\t")
            if len(fields) < 2:
                continue  # blank or malformed line
            key = int(fields[0])
            label = nd.array(np.asarray(fields[1:-1], dtype=np.float64).astype(dtype), dtype=dtype)
            imglist[key] = (label, fields[-1])
            keys.append(key)
    return imglist, keys


def _index_imglist(items: list, dtype: str) -> Tuple[dict, list]:
    """A Python image list ([label(s)..., path] items) keyed "1", "2", ... as MXNet's."""
    imglist, keys = {}, []
    for pos, item in enumerate(items, start=1):
        if len(item) > 2:
            label = item[:-1]
        elif isinstance(item[0], Number):
            label = [item[0]]
        else:
            label = item[0]
        label = nd.array(np.asarray(_as_numpy(label), dtype=np.float64).reshape(-1).astype(dtype), dtype=dtype)
        imglist[str(pos)] = (label, item[-1])
        keys.append(str(pos))
    return imglist, keys


class ImageIter(io.DataIter):
    """Batches of augmented images from a .rec file (`path_imgrec`, `path_imgidx` for shuffle and
    partitions) or an image list (`path_imglist` .lst file or `imglist` [[label(s)..., path], ...])
    of files under `path_root`.

    data_shape is (3, H, W); label_width labels per image; last_batch_handle 'pad' (fill the last
    batch from the start, DataBatch.pad says how many), 'discard' or 'roll_over' (carry the
    remainder into the next epoch).  `aug_list` replaces the augmenters, otherwise the remaining
    keyword arguments go to `CreateAugmenter`.  dtype is the labels' parsing type (the label batch
    is float32, as MXNet's).
    """

    def __init__(self, batch_size: int, data_shape: Tuple[int, int, int], label_width: int = 1,
                 path_imgrec: Optional[str] = None, path_imglist: Optional[str] = None,
                 path_root: Optional[str] = None, path_imgidx: Optional[str] = None, shuffle: bool = False,
                 part_index: int = 0, num_parts: int = 1, aug_list: Optional[list] = None,
                 imglist: Optional[list] = None, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32", last_batch_handle: str = "pad", **kwargs):
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise AssertionError("ImageIter needs path_imgrec, path_imglist or an imglist list")
        if dtype not in _LABEL_DTYPES:
            raise AssertionError(f"{dtype} label not supported (expected one of {_LABEL_DTYPES})")
        if last_batch_handle not in _LAST_BATCH_MODES:
            raise ValueError(f"last_batch_handle must be one of {_LAST_BATCH_MODES}, got {last_batch_handle!r}")
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, "r")
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, "r")
        imgkeys: list = []
        if path_imglist:
            self.imglist, imgkeys = _read_lst(path_imglist, dtype)
        elif isinstance(imglist, list):
            self.imglist, imgkeys = _index_imglist(imglist, dtype)
        else:
            self.imglist = None
        self.path_root = path_root
        self.check_data_shape(data_shape)
        self.provide_data = [io.DataDesc(data_name, (batch_size,) + tuple(data_shape))]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [io.DataDesc(label_name, label_shape)]
        self.batch_size = batch_size
        self.data_shape = tuple(data_shape)
        self.label_width = label_width
        self.shuffle = shuffle
        # seq: the keys read in order; None reads a .rec sequentially (no index needed).
        if self.imgrec is None:
            self.seq = imgkeys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise AssertionError("shuffle and num_parts > 1 over a .rec need path_imgidx")
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise AssertionError(f"part_index {part_index} out of range for num_parts {num_parts}")
            per_part = len(self.seq) // num_parts  # as MXNet, the remainder is left out
            self.seq = self.seq[part_index * per_part:(part_index + 1) * per_part]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._clear_cache()
        self.reset()

    def _clear_cache(self) -> None:
        # The partial last batch kept for the next epoch under 'roll_over'.
        self._cache_data = None
        self._cache_label = None
        self._cache_idx = None

    def reset(self) -> None:
        """Starts a new epoch (reshuffling when shuffle); a rolled-over remainder is kept."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != "roll_over" or self._cache_data is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self) -> None:
        """Starts a new epoch and drops any rolled-over remainder."""
        self._clear_cache()
        self.reset()

    def next_sample(self):
        """(label, encoded image bytes) of the next image; StopIteration at the end of the epoch."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            record = self.imgrec.read()
            if record is None:
                if self.last_batch_handle != "discard":
                    self.imgrec.reset()
                raise StopIteration
            header, img = recordio.unpack(record)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != "discard":
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = recordio.unpack(self.imgrec.read_idx(idx))
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        label, fname = self.imglist[idx]
        return label, self.read_image(fname)

    def _batchify(self, batch_data: np.ndarray, batch_label: np.ndarray, start: int = 0) -> int:
        """Fills the batch buffers from slot `start`; returns the number of slots filled."""
        i = start
        try:
            while i < self.batch_size:
                label, raw = self.next_sample()
                data = self.imdecode(raw)  # a broken image raises, as MXNet's
                try:
                    data, label = self._prepare(data, label)
                except RuntimeError as err:
                    logging.debug("Invalid image, skipping: %s", err)
                    continue
                batch_data[i] = _as_numpy(self.postprocess_data(data))
                self._store_label(batch_label, i, label)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def _new_batch(self) -> Tuple[np.ndarray, np.ndarray]:
        """Empty float32 (data, label) buffers for one batch (filled in numpy, handed out as NDArrays)."""
        data = np.zeros((self.batch_size,) + tuple(self.data_shape), dtype=np.float32)
        return data, np.zeros(self.provide_label[0][1], dtype=np.float32)

    def _prepare(self, data: NDArray, label):
        """Checks and augments one decoded sample; RuntimeError skips it."""
        self.check_valid_image(data)
        return self.augmentation_transform(data), label

    @staticmethod
    def _store_label(batch_label: np.ndarray, i: int, label) -> None:
        batch_label[i] = _as_numpy(label).reshape(batch_label[i].shape)

    def next(self) -> io.DataBatch:
        """The next DataBatch; StopIteration at the end of the epoch."""
        if self._cache_data is not None:
            batch_data, batch_label, filled = self._cache_data, self._cache_label, self._cache_idx
        else:
            batch_data, batch_label = self._new_batch()
            filled = self._batchify(batch_data, batch_label)
        pad = self.batch_size - filled
        if pad:
            if self.last_batch_handle == "discard":
                raise StopIteration
            if self.last_batch_handle == "roll_over" and self._cache_data is None:
                self._cache_data, self._cache_label, self._cache_idx = batch_data, batch_label, filled
                raise StopIteration
            # 'pad' (or a rolled-over remainder): top the batch up from the start of the data.
            self._batchify(batch_data, batch_label, filled)
            if self.last_batch_handle == "pad":
                self._allow_read = False
            else:
                self._clear_cache()
        return io.DataBatch([nd.array(batch_data)], [nd.array(batch_label)], pad=pad)

    def check_data_shape(self, data_shape) -> None:
        """data_shape must be (3, H, W)."""
        if len(data_shape) != 3:
            raise ValueError("data_shape should have length 3, with dimensions CxHxW")
        if data_shape[0] != 3:
            raise ValueError("This iterator expects inputs to have 3 channels.")

    def check_valid_image(self, data) -> None:
        """Raises RuntimeError for an image with no content."""
        if len(data[0].shape) == 0:
            raise RuntimeError("Data shape is wrong")

    def imdecode(self, s) -> NDArray:
        """Decodes one image; a failure names the file or record it came from."""
        try:
            return imdecode(s)
        except Exception as err:
            raise RuntimeError(f"Broken image {self._locate()}, {err}") from None

    def _locate(self) -> str:
        """The file name or record index of the sample just read (for error messages)."""
        count = self.num_image or 1
        idx = self.seq[(self.cur % count) - 1] if self.seq is not None else (self.cur % count) - 1
        if self.imglist is not None:
            return f"filename: {self.imglist[idx][1]}"
        return f"index: {idx}"

    def read_image(self, fname: str) -> bytes:
        """The encoded bytes of `fname` under path_root."""
        with open(os.path.join(self.path_root or "", fname), "rb") as fin:
            return fin.read()

    def augmentation_transform(self, data: NDArray) -> NDArray:
        """Runs the image through every augmenter in auglist."""
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum: NDArray) -> NDArray:
        """HWC -> CHW, the layout of the batch."""
        return nd.transpose(datum, axes=(2, 0, 1))
