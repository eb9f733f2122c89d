"""Image datasets: MNIST, FashionMNIST, CIFAR10, CIFAR100 from their standard files under `root`,
ImageRecordDataset (.rec of packed images) and ImageFolderDataset (one folder per class).

No download is possible here: a dataset whose files are missing raises FileNotFoundError naming
every file it looked for.  Images decode through Pillow (an optional dependency).
"""
from __future__ import annotations

import gzip
import os
import struct
import warnings
from typing import List

import numpy as np

from .... import recordio
from ....imperative.creation import array as _nd_array
from ..dataset import RecordFileDataset, _DownloadedDataset, Dataset

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset", "ImageFolderDataset"]


def _require(paths: List[str], dataset: str) -> None:
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise FileNotFoundError(f"{dataset}: dataset files not found (ember does not download): "
                                + ", ".join(missing) + f"; looked for {', '.join(paths)}")


def _as_image(img: np.ndarray, flag: int):
    """An HWC uint8 NDArray; flag 0 keeps one gray channel as (H, W, 1)."""
    if img.ndim == 2:
        img = img[:, :, None]
    return _nd_array(np.ascontiguousarray(img), dtype=np.uint8)


def _decode(buf: bytes, flag: int):
    return _as_image(recordio.decode_image(buf, 0 if flag == 0 else 1), flag)


class MNIST(_DownloadedDataset):
    """MNIST handwritten digits: (28x28x1 uint8 NDArray, int32 label) samples from the gzipped
    IDX files in `root` (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-...)."""

    _prefix = "mnist"

    def __init__(self, root: str = os.path.join("~", ".mxnet", "datasets", "mnist"), train: bool = True,
                 transform=None):
        self._train = train
        super().__init__(root, transform)

    def _files(self):
        stem = "train" if self._train else "t10k"
        return (os.path.join(self._root, f"{stem}-images-idx3-ubyte.gz"),
                os.path.join(self._root, f"{stem}-labels-idx1-ubyte.gz"))

    def _get_data(self):
        data_file, label_file = self._files()
        _require([data_file, label_file], type(self).__name__)
        with gzip.open(label_file, "rb") as f:
            magic, count = struct.unpack(">II", f.read(8))
            if magic != 2049:
                raise ValueError(f"{label_file}: not an IDX label file (magic {magic}, expected 2049)")
            label = np.frombuffer(f.read(), dtype=np.uint8).astype(np.int32)
        with gzip.open(data_file, "rb") as f:
            magic, num, rows, cols = struct.unpack(">IIII", f.read(16))
            if magic != 2051:
                raise ValueError(f"{data_file}: not an IDX image file (magic {magic}, expected 2051)")
            data = np.frombuffer(f.read(), dtype=np.uint8)
        if num != len(label) or count != len(label) or data.size != num * rows * cols:
            raise ValueError(f"{type(self).__name__}: {data_file} holds {num} images of {rows}x{cols} "
                             f"({data.size} bytes) for {len(label)} labels")
        self._data = _nd_array(data.reshape(num, rows, cols, 1), dtype=np.uint8)
        self._label = label


class FashionMNIST(MNIST):
    """Fashion-MNIST: the same files and format as MNIST, under another root."""

    def __init__(self, root: str = os.path.join("~", ".mxnet", "datasets", "fashion-mnist"),
                 train: bool = True, transform=None):
        super().__init__(root, train, transform)


class CIFAR10(_DownloadedDataset):
    """CIFAR-10: (32x32x3 uint8 NDArray, int32 label) samples from the binary version's files
    `root`/cifar-10-batches-bin/data_batch_1..5.bin (train) or test_batch.bin."""

    _folder = "cifar-10-batches-bin"
    _label_bytes = 1

    def __init__(self, root: str = os.path.join("~", ".mxnet", "datasets", "cifar10"), train: bool = True,
                 transform=None):
        self._train = train
        super().__init__(root, transform)

    def _file_names(self):
        if self._train:
            return ["data_batch_%d.bin" % i for i in range(1, 6)]
        return ["test_batch.bin"]

    def _label_column(self):
        return 0

    def _get_data(self):
        paths = [os.path.join(self._root, self._folder, name) for name in self._file_names()]
        _require(paths, type(self).__name__)
        record = 3072 + self._label_bytes
        data, label = [], []
        for path in paths:
            raw = np.fromfile(path, dtype=np.uint8)
            if raw.size % record:
                raise ValueError(f"{path}: {raw.size} bytes is not a whole number of {record}-byte records")
            raw = raw.reshape(-1, record)
            data.append(raw[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            label.append(raw[:, self._label_column()].astype(np.int32))
        data = np.concatenate(data)
        self._data = _nd_array(np.ascontiguousarray(data), dtype=np.uint8)
        self._label = np.concatenate(label)


class CIFAR100(CIFAR10):
    """CIFAR-100: `root`/cifar-100-binary/train.bin or test.bin; the coarse (20) or, with
    fine_label=True, the fine (100) label."""

    _folder = "cifar-100-binary"
    _label_bytes = 2

    def __init__(self, root: str = os.path.join("~", ".mxnet", "datasets", "cifar100"), fine_label: bool = False,
                 train: bool = True, transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _file_names(self):
        return ["train.bin" if self._train else "test.bin"]

    def _label_column(self):
        return 1 if self._fine_label else 0


class ImageRecordDataset(RecordFileDataset):
    """(image, label) samples of a .rec file of `recordio.pack`ed encoded images; flag 1 decodes
    to 3 RGB channels, 0 to one gray channel (HxWx1)."""

    def __init__(self, filename: str, flag: int = 1, transform=None):
        super().__init__(filename)
        self._flag = flag
        self._transform = transform

    def __getitem__(self, idx):
        header, img = recordio.unpack(super().__getitem__(idx))
        img = _decode(img, self._flag)
        if self._transform is not None:
            return self._transform(img, header.label)
        return img, header.label


class ImageFolderDataset(Dataset):
    """Images in `root`/<class name>/<file>: (image, class index) samples, classes (`synsets`) in
    sorted folder order; .jpg, .jpeg and .png files are read, others skipped with a warning."""

    def __init__(self, root: str, flag: int = 1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag = flag
        self._transform = transform
        self._exts = [".jpg", ".jpeg", ".png"]
        self._list_images(self._root)

    def _list_images(self, root):
        if not os.path.isdir(root):
            raise FileNotFoundError(f"ImageFolderDataset: '{root}' is not a directory")
        self.synsets = []
        self.items = []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn("Ignoring %s, which is not a directory." % path, stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for filename in sorted(os.listdir(path)):
                filename = os.path.join(path, filename)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn("Ignoring %s of type %s. Only support %s" % (filename, ext, ", ".join(self._exts)))
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        path, label = self.items[idx]
        with open(path, "rb") as f:
            img = _decode(f.read(), self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)
