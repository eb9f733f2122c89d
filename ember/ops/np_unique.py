"""`_npi_unique` (numpy.unique, MXNet 1.9.1's operator): the sorted unique values of `data` and, with
`return_index` / `return_inverse` / `return_counts`, the int64 first-occurrence indices, the inverse
indices (1-D, as MXNet 1.9.1 and numpy 1.x give them) and the counts, in that order.

`axis` None works on the flattened array; an axis takes the sub-arrays along it as the elements
(sorted lexicographically).  As MXNet: a 0-d input gives 1-element results (axis None, 0 or -1 only);
a zero-size input gives empty (0,) results; NaNs are all distinct.

How many values are unique depends on the data, so shape inference leaves those outputs unknown (the
inverse's length is known) and the op is marked `value_dependent_shape`: `mx.np.unique`
(ember/numpy/functions_counting.py) sizes the outputs from the values before running it, and a
hybridized block holding it runs op by op.  Its gradient is zero (MXNet's MakeZeroGradNodes).
"""
from __future__ import annotations

from typing import List

import numpy as np

from ..base import MXNetError
from .registry import Attr, OpDef, register

_NAME = "_npi_unique"
_FLAGS = ("return_index", "return_inverse", "return_counts")
_I64 = np.dtype(np.int64)


def _n_outputs(attrs) -> int:
    return 1 + sum(bool(attrs[f]) for f in _FLAGS)


def _output_names(attrs) -> List[str]:
    names = ["output"]
    names += [n for f, n in zip(_FLAGS, ("indices", "inverse", "counts")) if attrs[f]]
    return names


def _axis(attrs, ndim: int):
    """The normalised axis (None: flattened), checked as MXNet checks it."""
    axis = attrs["axis"]
    if axis is None:
        return None
    if ndim == 0:
        if axis not in (0, -1):
            raise MXNetError(f"{_NAME}: Axis can only be -1 or 0 for scalor tensor, got {axis}")
        return None
    if not -ndim <= axis < ndim:
        raise MXNetError(f"{_NAME}: Axis should be in the range of [{-ndim}, {ndim - 1}] where {ndim} is the rank "
                         f"of input tensor, got {axis}")
    return axis % ndim


def unique_results(x: np.ndarray, attrs: dict) -> List[np.ndarray]:
    """The op's outputs for the host array `x` (numpy's unique with MXNet 1.9.1's shapes)."""
    axis = _axis(attrs, x.ndim)
    extra = [attrs[f] for f in _FLAGS]
    if x.ndim == 0:
        res = [x.reshape(1), np.zeros(1, _I64), np.zeros(1, _I64), np.ones(1, _I64)]
    elif x.size == 0:
        res = [np.zeros(0, x.dtype)] + [np.zeros(0, _I64)] * 3
    elif axis is None:
        res = list(np.unique(x.reshape(-1), True, True, True, equal_nan=False))
    else:
        res = list(np.unique(x, True, True, True, axis=axis))
    res = [res[0].astype(x.dtype, copy=False)] + [r.reshape(-1).astype(_I64, copy=False) for r in res[1:]]
    return [res[0]] + [r for r, want in zip(res[1:], extra) if want]


def _infer_shape(attrs, in_shapes):
    s = in_shapes[0]
    n = _n_outputs(attrs)
    if s is None or None in s:
        return in_shapes, [None] * n
    if len(s) == 0:
        return in_shapes, [(1,)] * n
    if 0 in s:
        _axis(attrs, len(s))
        return in_shapes, [(0,)] * n
    axis = _axis(attrs, len(s))
    out = [(None,) if axis is None else tuple(None if i == axis else d for i, d in enumerate(s))]
    length = int(np.prod(s)) if axis is None else s[axis]
    for flag in _FLAGS:
        if attrs[flag]:  # the inverse has one entry per element; the others one per unique value
            out.append((length,) if flag == "return_inverse" else (None,))
    return in_shapes, out


def _infer_type(attrs, in_dtypes):
    return list(in_dtypes), [in_dtypes[0]] + [_I64] * (_n_outputs(attrs) - 1)


def _kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x = inputs[0] if xp is np else xp.asnumpy(inputs[0])  # sorting-based: computed on the host
    for dst, value in zip(outputs, unique_results(x, attrs)):
        dst[...] = xp.asarray(value)


register(OpDef(
    name=_NAME,
    attrs={"return_index": Attr("bool", False), "return_inverse": Attr("bool", False),
           "return_counts": Attr("bool", False), "axis": Attr("int_or_none", None)},
    inputs=["data"], outputs=_output_names, infer_shape=_infer_shape, infer_type=_infer_type,
    kernels={"any": _kernel}, gradient=lambda F, a, i, o, g: [F.zeros_like(i[0])],
    probe_partial_shapes=False, value_dependent_shape=True,
    doc="numpy.unique: sorted unique values (and first indices, inverse, counts); output sizes depend on values."))
