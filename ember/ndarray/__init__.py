"""`mx.nd`: NDArray, creation functions and one function per registry operator.

Operator functions are generated on first access from the registry (module
`__getattr__`), so operators registered later by any module appear too.
`mx.nd.<op>(*inputs, *attrs, out=None, name=None, **kwargs)` follows MXNet's
generated functions: leading NDArrays are the inputs, further positional values
are attributes in declaration order.
"""
from __future__ import annotations

from typing import Callable

from ..imperative.ndarray import NDArray  # noqa: F401
from ..imperative import ndarray  # noqa: F401  (mx.nd.ndarray.NDArray)
from ..imperative.creation import (arange, array, empty, from_numpy, full, ones, ones_like,  # noqa: F401
                                   waitall, zeros, zeros_like)
from ..imperative.dlpack import from_dlpack  # noqa: F401
from ..imperative.invoke import call as _call
from ..ops import registry as _registry
from . import contrib, linalg, random  # noqa: F401
from . import image  # noqa: F401  (mx.nd.image: the _image_* operators)
from . import sparse  # noqa: F401  (CSRNDArray, RowSparseNDArray and their constructors)
from .sparse import CSRNDArray, RowSparseNDArray  # noqa: F401
from .legacy_helpers import histogram, linspace, moveaxis, onehot_encode, split_v2  # noqa: F401
from .arith import (add, divide, equal, greater, greater_equal, lesser, lesser_equal,  # noqa: F401
                    maximum, minimum, modulo, multiply, not_equal, power, subtract, true_divide)
from .arith import logical_and, logical_or, logical_xor  # noqa: F401
from .cached_op import CachedOp  # noqa: F401


def _make_op_function(name: str) -> Callable:
    opdef = _registry.get(name)
    canonical = opdef.name  # looked up by name per call, so the tiny-op plans apply

    def op_function(*args, **kwargs):
        return _call(canonical, args, kwargs)
    op_function.__name__ = name
    op_function.__qualname__ = name
    op_function.__doc__ = opdef.doc or f"The `{opdef.name}` operator (see ember.ops.get('{opdef.name}'))."
    return op_function


def __getattr__(name: str):
    if name in ("np", "npx"):  # F.np / F.npx in a hybrid_forward run on arrays (imported late: no cycle)
        from .. import numpy as np_module
        return np_module if name == "np" else np_module.extension
    if name.startswith("__") or not _registry.exists(name):
        raise AttributeError(f"module 'ember.ndarray' has no attribute or operator '{name}'")
    fn = _make_op_function(name)
    globals()[name] = fn
    return fn


def __dir__():
    return sorted(set(globals()) | set(_registry.list_ops(include_aliases=True)))


class _OpNamespace:
    """`mx.nd._internal` / `mx.nd.op`: every registry operator as an attribute."""

    def __getattr__(self, name: str):
        return __getattr__(name)

    def __dir__(self):
        return _registry.list_ops(include_aliases=True)


_internal = _OpNamespace()
op = _OpNamespace()


def concatenate(arrays, axis: int = 0, always_copy: bool = True) -> NDArray:
    """Join arrays along `axis` (MXNet's legacy helper; `concat` is the operator)."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("concatenate needs at least one array")
    if len(arrays) == 1 and not always_copy:
        return arrays[0]
    return _call("Concat", arrays, {"dim": axis})


def cast_storage(data: NDArray, stype: str) -> NDArray:
    """A copy of `data` with storage type `stype` ('default', 'row_sparse' or 'csr')."""
    return sparse.cast_storage(data, stype)


def to_dlpack_for_read(data: NDArray):
    return data.to_dlpack_for_read()


def to_dlpack_for_write(data: NDArray):
    return data.to_dlpack_for_write()


def save(fname: str, data) -> None:
    """Save an NDArray, list or str-keyed dict of NDArrays in MXNet's .params format."""
    from ..imperative import serialization
    serialization.save(fname, data)


def load(fname: str):
    """Load a list or dict of NDArrays from an MXNet .params file."""
    from ..imperative import serialization
    return serialization.load(fname)


def load_frombuffer(buf):
    """Load a list or dict of NDArrays from the bytes of an MXNet .params file."""
    from ..imperative import serialization
    return serialization.load_frombuffer(buf)


def eye(N: int, M: int = 0, k: int = 0, ctx=None, dtype=None, **kwargs) -> NDArray:
    """An N x M (M=0: N x N) array with ones on the k-th diagonal (MXNet's `_eye`)."""
    attrs = {"N": N, "M": M, "k": k, **kwargs}
    if ctx is not None:
        attrs["ctx"] = ctx
    if dtype is not None:
        attrs["dtype"] = dtype
    return _call("_eye", (), attrs)
