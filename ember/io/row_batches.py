"""Which rows make each batch of a file iterator (CSVIter, LibSVMIter): MXNet's batch loader, and
the accessors such an iterator shares (`RowBatchIter`).

With `round_batch` (MXNet's default) the last, incomplete batch is completed from the start of the
data, `pad` says by how many rows, and the next epoch starts after those rows.  Without it the batch
keeps its rows and reports the missing ones as `pad`.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from .data import DataBatch, DataDesc, DataIter


class RowBatches:
    """Batches of `batch_size` row numbers over `total` rows, epoch after epoch."""

    def __init__(self, total: int, batch_size: int, round_batch: bool):
        self.total, self.batch_size, self.round_batch = total, batch_size, bool(round_batch)
        self._cursor = 0    # the next row to read
        self._overflow = 0  # rows the last rounded batch took from the start

    def reset(self) -> None:
        """The next epoch: from the first row, or after the rows a rounded last batch already used."""
        self._cursor = self._overflow if self.round_batch else 0
        self._overflow = 0

    def next(self) -> Optional[Tuple[np.ndarray, int]]:
        """(the next batch's row numbers, its pad), None at the end of the epoch.  Rounded, the rows
        are `batch_size` (wrapping to the start); otherwise the rows left, fewer than `batch_size`
        in the last batch."""
        n, total = self.batch_size, self.total
        if self._cursor >= total:
            return None
        take = min(n, total - self._cursor)
        index = np.arange(self._cursor, self._cursor + take)
        pad = n - take
        if pad and self.round_batch:
            index = np.concatenate([index, np.arange(pad) % total])
            self._overflow = pad % total
        self._cursor += take
        return index, pad


class RowBatchIter(DataIter):
    """A file iterator over the rows it read: `_batches` says what it gives and sets up the rows'
    batching, a subclass's `_load(index, pad)` makes one batch's (data, label) from row numbers
    (-1: an empty row); MXNet's MXDataIter accessors give the current batch, one array each."""

    _rows: RowBatches
    _batch: Optional[tuple] = None  # (data, label, pad, index) of the current batch

    def _batches(self, rows: int, data_shape: tuple, label_shape: tuple, dtype, round_batch: bool) -> None:
        """Batches over `rows` rows of `data_shape` / `label_shape` (per batch) values of `dtype`,
        named 'data' and 'softmax_label' as MXNet's."""
        n = self.batch_size
        self.provide_data = [DataDesc("data", (n,) + tuple(data_shape), dtype)]
        self.provide_label = [DataDesc("softmax_label", (n,) + tuple(label_shape), dtype)]
        self._rows = RowBatches(rows, n, round_batch)
        self._batch = None

    def _load(self, index: np.ndarray, pad: int) -> tuple:
        raise NotImplementedError

    def iter_next(self) -> bool:
        """Load the next batch; False at the end of the epoch."""
        got = self._rows.next()
        if got is None:
            return False
        index, pad = got
        if len(index) < self.batch_size:  # not rounded: rows -1 complete the batch
            index = np.concatenate([index, np.full(pad, -1)])
        data, label = self._load(index, pad)
        self._batch = (data, label, pad, np.where(index < 0, 0, index).astype(np.uint64))
        return True

    def reset(self) -> None:
        """Back to the start of the data (after the rows a rounded last batch already used)."""
        self._rows.reset()
        self._batch = None

    def _current(self) -> tuple:
        if self._batch is None:
            raise StopIteration(f"{type(self).__name__}: no current batch; call iter_next() or next() first")
        return self._batch

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        data, label, pad, index = self._batch
        return DataBatch(data=[data], label=[label], pad=pad, index=index)

    def getdata(self):
        """The current batch's data (one array)."""
        return self._current()[0]

    def getlabel(self):
        """The current batch's label (one array)."""
        return self._current()[1]

    def getpad(self) -> int:
        """How many rows at the end of the current batch are padding."""
        return self._current()[2]

    def getindex(self):
        """The row numbers of the current batch."""
        return self._current()[3]
