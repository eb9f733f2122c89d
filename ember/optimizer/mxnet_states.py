"""Reading optimizer states written by MXNet 1.9.1 (Updater.get_states, Trainer.save_states,
KVStore.save_optimizer_states, Module.save_optimizer_states).

MXNet pickles `states` or `(states, optimizer)`: states map an index to an NDArray, None or a
tuple/list of them; an NDArray pickles as `mxnet.ndarray.ndarray.NDArray` rebuilt from its raw
NDArray bytes, the optimizer and its lr scheduler as their class plus attribute dict.  This
reader never runs code from the file: its unpickler resolves only those MXNet names (to inert
stand-ins, turned into ember NDArrays and ember's optimizer and schedule classes afterwards),
bytearray and numpy scalars; any other name fails with FormatError.
"""
from __future__ import annotations

import io
import pickle
import struct
from typing import Any, Dict, Optional, Tuple

import numpy as np

from ..base import FormatError

PICKLE_PROTO = 0x80  # first byte of every pickle of protocol 2 or later


def is_mxnet_pickle(data) -> bool:
    """Whether `data` looks like MXNet's pickled states (not ember's NDArray-buffer format)."""
    return len(data) >= 2 and data[0] == PICKLE_PROTO


class _PickledNDArray:
    """Stands for `mxnet.ndarray.NDArray` while unpickling: keeps the raw NDArray bytes."""

    def __init__(self, *args):
        self.raw = None

    def __setstate__(self, state):
        if not isinstance(state, dict) or not isinstance(state.get("handle"), (bytes, bytearray, type(None))):
            raise FormatError("MXNet optimizer states: malformed NDArray entry")
        self.raw = state["handle"]


class _PickledObject:
    """Stands for an MXNet optimizer or lr scheduler: its class name and attribute dict."""

    kind = ""
    mx_name = ""

    def __setstate__(self, state):
        if not isinstance(state, dict):
            raise FormatError(f"MXNet optimizer states: malformed {self.kind} {self.mx_name}")
        self.attrs = state


def _stand_in(kind: str, name: str) -> type:
    return type(f"MXNet{name}", (_PickledObject,), {"kind": kind, "mx_name": name})


_NUMPY_SCALAR = {("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar")}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module, name) == ("mxnet.ndarray.ndarray", "NDArray"):
            return _PickledNDArray
        if (module, name) == ("builtins", "bytearray"):
            return bytearray
        if module in ("mxnet.optimizer.optimizer", "mxnet.optimizer") or module.startswith("mxnet.optimizer."):
            return _stand_in("optimizer", name)
        if module == "mxnet.lr_scheduler":
            return _stand_in("lr_scheduler", name)
        if (module, name) == ("numpy", "dtype"):
            return np.dtype
        if (module, name) in _NUMPY_SCALAR:
            return _numpy_scalar
        raise FormatError(f"MXNet optimizer states refer to {module}.{name}, which is not part of "
                          "optimizer states; refusing to load the file")


def _numpy_scalar(dtype, raw: bytes = b""):
    """numpy's scalar reconstructor, limited to plain (number) dtypes."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biufc" or len(raw) != dtype.itemsize:
        raise FormatError(f"MXNet optimizer states: unsupported numpy scalar of dtype {dtype}")
    return np.frombuffer(raw, dtype=dtype)[0]


def _raw_ndarray(raw) -> np.ndarray:
    """The array in MXNet's raw NDArray bytes (one record of the .params format)."""
    from ..imperative import serialization
    # one record wrapped as a one-array list file: header, record, no names
    buf = struct.pack("<QQQ", serialization.LIST_MAGIC, 0, 1) + bytes(raw) + struct.pack("<Q", 0)
    arrays = serialization.loads(buf)
    if arrays[0] is None:
        raise FormatError("MXNet optimizer states: an NDArray state has no values")
    return arrays[0]


def _convert(value, where: str):
    """Stand-ins replaced by ember objects; containers rebuilt; plain data kept as it is."""
    if isinstance(value, _PickledNDArray):
        from ..imperative.creation import array
        if value.raw is None:
            return None
        values = _raw_ndarray(value.raw)
        return array(values, dtype=values.dtype)
    if isinstance(value, _PickledObject):
        if value.kind == "lr_scheduler":
            return _lr_scheduler(value, where)
        return _optimizer(value)
    if isinstance(value, tuple):
        return tuple(_convert(v, where) for v in value)
    if isinstance(value, list):
        return [_convert(v, where) for v in value]
    if isinstance(value, dict):
        for k in list(value):  # in place, so dicts shared by several attributes stay shared
            value[k] = _convert(value[k], f"{where}[{k!r}]")
        return value
    if value is None or isinstance(value, (bool, int, float, str, bytes, np.generic)):
        return value
    raise FormatError(f"MXNet optimizer states: unexpected {type(value).__name__} in {where}")


def _lr_scheduler(obj: _PickledObject, where: str):
    from . import lr_scheduler
    klass = getattr(lr_scheduler, obj.mx_name, None)
    if not (isinstance(klass, type) and issubclass(klass, lr_scheduler.LRScheduler)):
        raise FormatError(f"MXNet optimizer states: lr scheduler {obj.mx_name} in {where} has no ember equivalent")
    sched = klass.__new__(klass)
    sched.__dict__.update(_convert(obj.attrs, where))
    return sched


def _optimizer(obj: _PickledObject):
    from .optimizer import _REGISTRY
    klass = _REGISTRY.get(obj.mx_name.lower())
    if klass is None:
        raise FormatError(f"MXNet optimizer states hold optimizer {obj.mx_name}, which ember does not have; "
                          f"registered: {sorted(_REGISTRY)}")
    optimizer = klass.__new__(klass)
    attrs = _convert(obj.attrs, obj.mx_name)
    optimizer.__dict__.update(attrs)
    optimizer.param_dict = {}  # set again by the Trainer that owns the parameters
    optimizer.__dict__.setdefault("aggregate_num", 0)
    return optimizer


def loads(data) -> Tuple[Dict[Any, Any], Optional[Any]]:
    """(states by index, optimizer or None) from MXNet 1.9.1's pickled updater states."""
    try:
        loaded = _Unpickler(io.BytesIO(bytes(data))).load()
    except FormatError:
        raise
    except Exception as e:  # truncated or corrupt pickles raise many kinds of errors
        raise FormatError(f"malformed MXNet optimizer states ({type(e).__name__}: {e})") from None
    optimizer = None
    if isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[1], _PickledObject):
        loaded, optimizer = loaded
    if not isinstance(loaded, dict):
        raise FormatError(f"MXNet optimizer states: expected a dict of states, found {type(loaded).__name__}")
    states = {k: _convert(v, f"state {k!r}") for k, v in loaded.items()}
    if optimizer is not None:
        if optimizer.kind != "optimizer":
            raise FormatError(f"MXNet optimizer states: {optimizer.mx_name} is not an optimizer")
        optimizer = _optimizer(optimizer)
    return states, optimizer
