"""`_npx_nonzero` (MXNet 1.9.1's `npx.nonzero`): the indices of the non-zero elements of `x` as an
(N, max(ndim, 1)) int64 array, one row per element in C order (numpy's `transpose(nonzero(x))`; a 0-d
input reads as its 1-d view, as numpy 1.x's nonzero).  N depends on the values: shape inference leaves it
unknown (`value_dependent_shape`), `mx.np.nonzero` / `npx.nonzero` size the output from the values, and a
hybridized block holding it runs op by op (MXNet's dynamic-shape CachedOp).  No gradient flows through
indices (zero for the input, as MXNet's)."""
from __future__ import annotations

import numpy as np

from .registry import OpDef, register

_I64 = np.dtype(np.int64)


def nonzero_indices(x: np.ndarray) -> np.ndarray:
    """The (N, max(ndim, 1)) int64 indices of x's non-zero elements, in C order."""
    x = np.asarray(x)
    return np.argwhere(x.reshape(1) if x.ndim == 0 else x).astype(np.int64, copy=False)


def _infer_shape(attrs, in_shapes):
    s = in_shapes[0]
    return in_shapes, [(None, None if s is None else max(len(s), 1))]


def _kernel(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    x = inputs[0] if xp is np else xp.asnumpy(inputs[0])
    found = nonzero_indices(x)
    outputs[0][...] = xp.asarray(found)


register(OpDef(
    name="_npx_nonzero", aliases=["_npi_nonzero"], inputs=["x"], outputs=["output"],
    infer_shape=_infer_shape, infer_type=lambda attrs, d: (list(d), [_I64]),
    kernels={"any": _kernel}, gradient=lambda F, a, i, o, g: [F.zeros_like(i[0])],
    probe_partial_shapes=False, value_dependent_shape=True,
    doc="Indices of the non-zero elements, one (ndim,) row each; the row count depends on the values."))
