"""The graph ember's symbols are made of: nodes joined by entries.

A `Node` is either a variable (``op is None``) or an operator application.
An entry ``(node, index)`` names one output of a node.  A graph is nothing but
its head entries: every node reachable from them belongs to it, exactly as in
NNVM, so composing symbols never copies nodes.  `topo_order` fixes the node
order ember uses everywhere (JSON, planning, execution): MXNet's DFS post-order
over inputs, which is what makes ember's JSON line up with MXNet's.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .. import ops as _ops
from ..base import OperatorError


class Node:
    """One vertex: a variable or an operator with its (unparsed) attributes and input entries."""

    __slots__ = ("op", "name", "attrs", "inputs", "user_attrs", "_parsed", "_arity", "__weakref__")

    def __init__(self, op: Optional[_ops.OpDef], name: str, attrs: Optional[dict] = None,
                 inputs: Optional[List["Entry"]] = None, user_attrs: Optional[dict] = None):
        self.op = op
        self.name = name
        self.attrs = dict(attrs or {})          # operator parameters as given (values or strings)
        self.inputs: List[Entry] = list(inputs or [])
        self.user_attrs = dict(user_attrs or {})  # '__shape__', '__lr_mult__', ... as strings
        self._parsed = None
        self._arity = None

    @property
    def parsed_attrs(self) -> dict:
        """Operator attributes parsed and defaulted by the registry (cached)."""
        if self._parsed is None:
            if self.op is None:
                self._parsed = {}
            else:
                given = {k: v for k, v in self.attrs.items() if not (k.startswith("__") and k.endswith("__"))}
                try:
                    self._parsed = self.op.parse_attrs(given)
                except OperatorError as e:
                    raise type(e)(f"node '{self.name}': {e}") from None
        return self._parsed

    def arity(self) -> Tuple[int, int, int, int]:
        """(data inputs, aux inputs, outputs, visible outputs), computed once."""
        a = self._arity
        if a is None:
            if self.op is None:
                a = (0, 0, 1, 1)
            else:
                attrs = self.parsed_attrs
                a = (len(self.op.input_names(attrs)), len(self.op.aux_names(attrs)),
                     len(self.op.output_names(attrs)), self.op.visible_outputs(attrs))
            self._arity = a
        return a

    def num_outputs(self) -> int:
        return self.arity()[2]

    def num_visible_outputs(self) -> int:
        return self.arity()[3]

    def num_inputs(self) -> int:
        """Declared data inputs (aux states come after them in `inputs`)."""
        return self.arity()[0]

    def num_aux(self) -> int:
        return self.arity()[1]

    def output_name(self, index: int) -> str:
        if self.op is None:
            return self.name
        names = self.op.output_names(self.parsed_attrs)
        return f"{self.name}_{names[index]}"

    def __repr__(self):
        return f"Node({self.op.name if self.op else 'null'}, {self.name!r})"


Entry = Tuple[Node, int]


def topo_order(heads: Iterable[Entry]) -> List[Node]:
    """Nodes reachable from `heads`, inputs before users, in MXNet's DFS post-order."""
    order: List[Node] = []
    seen = set()
    for head_node, _ in heads:
        if id(head_node) in seen:
            continue
        stack = [(head_node, 0)]
        seen.add(id(head_node))
        while stack:
            node, i = stack[-1]
            if i < len(node.inputs):
                stack[-1] = (node, i + 1)
                child = node.inputs[i][0]
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, 0))
            else:
                stack.pop()
                order.append(node)
    return order


def node_index(order: Sequence[Node]) -> Dict[int, int]:
    """id(node) -> position in `order`."""
    return {id(n): i for i, n in enumerate(order)}


def aux_variable_ids(order: Sequence[Node]) -> set:
    """ids of variables used as an operator's auxiliary state (BatchNorm's moving stats)."""
    aux = set()
    for n in order:
        if n.op is not None:
            k = n.num_inputs()
            for child, _ in n.inputs[k:]:
                if child.op is None:
                    aux.add(id(child))
    return aux
