"""`mx.util`: MXNet 1.9.1's switches for NumPy shape and NumPy array semantics, and env access.

NumPy *shape* semantics (`set_np_shape`, `np_shape`, `use_np_shape`): in MXNet 1.x legacy
mode a 0 in a shape means "unknown" and `()` means "unknown shape"; with the flag on, `()` is
a scalar's shape, 0 is a zero-size dimension and -1 marks an unknown one.  In ember:

* imperative NDArrays of 0-d and zero-size shapes exist in either mode (from data, `empty`,
  `*_like`), but `zeros`/`ones`/`full` refuse such shapes while the flag is off, as MXNet's do;
* `mx.nd.save` writes version-3 records (MXNet's "saved in np-shape mode") while it is on;
* symbolic shape inference reads the flag through `is_np_shape()`; which dimension value it
  treats as unknown in each mode is decided in `ember/symbolic/infer.py`.

As in MXNet, `set_np_shape(True)` turns the flag on for the calling thread and `set_np_shape(2)`
for every thread; turning it off clears both.

NumPy *array* semantics (`np_array`, `use_np_array`, `use_np`, `set_np`) is a per-thread flag,
as in MXNet: while it is on, Gluon creates parameters as `mx.np.ndarray`s, blocks return
`mx.np.ndarray`s (and `mx.sym.np` symbols when traced), `gluon.utils.split_data` and the
DataLoader's default batchify give `mx.np.ndarray`s.  See `docs/numpy.md` for how ember's own
Gluon layers, written against `mx.nd` semantics, run under it.  `use_np` on a class runs every
method and property of it (inherited ones included) under both flags.
"""
from __future__ import annotations

import functools
import inspect
import logging
import os
import threading
from typing import Callable, Optional

from .base import MXNetError

__all__ = ["is_np_shape", "set_np_shape", "np_shape", "use_np_shape", "is_np_array", "np_array",
           "use_np_array", "use_np", "set_np", "reset_np", "getenv", "setenv", "get_gpu_count",
           "set_module"]

# MXNet's NumpyShape flag values (set_np_shape's argument): off, on for this thread, on for all.
NP_SHAPE_OFF, NP_SHAPE_THREAD_LOCAL_ON, NP_SHAPE_GLOBAL_ON = 0, 1, 2

class _ThreadFlags(threading.local):
    """This thread's flags (class attributes are the defaults every new thread starts from)."""

    np_shape = False
    np_array_scope = None


_state = _ThreadFlags()
_np_shape_global = False         # set by set_np_shape(2), seen by every thread
_np_shape_logged = False


# ---------------------------------------------------------------------------- NumPy shape semantics

def is_np_shape() -> bool:
    """Whether NumPy shape semantics is on for the calling thread (or globally)."""
    return _np_shape_global or _state.np_shape


def set_np_shape(active) -> bool:
    """Turn NumPy shape semantics on (True/1: this thread; 2: every thread) or off; returns the previous state.

    Raises ValueError when turning it off while NumPy array semantics is on (as MXNet).
    """
    global _np_shape_global, _np_shape_logged
    flag = int(active)
    if flag not in (NP_SHAPE_OFF, NP_SHAPE_THREAD_LOCAL_ON, NP_SHAPE_GLOBAL_ON):
        raise MXNetError(f"set_np_shape: invalid flag {active!r}; expected False/0 (off), "
                         "True/1 (on for this thread) or 2 (on for every thread)")
    if flag:
        if not _np_shape_logged:
            logging.info("NumPy-shape semantics has been activated in your code: () is a scalar's "
                         "shape and 0 a zero-size dimension.")
            _np_shape_logged = True
    elif is_np_array():
        raise ValueError("Deactivating NumPy shape semantics while NumPy array semantics is still active "
                         "is not allowed. Please consider calling `npx.reset_np()` to deactivate both of them.")
    previous = is_np_shape()
    if flag == NP_SHAPE_OFF:
        _np_shape_global = False
        _state.np_shape = False
    else:
        _state.np_shape = True
        if flag == NP_SHAPE_GLOBAL_ON:
            _np_shape_global = True
    return previous


class _NumpyShapeScope:
    """`with np_shape(active):` body runs with NumPy shape semantics `active` (None: unchanged)."""

    def __init__(self, active: Optional[bool]):
        self._enter_state = active
        self._prev_state: Optional[bool] = None

    def __enter__(self):
        if self._enter_state is not None:
            self._prev_state = set_np_shape(self._enter_state)
        return self

    def __exit__(self, ptype, value, trace):
        if self._enter_state is not None and self._prev_state != self._enter_state:
            set_np_shape(self._prev_state)


def np_shape(active: bool = True) -> _NumpyShapeScope:
    """A scope (`with mx.np_shape(True): ...`) with NumPy shape semantics turned on or off."""
    return _NumpyShapeScope(active)


def _scoped(func, scope_factory: Callable, decorator_name: str):
    """`func` (a callable, or each method/property of a class) run inside `scope_factory()`."""
    if inspect.isclass(func):
        members = inspect.getmembers(
            func, predicate=lambda f: inspect.isfunction(f) or inspect.ismethod(f) or isinstance(f, property))
        for name, member in members:
            if isinstance(member, property):
                setattr(func, name, property(_scoped(member.__get__, scope_factory, decorator_name),
                                             member.__set__, member.__delattr__, member.__doc__))
            else:
                setattr(func, name, _scoped(member, scope_factory, decorator_name))
        return func
    if callable(func):
        @functools.wraps(func)
        def scoped_call(*args, **kwargs):
            with scope_factory():
                return func(*args, **kwargs)
        return scoped_call
    raise TypeError(f"{decorator_name} can only decorate classes and callable objects, "
                    f"while received a {type(func)}")


def use_np_shape(func):
    """Decorator: the function (or every method and property of the class) runs with NumPy shape semantics."""
    return _scoped(func, lambda: np_shape(True), "use_np_shape")


# ---------------------------------------------------------------------------- NumPy array semantics

class _NumpyArrayScope:
    """`with np_array(active):` body runs with NumPy array semantics on or off (this thread)."""

    def __init__(self, active: bool):
        self._is_np_array = bool(active)
        self._old_scope = None

    def __enter__(self):
        self._old_scope = _state.np_array_scope
        _state.np_array_scope = self
        return self

    def __exit__(self, ptype, value, trace):
        _state.np_array_scope = self._old_scope


def np_array(active: bool = True) -> _NumpyArrayScope:
    """A scope (`with mx.util.np_array(True): ...`) with NumPy array semantics on or off."""
    return _NumpyArrayScope(active)


def is_np_array() -> bool:
    """Whether NumPy array semantics is on for the calling thread."""
    scope = _state.np_array_scope
    return scope is not None and scope._is_np_array


def use_np_array(func):
    """Decorator: the function (or every method and property of the class) runs with NumPy array semantics."""
    return _scoped(func, lambda: np_array(True), "use_np_array")


def use_np(func):
    """Decorator: NumPy shape and NumPy array semantics together (`use_np_shape(use_np_array(func))`)."""
    return use_np_shape(use_np_array(func))


def _set_np_array(active: bool) -> bool:
    previous = is_np_array()
    _state.np_array_scope = _NumpyArrayScope(active) if active else None
    return previous


def set_np(shape: bool = True, array: bool = True, dtype: bool = False) -> None:
    """Set NumPy shape and array semantics for this thread (`npx.set_np`); array semantics needs shape semantics.

    `dtype=True` (MXNet's float64 default dtype for mx.np creation) is not supported: ember's
    mx.np creates float32 by default, as MXNet does with dtype=False."""
    if not shape and array:
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics.")
    if dtype:
        raise MXNetError("set_np(dtype=True) (float64 as mx.np's default dtype) is not supported by ember; "
                         "pass dtype= to the creation functions instead")
    if array:  # shape first: turning shape semantics off while array semantics is on is refused
        set_np_shape(shape)
        _set_np_array(array)
    else:
        _set_np_array(array)
        set_np_shape(shape)


def reset_np() -> None:
    """Turn NumPy shape and array semantics off."""
    set_np(shape=False, array=False)


# ---------------------------------------------------------------------------- environment, devices

def getenv(name: str) -> Optional[str]:
    """The value of environment variable `name` as the runtime sees it, or None if unset."""
    return os.environ.get(name)


def setenv(name: str, value: Optional[str]) -> None:
    """Set (or, with None, unset) environment variable `name` for this process."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)


def get_gpu_count() -> int:
    """The number of GPUs ember can use."""
    from .context import num_gpus
    return num_gpus()


def set_module(module: Optional[str]):
    """Decorator setting `__module__` of a function or class (what MXNet's API modules use)."""
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator
