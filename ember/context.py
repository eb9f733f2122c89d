"""Devices: `mx.cpu(i)`, `mx.gpu(i)` and the current default context."""
from __future__ import annotations

import threading

from .base import ContextError


class _DefaultCtx(type):
    """`Context.default_ctx`, read and assigned on the class: MXNet 1.x's deprecated spelling of this
    thread's current_context() and of test_utils.set_default_context()."""

    @property
    def default_ctx(cls) -> "Context":
        import warnings
        warnings.warn("Context.default_ctx has been deprecated. Please use Context.current_context() instead. "
                      "Please use test_utils.set_default_context to set a default context", DeprecationWarning)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, ctx: "Context") -> None:
        if not isinstance(ctx, Context):
            raise TypeError(f"set_default_context: expected a Context, got {type(ctx).__name__}")
        # The current context is the top of the per-thread stack that `with ctx:` pushes onto:
        # replacing the top (or seeding an empty stack) changes the default without unbalancing
        # enclosing blocks.  (vars() of a threading.local is this thread's own dict.)
        stack = vars(cls._default).setdefault("stack", [])
        if stack:
            stack[-1] = ctx
        else:
            stack.append(ctx)


class Context(metaclass=_DefaultCtx):
    """A device: type ('cpu' or 'gpu') and index, usable as a `with` block to set the default."""

    devtype2id = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}
    devid2type = {v: k for k, v in devtype2id.items()}
    devstr2type, devtype2str = devtype2id, devid2type  # MXNet's names for the same tables
    _default = threading.local()

    def __init__(self, device_type, device_id: int = 0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if isinstance(device_type, int):
            device_type = self.devid2type.get(device_type, device_type)
        if device_type not in self.devtype2id:
            raise ContextError(f"unknown device type {device_type!r}; expected one of {sorted(self.devtype2id)}")
        if device_type in ("cpu_pinned", "cpu_shared"):
            device_type = "cpu"
        self.device_type = device_type
        self.device_id = int(device_id)

    @property
    def device_typeid(self) -> int:
        return self.devtype2id[self.device_type]

    def __eq__(self, other):
        return isinstance(other, Context) and (self.device_type, self.device_id) == (other.device_type, other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __enter__(self):
        # a per-thread stack, not state on the instance: the same Context may be entered twice
        vars(Context._default).setdefault("stack", []).append(self)
        return self

    def __exit__(self, *exc):
        Context._default.stack.pop()


_SHARED = {}  # (type, id) -> the Context that cpu()/gpu()/current_context() hand out


def _shared(device_type: str, device_id: int) -> Context:
    # One object per device, so that the per-op device checks are mostly identity tests.
    ctx = _SHARED.get((device_type, device_id))
    if ctx is None:
        ctx = _SHARED.setdefault((device_type, device_id), Context(device_type, device_id))
    return ctx


def cpu(device_id: int = 0) -> Context:
    """The CPU context (all CPU indices share host memory, as in MXNet)."""
    return _shared("cpu", device_id)


def gpu(device_id: int = 0) -> Context:
    """A GPU context; arrays on it are CuPy arrays (needs the optional `cupy` package)."""
    return _shared("gpu", device_id)


def cpu_pinned(device_id: int = 0) -> Context:
    return _shared("cpu", device_id)


def current_context() -> Context:
    """The default context of this thread (cpu(0) unless a `with ctx:` block says otherwise)."""
    stack = getattr(Context._default, "stack", None)
    return stack[-1] if stack else _shared("cpu", 0)


def is_current(ctx: Context) -> bool:
    """Whether `ctx` is this thread's default context already (the very object: `with ctx:` would
    change nothing).  A cheap test for paths that enter a context on every call."""
    stack = getattr(Context._default, "stack", None)
    return stack[-1] is ctx if stack else ctx is _SHARED.get(("cpu", 0))


def num_gpus() -> int:
    """How many GPUs CuPy can see (0 without CuPy)."""
    from . import backend
    return backend.of("gpu").count()


def gpu_memory_info(device_id: int = 0):
    """(free, total) bytes of GPU `device_id`'s memory (ContextError without CuPy)."""
    from . import backend
    return backend.of("gpu").memory_info(device_id)
