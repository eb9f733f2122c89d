"""DataDesc, DataBatch and the DataIter protocol (`mx.io`)."""
from __future__ import annotations

from collections import namedtuple
from typing import List, Optional

import numpy as np


class DataDesc(namedtuple("DataDesc", ["name", "shape"])):
    """Name, shape, dtype and layout of one input (a (name, shape) tuple with extras)."""

    def __new__(cls, name: str, shape, dtype=np.float32, layout: str = "NCHW"):
        ret = super().__new__(cls, name, tuple(shape))
        ret.dtype = dtype
        ret.layout = layout
        return ret

    def __repr__(self) -> str:
        dtype = np.dtype(self.dtype).name if self.dtype is not None else None
        return f"DataDesc[{self.name},{self.shape},{dtype},{self.layout}]"

    @staticmethod
    def get_batch_axis(layout: Optional[str]) -> int:
        """Index of 'N' in the layout (0 when the layout is None)."""
        return 0 if layout is None else layout.find("N")

    @staticmethod
    def get_list(shapes, types=None) -> List["DataDesc"]:
        """DataDescs from [(name, shape)] and optional [(name, dtype)]."""
        if types is not None:
            type_dict = dict(types)
            return [DataDesc(name, shape, type_dict[name]) for name, shape in shapes]
        return [DataDesc(name, shape) for name, shape in shapes]


class DataBatch:
    """One batch: lists of data and label NDArrays, the pad count and optional descriptions."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None, provide_data=None,
                 provide_label=None):
        if data is not None and not isinstance(data, (list, tuple)):
            raise TypeError(f"DataBatch: data must be a list of NDArrays, got {type(data).__name__}")
        if label is not None and not isinstance(label, (list, tuple)):
            raise TypeError(f"DataBatch: label must be a list of NDArrays, got {type(label).__name__}")
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self) -> str:
        data_shapes = [d.shape for d in self.data]
        label_shapes = [lbl.shape for lbl in self.label] if self.label else None
        return f"{type(self).__name__}: data shapes: {data_shapes} label shapes: {label_shapes}"


class DataIter:
    """Base iterator: `for batch in it` yields DataBatch objects until the epoch ends; reset() restarts."""

    def __init__(self, batch_size: int = 0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self) -> None:
        """Go back to the start of the data."""

    def next(self) -> DataBatch:
        """The next batch; raises StopIteration at the end of the epoch."""
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(), index=self.getindex())
        raise StopIteration

    def __next__(self) -> DataBatch:
        return self.next()

    def iter_next(self) -> bool:
        """Move to the next batch; False at the end."""
        raise NotImplementedError(f"{type(self).__name__} must define iter_next or next")

    def getdata(self):
        """The data of the current batch."""
        raise NotImplementedError(f"{type(self).__name__} must define getdata or next")

    def getlabel(self):
        """The label of the current batch."""
        return None

    def getindex(self):
        """The sample indices of the current batch (None if not tracked)."""
        return None

    def getpad(self) -> int:
        """How many samples at the end of the current batch are padding."""
        return 0
