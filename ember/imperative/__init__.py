"""The imperative core: NDArray, the invoke path, autograd tape and kernel resources.

    NDArray                       asynchronous array; `_data`, `_chunk` (`.var`), `var`, `_wrap`
    invoke(op, inputs, attrs, out=None, ctx=None)
                                  run one registry op now (shape/dtype inferred at the call,
                                  kernel pushed to the engine), return its visible outputs
    resources.rng(ctx)            (var, numpy Generator) of a device
"""
from __future__ import annotations

from . import ndarray as _ndarray, invoke as _invoke  # (the module: `invoke` below is its function)
from .ndarray import NDArray  # noqa: F401
from .invoke import call, invoke, run  # noqa: F401
from . import copying as _copying, dlpack as _dlpack, fastpath as _fastpath, indexing as _indexing
from . import autograd_state, resources, storage  # noqa: F401
from .creation import (arange, array, empty, from_numpy, full, ones, ones_like, waitall,  # noqa: F401
                       zeros, zeros_like)
from .dlpack import from_dlpack  # noqa: F401


def _wire() -> None:
    """Connect the modules that build on NDArray back to it (none of them is imported by the one it
    builds on, so there is no import cycle): NDArray's operators are the tiny-op path's methods,
    its op methods call invoke.call, which tries the tiny-op path's plans first."""
    for method, (array_op, scalar_op, in_place) in _ndarray.OPERATORS.items():
        setattr(NDArray, method, _fastpath.operator(array_op, scalar_op, in_place))
    for alias, method in _ndarray.OPERATOR_ALIASES.items():
        setattr(NDArray, alias, getattr(NDArray, method))
    _ndarray._call = _invoke.call
    _ndarray.indexing, _ndarray.copying, _ndarray.dlpack = _indexing, _copying, _dlpack
    _invoke.try_plan = _fastpath.kernel_call
    _invoke.try_plan_out = _fastpath.kernel_call_out


_wire()
