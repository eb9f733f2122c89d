"""Errors and small helpers shared by every ember component."""
from __future__ import annotations

import numpy as _np


class EmberError(Exception):
    """Base class of every error ember raises itself (MXNet's MXNetError)."""


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


class ContextError(EmberError, ValueError):
    """Arrays on different devices were mixed, or a device is not available."""


class FreedArrayError(EmberError):
    """An array whose storage was already released was used."""


class FormatError(EmberError, ValueError):
    """A model or parameter file is malformed or truncated."""
