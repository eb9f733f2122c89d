"""`mx.nd.CachedOp`: a symbol called like an operator on NDArrays (MXNet's imperative CachedOp).

Inputs are given positionally in `sym.list_inputs()` order (arguments and auxiliary states as the
graph lists them).  It runs on the same machinery as a hybridized Gluon block (gluon/cached_graph.py:
one bound executor per input signature; under autograd.record() the call is taped as one node whose
gradient is the planned backward graph)."""
from __future__ import annotations

from typing import List, Union

from ..imperative.ndarray import NDArray


class _Given:
    """Stands in for a Gluon Parameter: the auxiliary-state array of the current call."""

    __slots__ = ("array",)

    def __init__(self):
        self.array = None

    def data(self, ctx=None) -> NDArray:
        return self.array


class CachedOp:
    """`CachedOp(sym, flags=())`; `op(*inputs, out=None)` returns the output (a list if several)."""

    def __init__(self, sym, flags=()):
        from ..gluon.cached_graph import CachedGraph
        self._inputs = sym.list_inputs()
        aux = set(sym.list_auxiliary_states())
        self._is_aux = [n in aux for n in self._inputs]
        self._aux = {n: _Given() for n in self._inputs if n in aux}
        self.flags = dict(flags)  # MXNet's static_alloc/static_shape/...: ember plans every call already
        self._graph = CachedGraph(sym, [n for n in self._inputs if n not in aux], self._aux, "CachedOp")

    def __call__(self, *args, **kwargs) -> Union[NDArray, List[NDArray]]:
        out = kwargs.pop("out", None)
        if kwargs:
            raise TypeError(f"CachedOp: unexpected keyword arguments {sorted(kwargs)}")
        if len(args) != len(self._inputs):
            raise ValueError(f"CachedOp: expected {len(self._inputs)} inputs {self._inputs}, got {len(args)}")
        for name, x in zip(self._inputs, args):
            if not isinstance(x, NDArray):
                raise TypeError(f"CachedOp: input '{name}' must be an NDArray, got {type(x).__name__}")
        data = []
        for name, x, is_aux in zip(self._inputs, args, self._is_aux):
            if is_aux:
                self._aux[name].array = x
            else:
                data.append(x)
        outs = self._graph(data)
        if out is not None:
            targets = out if isinstance(out, (list, tuple)) else [out]
            if len(targets) != len(outs):
                raise ValueError(f"CachedOp: {len(outs)} outputs, but {len(targets)} out arrays given")
            for t, o in zip(targets, outs):
                o.copyto(t)
            return out
        return outs[0] if len(outs) == 1 else outs
