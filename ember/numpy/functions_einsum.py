"""`mx.np.einsum` on the registry operator `_npi_einsum` (ember/ops/np_einsum.py): the same code runs on
arrays and on np symbols (`F.np.einsum` in a hybridized block), and autograd and the symbolic gradient
pass differentiate it w.r.t. every operand through `_backward_npi_einsum`.

As MXNet 1.9.1: every subscript form numpy takes as a string (implicit output, `->`, `...`, repeated
labels, size-1 broadcasting), operands of one dtype (the result has it), `optimize` True/False; not the
sublist form `einsum(op0, sublist0, ...)`, nor the 'greedy'/'optimal' strings.  A bad subscript string
is an MXNetError naming the problem.
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as _np

from ..base import MXNetError
from ..symbolic.np_symbol import _Symbol as _NpSymbol
from .functions import _call, _deliver
from .multiarray import ndarray

__all__ = ["einsum"]


def einsum(subscripts: str, *operands: Union[ndarray, _NpSymbol], out: Optional[ndarray] = None,
           optimize: bool = False) -> Union[ndarray, _NpSymbol]:
    """numpy.einsum: the Einstein summation `subscripts` of `operands` (mx.np arrays, or np symbols while
    a block is traced), into `out` when given; `optimize=True` contracts in numpy's greedy order."""
    if not isinstance(subscripts, str):
        raise MXNetError("einsum: subscripts must be a string (the sublist form einsum(op0, sublist0, ...) is "
                         f"not supported), got {type(subscripts).__name__}")
    if not operands:
        raise MXNetError("einsum: No input operands")
    for i, x in enumerate(operands):
        if not isinstance(x, (ndarray, _NpSymbol)):
            raise TypeError(f"einsum: operand {i} must be an mx.np.ndarray, got {type(x).__name__}")
    if isinstance(optimize, str) or not isinstance(optimize, (bool, int, _np.bool_, _np.integer)):
        # MXNet passes int(optimize) on: only a truth value works (no 'greedy' / 'optimal' paths)
        raise ValueError(f"einsum: optimize must be True or False, got {optimize!r}")
    attrs = {"subscripts": subscripts, "num_args": len(operands), "optimize": int(bool(optimize))}
    return _deliver(_call("_npi_einsum", operands, attrs), out)
