"""Key-value store for data-parallel training (`mx.kv`, `mx.kvstore`), as in MXNet 1.x.

`create(name)` returns a store:
- 'local' (aliases 'local_update_cpu', 'local_allreduce_cpu'): one process, values summed on the CPU;
- 'device' ('local_allreduce_device'): one process, values summed on the device they live on;
- 'dist_sync' / 'dist_device_sync': one store per worker process, pushes allreduced over MPI so every
  worker holds the same values after each push (launch with `python -m ember.kvstore.launch`);
- 'dist_async': parameter servers own shards of the keys and apply the optimizer; workers push and
  pull without a global barrier.
A class registered with `@KVStoreBase.register` (MXNet's pluggable stores; `TestStore` is one) is
found first, by its lower-cased class name.  See docs/kvstore.md.
"""
from __future__ import annotations

from .errors import KVStoreCommError, KVStoreError, KVStoreShapeError, KVStoreTimeoutError  # noqa: F401
from .base import KVStoreBase, TestStore  # noqa: F401
from .local import KVStore

_LOCAL_TYPES = ("local", "local_update_cpu", "local_allreduce_cpu", "device", "local_allreduce_device")


def create(name: str = "local") -> KVStore:
    """Create a key-value store of type `name` (see the module docstring)."""
    if not isinstance(name, str):
        raise KVStoreError(f"kvstore type must be a string, got {type(name).__name__}")
    plugged = KVStoreBase.kv_registry.get(name.lower())
    if plugged is not None:
        return plugged()
    if name in _LOCAL_TYPES:
        return KVStore(name)
    if name in ("dist_sync", "dist_device_sync", "dist_sync_device"):
        from .dist_sync import DistSyncKVStore
        return DistSyncKVStore(name)
    if name in ("dist_async",):
        from .dist_async import DistAsyncKVStore
        return DistAsyncKVStore(name)
    raise KVStoreError(f"unknown kvstore type {name!r}; expected one of "
                       f"{sorted(_LOCAL_TYPES) + ['dist_sync', 'dist_device_sync', 'dist_async']} "
                       f"or a registered one {sorted(KVStoreBase.kv_registry)}")


__all__ = ["KVStore", "KVStoreBase", "create", "KVStoreError", "KVStoreShapeError", "KVStoreCommError", "KVStoreTimeoutError"]
