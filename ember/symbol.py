"""`mx.sym` / `mx.symbol`: symbols, variables and every registry operator as a symbol function.

Operator functions are made on first use from the registry (`mx.sym.FullyConnected`),
so operators registered later are available the same way.  Sub-namespaces follow
MXNet's name prefixes: `mx.sym.random.uniform` is `_random_uniform`, `mx.sym.contrib.X`
is `_contrib_X`, `mx.sym.linalg.X` is `_linalg_X`, `mx.sym._internal.X` is `_X` or `X`.
"""
from __future__ import annotations

from . import ops as _ops
from .symbolic.json_io import load, load_json  # noqa: F401
from .symbolic.naming import AttrScope, NameManager, Prefix  # noqa: F401
from .symbolic.symbol import Group, Symbol, Variable, make_op_function, var  # noqa: F401
from .symbolic import legacy_helpers as _legacy
from .symbolic import control_flow as _control_flow
from .symbolic import cond as _cond
from .symbolic import random_helpers as _random_helpers
from .symbolic.legacy_helpers import eye, histogram, linspace, split_v2  # noqa: F401


class _PrefixedNamespace:
    """Looks `name` up as `<prefix><name>` in the registry (mx.sym.random, mx.sym.contrib...).

    `short_names`: unnamed nodes are named after `name` without the prefix (MXNet's contrib,
    linalg and image modules: `box_nms0`); otherwise after the full operator name (`_random_normal0`)."""

    def __init__(self, label: str, prefixes, short_names: bool = False):
        self._label = label
        self._prefixes = prefixes
        self._short_names = short_names

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        for p in self._prefixes:
            if _ops.exists(p + name):
                return make_op_function(p + name, hint=name if self._short_names else None)
        raise AttributeError(f"mx.sym.{self._label} has no operator '{name}'")

    def __dir__(self):
        return sorted({full[len(p):] for full in _ops.list_ops(include_aliases=True)
                       for p in self._prefixes if p and full.startswith(p)})


random = _PrefixedNamespace("random", ("_random_", "_sample_"))
for _name in _random_helpers.__all__:  # MXNet's symbol/random.py functions (numbers or Symbols as parameters)
    setattr(random, _name, getattr(_random_helpers, _name))
contrib = _PrefixedNamespace("contrib", ("_contrib_",), short_names=True)
contrib.rand_zipfian = _legacy.rand_zipfian  # MXNet's Python-level helper in symbol/contrib.py
contrib.foreach = _control_flow.foreach
contrib.while_loop = _control_flow.while_loop
contrib.cond = _cond.cond
linalg = _PrefixedNamespace("linalg", ("_linalg_",), short_names=True)
image = _PrefixedNamespace("image", ("_image_",), short_names=True)
# MXNet's mx.sym.sparse: the operators with sparse kernels.  ember's executors compute on dense
# arrays (a variable's stype is recorded, docs/sparse.md), so here every operator is reachable and
# gives the same values as its dense form.
sparse = _PrefixedNamespace("sparse", ("_sparse_", ""), short_names=True)
_internal = _PrefixedNamespace("_internal", ("_", ""))
_internal._CachedOp = _control_flow.cached_op_symbol  # a graph given as JSON (MXNet's subgraph=)
op = _PrefixedNamespace("op", ("",))


def zeros(shape, dtype=None, **kwargs) -> Symbol:
    """A symbol of zeros (MXNet's `_zeros`)."""
    return make_op_function("_zeros")(shape=shape, **({"dtype": dtype} if dtype is not None else {}), **kwargs)


def ones(shape, dtype=None, **kwargs) -> Symbol:
    """A symbol of ones (MXNet's `_ones`)."""
    return make_op_function("_ones")(shape=shape, **({"dtype": dtype} if dtype is not None else {}), **kwargs)


def full(shape, val, dtype=None, **kwargs) -> Symbol:
    """A symbol filled with `val` (MXNet's `_full`)."""
    return make_op_function("_full")(shape=shape, value=val, **({"dtype": dtype} if dtype is not None else {}),
                                     **kwargs)


def arange(start, stop=None, step=1.0, repeat=1, name=None, dtype=None, **kwargs) -> Symbol:
    """A symbol of evenly spaced values (MXNet's `_arange`)."""
    attrs = {"start": start, "step": step, "repeat": repeat}
    if stop is not None:
        attrs["stop"] = stop
    if dtype is not None:
        attrs["dtype"] = dtype
    return make_op_function("_arange")(name=name, **attrs, **kwargs)


def _binary(op: str, scalar_op: str, rscalar_op: str, left, right, number_fn):
    """MXNet's symbol-or-scalar binary functions (maximum, minimum, pow, hypot); nodes are named after `op`."""
    import numbers

    def num(v) -> bool:
        return isinstance(v, numbers.Number)
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return make_op_function(op)(left, right, _hint=op)
    if isinstance(left, Symbol) and num(right):
        return make_op_function(scalar_op)(left, scalar=right, _hint=op + "scalar")
    if num(left) and isinstance(right, Symbol):
        return make_op_function(rscalar_op)(right, scalar=left, _hint=op + "scalar")
    if num(left) and num(right):
        return number_fn(left, right)
    raise TypeError(f"types ({type(left)}, {type(right)}) not supported")


def maximum(left, right):
    """Element-wise maximum of Symbols and/or scalars (no broadcasting), as mx.sym.maximum."""
    return _binary("_maximum", "_maximum_scalar", "_maximum_scalar", left, right, max)


def minimum(left, right):
    """Element-wise minimum of Symbols and/or scalars (no broadcasting), as mx.sym.minimum."""
    return _binary("_minimum", "_minimum_scalar", "_minimum_scalar", left, right, min)


def hypot(left, right):
    """sqrt(left**2 + right**2) element-wise, for Symbols and/or scalars, as mx.sym.hypot."""
    return _binary("_hypot", "_hypot_scalar", "_hypot_scalar", left, right, lambda a, b: (a * a + b * b) ** 0.5)


def power(base, exp):
    """base ** exp element-wise, for Symbols and/or scalars, as mx.sym.pow / mx.sym.power."""
    return _binary("_power", "_power_scalar", "_rpower_scalar", base, exp, lambda a, b: a ** b)


pow = power  # noqa: A001  (MXNet's name)


def __getattr__(name: str):
    if name == "np":  # F.np / F.npx in a hybrid_forward traced under NumPy array semantics
        from .symbolic import numpy_namespace
        return numpy_namespace
    if name == "npx":
        from .numpy import extension
        return extension
    # Module-level lookup of operators (PEP 562), so ops registered after import work too.
    if not name.startswith("__") and _ops.exists(name):
        return make_op_function(name)
    raise AttributeError(f"module 'ember.symbol' has no attribute or operator '{name}'")


def __dir__():
    return sorted(set(globals()) | set(_ops.list_ops(include_aliases=True)))
