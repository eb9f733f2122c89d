"""`mx.numpy_dispatch_protocol`: official numpy functions and ufuncs called on `mx.np.ndarray`s run
mx.np's implementation (NEP 18 `__array_function__`, NEP 13 `__array_ufunc__`; see
`ember/numpy/multiarray.py`).

The two name lists are the numpy operators MXNet 1.9.1 dispatches this way (its tests iterate over
them).  A name that mx.np implements is registered here; one it does not is left to the fallback
of the protocol methods, which runs numpy itself on host copies of the arrays and hands array
results back as mx.np.ndarrays, as MXNet does for the operators it lacks.
"""
from __future__ import annotations

import functools
from typing import Callable, List, Optional

import numpy as _np

from . import numpy as _mx_np
from .numpy.multiarray import _NUMPY_ARRAY_FUNCTION_DICT, _NUMPY_ARRAY_UFUNC_DICT

__all__ = ["with_array_function_protocol", "with_array_ufunc_protocol"]

_NUMPY_ARRAY_FUNCTION_LIST: List[str] = """
    all any sometrue argmin argmax around round round_ argsort sort append broadcast_arrays broadcast_to
    clip concatenate copy cumsum diag diagonal diagflat dot expand_dims fix flip flipud fliplr inner
    insert max amax mean min amin nonzero ones_like atleast_1d atleast_2d atleast_3d prod product ravel
    repeat reshape roll split array_split hsplit vsplit dsplit squeeze stack std sum swapaxes take
    tensordot tile transpose unique unravel_index diag_indices_from delete var vdot vstack column_stack
    hstack dstack zeros_like linalg.norm linalg.cholesky linalg.inv linalg.solve linalg.tensorinv
    linalg.tensorsolve linalg.pinv linalg.eigvals linalg.eig linalg.eigvalsh linalg.eigh shape trace
    tril meshgrid outer einsum polyval shares_memory may_share_memory quantile percentile diff ediff1d
    resize where full_like bincount empty_like nan_to_num isnan isfinite isposinf isneginf isinf pad
""".split()

_NUMPY_ARRAY_UFUNC_LIST: List[str] = """
    abs fabs add arctan2 copysign degrees hypot lcm ldexp subtract multiply true_divide negative power
    mod matmul absolute rint sign exp log log2 log10 expm1 sqrt square cbrt reciprocal invert
    bitwise_not remainder sin cos tan sinh cosh tanh arcsin arccos arctan arcsinh arccosh arctanh
    maximum minimum ceil trunc floor bitwise_and bitwise_xor bitwise_or logical_not equal not_equal less
    less_equal greater greater_equal
""".split()


def _protocol_runner(func: Callable, what: str) -> Callable:
    """`func` with any exception re-raised as RuntimeError naming the protocol (MXNet's decorators)."""
    @functools.wraps(func)
    def run(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - reported with the protocol's name, as MXNet
            raise RuntimeError(f"Running function {func.__name__} with NumPy {what} protocol failed with "
                               f"exception {e}") from e
    return run


def with_array_function_protocol(func: Callable) -> Callable:
    """Decorate code that relies on numpy functions dispatching to mx.np (numpy >= 1.17 has NEP 18)."""
    return _protocol_runner(func, "array function")


def with_array_ufunc_protocol(func: Callable) -> Callable:
    """Decorate code that relies on numpy ufuncs dispatching to mx.np (numpy >= 1.15 has NEP 13)."""
    return _protocol_runner(func, "array ufunc")


def _lookup(root, dotted: str) -> Optional[object]:
    for part in dotted.split("."):
        root = getattr(root, part, None)
        if root is None:
            return None
    return root


def _register() -> None:
    for name in _NUMPY_ARRAY_FUNCTION_LIST:
        mine, theirs = _lookup(_mx_np, name), _lookup(_np, name)
        if mine is not None and theirs is not None:  # numpy 2 dropped some aliases (round_, product)
            _NUMPY_ARRAY_FUNCTION_DICT[theirs] = mine
    for name in _NUMPY_ARRAY_UFUNC_LIST:
        mine = getattr(_mx_np, name, None)
        if mine is not None:
            _NUMPY_ARRAY_UFUNC_DICT[name] = mine


_register()
