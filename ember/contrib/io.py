"""`mx.contrib.io`: a Gluon DataLoader seen as an `mx.io.DataIter`, so Module-style training loops
(`mod.fit`, `mod.score`) can read data prepared with `gluon.data` (MXNet 1.9.1's DataLoaderIter)."""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from .. import ndarray as nd
from ..io.data import DataDesc, DataIter


class DataLoaderIter(DataIter):
    """Wrap a `gluon.data.DataLoader` whose batches are (data, label) pairs as a DataIter.

    The batch size is the first batch's; a shorter last batch is padded up to it (the pad rows are
    zeros, `DataBatch.pad` says how many) as MXNet's iterators report it.  Data and label are cast to
    `dtype`.  `reset()` starts a new pass over the loader (a new shuffle where the loader shuffles)."""

    def __init__(self, loader, data_name: str = "data", label_name: str = "softmax_label",
                 dtype: str = "float32") -> None:
        super().__init__()
        self._loader = loader
        self.dtype = np.dtype(dtype)
        first = self._take(iter(loader))
        if first is None:
            raise ValueError("DataLoaderIter: the loader yields no batch, so there is no batch shape to provide")
        data, label = first
        self.batch_size = data.shape[0]
        self.provide_data = [DataDesc(data_name, data.shape, self.dtype)]
        self.provide_label = [DataDesc(label_name, label.shape, self.dtype)]
        self._iter = iter(loader)
        self._current: Optional[tuple] = None

    @staticmethod
    def _take(iterator) -> Optional[tuple]:
        """The iterator's next (data, label) pair, None at its end; anything else is refused."""
        try:
            batch = next(iterator)
        except StopIteration:
            return None
        if not isinstance(batch, (list, tuple)) or len(batch) != 2:
            kind = f"a {type(batch).__name__} of {len(batch)}" if isinstance(batch, (list, tuple)) \
                else f"a {type(batch).__name__}"
            raise ValueError(f"DataLoaderIter: the loader's batches must be (data, label) pairs, got {kind}")
        return batch[0], batch[1]

    def reset(self) -> None:
        self._iter = iter(self._loader)
        self._current = None

    def iter_next(self) -> bool:
        self._current = self._take(self._iter)
        return self._current is not None

    def _padded(self, arr) -> List:
        """`arr` cast to the iterator's dtype, its batch axis padded with zeros to the batch size."""
        arr = arr if isinstance(arr, nd.NDArray) else nd.array(arr)
        arr = arr.astype(self.dtype, copy=False)
        n = arr.shape[0]
        if n == self.batch_size:
            return [arr]
        if n > self.batch_size:
            raise ValueError(f"DataLoaderIter: a batch of {n} samples is larger than the first batch's "
                             f"{self.batch_size}")
        out = nd.zeros((self.batch_size,) + tuple(arr.shape[1:]), ctx=arr.context, dtype=self.dtype)
        out[:n] = arr
        return [out]

    def _batch(self) -> tuple:
        if self._current is None:
            raise StopIteration("DataLoaderIter: no current batch (call next() or iter_next() first)")
        return self._current

    def getdata(self) -> List:
        return self._padded(self._batch()[0])

    def getlabel(self) -> List:
        return self._padded(self._batch()[1])

    def getpad(self) -> int:
        return self.batch_size - self._batch()[0].shape[0]

    def getindex(self):
        return None
