"""A minimal gluon Parameter / ParameterDict: named NDArrays a SymbolBlock binds."""
from __future__ import annotations

from collections import OrderedDict
from typing import Optional

from .. import ndarray as nd
from ..base import EmberError
from ..context import Context, cpu


class ParameterError(EmberError, ValueError):
    """A parameter was used before it had data, or was given data of the wrong shape."""


class Parameter:
    """One named parameter: its shape, its data array and MXNet's lr_mult/wd_mult/grad_req fields."""

    def __init__(self, name: str, shape=None, dtype=None, grad_req: str = "null"):
        self.name = name
        self.shape = tuple(shape) if shape is not None else None
        self.dtype = dtype
        self.grad_req = grad_req
        self.lr_mult = 1.0
        self.wd_mult = 1.0
        self._data = None

    def data(self, ctx: Optional[Context] = None):
        """The parameter's NDArray (moved to ctx if given)."""
        if self._data is None:
            raise ParameterError(f"parameter '{self.name}' has no data yet: load it (SymbolBlock.imports with a "
                                 "param_file, or load_parameters) or set_data it")
        return self._data if ctx is None else self._data.as_in_context(ctx)

    def set_data(self, data) -> None:
        """Replace the value (shape must match when the shape is known)."""
        if self.shape is not None and tuple(data.shape) != self.shape:
            raise ParameterError(f"parameter '{self.name}': shape {tuple(data.shape)} does not match {self.shape}")
        if self._data is None:
            self._data = data.copy() if hasattr(data, "copy") else nd.array(data)
            self.shape = tuple(self._data.shape)
            self.dtype = self._data.dtype
        else:
            self._data[:] = data

    def __repr__(self) -> str:
        return f"Parameter {self.name} (shape={self.shape}, dtype={self.dtype})"


class ParameterDict(OrderedDict):
    """name -> Parameter, with `load` for MXNet .params files (arg:/aux: prefixes stripped)."""

    def load(self, filename: str, ctx: Optional[Context] = None, allow_missing: bool = False,
             ignore_extra: bool = False) -> None:
        """Set every parameter from an mx.nd.save file."""
        loaded = nd.load(filename)
        if not isinstance(loaded, dict):
            from ..base import FormatError
            raise FormatError(f"{filename}: expected named arrays, found an unnamed list")
        values = {(k[4:] if k.startswith(("arg:", "aux:")) else k): v for k, v in loaded.items()}
        ctx = ctx if ctx is not None else cpu()
        if not ignore_extra:
            extra = sorted(set(values) - set(self))
            if extra:
                raise ParameterError(f"{filename} has parameters {extra} the block does not use "
                                     "(pass ignore_extra=True to skip them)")
        for name, param in self.items():
            if name in values:
                param.set_data(values[name].as_in_context(ctx))
            elif not allow_missing:
                raise ParameterError(f"parameter '{name}' is missing from {filename} "
                                     "(pass allow_missing=True to leave it unset)")
