"""Errors and small helpers shared by every ember component."""
from __future__ import annotations

import ctypes
import numpy as _np


class EmberError(RuntimeError):
    """Base class of every error ember raises itself (MXNet's MXNetError, a RuntimeError).

    Subclasses also derive from the builtin class that fits the problem (ValueError, TypeError,
    FileNotFoundError, ...), so code catching either MXNet's class or Python's works."""


MXNetError = EmberError  # MXNet code catches mx.base.MXNetError

mx_real_t = _np.float32  # MXNet's default real type (mx.base.mx_real_t)


class EngineError(EmberError):
    """The engine was used wrongly (deleted variable, push after shutdown, ...)."""


class OperatorError(EmberError):
    """An operator was called with an unknown name, a bad attribute or inconsistent inputs."""


class ShapeError(OperatorError, ValueError):
    """Shapes of an operator's inputs are inconsistent."""


class DTypeError(OperatorError, TypeError):
    """Dtypes of an operator's inputs are inconsistent or unsupported."""


class IndexRangeError(OperatorError, IndexError):
    """An index array holds a value outside its axis (take/pick with mode 'raise')."""


class ContextError(EmberError, ValueError):
    """Arrays on different devices were mixed, or a device is not available."""


class FreedArrayError(EmberError):
    """An array whose storage was already released was used."""


class FormatError(EmberError, ValueError):
    """A model or parameter file is malformed or truncated."""


class ArgumentError(EmberError, TypeError, ValueError):
    """A call named an argument the callee does not have, or left out one it needs (MXNet raises
    MXNetError, TypeError or ValueError for these depending on the call: this is all three)."""


class MissingFileError(EmberError, FileNotFoundError):
    """A file to load does not exist (MXNet's MXNetError; also a FileNotFoundError/OSError).
    Made like OSError: MissingFileError(errno.ENOENT, "No such file or directory", path)."""

    def __init__(self, errno: int, strerror: str, filename: str):
        super().__init__(errno, strerror, filename)
        self.errno, self.strerror, self.filename = errno, strerror, filename

    def __str__(self):
        return f"[Errno {self.errno}] {self.strerror}: {self.filename!r}"


class NotImplementedForSymbol(EmberError, NotImplementedError):
    """An NDArray-only function was called on a Symbol (MXNet's mx.base.NotImplementedForSymbol)."""

    def __init__(self, function, alias=None, *args):
        super().__init__()
        self.function = getattr(function, "__name__", str(function))
        self.alias = alias
        self.args = [str(type(a)) for a in args]

    def __str__(self):
        msg = f"Function {self.function}"
        if self.alias:
            msg += f' (namely operator "{self.alias}")'
        if self.args:
            msg += f" with arguments ({', '.join(self.args)})"
        return msg + " is not implemented for Symbol and only available in NDArray."


def brief_names(names, limit: int = 10) -> str:
    """A readable list of names for an error message: the first `limit`, then how many more."""
    names = [str(n) for n in names]
    shown = ", ".join(repr(n) for n in names[:limit])
    if len(names) > limit:
        shown += f", ... ({len(names) - limit} more)"
    return "[" + shown + "]"


# -- MXNet's small Python helpers that user code and MXNet's own tests import from mx.base ----
NDArrayHandle = ctypes.c_void_p  # an NDArray's `handle`: `NDArray(handle)` is that array again
integer_types = (int, _np.integer)
numeric_types = (float, int, _np.generic)
string_types = (str,)


def py_str(x) -> str:
    """Text from the bytes (or str) MXNet's C API hands to callbacks."""
    return x.decode("utf-8") if isinstance(x, (bytes, bytearray)) or hasattr(x, "decode") else str(x)


def _as_list(obj) -> list:
    """`obj` as a list: lists stay, tuples become lists, anything else becomes [obj]."""
    if isinstance(obj, list):
        return obj
    if isinstance(obj, tuple):
        return list(obj)
    return [obj]


def data_dir_default() -> str:
    """Where MXNet keeps downloaded models and datasets when MXNET_HOME is not set (~/.mxnet)."""
    import os
    import platform
    if platform.system() == "Windows":
        return os.path.join(os.environ.get("APPDATA", ""), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir() -> str:
    """MXNet's data directory: $MXNET_HOME, else `data_dir_default()` (mx.base.data_dir)."""
    import os
    return os.getenv("MXNET_HOME", data_dir_default())
