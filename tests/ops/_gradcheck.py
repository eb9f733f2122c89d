"""Run registry ops eagerly on numpy arrays and check their gradients by finite differences.

`run` goes through the registry as executors do (parse attributes, infer shapes and
dtypes, preallocate outputs, look the kernel up, call it).  `F` is a gradient namespace
over it, so gradient functions can be evaluated without NDArray; `check_grad` compares
them with central differences of sum(output * random weights).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

from ember import ops
from ember.ops import OpContext


def run(name: str, inputs: Sequence, attrs: Optional[Dict] = None, seed: int = 0,
        is_train: bool = False, all_outputs: bool = False):
    """The visible outputs of op `name` (one array, or a list when it has several)."""
    op = ops.get(name)
    a = op.parse_attrs(dict(attrs or {}))
    inputs = [np.asarray(x) for x in inputs]
    n_in = len(op.input_names(a))
    assert len(inputs) == n_in, f"{name} takes {n_in} inputs, got {len(inputs)}"
    ins, outs, _ = op.shapes(a, [x.shape for x in inputs])
    for x, s in zip(inputs, ins):
        assert s is None or tuple(x.shape) == tuple(s), f"{name}: inferred input shape {s} != {x.shape}"
    _, out_dt, *_ = op.dtypes(a, [x.dtype for x in inputs])
    outputs = [np.full(s, 7, dtype=d) for s, d in zip(outs, out_dt)]  # garbage that must be overwritten
    ctx = OpContext(np, is_train=is_train, rng=np.random.default_rng(seed))
    op.kernel("cpu")(ctx, a, inputs, outputs, [])
    if all_outputs:
        return outputs
    nvis = op.visible_outputs(a)
    return outputs[0] if nvis == 1 else outputs[:nvis]


class NumpyF:
    """`F` for gradient functions: F.<op>(*arrays, **attrs) runs the registry op now."""

    def __getattr__(self, name):
        def call(*arrays, **attrs):
            return run(name, arrays, attrs)
        return call


F = NumpyF()


def grads(name: str, inputs: Sequence, attrs: Optional[Dict], out_grads: Sequence) -> List:
    """What the op's gradient function returns for these out_grads."""
    op = ops.get(name)
    a = op.parse_attrs(dict(attrs or {}))
    inputs = [np.asarray(x) for x in inputs]
    outs = run(name, inputs, attrs, all_outputs=True)
    return op.gradient(F, a, inputs, outs, list(out_grads))


def check_grad(name: str, inputs: Sequence, attrs: Optional[Dict] = None,
               wrt: Optional[Sequence[int]] = None, eps: float = 1e-6, rtol: float = 1e-5,
               atol: float = 1e-7, seed: int = 1) -> List:
    """Assert the registered gradient of `name` equals central differences (in float64)."""
    inputs = [np.asarray(x, dtype=np.float64) if np.asarray(x).dtype.kind == "f" else np.asarray(x)
              for x in inputs]
    outs = run(name, inputs, attrs, all_outputs=True)
    rng = np.random.default_rng(seed)
    weights = [rng.standard_normal(o.shape) for o in outs]
    if wrt is None:
        wrt = [i for i, x in enumerate(inputs) if x.dtype.kind == "f"]
    analytic = grads(name, inputs, attrs, weights)

    def objective(xs):
        res = run(name, xs, attrs, all_outputs=True)
        return sum(float(np.sum(o.astype(np.float64) * w)) for o, w in zip(res, weights))

    for k in wrt:
        xs = [x.copy() for x in inputs]
        flat = xs[k].reshape(-1)
        num = np.zeros(flat.size)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            fp = objective(xs)
            flat[i] = old - eps
            fm = objective(xs)
            flat[i] = old
            num[i] = (fp - fm) / (2 * eps)
        got = analytic[k]
        assert got is not None, f"{name}: no gradient for input {k}"
        got = np.asarray(got, dtype=np.float64)
        assert got.shape == inputs[k].shape, f"{name}: gradient {k} has shape {got.shape}, want {inputs[k].shape}"
        np.testing.assert_allclose(got.reshape(-1), num, rtol=rtol, atol=atol,
                                   err_msg=f"{name}: gradient of input {k}")
    return analytic
