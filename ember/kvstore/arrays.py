"""Array helpers for the store: reading NDArrays' buffers and moving data between host (numpy)
and GPU (CuPy) buffers.  Only called inside engine ops, after the engine ordered the access."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..context import Context, cpu


def is_gpu_array(x: Any) -> bool:
    """True for a CuPy array (checked without importing CuPy)."""
    return type(x).__module__.startswith("cupy")


def plain_host(x: Any) -> bool:
    """A C-contiguous host (numpy) array: one flat buffer that C code (MPI, memcpy) can use as is."""
    return isinstance(x, np.ndarray) and x.flags.c_contiguous


def context_of(arr: Any) -> Context:
    """The device of an NDArray (`context`, MXNet's name, or `ctx`)."""
    ctx = getattr(arr, "context", None) or getattr(arr, "ctx", None)
    return ctx if isinstance(ctx, Context) else cpu()


def to_host(x: Any) -> np.ndarray:
    """A numpy view/copy of a numpy or CuPy array."""
    return x.get() if is_gpu_array(x) else x


def copy_into(dst: Any, src: Any) -> None:
    """dst[...] = src across host/GPU buffers."""
    if type(dst) is np.ndarray and type(src) is np.ndarray:  # host to host, the common case: no module checks
        dst[...] = src
        return
    if is_gpu_array(dst):
        import cupy
        with cupy.cuda.Device(dst.device.id):
            dst[...] = cupy.asarray(src)
    else:
        dst[...] = to_host(src)


def sum_into(dst: Any, srcs: Sequence[Any]) -> None:
    """dst[...] = sum(srcs), adding on dst's device."""
    if len(srcs) == 1:
        copy_into(dst, srcs[0])
        return
    if is_gpu_array(dst):
        import cupy
        with cupy.cuda.Device(dst.device.id):
            cupy.add(cupy.asarray(srcs[0]), cupy.asarray(srcs[1]), out=dst)
            for s in srcs[2:]:
                cupy.add(dst, cupy.asarray(s), out=dst)
        return
    a, b = to_host(srcs[0]), to_host(srcs[1])
    np.add(a, b, out=dst)
    for s in srcs[2:]:
        np.add(dst, to_host(s), out=dst)


def empty_on(ctx: Context, shape, dtype) -> Any:
    """An uninitialised buffer on `ctx` (CuPy for GPU contexts)."""
    if ctx.device_type == "gpu":
        import cupy
        with cupy.cuda.Device(ctx.device_id):
            return cupy.empty(shape, dtype=dtype)
    return np.empty(shape, dtype=dtype)
