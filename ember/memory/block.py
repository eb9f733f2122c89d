"""`Block`: one piece of device storage handed out by a memory manager."""
from __future__ import annotations

from typing import Any


class Block:
    """Storage handed out by a manager.

    `data` is a 1-D uint8 array (numpy on CPU, CuPy on GPU) of `size` bytes;
    `nbytes` is what the caller asked for (`nbytes <= size`); `ctx` is the device;
    `manager` is the manager that made it (`ember.memory.release` returns it there);
    `live` is True between alloc and release.
    """

    __slots__ = ("data", "nbytes", "size", "ctx", "manager", "live", "view")

    def __init__(self, data: Any, nbytes: int, size: int, ctx=None, manager=None):
        self.data = data
        self.nbytes = nbytes
        self.size = size
        self.ctx = ctx
        self.manager = manager
        self.live = True
        self.view = None  # (dtype, shape, array): the typed view its last user made, reused by the next

    def __repr__(self) -> str:
        state = "live" if self.live else "released"
        return f"<Block {self.nbytes}/{self.size} bytes on {self.ctx} ({state})>"
