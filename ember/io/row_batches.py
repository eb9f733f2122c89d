"""Which rows make each batch of a file iterator (CSVIter, LibSVMIter): MXNet's batch loader.

With `round_batch` (MXNet's default) the last, incomplete batch is completed from the start of the
data, `pad` says by how many rows, and the next epoch starts after those rows.  Without it the batch
keeps its rows and reports the missing ones as `pad`.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np


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
