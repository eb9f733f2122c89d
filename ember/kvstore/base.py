"""`mx.kv.KVStoreBase` (MXNet 1.9.1): the interface of a pluggable key-value store.

A class that implements it and is decorated with `@KVStoreBase.register` is what `mx.kv.create(name)`
returns for its lower-cased class name, before ember's own store types are looked at (as MXNet
lets Horovod or BytePS plug in).  `gluon.Trainer` drives such a store one key at a time through
`broadcast` and `pushpull`, and updates on the store only if `is_capable(KVStoreBase.OPTIMIZER)`.
`TestStore` ('teststore') is MXNet's minimal example: single process, sums over the devices.
"""
from __future__ import annotations

import warnings
from typing import Dict


class KVStoreBase:
    """The methods a pluggable key-value store implements (each raises NotImplementedError here)."""

    OPTIMIZER = "optimizer"
    kv_registry: Dict[str, type] = {}

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        """Store rank 0's `value` under `key` and write it into `out` (an NDArray or a list)."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        """Sum `value` (an NDArray or a list, one per device) over the devices and workers and
        write the sum into `out`, or back into `value` when `out` is None."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer) -> None:
        """Run `optimizer` on the store (only where `is_capable(OPTIMIZER)`)."""
        raise NotImplementedError()

    @staticmethod
    def is_capable(capability: str) -> bool:
        """Whether the store supports `capability` (KVStoreBase.OPTIMIZER: updates on the store)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname: str, dump_optimizer: bool = False) -> None:
        raise NotImplementedError()

    def load_optimizer_states(self, fname: str) -> None:
        raise NotImplementedError()

    @property
    def type(self) -> str:
        raise NotImplementedError()

    @property
    def rank(self) -> int:
        raise NotImplementedError()

    @property
    def num_workers(self) -> int:
        raise NotImplementedError()

    @staticmethod
    def register(klass: type) -> type:
        """Class decorator: `mx.kv.create(klass.__name__.lower())` makes a `klass()`."""
        if not (isinstance(klass, type) and issubclass(klass, KVStoreBase)):
            raise TypeError(f"KVStoreBase.register: {klass!r} is not a subclass of KVStoreBase")
        name = klass.__name__.lower()
        if name in KVStoreBase.kv_registry:
            warnings.warn(f"KVStoreBase.register: replacing the kvstore registered as {name!r} "
                          f"({KVStoreBase.kv_registry[name].__module__}) with {klass.__module__}.{klass.__name__}")
        KVStoreBase.kv_registry[name] = klass
        return klass


class SingleProcess:
    """rank and num_workers of a store that lives in one process."""

    @property
    def rank(self) -> int:
        """This worker's rank (0 for a single-process store)."""
        return 0

    @property
    def num_workers(self) -> int:
        """Number of worker processes (1 for a single-process store)."""
        return 1


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


@KVStoreBase.register
class TestStore(SingleProcess, KVStoreBase):
    """MXNet's test store: one process, values summed over the devices, no optimizer on the store."""

    def broadcast(self, key, value, out, priority: int = 0) -> None:
        for o in _as_list(out):
            o[:] = value

    def pushpull(self, key, value, out=None, priority: int = 0) -> None:
        values = _as_list(value)
        total = values[0].copy() if len(values) == 1 else sum(v.as_in_context(values[0].context) for v in values)
        for o in (values if out is None else _as_list(out)):
            o[:] = total

    @staticmethod
    def is_capable(capability: str) -> bool:
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError(f"Unknown capability: {capability}")

    @property
    def type(self) -> str:
        return "teststore"
