"""Writing optimizer states in MXNet 1.9.1's format, which real MXNet loads (the reading side,
restricted to MXNet's names, is ember.optimizer.mxnet_states).

MXNet's `Updater.get_states` pickles `states` or `(states, optimizer)`.  In that pickle an
NDArray is `mxnet.ndarray.ndarray.NDArray` rebuilt from `(None,)` with the state
`{'handle': bytearray(one NDArray::Save record)}`, an optimizer is its class
(`mxnet.optimizer.optimizer.<Class>`) made by NEWOBJ with its attribute dict (no param_dict),
an lr scheduler likewise as `mxnet.lr_scheduler.<Class>`.  ember writes the same pickle without
importing mxnet: stand-in classes carry MXNet's module paths, and the pickler names them by
those paths.  The record bytes come from ember's own NDArray-file writer.
"""
from __future__ import annotations

import copyreg
import io
import pickle
import struct
from typing import Any, Dict, Optional

import numpy as np

from .state_file import _check_index  # one rule for the indices a state file holds

PROTOCOL = 4  # what MXNet 1.9.1's pickle.dumps writes under Python 3.8-3.13
NDARRAY_GLOBAL = ("mxnet.ndarray.ndarray", "NDArray")
OPTIMIZER_MODULE = "mxnet.optimizer.optimizer"
CONTRIB_MODULE = "mxnet.optimizer.contrib"  # GroupAdaGrad
LR_SCHEDULER_MODULE = "mxnet.lr_scheduler"
_LIST_HEADER = 24  # u64 magic, u64 reserved, u64 count before the first record of an NDArray file
_LIST_TRAILER = 8  # u64 name count (0) after the last record


class _MXNetNDArray:
    """Pickles as MXNet's NDArray: `NDArray(None)` then `__setstate__({'handle': record})`."""

    _mxnet_global = NDARRAY_GLOBAL

    def __init__(self, record: bytes):
        self.record = record

    def __reduce__(self):
        # bytearray, as MXNet's ctypes2buffer gives: its __setstate__ needs a writable buffer
        return (type(self), (None,), {"handle": bytearray(self.record)})


class _MXNetObject:
    """Pickles as an instance of an MXNet class made without __init__ (NEWOBJ) from a dict."""

    def __init__(self, state: dict):
        self.state = state

    def __reduce_ex__(self, protocol):
        return (copyreg.__newobj__, (type(self),), self.state)


_STAND_INS: Dict[tuple, type] = {}


def _object_class(module: str, name: str) -> type:
    key = (module, name)
    if key not in _STAND_INS:
        _STAND_INS[key] = type(f"MXNet{name}", (_MXNetObject,), {"_mxnet_global": key})
    return _STAND_INS[key]


def _record(array) -> bytes:
    """One NDArray::Save record of `array`'s values, on cpu(0): MXNet loads it on any build, and
    the Updater moves each state to its weight's device on first use (states_synced)."""
    from ..imperative import serialization
    file_bytes = serialization.dumps([array.asnumpy()])
    header = struct.unpack_from("<QQQ", file_bytes)
    if header != (serialization.LIST_MAGIC, 0, 1):  # the writer's layout changed under us
        raise RuntimeError(f"unexpected NDArray file header {header}")
    return file_bytes[_LIST_HEADER:-_LIST_TRAILER]


def _optimizer_state(optimizer) -> dict:
    """The optimizer's attributes as MXNet's Optimizer.__getstate__ gives them (no param_dict),
    with the attributes MXNet's base class sets that an ember optimizer may lack."""
    state = {k: v for k, v in vars(optimizer).items() if k != "param_dict"}
    state.setdefault("aggregate_num", 0)
    state.setdefault("allow_np_array", False)
    return state


class _Pickler(pickle._Pickler):  # pylint: disable=protected-access
    """pickle's Python pickler (the C one imports a class's module to name it, and mxnet is not
    importable here), with ember objects replaced by their MXNet stand-ins as they are reached
    and anything an MXNet state file cannot hold refused."""

    _PLAIN = (type(None), bool, int, float, str, bytes, bytearray, tuple, list, dict)

    def __init__(self, file):
        super().__init__(file, protocol=PROTOCOL)
        self._stand_ins: Dict[int, tuple] = {}  # id(ember object) -> (object kept alive, stand-in)

    def _stand_in(self, obj):
        from ..imperative.ndarray import NDArray
        from .lr_scheduler import LRScheduler
        from .optimizer import Optimizer
        if isinstance(obj, NDArray):
            return _MXNetNDArray(_record(obj))
        if isinstance(obj, Optimizer):
            module = CONTRIB_MODULE if type(obj).__module__.endswith(".optimizer.contrib") else OPTIMIZER_MODULE
            return _object_class(module, type(obj).__name__)(_optimizer_state(obj))
        if isinstance(obj, LRScheduler):
            return _object_class(LR_SCHEDULER_MODULE, type(obj).__name__)(dict(vars(obj)))
        return None

    def save(self, obj, save_persistent_id=True):
        if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
            obj = obj.item()  # numpy's own scalar pickles name numpy modules that differ by version
        elif not isinstance(obj, self._PLAIN) and not isinstance(obj, (_MXNetNDArray, _MXNetObject)) \
                and obj is not bytearray and not (isinstance(obj, type) and "_mxnet_global" in obj.__dict__):
            entry = self._stand_ins.get(id(obj))
            if entry is None:
                stand_in = self._stand_in(obj)
                if stand_in is None:
                    raise TypeError(f"cannot save a {type(obj).__name__} in optimizer states (only NDArrays, "
                                    "numbers, strings, containers, the optimizer and its lr scheduler)")
                entry = self._stand_ins[id(obj)] = (obj, stand_in)
            obj = entry[1]
        super().save(obj, save_persistent_id)

    def save_global(self, obj, name=None):
        ref = obj.__dict__.get("_mxnet_global") if isinstance(obj, type) else None
        if ref is None:
            return super().save_global(obj, name)
        module, qualname = ref
        self.save(module)
        self.save(qualname)
        self.write(pickle.STACK_GLOBAL)
        self.memoize(obj)
        return None


def _check_tree(state, where: str) -> None:
    """States hold NDArrays, numbers, None and tuples/lists of them (as MXNet's optimizers make)."""
    from ..imperative.ndarray import NDArray
    if state is None or isinstance(state, (NDArray, bool, int, float, np.integer, np.floating)):
        return
    if isinstance(state, (tuple, list)):
        for item in state:
            _check_tree(item, where)
        return
    raise TypeError(f"optimizer state of {where} is a {type(state).__name__}; only NDArrays, numbers, "
                    "None and tuples/lists of them can be saved")


def dumps(states: Dict[Any, Any], optimizer: Optional[Any] = None) -> bytes:
    """MXNet 1.9.1's `Updater.get_states` bytes: the pickle of `states` (index -> NDArray, None or
    a tuple/list of them) or, with `optimizer`, of `(states, optimizer)`."""
    checked = {}
    for index, state in states.items():
        index = _check_index(index, "optimizer states")
        _check_tree(state, f"index {index!r}")
        checked[index] = state
    out = io.BytesIO()
    _Pickler(out).dump(checked if optimizer is None else (checked, optimizer))
    return out.getvalue()
