"""CSVIter: batches from comma-separated text files (`mx.io.CSVIter`)."""
from __future__ import annotations

import errno
import os
from typing import Optional

import numpy as np

from .. import ndarray as nd
from ..base import ArgumentError, FormatError, MissingFileError
from .row_batches import RowBatchIter

_DTYPES = {"float32": np.float32, "int32": np.int32, "int64": np.int64}


def _shape(value, what: str) -> tuple:
    if isinstance(value, (int, np.integer)):
        value = (int(value),)
    try:
        shape = tuple(int(d) for d in value)
    except (TypeError, ValueError):
        raise ArgumentError(f"CSVIter: {what} must be a tuple of positive ints, got {value!r}") from None
    if not shape or any(d <= 0 for d in shape):
        raise ArgumentError(f"CSVIter: {what} must be a tuple of positive ints, got {value!r}")
    return shape


def _read_rows(path: str, shape: tuple, dtype, what: str) -> np.ndarray:
    """The file's rows as an array (rows, *shape); each row must hold prod(shape) values."""
    if not os.path.isfile(path):
        raise MissingFileError(errno.ENOENT, f"CSVIter: {what}: no such file", path)
    width = int(np.prod(shape))
    rows = []
    with open(path, "r") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            fields = line.split(",")
            if len(fields) != width:
                raise FormatError(f"CSVIter: line {lineno} of {what} '{path}' has {len(fields)} values, "
                                  f"shape {shape} needs {width}")
            try:
                # integers are parsed as integers: int64 values beyond 2**53 stay exact
                rows.append(np.array(fields, dtype=dtype))
            except ValueError:
                raise FormatError(f"CSVIter: line {lineno} of {what} '{path}' holds a value that is not "
                                  f"{np.dtype(dtype).name}: {line[:80]!r}") from None
    if not rows:
        raise FormatError(f"CSVIter: {what} '{path}' has no rows")
    return np.stack(rows).reshape((len(rows),) + shape)


class CSVIter(RowBatchIter):
    """Batches of `batch_size` rows of `data_csv` (each row reshaped to `data_shape`) and of
    `label_csv` (`label_shape`, default (1,); zeros when no label file is given), named 'data'
    and 'softmax_label' as MXNet's.

    The files are read whole when the iterator is made (MXNet streams them).  With
    `round_batch` (the default) the last, incomplete batch is completed from the start of the
    data and `getpad()` says by how many rows; the next epoch then starts after those rows, as
    MXNet's does (row_batches.py).  Without it the padded rows keep the previous batch's values.  `dtype`
    ('float32', 'int32' or 'int64') is the dtype of data and label.
    """

    def __init__(self, data_csv: str, data_shape, label_csv: Optional[str] = None, label_shape=(1,),
                 batch_size: int = 1, round_batch: bool = True, prefetch_buffer: int = 4, ctx: str = "gpu",
                 dtype: Optional[str] = None, **kwargs):
        if kwargs:
            raise ArgumentError(f"CSVIter: unknown argument(s) {sorted(kwargs)}")
        if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ArgumentError(f"CSVIter: batch_size must be a positive int, got {batch_size!r}")
        super().__init__(int(batch_size))
        dtype_name = "float32" if dtype is None else np.dtype(dtype).name
        if dtype_name not in _DTYPES:
            raise ArgumentError(f"CSVIter: dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        self._dtype = _DTYPES[dtype_name]
        data_shape, label_shape = _shape(data_shape, "data_shape"), _shape(label_shape, "label_shape")
        self._data = _read_rows(data_csv, data_shape, self._dtype, "data_csv")
        if label_csv is None:
            self._label = np.zeros((len(self._data),) + label_shape, self._dtype)
        else:
            self._label = _read_rows(label_csv, label_shape, self._dtype, "label_csv")
            if len(self._label) != len(self._data):
                raise FormatError(f"CSVIter: data_csv has {len(self._data)} rows, label_csv {len(self._label)}")
        # a label of shape (1,) is given per batch as (batch_size,), as MXNet does
        batch_label_shape = () if label_shape == (1,) else label_shape
        self._batches(len(self._data), data_shape, batch_label_shape, self._dtype, round_batch)
        self._data_buf = np.zeros((self.batch_size,) + data_shape, self._dtype)
        self._label_buf = np.zeros((self.batch_size,) + batch_label_shape, self._dtype)

    def _load(self, index: np.ndarray, pad: int) -> tuple:
        rows = index[index >= 0]  # (not rounded: the padded rows keep the previous batch's values)
        self._data_buf[:len(rows)] = self._data[rows]
        self._label_buf[:len(rows)] = self._label[rows].reshape((len(rows),) + self._label_buf.shape[1:])
        return nd.array(self._data_buf, dtype=self._dtype), nd.array(self._label_buf, dtype=self._dtype)
