"""Helpers shared by the neural-network operator modules (`nn_*.py`).

Attribute normalisation (kernel/stride/pad tuples), shape checks that raise
errors naming the operator, the `_backward_<Name>` gradient plumbing, window
views for convolution/pooling, and a few maths functions numpy lacks.
"""
from __future__ import annotations

import math
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from ..base import OperatorError, ShapeError
from ..engine.native import gemm_splits as _GEMM_SPLITS, sgemm_f32

Shape = Tuple[int, ...]


# -- attribute helpers ---------------------------------------------------------
def spatial(op: str, name: str, value: Sequence[int], ndim: int, default: int) -> Tuple[int, ...]:
    """A per-spatial-dimension tuple: () means `default` everywhere; otherwise exactly `ndim` entries."""
    if value is None or len(value) == 0:
        return (default,) * ndim
    if len(value) != ndim:
        raise OperatorError(f"{op}: attribute '{name}' has {len(value)} entries {tuple(value)} "
                            f"but the kernel is {ndim}-D")
    if any(v is None for v in value):
        raise OperatorError(f"{op}: attribute '{name}' must hold integers, got {tuple(value)}")
    return tuple(int(v) for v in value)


def positive(op: str, name: str, values: Sequence[int], allow_zero: bool = False) -> None:
    """Raise OperatorError unless every entry is > 0 (or >= 0)."""
    for v in values:
        if v < 0 or (v == 0 and not allow_zero):
            need = ">= 0" if allow_zero else "> 0"
            raise OperatorError(f"{op}: attribute '{name}' must be {need}, got {tuple(values)}")


def parse_optional_bool(op: str, name: str, value) -> Optional[bool]:
    """Parse an 'any' attribute holding MXNet's optional boolean."""
    if value is None:
        return None
    if isinstance(value, str):
        s = value.strip().lower()
        if s in ("none", ""):
            return None
        if s in ("true", "1"):
            return True
        if s in ("false", "0"):
            return False
        raise OperatorError(f"{op}: attribute '{name}' must be a boolean or None, got {value!r}")
    if isinstance(value, (bool, np.bool_, int, np.integer)):
        return bool(value)
    raise OperatorError(f"{op}: attribute '{name}' must be a boolean or None, got {value!r}")


# -- shape helpers -------------------------------------------------------------
def data_axis(op: str, axis: int, ndim: int) -> int:
    """`axis` of ndim-D data as an index in [0, ndim) (negative values count from the end)."""
    if not -ndim <= axis < ndim:
        raise ShapeError(f"{op}: axis {axis} is out of range for {ndim}-D data")
    return axis % ndim


def merge(op: str, what: str, given: Optional[Shape], inferred: Shape) -> Shape:
    """The shape `given` (possibly unknown or partially 0) reconciled with `inferred`."""
    inferred = tuple(int(v) for v in inferred)
    if given is None:
        return inferred
    given = tuple(given)
    if len(given) == 0:
        return inferred
    if len(given) != len(inferred) or any(g not in (0, None) and g != i for g, i in zip(given, inferred)):
        raise ShapeError(f"{op}: {what} has shape {given} but {inferred} is expected")
    return inferred


def known(shape: Optional[Shape]) -> bool:
    """True when a shape is fully known (MXNet marks unknown dims with 0)."""
    return shape is not None and len(shape) > 0 and all(v not in (0, None) for v in shape)


def float_types(op: str, attrs: dict, in_dtypes: list, n_out: int, n_aux: int = 0, what: str = "input"):
    """Dtype inference for float ops: all inputs, outputs and aux share one float dtype (`what`: the
    inputs' name in the error)."""
    dt = next((d for d in in_dtypes if d is not None), None)
    if dt is not None:
        dt = np.dtype(dt)
        if dt.kind != "f":
            raise OperatorError(f"{op}: floating point {what} expected, got {dt.name}")
        for d in in_dtypes:
            if d is not None and np.dtype(d) != dt:
                raise OperatorError(f"{op}: inputs mix dtypes {np.dtype(d).name} and {dt.name}")
    ins = [dt if d is None else d for d in in_dtypes]
    return ins, [dt] * n_out, [dt] * n_aux


def float_type_rule(op: str, n_out: int = 1) -> Callable:
    """infer_type of an op on float data: float_types' input and output dtypes."""
    return lambda attrs, in_dtypes: float_types(op, attrs, in_dtypes, n_out)[:2]


def matmul_into(xp, a, b, out, bias=None) -> None:
    """out[...] = a @ b (+ bias, broadcast over out's rows), straight into `out`'s buffer when it is
    contiguous (no temporary); through the native sgemm when that is oneMKL's, split over the CPU team
    (native.gemm_splits: faster than numpy's OpenBLAS), for 2-D float32 operands stored plain or
    transposed, each part of the product then adding the bias to its own block."""
    if xp is np and out.ndim == 2 and _native_sgemm(a, b, out, bias):
        return
    if out.flags.c_contiguous and out.shape == a.shape[:-1] + b.shape[-1:]:
        xp.matmul(a, b, out=out)
    else:
        out[...] = xp.matmul(a, b).reshape(out.shape)
    if bias is not None:
        out += bias


def _stored(x):
    """(C-contiguous array, transposed) holding x, a 2-D array or a transposed view of one; None otherwise."""
    if x.flags.c_contiguous:
        return x, False
    if x.T.flags.c_contiguous:
        return x.T, True
    return None


def _native_sgemm(a, b, out, bias=None) -> bool:
    if not (_GEMM_SPLITS() and a.ndim == 2 and b.ndim == 2 and a.dtype == b.dtype == out.dtype == np.float32
            and (bias is None or bias.dtype == np.float32)):
        return False
    sa, sb = _stored(a), _stored(b)
    return sa is not None and sb is not None and sgemm_f32(sa[0], sb[0], out, sa[1], sb[1], 0.0, bias)


def scatter_add(xp, target, index, values) -> None:
    """target[index] += values with repeated indices accumulating (numpy's add.at, cupyx on GPU)."""
    if xp is np:
        np.add.at(target, index, values)
        return
    try:
        import cupyx  # type: ignore
        cupyx.scatter_add(target, index, values)
    except ImportError:  # pragma: no cover - another array module with ufunc.at
        xp.add.at(target, index, values)


def float32_on_cpu(kernel: Callable) -> Callable:
    """Run a GEMM-heavy kernel in float32 when numpy gets float16 arrays (numpy has no float16 BLAS:
    its float16 matmul is ~100x slower); results are cast back into the float16 outputs."""
    def wrapped(ctx, attrs, inputs, outputs, aux):
        if ctx.xp is not np or not any(getattr(a, "dtype", None) == np.float16 for a in inputs):
            return kernel(ctx, attrs, inputs, outputs, aux)
        up = [a.astype(np.float32) if a.dtype == np.float16 else a for a in inputs]
        tmp = [np.empty(o.shape, np.float32) if o.dtype == np.float16 else o for o in outputs]
        kernel(ctx, attrs, up, tmp, aux)
        for o, t in zip(outputs, tmp):
            if t is not o:
                o[...] = t
    wrapped.__doc__ = kernel.__doc__
    wrapped.__name__ = getattr(kernel, "__name__", "kernel")
    return wrapped


# -- gradients through F ---------------------------------------------------------
def call_op(F, name: str, arrays: Sequence, attrs: dict, n_out: int) -> List:
    """Call registry op `name` through `F` and return its outputs as a list of `n_out` entries."""
    res = getattr(F, name)(*arrays, **attrs)
    if n_out == 1:
        if isinstance(res, (list, tuple)):
            return [res[0]]
        return [res]
    return [res[i] for i in range(n_out)]


def backward_via(bwd_name: str, build: Callable[[dict, list, list, list], Sequence],
                 grads_for: Callable[[dict], Sequence[bool]]) -> Callable:
    """A gradient function that calls the dedicated op `bwd_name`.

    build(attrs, inputs, outputs, out_grads) lists the arrays passed to the backward op;
    grads_for(attrs) says, per forward input, whether the backward op returns its gradient
    (in order); inputs without one get None.
    """
    def gradient(F, attrs, inputs, outputs, out_grads):
        wanted = list(grads_for(attrs))
        res = call_op(F, bwd_name, build(attrs, inputs, outputs, out_grads), attrs, sum(wanted))
        it = iter(res)
        return [next(it) if w else None for w in wanted]
    gradient.__doc__ = f"Gradient through the dedicated kernel op {bwd_name}."
    return gradient


# -- maths ------------------------------------------------------------------------
try:  # scipy's erf is exact to float64 precision; fall back to a rational approximation without it
    from scipy.special import erf as _scipy_erf  # type: ignore
except Exception:  # pragma: no cover - depends on the environment
    _scipy_erf = None


def erf(xp, x):
    """The error function, elementwise, in x's dtype (scipy/cupyx when present)."""
    if xp is np and _scipy_erf is not None:
        return _scipy_erf(x).astype(x.dtype, copy=False)
    if xp is not np:
        try:
            from cupyx.scipy.special import erf as cu_erf  # type: ignore
            return cu_erf(x)
        except Exception:  # pragma: no cover
            pass
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): enough for float32 work
    s = xp.sign(x)
    a = xp.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (s * (1.0 - poly * xp.exp(-a * a))).astype(x.dtype, copy=False)


SQRT_2 = math.sqrt(2.0)
INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def sigmoid(xp, x, out=None):
    """The logistic function 1 / (1 + e^-x); exp overflowing to inf for x < -88 gives the right 0."""
    with np.errstate(over="ignore"):
        r = xp.exp(-x)
    r += 1
    if out is None:
        return xp.reciprocal(r, out=r).astype(x.dtype, copy=False)
    xp.reciprocal(r, out=out)
    return out


def softplus(xp, x):
    """log(1 + exp(x)) without overflow."""
    return xp.logaddexp(0, x).astype(x.dtype, copy=False)
