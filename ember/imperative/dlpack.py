"""DLPack exchange: NDArrays out to other frameworks and foreign tensors in, without copies."""
from __future__ import annotations

from .. import backend, engine
from ..context import Context
from . import storage
from .ndarray import NDArray

_KDL_CPU = 1


def _finished(arr: NDArray) -> None:
    """Wait for the ops pending on `arr` and the device work they queued: a capsule names no stream."""
    arr.wait_to_read()
    backend.of(arr.context).synchronize(arr.context.device_id)


def to_dlpack_for_read(arr: NDArray):
    """A legacy DLPack capsule of `arr` once its pending writes are done (imports read-only)."""
    _finished(arr)
    return arr._data.__dlpack__()


def to_dlpack_for_write(arr: NDArray):
    """A DLPack capsule of `arr` once every pending op on it is done (writes through it are allowed)."""
    _finished(arr)
    # a versioned capsule carries the writeable flag (legacy capsules import read-only in numpy)
    return arr._data.__dlpack__(max_version=(1, 0))


def dunder_dlpack(arr: NDArray, stream=None, **kwargs):
    arr.wait_to_read()
    if stream is not None:
        kwargs["stream"] = stream
    return arr._data.__dlpack__(**kwargs)


class _Capsule:
    """Presents a bare DLPack capsule through the __dlpack__ protocol (assumed host memory)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (_KDL_CPU, 0)


def from_dlpack(obj) -> NDArray:
    """An NDArray sharing memory with a DLPack capsule or any object with `__dlpack__`."""
    if hasattr(obj, "__dlpack__"):
        dev_type, dev_id = obj.__dlpack_device__()
    elif type(obj).__name__ == "PyCapsule":
        obj, dev_type, dev_id = _Capsule(obj), _KDL_CPU, 0
    else:
        raise TypeError(f"from_dlpack expects a DLPack capsule or an object with __dlpack__, "
                        f"got {type(obj).__name__}")
    table = backend.for_dlpack(dev_type)
    ctx = Context(table.name, 0 if table.shared_ids else int(dev_id))
    with table.device(ctx.device_id):
        data = table.xp.from_dlpack(obj)
    return NDArray(data, storage.wrap(data, engine.Var("dlpack"), ctx, owns_var=True))
