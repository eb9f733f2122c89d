"""The imperative core: NDArray, the invoke path, autograd tape and kernel resources.

    NDArray                       asynchronous array; `_data`, `_chunk` (`.var`), `var`, `_wrap`
    invoke(op, inputs, attrs, out=None, ctx=None)
                                  run one registry op now (shape/dtype inferred at the call,
                                  kernel pushed to the engine), return its visible outputs
    resources.rng(ctx)            (var, numpy Generator) of a device
"""
from __future__ import annotations

from .ndarray import NDArray  # noqa: F401
from .invoke import call, invoke, run  # noqa: F401
from . import autograd_state, resources, storage  # noqa: F401
from .creation import (arange, array, empty, from_numpy, full, ones, ones_like, waitall,  # noqa: F401
                       zeros, zeros_like)
from .dlpack import from_dlpack  # noqa: F401
