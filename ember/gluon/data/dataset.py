"""Datasets: indexable collections of samples, as MXNet 1.9.1's gluon.data."""
from __future__ import annotations

import os
from typing import Callable

from ... import recordio
from ...imperative.ndarray import NDArray

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset", "RecordFileDataset"]


class Dataset:
    """Abstract dataset: subclasses define `__getitem__` and `__len__`."""

    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def filter(self, fn: Callable) -> "Dataset":
        """The samples for which `fn(sample)` is true (evaluated now, over the whole dataset)."""
        from .sampler import FilterSampler
        return _SampledDataset(self, FilterSampler(fn, self))

    def shard(self, num_shards: int, index: int) -> "Dataset":
        """Part `index` of `num_shards` contiguous parts; the first len % num_shards get one more."""
        assert index < num_shards, "Shard index of out bound: %d out of %d" % (index, num_shards)
        assert num_shards > 0, "Number of shards must be greater than 0"
        assert index >= 0, "Index must be non-negative"
        size, rest = divmod(len(self), num_shards)
        start = size * index + min(index, rest)
        from .sampler import SequentialSampler
        return _SampledDataset(self, SequentialSampler(size + (index < rest), start))

    def take(self, count) -> "Dataset":
        """The first `count` samples (all of them when count is None or too big)."""
        if count is None or count > len(self):
            count = len(self)
        from .sampler import SequentialSampler
        return _SampledDataset(self, SequentialSampler(count))

    def sample(self, sampler) -> "Dataset":
        """The samples at the indices `sampler` yields."""
        from .sampler import Sampler
        if not isinstance(sampler, Sampler):
            raise TypeError("Invalid sampler type: %s. Expected gluon.data.Sampler instead." % type(sampler))
        return _SampledDataset(self, sampler)

    def transform(self, fn: Callable, lazy: bool = True) -> "Dataset":
        """Each sample mapped by `fn` (a tuple sample is passed as separate arguments); lazily on
        access, or all now when lazy=False (then a random `fn` is drawn only once)."""
        trans = _LazyTransformDataset(self, fn)
        if lazy:
            return trans
        return SimpleDataset([trans[i] for i in range(len(trans))])

    def transform_first(self, fn: Callable, lazy: bool = True) -> "Dataset":
        """Like `transform`, applied to the first element of each sample only (data, not label)."""
        return self.transform(_TransformFirstClosure(fn), lazy)


class SimpleDataset(Dataset):
    """A dataset over any object with `len()` and `[]` (a list, a numpy array, ...)."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class _LazyTransformDataset(Dataset):
    def __init__(self, data, fn):
        self._data = data
        self._fn = fn

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        item = self._data[idx]
        if isinstance(item, tuple):
            return self._fn(*item)
        return self._fn(item)


class _TransformFirstClosure:
    # an object rather than a closure so that the transformed dataset can be pickled
    def __init__(self, fn):
        self._fn = fn

    def __call__(self, x, *args):
        if args:
            return (self._fn(x),) + args
        return self._fn(x)


class _SampledDataset(Dataset):
    def __init__(self, dataset, sampler):
        self._dataset = dataset
        self._sampler = sampler
        self._indices = list(iter(sampler))

    def __len__(self):
        return len(self._sampler)

    def __getitem__(self, idx):
        return self._dataset[self._indices[idx]]


class ArrayDataset(Dataset):
    """Zips dataset-like objects of equal length: sample i is (a[i], b[i], ...), or a[i] for one.

    A 1-D NDArray is kept as numpy, so its samples are numpy scalars (MXNet does the same)."""

    def __init__(self, *args):
        assert len(args) > 0, "Needs at least 1 arrays"
        self._length = len(args[0])
        self._data = []
        for i, data in enumerate(args):
            assert len(data) == self._length, \
                "All arrays must have the same length; array[0] has length %d " \
                "while array[%d] has %d." % (self._length, i + 1, len(data))
            if isinstance(data, NDArray) and len(data.shape) == 1:
                data = data.asnumpy()
            self._data.append(data)

    def __getitem__(self, idx):
        data = self._data
        if len(data) == 2:  # (samples, labels): the common case, no list per sample
            return data[0][idx], data[1][idx]
        if len(data) == 1:
            return data[0][idx]
        return tuple([d[idx] for d in data])  # a list first: no generator per sample

    def __len__(self):
        return self._length


class RecordFileDataset(Dataset):
    """The raw records of a RecordIO file (`filename`.rec with its `.idx` beside it)."""

    def __init__(self, filename: str):
        self.idx_file = os.path.splitext(filename)[0] + ".idx"
        self.filename = filename
        for path in (self.filename, self.idx_file):
            if not os.path.isfile(path):
                raise FileNotFoundError(f"RecordFileDataset: '{path}' does not exist (needs "
                                        f"'{self.filename}' and its index '{self.idx_file}')")
        self._record = recordio.MXIndexedRecordIO(self.idx_file, self.filename, "r")

    def __getitem__(self, idx):
        return self._record.read_idx(self._record.keys[idx])

    def __len__(self):
        return len(self._record.keys)


class _DownloadedDataset(Dataset):
    """Base of MNIST, CIFAR10, ...: (data, label) arrays read by `_get_data` from `root`."""

    def __init__(self, root: str, transform):
        super().__init__()
        self._transform = transform
        self._data = None
        self._label = None
        self._root = os.path.expanduser(root)
        os.makedirs(self._root, exist_ok=True)
        self._get_data()

    def __getitem__(self, idx):
        if self._transform is not None:
            return self._transform(self._data[idx], self._label[idx])
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)

    def _get_data(self):
        raise NotImplementedError
