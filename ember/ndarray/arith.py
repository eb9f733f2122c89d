"""MXNet's elementwise helpers (`mx.nd.add`, `maximum`, ...) taking NDArrays or scalars on either side."""
from __future__ import annotations

import operator

from ..imperative.invoke import call
from ..imperative.ndarray import NDArray, _is_scalar


def _ufunc(lhs, rhs, array_op: str, scalar_op: str, rscalar_op: str, py_fn):
    if isinstance(lhs, NDArray):
        if isinstance(rhs, NDArray):
            return call(array_op, (lhs, rhs), {})
        if _is_scalar(rhs):
            return call(scalar_op, (lhs,), {"scalar": float(rhs)})
    elif _is_scalar(lhs):
        if isinstance(rhs, NDArray):
            return call(rscalar_op, (rhs,), {"scalar": float(lhs)})
        if _is_scalar(rhs):
            return py_fn(lhs, rhs)
    raise TypeError(f"{array_op}: operands must be NDArrays or scalars, got {type(lhs).__name__} "
                    f"and {type(rhs).__name__}")


def add(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_add", "_plus_scalar", "_plus_scalar", operator.add)


def subtract(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_sub", "_minus_scalar", "_rminus_scalar", operator.sub)


def multiply(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_mul", "_mul_scalar", "_mul_scalar", operator.mul)


def divide(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_div", "_div_scalar", "_rdiv_scalar", operator.truediv)


true_divide = divide


def modulo(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_mod", "_mod_scalar", "_rmod_scalar", operator.mod)


def power(base, exp):
    return _ufunc(base, exp, "broadcast_power", "_power_scalar", "_rpower_scalar", operator.pow)


def maximum(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_maximum", "_maximum_scalar", "_maximum_scalar", max)


def minimum(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_minimum", "_minimum_scalar", "_minimum_scalar", min)


def equal(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_equal", "_equal_scalar", "_equal_scalar",
                  lambda a, b: float(a == b))


def not_equal(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_not_equal", "_not_equal_scalar", "_not_equal_scalar",
                  lambda a, b: float(a != b))


def greater(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_greater", "_greater_scalar", "_lesser_scalar",
                  lambda a, b: float(a > b))


def greater_equal(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_greater_equal", "_greater_equal_scalar", "_lesser_equal_scalar",
                  lambda a, b: float(a >= b))


def lesser(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_lesser", "_lesser_scalar", "_greater_scalar",
                  lambda a, b: float(a < b))


def lesser_equal(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_lesser_equal", "_lesser_equal_scalar", "_greater_equal_scalar",
                  lambda a, b: float(a <= b))


def logical_and(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_logical_and", "_logical_and_scalar", "_logical_and_scalar",
                  lambda a, b: float(bool(a) and bool(b)))


def logical_or(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_logical_or", "_logical_or_scalar", "_logical_or_scalar",
                  lambda a, b: float(bool(a) or bool(b)))


def logical_xor(lhs, rhs):
    return _ufunc(lhs, rhs, "broadcast_logical_xor", "_logical_xor_scalar", "_logical_xor_scalar",
                  lambda a, b: float(bool(a) != bool(b)))
