"""Array helpers for the store: reading NDArrays' buffers and moving data between host and device
buffers (through the device tables of ember.backend).  Only called inside engine ops, after the engine
ordered the access."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import backend
from ..backend import to_host  # noqa: F401 - arrays.to_host, as the stores call it
from ..context import Context, cpu


def is_device_array(x: Any) -> bool:
    """True for an array in device memory (C code and MPI need a host copy of it)."""
    return not isinstance(x, np.ndarray)


def plain_host(x: Any) -> bool:
    """A C-contiguous host (numpy) array: one flat buffer that C code (MPI, memcpy) can use as is."""
    return isinstance(x, np.ndarray) and x.flags.c_contiguous


def context_of(arr: Any) -> Context:
    """The device of an NDArray (`context`, MXNet's name, or `ctx`)."""
    ctx = getattr(arr, "context", None) or getattr(arr, "ctx", None)
    return ctx if isinstance(ctx, Context) else cpu()


def copy_into(dst: Any, src: Any) -> None:
    """dst[...] = src across host/device buffers."""
    if type(dst) is np.ndarray and type(src) is np.ndarray:  # host to host, the common case: no table lookups
        dst[...] = src
        return
    table = backend.of_array(dst)
    with table.device(table.device_of(dst)):
        dst[...] = table.asarray(src)


def sum_into(dst: Any, srcs: Sequence[Any]) -> None:
    """dst[...] = sum(srcs), adding on dst's device."""
    if len(srcs) == 1:
        copy_into(dst, srcs[0])
        return
    table = backend.of_array(dst)
    xp, asarray = table.xp, table.asarray
    with table.device(table.device_of(dst)):
        xp.add(asarray(srcs[0]), asarray(srcs[1]), out=dst)
        for s in srcs[2:]:
            xp.add(dst, asarray(s), out=dst)


def empty_on(ctx: Context, shape, dtype) -> Any:
    """An uninitialised buffer on `ctx`."""
    table = backend.of(ctx)
    with table.device(ctx.device_id):
        return table.xp.empty(shape, dtype=dtype)
