"""Test helpers for the NN operators: run registry ops on numpy arrays and check gradients.

`run_op` goes through the registry exactly as the executors do (parse attributes,
infer shapes and dtypes, preallocate outputs, call the kernel), without NDArray.
`NumpyF` is an `F` namespace on top of it so gradient functions can be called
directly; `check_grad` compares them with central finite differences.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from ember import ops
from ember.ops import OpContext


def run_op(name: str, inputs: Sequence[np.ndarray], attrs: Optional[Dict] = None,
           aux: Optional[List[np.ndarray]] = None, is_train: bool = False, seed: int = 0,
           dtype_check: bool = True) -> List[np.ndarray]:
    """All outputs (visible and hidden) of op `name` on numpy `inputs`; `aux` is updated in place."""
    op = ops.get(name)
    a = op.parse_attrs(dict(attrs or {}))
    inputs = [np.asarray(x) for x in inputs]
    n_in = len(op.input_names(a))
    assert len(inputs) == n_in, f"{name} takes {n_in} inputs, got {len(inputs)}"
    aux = list(aux) if aux is not None else []
    ins, outs, auxs = op.shapes(a, [x.shape for x in inputs], [x.shape for x in aux] if aux else None)
    for x, s in zip(inputs, ins):
        assert tuple(x.shape) == tuple(s), f"{name}: inferred input shape {s} != given {x.shape}"
    _, out_dt, _ = op.dtypes(a, [x.dtype for x in inputs])
    outputs = [np.full(s, np.nan, dtype=d) if np.dtype(d).kind == "f" else np.zeros(s, dtype=d)
               for s, d in zip(outs, out_dt)]
    ctx = OpContext(np, is_train=is_train, rng=np.random.default_rng(seed))
    op.kernel("cpu")(ctx, a, inputs, outputs, aux)
    return outputs


class NumpyF:
    """An `F` namespace that runs registry ops eagerly on numpy arrays."""

    def __init__(self, is_train: bool = True):
        self.is_train = is_train

    def __getattr__(self, name):
        op = ops.get(name)

        def call(*arrays, **attrs):
            outs = run_op(name, arrays, attrs, is_train=self.is_train)
            nvis = op.visible_outputs(op.parse_attrs(attrs))
            return outs[0] if nvis == 1 else outs[:nvis]
        return call


def analytic_grads(name: str, inputs, attrs, out_grads, is_train: bool = True, aux=None, seed: int = 0):
    """The gradient function's result for the given visible out_grads (hidden ones get zeros)."""
    op = ops.get(name)
    a = op.parse_attrs(dict(attrs or {}))
    aux_copy = [x.copy() for x in aux] if aux is not None else None
    outs = run_op(name, inputs, attrs, aux=aux_copy, is_train=is_train, seed=seed)
    full = list(out_grads) + [np.zeros_like(o) for o in outs[len(out_grads):]]
    return op.gradient(NumpyF(is_train), a, list(inputs), outs, full)


def numeric_grads(name: str, inputs, attrs, out_grads, wrt: Sequence[int], is_train: bool = True,
                  aux=None, eps: float = 1e-6, seed: int = 0):
    """Central finite differences of sum(out_i * out_grad_i) w.r.t. the inputs listed in `wrt`."""
    def objective(xs):
        aux_copy = [x.copy() for x in aux] if aux is not None else None
        outs = run_op(name, xs, attrs, aux=aux_copy, is_train=is_train, seed=seed)
        return sum(float(np.sum(o.astype(np.float64) * g)) for o, g in zip(outs, out_grads))

    grads = []
    for k in wrt:
        xs = [x.copy() for x in inputs]
        g = np.zeros(xs[k].shape, dtype=np.float64)
        flat = xs[k].reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            fp = objective(xs)
            flat[i] = old - eps
            fm = objective(xs)
            flat[i] = old
            g.reshape(-1)[i] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def check_grad(name: str, inputs, attrs=None, wrt: Optional[Sequence[int]] = None, is_train: bool = True,
               aux=None, rtol: float = 1e-4, atol: float = 1e-6, seed: int = 0, out_grads=None):
    """Assert the registered gradient of `name` matches finite differences (inputs in float64)."""
    inputs = [np.asarray(x, dtype=np.float64) if np.asarray(x).dtype.kind == "f" else np.asarray(x)
              for x in inputs]
    op = ops.get(name)
    a = op.parse_attrs(dict(attrs or {}))
    outs = run_op(name, inputs, attrs, aux=[x.copy() for x in aux] if aux else None, is_train=is_train, seed=seed)
    nvis = op.visible_outputs(a)
    rng = np.random.default_rng(1234)
    if out_grads is None:
        out_grads = [rng.standard_normal(o.shape) for o in outs[:nvis]]
    if wrt is None:
        wrt = [i for i, x in enumerate(inputs) if x.dtype.kind == "f"]
    ana = analytic_grads(name, inputs, attrs, out_grads, is_train=is_train, aux=aux, seed=seed)
    num = numeric_grads(name, inputs, attrs, out_grads, wrt, is_train=is_train, aux=aux, seed=seed)
    for k, g_num in zip(wrt, num):
        g_ana = ana[k]
        assert g_ana is not None, f"{name}: no gradient for input {k}"
        np.testing.assert_allclose(np.asarray(g_ana, dtype=np.float64), g_num, rtol=rtol, atol=atol,
                                   err_msg=f"{name}: gradient of input {k}")
    return ana
