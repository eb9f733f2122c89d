"""Lazy (row-wise) optimizer updates for row_sparse gradients, as MXNet 1.9.1's sparse kernels.

With a row_sparse gradient and `lazy_update=True`, MXNet's sgd_update, sgd_mom_update and
adam_update touch only the rows the gradient stores: those rows of the weight and of the states
(momentum, mean/var) are updated by the ordinary formula, every other row, weight decay included,
is left as it is.  ftrl_update does the same when the weight, z, n and the gradient are all
row_sparse, and _contrib_group_adagrad_update (GroupAdaGrad) always does it.  Other storage combinations (lazy_update=False, dense gradients) keep the storage
fallback: the dense formula on dense copies, MXNet's "standard" update.

These are the sparse kernels of those ops (ember.imperative.sparse_ops.SPARSE_KERNELS): they run
on the host after their inputs are ready, like the other sparse kernels.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from ..imperative import sparse_ops
from ..imperative.sparse_ndarray import RowSparseNDArray, from_dense_numpy
from ..ops.optimizer_updates import _adam, _ftrl, _group_adagrad, _sgd, _sgd_mom


def _lazy_kernel(formula: Callable, needs_all_row_sparse: bool = False) -> Callable:
    def kernel(inputs, attrs) -> Optional[object]:
        weight, grad, states = inputs[0], inputs[1], inputs[2:]
        if not isinstance(grad, RowSparseNDArray):
            return None
        if needs_all_row_sparse:
            if not all(isinstance(x, RowSparseNDArray) for x in inputs):
                return None
        elif not attrs.get("lazy_update", True):
            return None  # MXNet's standard update: the dense formula (storage fallback)
        values, rows = grad._host_components()
        w = weight.asnumpy().copy()
        state_np = [s.asnumpy().copy() for s in states]
        if rows.size:
            rows = rows.astype(np.int64)
            picked = [s[rows] for s in state_np]  # copies: the formula updates them in place
            w[rows] = formula(np, attrs, w[rows], values.astype(w.dtype, copy=False), picked)
            for s, p in zip(state_np, picked):
                s[rows] = p
        for s, new in zip(states, state_np):
            sparse_ops.assign(s, _as_stype(new, s))
        return _as_stype(w, weight)
    return kernel


def _as_stype(values: np.ndarray, like):
    """`values` as an NDArray with the storage type, device and dtype of `like`."""
    if like.stype == "default":
        from ..imperative.creation import array
        return array(values, ctx=like.context, dtype=like.dtype)
    return from_dense_numpy(like.stype, values.astype(like.dtype, copy=False), like.context)


for _name, _formula, _all_rsp in (("sgd_update", _sgd, False), ("sgd_mom_update", _sgd_mom, False),
                                  ("adam_update", _adam, False), ("ftrl_update", _ftrl, True),
                                  ("_contrib_group_adagrad_update", _group_adagrad, False)):
    sparse_ops.SPARSE_KERNELS.setdefault(_name, _lazy_kernel(_formula, _all_rsp))
