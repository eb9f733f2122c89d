"""`mx.sym.np._Symbol`: a symbol with NumPy semantics (what a block traced under `npx.set_np()` builds).

It is a view of the same graph entries as a legacy `Symbol` (`as_nd_ndarray()` / `as_np_ndarray()`
convert without copying anything).  What it adds: the `mx.np` function library and operators work
on it (`F.np.dot(x, w)`, `x + 1`, `x.reshape(-1)`, `x[1:, 0]`), building the same registry operators
they run imperatively.  Those functions decide casts and shapes from their inputs' dtypes and shapes,
so an np symbol knows its own: a variable's come from its `__shape__`/`__dtype__` attributes or from
`describe()` (a hybridized block describes its inputs with the shapes it was called with, since it
is traced once per input signature), an operator's are inferred from its inputs' with the registry's
rules, once per node.  Unknown ones (a deferred parameter shape) are None; asking `.shape` of
such a symbol raises MXNetError naming it.
"""
from __future__ import annotations

import weakref
from typing import List, Optional, Tuple

import numpy as np

from .. import ops as _ops
from ..base import DTypeError, MXNetError, ShapeError
from .graph import Entry, Node
from .infer import infer_dtypes, infer_shapes
from .symbol import Symbol, _parse_dtype_attr, _parse_shape_attr, create

# node -> ([shape per output], [dtype per output], error text or None); shapes use None for unknown dims
_META: "weakref.WeakKeyDictionary[Node, tuple]" = weakref.WeakKeyDictionary()


class _Symbol(Symbol):  # noqa: N801 - MXNet's class name (mx.sym.np._Symbol)
    """A symbol with NumPy semantics; see the module docstring."""

    __slots__ = ()

    def as_nd_ndarray(self) -> Symbol:
        """The same outputs as a legacy Symbol."""
        return Symbol(self._outputs)

    def as_np_ndarray(self) -> "_Symbol":
        return self

    # -- what the mx.np functions need to know ---------------------------------------------
    def _entry(self) -> Entry:
        if len(self._outputs) != 1:
            raise MXNetError(f"this np symbol has {len(self._outputs)} outputs; shape and dtype are per output "
                             "(select one with sym[i])")
        return self._outputs[0]

    def _known_shape(self) -> Optional[tuple]:
        """The output's shape when every dimension is known, else None (`shape` raises instead)."""
        node, i = self._entry()
        shape = meta(node)[0][i]
        return None if shape is None or None in shape else shape

    @property
    def shape(self) -> tuple:
        """The output's shape, as inferred while tracing; MXNetError if some dimension is unknown."""
        shape = self._known_shape()
        if shape is None:
            node, _ = self._entry()
            err = meta(node)[2]
            why = f": {err}" if err else (" (an input's shape is not known yet, e.g. a parameter whose shape "
                                          "is deferred until the first forward)")
            raise MXNetError(f"the shape of symbol '{node.name}' is not known while tracing{why}")
        return shape

    @property
    def ndim(self) -> int:
        node, i = self._entry()
        shape = meta(node)[0][i]
        if shape is None:
            return len(self.shape)  # raises the clear error
        return len(shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def dtype(self) -> Optional[np.dtype]:
        """The output's dtype as inferred while tracing (None when not known)."""
        node, i = self._entry()
        return meta(node)[1][i]

    def __len__(self) -> int:
        if len(self._outputs) > 1:
            return len(self._outputs)
        shape = self.shape
        if not shape:
            raise TypeError("len() of unsized object")
        return shape[0]

    def __iter__(self):
        if len(self._outputs) > 1:
            return (_Symbol([e]) for e in self._outputs)
        return (self[i] for i in range(len(self)))

    def __getattr__(self, name: str):
        if name.startswith("__") or not _ops.exists(name):
            raise AttributeError(f"'_Symbol' object has no attribute '{name}'")
        opdef = _ops.get(name)

        def method(*args, **kwargs):
            return as_np(create(opdef, (self,) + args, kwargs))
        method.__name__ = name
        return method

    def __repr__(self) -> str:
        return "<_Symbol " + super().__repr__().split(" ", 1)[-1]


def as_np(result):
    """Symbols (in lists and tuples too) as np symbols over the same entries."""
    if isinstance(result, Symbol):
        return result if type(result) is _Symbol else _Symbol(result._outputs)
    if isinstance(result, (list, tuple)):
        return type(result)(as_np(r) for r in result)
    return result


def as_legacy(result):
    """np symbols (in lists and tuples too) as legacy Symbols over the same entries."""
    if type(result) is _Symbol:
        return Symbol(result._outputs)
    if isinstance(result, (list, tuple)):
        return type(result)(as_legacy(r) for r in result)
    return result


def describe(sym: Symbol, shape, dtype) -> None:
    """Record a variable's shape (None dims unknown) and dtype, as an np symbol reads them."""
    node, _ = sym._outputs[0]
    _META[node] = ([None if shape is None else tuple(shape)], [None if dtype is None else np.dtype(dtype)], None)


def apply(op, args, kwargs) -> _Symbol:
    """Registry op `op` (name or OpDef) on symbols, in `mx.nd`'s calling convention, as an np symbol."""
    from ..imperative.ndarray import NDArray
    opdef = op if isinstance(op, _ops.OpDef) else _ops.get(op)
    if any(isinstance(a, NDArray) for a in args) or any(isinstance(v, NDArray) for v in kwargs.values()):
        raise TypeError(f"{opdef.name}: an array and a symbol in one operation: inside a traced (hybridized) "
                        "block every array operand must be a symbol (an input or a parameter)")
    kwargs = {k: v for k, v in kwargs.items() if k not in ("out", "ctx")}
    return as_np(create(opdef, args, kwargs))


def _var_meta(node: Node) -> tuple:
    attrs = node.user_attrs
    shape = _parse_shape_attr(attrs["__shape__"], node.name) if attrs.get("__shape__") else None
    dtype = _parse_dtype_attr(attrs["__dtype__"], node.name) if attrs.get("__dtype__") else None
    return [shape], [dtype], None


def meta(node: Node) -> Tuple[List, List, Optional[str]]:
    """(shapes, dtypes, error) of every output of `node`, inferred from its inputs' (once per node)."""
    found = _META.get(node)
    if found is not None:
        return found
    # the ancestors not described yet, inputs before users (no recursion: graphs can be deep)
    order, stack, seen = [], [(node, False)], set()
    while stack:
        n, expanded = stack.pop()
        if expanded:
            order.append(n)
            continue
        if id(n) in seen or n in _META:
            continue
        seen.add(id(n))
        stack.append((n, True))
        stack.extend((c, False) for c, _ in n.inputs if c not in _META)
    for n in order:
        _META[n] = _var_meta(n) if n.op is None else _infer_node(n)
    return _META[node]


def _infer_node(node: Node) -> tuple:
    n_out = node.num_outputs()
    shapes_in, dtypes_in = {}, {}
    for c, i in node.inputs:
        s, d, _ = _META[c]
        if s[i] is not None:
            shapes_in[(id(c), i)] = s[i]
        if d[i] is not None:
            dtypes_in[(id(c), i)] = d[i]
    err = None
    try:
        shapes = infer_shapes([node], shapes_in, zero_is_unknown=False)
        out_shapes = [shapes.get((id(node), k)) for k in range(n_out)]
    except (ShapeError, MXNetError) as e:
        out_shapes, err = [None] * n_out, str(e)
    try:
        dtypes = infer_dtypes([node], dtypes_in)
        out_dtypes = [dtypes.get((id(node), k)) for k in range(n_out)]
    except (DTypeError, MXNetError) as e:
        out_dtypes, err = [None] * n_out, err or str(e)
    return out_shapes, [None if d is None else np.dtype(d) for d in out_dtypes], err
