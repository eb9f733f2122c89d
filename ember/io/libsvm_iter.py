"""LibSVMIter: batches of CSR rows from LIBSVM text files (`mx.io.LibSVMIter`).

A line is `label index:value index:value ...` (indices 0-based, as MXNet reads them; a `label:weight`
label keeps its label, `qid:` pairs and `#` comments are skipped).  Data batches are CSRNDArrays of
shape (batch_size, data_shape[0]); labels come from each line's label (a dense (batch_size,) array) or,
with `label_libsvm`, from a second file's rows (CSRNDArrays of (batch_size, label_shape[0])).
"""
from __future__ import annotations

import errno
import os
from typing import Optional, Tuple

import numpy as np

from .. import ndarray as nd
from ..base import ArgumentError, FormatError, MissingFileError
from .csv_iter import _shape
from .row_batches import RowBatchIter


def read_libsvm(path: str, width: int, what: str) -> Tuple[np.ndarray, object]:
    """(the lines' labels as float32, their features as a scipy CSR matrix (lines, width) float32,
    indices sorted); FormatError naming the line for an index outside [0, width) or a bad token."""
    from scipy import sparse
    if not os.path.isfile(path):
        raise MissingFileError(errno.ENOENT, f"LibSVMIter: {what}: no such file", path)
    labels, indptr, indices, values = [], [0], [], []
    with open(path, "r") as f:
        for lineno, line in enumerate(f, 1):
            tokens = line.split("#", 1)[0].split()
            if not tokens:
                continue
            try:
                labels.append(float(tokens[0].split(":", 1)[0]))
                for token in tokens[1:]:
                    key, value = token.split(":", 1)
                    if key == "qid":
                        continue
                    index = int(key)
                    if not 0 <= index < width:
                        raise FormatError(f"LibSVMIter: line {lineno} of {what} '{path}': feature index {index} "
                                          f"is outside [0, {width})")
                    indices.append(index)
                    values.append(float(value))
            except ValueError as e:
                if isinstance(e, FormatError):
                    raise
                raise FormatError(f"LibSVMIter: line {lineno} of {what} '{path}' is not LIBSVM "
                                  f"('label index:value ...'): {line.strip()[:80]!r}") from None
            indptr.append(len(indices))
    if not labels:
        raise FormatError(f"LibSVMIter: {what} '{path}' has no rows")
    rows = sparse.csr_matrix((np.asarray(values, np.float32), np.asarray(indices, np.int64),
                              np.asarray(indptr, np.int64)), shape=(len(labels), width), dtype=np.float32)
    rows.sum_duplicates()  # (sorted indices, one entry per index: a valid CSRNDArray)
    return np.asarray(labels, np.float32), rows


def _part(n: int, num_parts: int, part_index: int) -> slice:
    """The rows of part `part_index` of `num_parts` contiguous parts (MXNet splits the file by bytes)."""
    return slice(n * part_index // num_parts, n * (part_index + 1) // num_parts)


class LibSVMIter(RowBatchIter):
    """Batches of `batch_size` rows of the LIBSVM file `data_libsvm` (`data_shape` = (features,)) as
    CSRNDArrays, labelled by each line's label or by the rows of `label_libsvm` (`label_shape`), named
    'data' and 'softmax_label' as MXNet's.  `num_parts` / `part_index` iterate one contiguous part of
    the rows (distributed training).  The files are read whole when the iterator is made (MXNet
    streams them); batches round as CSVIter's (`round_batch`, row_batches.py).
    """

    def __init__(self, data_libsvm: str, data_shape, label_libsvm: Optional[str] = None, label_shape=(1,),
                 batch_size: int = 1, round_batch: bool = True, num_parts: int = 1, part_index: int = 0,
                 prefetch_buffer: int = 4, ctx: str = "gpu", dtype: Optional[str] = None, **kwargs):
        if kwargs:
            raise ArgumentError(f"LibSVMIter: unknown argument(s) {sorted(kwargs)}")
        if not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ArgumentError(f"LibSVMIter: batch_size must be a positive int, got {batch_size!r}")
        if dtype is not None and np.dtype(dtype) != np.float32:
            raise ArgumentError(f"LibSVMIter: data is float32, got dtype {dtype!r}")
        if not (isinstance(num_parts, (int, np.integer)) and num_parts >= 1 and
                isinstance(part_index, (int, np.integer)) and 0 <= part_index < num_parts):
            raise ArgumentError(f"LibSVMIter: part_index must be in [0, num_parts), got {part_index!r} of "
                                f"{num_parts!r}")
        super().__init__(int(batch_size))
        data_shape, label_shape = _shape(data_shape, "data_shape"), _shape(label_shape, "label_shape")
        if len(data_shape) != 1 or len(label_shape) != 1:
            raise ArgumentError(f"LibSVMIter: data_shape and label_shape are (width,), got {data_shape} and "
                                f"{label_shape}")
        labels, self._data = read_libsvm(data_libsvm, data_shape[0], "data_libsvm")
        if label_libsvm is None or label_libsvm == "NULL":  # (MXNet's default names no file as 'NULL')
            if label_shape != (1,):
                raise ArgumentError(f"LibSVMIter: label_shape {label_shape} needs a label_libsvm file; each "
                                    "data line has one label")
            self._label = labels
        else:
            self._label = read_libsvm(label_libsvm, label_shape[0], "label_libsvm")[1]
            if self._label.shape[0] != self._data.shape[0]:
                raise FormatError(f"LibSVMIter: data_libsvm has {self._data.shape[0]} rows, label_libsvm "
                                  f"{self._label.shape[0]}")
        part = _part(self._data.shape[0], int(num_parts), int(part_index))
        self._data, self._label = self._data[part], self._label[part]
        if self._data.shape[0] == 0:
            raise FormatError(f"LibSVMIter: part {part_index} of {num_parts} of '{data_libsvm}' has no rows")
        self._batches(self._data.shape[0], data_shape, () if self._label.ndim == 1 else label_shape, np.float32,
                      round_batch)

    def _load(self, index: np.ndarray, pad: int) -> tuple:
        return self._rows_of(self._data, index), self._rows_of(self._label, index)

    @staticmethod
    def _rows_of(source, index: np.ndarray):
        kept = index[index >= 0]
        if isinstance(source, np.ndarray):  # dense labels
            out = np.zeros(len(index), np.float32)
            out[:len(kept)] = source[kept]
            return nd.array(out)
        from scipy import sparse
        rows = source[kept]
        if len(kept) < len(index):
            rows = sparse.vstack([rows, sparse.csr_matrix((len(index) - len(kept), source.shape[1]),
                                                          dtype=np.float32)], format="csr")
        return nd.sparse.csr_matrix(rows, dtype=np.float32)
