"""Handing batches from DataLoader worker processes to the trainer through shared memory.

A worker writes every array of a batch into one POSIX shared-memory file (`/dev/shm`, or the
temp dir where there is none) and sends only a small description (file name, offsets, shapes,
dtypes, the nesting) through its pipe.  The receiving process maps the file and wraps the arrays
without copying: NDArrays over the mapping.  Array data never goes through pickle.

Files are reused: when the last array over a mapping is gone, the loop's process tells the
worker (with its next task), and the worker writes a later batch into the same file, whose pages
are already there (a fresh file's pages must each be zeroed and faulted in: about 1 ms of the
worker's time per 1.5 MB batch, a sixth of what the transforms of a CIFAR-sized batch take).  Every
file of a worker set shares one name prefix and is removed when the set shuts down.
"""
from __future__ import annotations

import contextlib
import glob
import mmap
import os
import tempfile
import weakref
from typing import Any, Callable, Dict, List, Tuple

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


class WorkerFiles:
    """The shared-memory files one worker writes its batches into (names `prefix`0, 1, ...): a
    file the loop has let go of (`release`) takes a later batch that fits in it."""

    _KEEP_FREE = 4  # free files that are too small for the batch at hand are dropped beyond this

    def __init__(self, prefix: str):
        self._prefix = prefix
        self._count = 0
        self._maps: Dict[str, mmap.mmap] = {}  # this worker's own mapping of each of its files
        self._free: List[str] = []

    def release(self, names) -> None:
        """The loop holds no array over these files any more."""
        self._free.extend(n for n in names if n in self._maps and n not in self._free)

    def take(self, size: int) -> Tuple[str, mmap.mmap]:
        """A file of at least `size` bytes to write a batch into (reused or new), and its mapping."""
        for i, name in enumerate(self._free):
            if len(self._maps[name]) >= size:
                del self._free[i]
                return name, self._maps[name]
        while len(self._free) >= self._KEEP_FREE:
            self._drop(self._free.pop(0))
        name = f"{self._prefix}{self._count}"
        self._count += 1
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(fd, size)
            self._maps[name] = mmap.mmap(fd, size)
        except BaseException:
            discard(name)
            raise
        finally:
            os.close(fd)
        return name, self._maps[name]

    def _drop(self, name: str) -> None:
        self._maps.pop(name).close()
        discard(name)


def export_batch(batch: Any, files: WorkerFiles) -> Tuple[Any, Any]:
    """Write the arrays of `batch` into a shared-memory file from `files`.

    Returns (layout, tree): what `import_batch` needs (layout's file name is None when there
    are no array bytes, and then no file was used)."""
    leaves: List[Any] = []  # host arrays and PendingArrays
    tree = _describe(batch, leaves)
    metas, offset = [], 0
    for leaf in leaves:
        metas.append((offset, leaf.shape, leaf.dtype.str))
        offset += (leaf.nbytes + _ALIGN - 1) // _ALIGN * _ALIGN
    if offset == 0:
        return (None, None, metas), tree
    name, mm = files.take(offset)
    try:
        for leaf, (off, shape, dtype) in zip(leaves, metas):
            if leaf.nbytes:
                count = leaf.nbytes // leaf.dtype.itemsize
                dst = np.frombuffer(mm, dtype=leaf.dtype, count=count, offset=off).reshape(shape)
                if isinstance(leaf, PendingArray):
                    leaf.write(dst)
                else:
                    np.copyto(dst, leaf)
                del dst  # no view of the worker's mapping outlives the write
    except BaseException:
        files.release([name])
        raise
    return (name, offset, metas), tree


def import_batch(layout, tree, on_release: Callable[[str], None]) -> Any:
    """Map the file a worker wrote and rebuild the batch over the mapping; `on_release(name)` is
    called once no array over it is left (in whichever thread drops the last one)."""
    from ...imperative.creation import from_numpy
    name, size, metas = layout
    if name is None:
        arrays = [np.empty(shape, dtype=np.dtype(dt)) for _, shape, dt in metas]
    else:
        fd = os.open(name, os.O_RDWR)
        try:
            mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        weakref.finalize(mm, on_release, name).atexit = False
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
    """Remove a shared-memory file (if it is still there)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def discard_prefix(prefix: str) -> None:
    """Remove every file of a worker set (the loop's mappings stay valid: the pages live on while mapped)."""
    for path in glob.glob(glob.escape(prefix) + "*"):
        discard(path)
