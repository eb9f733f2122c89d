"""Raw device allocation: what managers call when they need fresh bytes from the system."""
from __future__ import annotations

import numpy as np

from ..base import ContextError

ALIGNMENT = 64  # a cache line; lets SIMD kernels and dtype views start aligned


def cpu_alloc(size: int):
    """A 64-byte aligned 1-D uint8 numpy array of `size` bytes (MemoryError if the host is out)."""
    buf = np.empty(size + ALIGNMENT, dtype=np.uint8)
    offset = -buf.__array_interface__["data"][0] % ALIGNMENT
    return buf[offset:offset + size]


def _cupy():
    try:
        import cupy
    except ImportError as e:
        raise ContextError("GPU storage needs the optional 'cupy' package, which is not installed") from e
    return cupy


def gpu_alloc(size: int, device_id: int):
    """A 1-D uint8 CuPy array of `size` bytes on GPU `device_id`.

    CuPy's out-of-memory error derives from MemoryError, so callers catch MemoryError for both devices.
    """
    cupy = _cupy()
    with cupy.cuda.Device(device_id):
        return cupy.empty(size, dtype=cupy.uint8)


def gpu_release_cached(device_id: int) -> None:
    """Return CuPy's own cached blocks on `device_id` to the driver (after our cache was dropped)."""
    cupy = _cupy()
    with cupy.cuda.Device(device_id):
        cupy.get_default_memory_pool().free_all_blocks()


def allocator_for(ctx):
    """(alloc(size), release_system_cache()) functions for the device of `ctx`."""
    if ctx.device_type == "cpu":
        return cpu_alloc, (lambda: None)
    if ctx.device_type == "gpu":
        device_id = ctx.device_id
        _cupy()  # fail early, at manager creation, with a clear message
        return (lambda size: gpu_alloc(size, device_id)), (lambda: gpu_release_cached(device_id))
    raise ContextError(f"no memory allocator for device type {ctx.device_type!r}")
