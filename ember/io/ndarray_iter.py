"""NDArrayIter: batches over in-memory arrays (`mx.io.NDArrayIter`), dense or CSR (a CSRNDArray or a
scipy.sparse.csr_matrix, whose batches are CSRNDArrays: MXNet's sparse data path)."""
from __future__ import annotations

from collections import OrderedDict
from typing import List, Optional, Tuple

import numpy as np

from .. import ndarray as nd
from ..context import Context, cpu
from ..imperative.ndarray import NDArray
from ..imperative.sparse_ndarray import BaseSparseNDArray, CSRNDArray
from .data import DataBatch, DataDesc, DataIter

_LAST_BATCH_MODES = ("pad", "discard", "roll_over")


def _is_scipy_csr(value) -> bool:
    return type(value).__module__.startswith("scipy.sparse") and getattr(value, "format", None) == "csr"


def _as_sources(data, allow_empty: bool, default_name: str) -> List[Tuple[str, np.ndarray, Context]]:
    """[(name, numpy array or scipy CSR matrix, context)] sorted by name, as MXNet orders them."""
    if data is None:
        if not allow_empty:
            raise ValueError("NDArrayIter: data must not be None")
        data = []
    if isinstance(data, (np.ndarray, NDArray)) or _is_scipy_csr(data):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not data and not allow_empty:
            raise ValueError("NDArrayIter: data must not be empty")
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict((f"_{i}_{default_name}", d) for i, d in enumerate(data))
    if not isinstance(data, dict):
        raise TypeError("NDArrayIter: input must be an NDArray, a numpy array, a list of them or a dict "
                        f"of name -> array, got {type(data).__name__}")
    sources = []
    for name, value in sorted(data.items()):
        if isinstance(value, CSRNDArray):
            sources.append((name, value.asscipy(), value.context))
            continue
        if isinstance(value, BaseSparseNDArray):
            raise TypeError(f"NDArrayIter: '{name}' has storage type {value.stype}; only dense and csr data "
                            "are iterated")
        if isinstance(value, NDArray):
            sources.append((name, value.asnumpy(), value.context))
            continue
        if _is_scipy_csr(value):
            sources.append((name, value, cpu()))
            continue
        try:
            # MXNet turns numpy data into float32 NDArrays (mx.nd.array's default), whatever its dtype
            arr = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError):
            raise TypeError(f"NDArrayIter: invalid type {type(value).__name__} for '{name}'; "
                            "expected NDArray or numpy array") from None
        if arr.ndim == 0:
            raise ValueError(f"NDArrayIter: '{name}' must have a batch dimension, got a scalar")
        sources.append((name, arr, cpu()))
    return sources


class NDArrayIter(DataIter):
    """Iterate over arrays in batches of `batch_size` along the layout's 'N' axis.

    data / label: an array, a list of arrays (named _0_data, _1_data, ...) or a
    dict name -> array.  shuffle permutes the samples at every reset (numpy's
    global RNG, as MXNet).  last_batch_handle for an incomplete final batch:
    'pad' fills it from the start of the data and reports `batch.pad`,
    'discard' drops it, 'roll_over' carries its samples into the first batch
    of the next epoch.
    """

    def __init__(self, data, label=None, batch_size: int = 1, shuffle: bool = False,
                 last_batch_handle: str = "pad", data_name: str = "data", label_name: str = "softmax_label",
                 layout: str = "NCHW"):
        super().__init__(batch_size)
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"NDArrayIter: batch_size must be a positive int, got {batch_size!r}")
        if last_batch_handle not in _LAST_BATCH_MODES:
            raise ValueError(f"NDArrayIter: last_batch_handle must be one of {list(_LAST_BATCH_MODES)}, "
                             f"got {last_batch_handle!r}")
        if "N" not in layout:
            raise ValueError(f"NDArrayIter: layout {layout!r} has no batch axis 'N'")
        self.layout = layout
        self._axis = layout.find("N")
        self.data = _as_sources(data, allow_empty=False, default_name=data_name)
        self.label = _as_sources(label, allow_empty=True, default_name=label_name)
        if any(_is_scipy_csr(arr) for _, arr, _ in self.data + self.label):
            if last_batch_handle != "discard":  # (MXNet's restriction: a padded CSR batch is not supported)
                raise NotImplementedError("NDArrayIter only supports CSRNDArray (and scipy.sparse.csr_matrix) data "
                                          f"with last_batch_handle='discard', got {last_batch_handle!r}")
            if self._axis != 0:
                raise ValueError(f"NDArrayIter: CSR data is batched along its rows; layout {layout!r} puts the "
                                 "batch axis elsewhere")
        sizes = {name: arr.shape[self._axis] if arr.ndim > self._axis else None
                 for name, arr, _ in self.data + self.label}
        # as MXNet: the first data array sets the sample count; a longer array's extra samples are
        # never read, a shorter one cannot fill a batch
        self.num_data = next(iter(sizes.values()))
        if None in sizes.values() or (self.num_data is not None and min(sizes.values()) < self.num_data):
            raise ValueError(f"NDArrayIter: every array needs at least as many samples on axis {self._axis} "
                             f"as the first data array, got {sizes}")
        if self.num_data == 0:
            raise ValueError("NDArrayIter: the data has no samples")
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.idx = np.arange(self.num_data)
        self.cursor = -self.batch_size
        self._carry: Optional[np.ndarray] = None  # roll_over: sample indices left from the last epoch
        self._batch_idx: Optional[np.ndarray] = None
        self._pad = 0
        self.reset()

    # -- descriptions ---------------------------------------------------------------------
    def _descs(self, sources) -> List[DataDesc]:
        out = []
        for name, arr, _ in sources:
            shape = list(arr.shape)
            shape[self._axis] = self.batch_size
            out.append(DataDesc(name, tuple(shape), np.dtype(arr.dtype).type, layout=self.layout))
        return out

    @property
    def provide_data(self) -> List[DataDesc]:
        """Name/shape/dtype of each data input, with the batch size on the batch axis."""
        return self._descs(self.data)

    @property
    def provide_label(self) -> List[DataDesc]:
        """Name/shape/dtype of each label input."""
        return self._descs(self.label)

    # -- iteration --------------------------------------------------------------------------
    def hard_reset(self) -> None:
        """Restart from the beginning, dropping any roll-over samples."""
        self._carry = None
        self._start_epoch()

    def reset(self) -> None:
        """Start the next epoch (roll_over keeps the previous epoch's leftover samples)."""
        self._start_epoch()

    def _start_epoch(self) -> None:
        if self.shuffle:
            np.random.shuffle(self.idx)
        carried = 0 if self._carry is None else len(self._carry)
        # roll_over: the first batch holds the carried samples, then `batch_size - carried` new ones
        self.cursor = -self.batch_size - carried

    def iter_next(self) -> bool:
        self.cursor += self.batch_size
        start, end = self.cursor, self.cursor + self.batch_size
        if start >= self.num_data:
            return False
        if start < 0:  # first batch of a roll_over epoch
            batch = np.concatenate([self._carry, self.idx[:end]])
            if len(batch) < self.batch_size:  # fewer samples in all than one batch: keep carrying
                self._carry = batch
                return False
            self._batch_idx, self._pad, self._carry = batch, len(self._carry), None
            return True
        if end <= self.num_data:
            self._batch_idx, self._pad = self.idx[start:end], 0
            return True
        if self.last_batch_handle == "discard":
            return False
        if self.last_batch_handle == "roll_over":
            self._carry = self.idx[start:].copy()
            return False
        pad = end - self.num_data
        self._batch_idx = self.idx[np.arange(start, end) % self.num_data]
        self._pad = pad
        return True

    def next(self) -> DataBatch:
        if not self.iter_next():
            raise StopIteration
        return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(), index=None,
                         provide_data=self.provide_data, provide_label=self.provide_label)

    def _take(self, sources) -> List[NDArray]:
        if self._batch_idx is None:
            raise RuntimeError("NDArrayIter: call next() (or iter_next()) before reading a batch")
        return [nd.sparse.csr_matrix(arr[self._batch_idx], ctx=ctx, dtype=arr.dtype) if _is_scipy_csr(arr) else
                nd.array(np.take(arr, self._batch_idx, axis=self._axis), ctx=ctx, dtype=arr.dtype)
                for _, arr, ctx in sources]

    def getdata(self) -> List[NDArray]:
        return self._take(self.data)

    def getlabel(self) -> List[NDArray]:
        return self._take(self.label)

    def getpad(self) -> int:
        return self._pad

    def getindex(self) -> Optional[np.ndarray]:
        return None if self._batch_idx is None else self._batch_idx.copy()
