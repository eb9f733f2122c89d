"""mx.np's binary ufuncs on the registry's `_npi_*` operators (ember/ops/np_elemwise.py) and
`broadcast_hypot`: arctan2, hypot, copysign, ldexp (float), lcm, bitwise_and/or/xor (integer or bool).

As the other ufuncs (functions.py): numpy broadcasting, numpy's `where/dtype/casting/order/subok`
keywords only at their defaults, `out=`; both operands are cast to MXNet's common dtype first; a
Python scalar operand takes the array's dtype.  Differentiable where MXNet is (arctan2, hypot,
copysign, ldexp); hybridizable (a scalar becomes a constant node).
"""
from __future__ import annotations

import numpy as _np

from ..base import MXNetError
from .functions import _check_ufunc_kwargs, _deliver, _full_array, _is_scalar, _result_type, asarray
from .multiarray import _as_np, _call, array

__all__ = ["arctan2", "hypot", "copysign", "ldexp", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor"]

# name -> (registry op, dtype kinds MXNet takes)
_OPS = {"arctan2": ("_npi_arctan2", "f"), "hypot": ("broadcast_hypot", "f"), "copysign": ("_npi_copysign", "f"),
        "ldexp": ("_npi_ldexp", "iuf"), "lcm": ("_npi_lcm", "iu"), "bitwise_and": ("_npi_bitwise_and", "iub"),
        "bitwise_or": ("_npi_bitwise_or", "iub"), "bitwise_xor": ("_npi_bitwise_xor", "iub")}


def _operands(name: str, x1, x2):
    """Both operands as arrays (or symbols) of one dtype; a Python scalar takes the other's dtype."""
    s1, s2 = _is_scalar(x1), _is_scalar(x2)
    if s1 and s2:
        return None
    a = asarray(x1) if not s1 else None
    b = asarray(x2) if not s2 else None
    dt = _result_type(a.dtype, b.dtype) if a is not None and b is not None else (a if a is not None else b).dtype
    like = a if a is not None else b
    a = _full_array((), x1, dt, like) if a is None else a
    b = _full_array((), x2, dt, like) if b is None else b
    cast = [x if dt is None or x.dtype == dt else x.astype(dt) for x in (a, b)]
    return cast[0], cast[1], dt


def _make(name: str):
    op, kinds = _OPS[name]

    def fn(x1, x2, out=None, **kwargs):
        _check_ufunc_kwargs(name, kwargs)
        got = _operands(name, x1, x2)
        if got is None:  # two Python scalars: numpy's answer
            return getattr(_np, name)(x1, x2)
        a, b, dt = got
        if dt is not None and _np.dtype(dt).kind not in kinds:
            raise MXNetError(f"{name}: does not support {_np.dtype(dt).name} inputs "
                             f"({'floating point' if kinds == 'f' else 'integer'} types only, as MXNet)")
        return _deliver(_as_np(_call(op, (a, b), {})), out)
    fn.__name__ = name
    fn.__doc__ = f"numpy.{name} with numpy broadcasting (the registry's `{op}`)."
    return fn


for _name in __all__:
    globals()[_name] = _make(_name)
