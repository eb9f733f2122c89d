"""Samplers: iterables of dataset indices (or of index batches), as MXNet 1.9.1's gluon.data."""
from __future__ import annotations

from typing import Callable, Iterator, List

import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "FilterSampler", "BatchSampler",
           "IntervalSampler"]


class Sampler:
    """Base class: subclasses define `__iter__` and `__len__`."""

    def __iter__(self):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices start, start+1, ..., start+length-1."""

    def __init__(self, length: int, start: int = 0):
        self._length = length
        self._start = start

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._start, self._start + self._length))

    def __len__(self) -> int:
        return self._length


class RandomSampler(Sampler):
    """A fresh permutation of [0, length) on every pass (numpy's global random state)."""

    def __init__(self, length: int):
        self._length = length

    def __iter__(self):
        indices = np.arange(self._length)
        np.random.shuffle(indices)
        return iter(indices)

    def __len__(self) -> int:
        return self._length


class FilterSampler(Sampler):
    """The indices of the samples of `dataset` for which `fn(sample)` is true."""

    def __init__(self, fn: Callable, dataset):
        self._fn = fn
        self._dataset = dataset
        self._indices = [i for i, sample in enumerate(dataset) if fn(sample)]

    def __iter__(self):
        return iter(self._indices)

    def __len__(self) -> int:
        return len(self._indices)


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of `batch_size`.

    last_batch: 'keep' yields a short last batch, 'discard' drops it, 'rollover' carries its
    indices into the first batch of the next pass.
    """

    def __init__(self, sampler, batch_size: int, last_batch: str = "keep"):
        self._sampler = sampler
        self._batch_size = batch_size
        self._last_batch = last_batch
        self._prev: List = []

    def _bad_last_batch(self):
        return ValueError("last_batch must be one of 'keep', 'discard', or 'rollover', "
                          "but got %s" % self._last_batch)

    def __iter__(self):
        batch, self._prev = self._prev, []
        for i in self._sampler:
            batch.append(i)
            if len(batch) == self._batch_size:
                yield batch
                batch = []
        if batch:
            if self._last_batch == "keep":
                yield batch
            elif self._last_batch == "rollover":
                self._prev = batch
            elif self._last_batch != "discard":
                raise self._bad_last_batch()

    def __len__(self) -> int:
        if self._last_batch == "keep":
            return (len(self._sampler) + self._batch_size - 1) // self._batch_size
        if self._last_batch == "discard":
            return len(self._sampler) // self._batch_size
        if self._last_batch == "rollover":
            return (len(self._prev) + len(self._sampler)) // self._batch_size
        raise self._bad_last_batch()


class IntervalSampler(Sampler):
    """Indices of [0, length) `interval` apart: 0, i, 2i, ..., then (rollover) 1, 1+i, ... until
    every index was visited (MXNet 1.9.1 has it as gluon.contrib.data.IntervalSampler)."""

    def __init__(self, length: int, interval: int, rollover: bool = True):
        assert interval <= length, \
            "Interval {} must be smaller than or equal to length {}".format(interval, length)
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self) -> int:
        # MXNet 1.9.1 reports `length` even when rollover=False yields fewer indices
        return self._length
