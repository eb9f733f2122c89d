"""One table per device kind: what storage, memory managers, copies, executors and the kvstore
need to know about a device, so none of them names numpy or CuPy.  `of(ctx)` / `of_array(x)` find
a table; a new device kind is one `Backend` subclass passed to `register` (see docs/architecture.md).
"""
from __future__ import annotations

import contextlib
import os
from functools import partial
from typing import Any, Callable, Dict, Tuple

import numpy as np

from .base import ContextError
from .context import Context

ALIGNMENT = 64  # a cache line; lets SIMD kernels and dtype views start aligned


class Backend:
    """The table of one device kind; this base class is the host one (numpy arrays).

    name / type_id: the Context device type and MXNet's number for it (saved files, device_typeid).
    dlpack_types: DLPack device codes of tensors that live on this kind (`from_dlpack`).
    shared_ids: every device id names the same memory (cpu(0) and cpu(1) are both host memory),
    so one memory manager serves them all and an executor takes arrays of any id.
    pool_env: the environment variable choosing its memory manager (MXNet's *_MEM_POOL_TYPE).
    """

    name, type_id, shared_ids, pool_env = "cpu", 1, True, "MXNET_CPU_MEM_POOL_TYPE"
    dlpack_types: Tuple[int, ...] = (1, 3)  # kDLCPU, kDLCUDAHost

    @property
    def xp(self):
        """The array module kernels use on this kind (ContextError if it is not installed)."""
        return np

    def count(self) -> int:
        """How many devices of this kind can be used (0: none, e.g. its module is missing)."""
        return 1

    def alloc(self, nbytes: int, device_id: int):
        """A 1-D uint8 array of `nbytes` bytes on the device (MemoryError when it is full)."""
        buf = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
        offset = -buf.__array_interface__["data"][0] % ALIGNMENT
        return buf[offset:offset + nbytes]

    def release_cached(self, device_id: int) -> None:
        """Give memory the array module keeps cached back to the system (before retrying an alloc)."""

    def allocator(self, device_id: int) -> Tuple[Callable[[int], Any], Callable[[], None]]:
        """(alloc(nbytes), release_cached()) for one device: what a memory manager calls.
        Checks now that the array module is there, so a missing one fails when the manager is made."""
        self.xp  # noqa: B018 - raises ContextError without the module
        return partial(self.alloc, device_id=device_id), partial(self.release_cached, device_id)

    def device(self, device_id: int):
        """A `with` block making `device_id` current (and its stream) for array work inside it."""
        return contextlib.nullcontext()

    def run_on(self, fn: Callable[[], None], device_id: int) -> Callable[[], None]:
        """`fn` wrapped to run with `device_id` current (`fn` itself where there is nothing to select)."""
        return fn

    def owns(self, x: Any) -> bool:
        """True if x is an array of this kind."""
        return isinstance(x, np.ndarray)

    def device_of(self, x: Any) -> int:
        """The device id of x, an array of this kind."""
        return 0

    def asarray(self, x: Any):
        """x, an array of any kind, as one of this kind on the current device (copied only across devices)."""
        return x if isinstance(x, np.ndarray) else of_array(x).to_host(x)

    def to_host(self, x: Any) -> np.ndarray:
        """A numpy array with x's values (x itself for host arrays)."""
        return x

    def synchronize(self, device_id: int) -> None:
        """Wait until the work queued on the device is done (host work is done when its op returns)."""

    def memory_info(self, device_id: int) -> Tuple[int, int]:
        """(free, total) bytes of the device's memory."""
        page = os.sysconf("SC_PAGE_SIZE")
        return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page


class CuPyBackend(Backend):
    """NVIDIA GPUs through the optional CuPy package, imported on first use."""

    name, type_id, shared_ids, pool_env = "gpu", 2, False, "MXNET_GPU_MEM_POOL_TYPE"
    dlpack_types = (2,)  # kDLCUDA
    _cupy = None

    @property
    def xp(self):
        if self._cupy is None:
            try:
                import cupy
            except ImportError:
                raise ContextError("GPU arrays need the optional 'cupy' package, which is not installed") from None
            CuPyBackend._cupy = cupy
        return self._cupy

    def count(self) -> int:
        try:
            return int(self.xp.cuda.runtime.getDeviceCount())
        except Exception:  # noqa: BLE001 - no CuPy, no driver or no device: no GPU to use
            return 0

    def alloc(self, nbytes: int, device_id: int):
        # CuPy's out-of-memory error derives from MemoryError, as the managers expect
        with self.device(device_id):
            return self.xp.empty(nbytes, dtype=np.uint8)

    def release_cached(self, device_id: int) -> None:
        with self.device(device_id):
            self.xp.get_default_memory_pool().free_all_blocks()

    def device(self, device_id: int):
        return self.xp.cuda.Device(device_id)

    def run_on(self, fn: Callable[[], None], device_id: int) -> Callable[[], None]:
        cupy = self.xp

        def on_gpu():
            with cupy.cuda.Device(device_id):
                fn()
        return on_gpu

    def owns(self, x: Any) -> bool:
        return type(x).__module__.startswith("cupy")  # without importing CuPy

    def device_of(self, x: Any) -> int:
        return x.device.id

    def asarray(self, x: Any):
        return self.xp.asarray(x)

    def to_host(self, x: Any) -> np.ndarray:
        return x.get()

    def synchronize(self, device_id: int) -> None:
        self.device(device_id).synchronize()

    def memory_info(self, device_id: int) -> Tuple[int, int]:
        with self.device(device_id):
            free, total = self.xp.cuda.runtime.memGetInfo()
        return int(free), int(total)


_TABLES: Dict[str, Backend] = {}


def register(table: Backend) -> Backend:
    """Make `table`'s device kind usable: Context(table.name, i) is accepted and every caller finds it."""
    if Context.devid2type.get(table.type_id, table.name) != table.name:
        raise ContextError(f"device type id {table.type_id} is taken by {Context.devid2type[table.type_id]!r}")
    Context.devtype2id[table.name] = table.type_id
    Context.devid2type[table.type_id] = table.name
    _TABLES[table.name] = table
    return table


def unregister(name: str) -> None:
    """Forget a device kind registered with `register` (its Contexts are no longer accepted)."""
    table = _TABLES.pop(name)
    del Context.devtype2id[name], Context.devid2type[table.type_id]


def of(ctx) -> Backend:
    """The table of a Context's device kind (or of a device type name)."""
    return _TABLES[getattr(ctx, "device_type", ctx)]


def of_array(x: Any) -> Backend:
    """The table whose arrays include x: host for numpy arrays and anything no table claims."""
    if type(x) is not np.ndarray:
        for table in tuple(_TABLES.values()):  # a snapshot: register() may run in another thread
            if table is not _HOST and table.owns(x):
                return table
    return _HOST


def to_host(x: Any) -> np.ndarray:
    """x's values as a numpy array, whichever device holds them (x itself for numpy arrays)."""
    return of_array(x).to_host(x)


def device_key(ctx: Context):
    """What tells ctx's memory apart: its type where all ids share memory, else (type, id)."""
    return ctx.device_type if of(ctx).shared_ids else (ctx.device_type, ctx.device_id)


def for_dlpack(dev_type: int) -> Backend:
    """The table of a DLPack device code (ContextError for codes no table handles)."""
    for table in _TABLES.values():
        if dev_type in table.dlpack_types:
            return table
    raise ContextError(f"from_dlpack: unsupported DLPack device type {dev_type}")


_HOST = register(Backend())
register(CuPyBackend())
