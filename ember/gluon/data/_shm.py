"""Handing batches from DataLoader worker processes to the trainer through shared memory.

A worker writes every array of a batch into one POSIX shared-memory file (`/dev/shm`, or the
temp dir where there is none) and sends only a small description (file name, offsets, shapes,
dtypes, the nesting) through its pipe.  The receiving process maps the file, unlinks it at once
(the pages live on while mapped) and wraps the arrays without copying: an NDArray over the
mapping, freed when the last array using it is gone.  Array data never goes through pickle.
"""
from __future__ import annotations

import glob
import mmap
import os
import tempfile
from typing import Any, List, Tuple

import numpy as np

from ...imperative.ndarray import NDArray

_ALIGN = 64
SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def host_array(arr: NDArray) -> np.ndarray:
    """The host values of an NDArray without an extra copy where its storage is numpy."""
    arr.wait_to_read()
    data = arr._data
    return data if isinstance(data, np.ndarray) else arr.asnumpy()


class PendingArray:
    """An NDArray of a batch that is made in the shared-memory file itself: the host arrays `parts`
    stacked along a new first axis, or (stack=False) the one host array `parts`.  It saves the
    worker building the batch array first and then copying it into the file."""

    __slots__ = ("parts", "stack", "np_kind", "shape", "dtype", "nbytes")

    def __init__(self, parts, stack: bool, np_kind: bool = False):
        self.parts, self.stack, self.np_kind = parts, stack, np_kind
        if stack:
            self.shape = (len(parts),) + tuple(parts[0].shape)
            self.dtype = parts[0].dtype
        else:
            self.shape, self.dtype = parts.shape, parts.dtype
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def write(self, dst: np.ndarray) -> None:
        if self.stack:
            np.stack(self.parts, out=dst)
        else:
            np.copyto(dst, self.parts)


def _describe(obj: Any, leaves: List[Any]):
    # ("nd", i, np_kind) / ("np", i) / ("list", [...]) / ("tuple", [...]) / ("obj", value)
    if isinstance(obj, NDArray):
        leaves.append(host_array(obj))
        return ("nd", len(leaves) - 1, type(obj).__name__ == "ndarray")
    if isinstance(obj, PendingArray):
        leaves.append(obj)
        return ("nd", len(leaves) - 1, obj.np_kind)
    if isinstance(obj, np.ndarray) and obj.dtype != object:
        leaves.append(obj)
        return ("np", len(leaves) - 1)
    if isinstance(obj, list):
        return ("list", [_describe(o, leaves) for o in obj])
    if isinstance(obj, tuple) and type(obj) is tuple:
        return ("tuple", [_describe(o, leaves) for o in obj])
    return ("obj", obj)  # scalars, strings, custom objects: small, pickled with the message


def export_batch(batch: Any, path: str) -> Tuple[Any, Any]:
    """Write the arrays of `batch` into a new shared-memory file at `path`.

    Returns (layout, tree): what `import_batch` needs (layout is None when there are no array
    bytes, and then no file was made)."""
    leaves: List[Any] = []  # host arrays and PendingArrays
    tree = _describe(batch, leaves)
    metas, offset = [], 0
    for leaf in leaves:
        metas.append((offset, leaf.shape, leaf.dtype.str))
        offset += (leaf.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
    if offset == 0:
        return (None, metas), tree
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, offset)
        mm = mmap.mmap(fd, offset)
    finally:
        os.close(fd)
    try:
        for leaf, (off, shape, dtype) in zip(leaves, metas):
            if leaf.nbytes:
                count = leaf.nbytes // leaf.dtype.itemsize
                dst = np.frombuffer(mm, dtype=leaf.dtype, count=count, offset=off).reshape(shape)
                if isinstance(leaf, PendingArray):
                    leaf.write(dst)
                else:
                    np.copyto(dst, leaf)
                del dst  # the mapping can only close once no view exports it
    finally:
        mm.close()
    return (offset, metas), tree


def import_batch(path: str, layout, tree) -> Any:
    """Map the file a worker wrote, unlink it, and rebuild the batch over the mapping."""
    from ...imperative.creation import from_numpy
    size, metas = layout
    if size is None:
        arrays = [np.empty(shape, dtype=np.dtype(dt)) for _, shape, dt in metas]
    else:
        fd = os.open(path, os.O_RDWR)
        try:
            mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
            os.unlink(path)
        arrays = []
        for off, shape, dt in metas:
            dtype = np.dtype(dt)
            count = int(np.prod(shape, dtype=np.int64))
            if count == 0:
                arrays.append(np.empty(shape, dtype=dtype))
            else:
                arrays.append(np.frombuffer(mm, dtype=dtype, count=count, offset=off).reshape(shape))
    return _rebuild(tree, arrays, from_numpy)


def _rebuild(tree, arrays, from_numpy):
    kind = tree[0]
    if kind == "nd":
        arr = arrays[tree[1]]
        nd = from_numpy(arr) if arr.size else from_numpy(np.ascontiguousarray(arr), zero_copy=False)
        return nd.as_np_ndarray() if tree[2] else nd
    if kind == "np":
        return arrays[tree[1]]
    if kind == "list":
        return [_rebuild(t, arrays, from_numpy) for t in tree[1]]
    if kind == "tuple":
        return tuple(_rebuild(t, arrays, from_numpy) for t in tree[1])
    return tree[1]


def discard(path: str) -> None:
    """Remove a shared-memory file whose batch will never be read."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def discard_prefix(prefix: str) -> None:
    """Remove every file a worker set left behind (batches in flight when the loop stopped)."""
    for path in glob.glob(glob.escape(prefix) + "*"):
        discard(path)
