"""Common subexpression elimination of a forward graph, applied at bind as MXNet 1.9 does.

Two operator nodes compute the same thing when they apply the same operator, with the same
attributes (user attributes included), to the same input entries.  Each such group is kept as
one node.  As in MXNet, nodes that cannot be merged safely are left alone: those using a
resource (random numbers: Dropout, samplers), mutating inputs (optimizer updates) or having
auxiliary states (BatchNorm's running statistics).  If two graph outputs end up as the same
entry, later ones read a `_copy` named '<node>_<index>_copy', so outputs stay distinct arrays.

On by default; MXNET_ELIMINATE_COMMON_EXPR=0 (or EMBER_ELIMINATE_COMMON_EXPR=0) turns it off.
`Executor.get_optimized_symbol()` returns the graph after this pass.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from .. import ops as _ops
from .graph import Entry, Node, topo_order


def enabled() -> bool:
    """Whether bind eliminates common subexpressions (MXNet's default: yes)."""
    for key in ("EMBER_ELIMINATE_COMMON_EXPR", "MXNET_ELIMINATE_COMMON_EXPR"):
        value = os.environ.get(key)
        if value is not None:
            return value.strip() not in ("0", "false", "False", "")
    return True


def _mergeable(node: Node) -> bool:
    op = node.op
    return not (tuple(op.resources) or bool(op.mutates) or node.num_aux())


def _signature(node: Node, canon: Dict[int, Node]) -> Optional[tuple]:
    if node.op is None or not _mergeable(node):
        return None
    attrs = tuple(sorted((k, str(v)) for k, v in node.attrs.items()))
    users = tuple(sorted(node.user_attrs.items()))
    inputs = tuple((id(canon.get(id(c), c)), i) for c, i in node.inputs)
    return node.op.name, attrs, users, inputs


def eliminate_common_expr(heads: List[Entry]) -> List[Entry]:
    """Heads of an equivalent graph where repeated computations are done once.

    The caller's nodes are never changed: nodes downstream of a merge are copied.  Without any
    repeated computation the same heads come back (no copy is made)."""
    order = topo_order(heads)
    canon: Dict[int, Node] = {}   # id(node) -> the node that stands for it
    seen: Dict[tuple, Node] = {}
    for n in order:
        sig = _signature(n, canon)
        if sig is None:
            continue
        first = seen.setdefault(sig, n)
        if first is not n:
            canon[id(n)] = first
    if not canon:
        return _isolate_outputs(list(heads))
    rebuilt: Dict[int, Node] = {}  # id(original) -> node of the new graph

    def new(node: Node) -> Node:
        kept = canon.get(id(node), node)
        return rebuilt.get(id(kept), kept)

    for n in order:
        if id(n) in canon or n.op is None:
            continue
        inputs = [(new(c), i) for c, i in n.inputs]
        if all(a is b for (a, _), (b, _) in zip(inputs, n.inputs)):
            continue
        copy = Node(n.op, n.name, n.attrs, inputs, n.user_attrs)
        copy._parsed, copy._arity = n._parsed, n._arity
        rebuilt[id(n)] = copy
    return _isolate_outputs([(new(node), i) for node, i in heads])


def _isolate_outputs(heads: List[Entry]) -> List[Entry]:
    """A graph output that repeats an earlier one reads a `_copy` of it (MXNet's rule)."""
    seen = set()
    out = []
    for node, i in heads:
        key = (id(node), i)
        if key in seen and _ops.exists("_copy") and node.op is not None:
            copy = Node(_ops.get("_copy"), f"{node.name}_{i}_copy", {}, [(node, i)])
            out.append((copy, 0))
            continue
        seen.add(key)
        out.append((node, i))
    return out


def optimized_heads(heads: List[Entry]) -> Tuple[List[Entry], bool]:
    """(heads to run, whether the pass ran): the pass when enabled, else the heads unchanged."""
    if not enabled():
        return list(heads), False
    return eliminate_common_expr(list(heads)), True
