"""Executors expand the nodes that carry graphs before their passes run (ember/symbolic/control_flow.py):
a `_foreach` loop is unrolled (its length known from the bound shapes), a `_CachedOp` is inlined.  The
result is an ordinary graph for the gradient pass, the planner and the engine.  (A `_while_loop`, whose
length is known only when it runs, stays one node: its kernel runs the loop.)"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from .. import ops as _ops
from ..base import MXNetError, ShapeError
from .control_flow import _CACHED_OP, _FOREACH, CallBody, ForeachBody, _counts
from .graph import Entry, Node, topo_order
from .infer import infer_shapes


_EXPANDED = (_FOREACH, _CACHED_OP)


def expand_loops(heads: Sequence[Entry], arg_shapes: Dict[str, tuple]) -> Sequence[Entry]:
    """`heads` with every `_foreach` and `_CachedOp` node expanded (those inside their
    graphs too), lengths inferred from the variables' shapes `arg_shapes` (by name): `heads` itself
    when there is none, else new heads over copies of the other nodes (variables are kept)."""
    while True:
        order = topo_order(heads)
        if not any(n.op in _EXPANDED for n in order):
            return heads
        known = {(id(n), 0): tuple(arg_shapes[n.name]) for n in order if n.op is None and n.name in arg_shapes}
        shapes = infer_shapes(order, known)
        new: Dict[int, List[Entry]] = {}
        for n in order:
            if n.op is None:
                new[id(n)] = [(n, 0)]
                continue
            ins = [new[id(c)][i] for c, i in n.inputs]
            if n.op is _FOREACH:
                new[id(n)] = _unroll(n, ins, shapes.get((id(n.inputs[0][0]), n.inputs[0][1])))
            elif n.op is _CACHED_OP:
                new[id(n)] = _inline(n, ins)
            else:
                copy = Node(n.op, n.name, n.attrs, ins, n.user_attrs)
                new[id(n)] = [(copy, i) for i in range(n.num_outputs())]
        heads = [new[id(c)][i] for c, i in heads]


def _unroll(node: Node, ins: List[Entry], data_shape: Optional[tuple]) -> List[Entry]:
    attrs = node.parsed_attrs
    body: ForeachBody = attrs["body"]
    nd, ns, no, _ = _counts(attrs)
    if data_shape is None or not data_shape or data_shape[0] is None:
        raise ShapeError(f"foreach '{node.name}': the length of its data (axis 0) is not known from the bound "
                         f"shapes (data shape {data_shape})")
    steps = data_shape[0]
    if steps == 0:
        raise ShapeError(f"foreach '{node.name}': its data has no steps (shape {data_shape})")
    slicer, stacker = _ops.get("SliceChannel"), _ops.get("stack")
    slices = [Node(slicer, f"{node.name}_slice{i}", {"num_outputs": steps, "axis": 0, "squeeze_axis": True}, [e])
              for i, e in enumerate(ins[:nd])]
    states = list(ins[nd:nd + ns])
    free = ins[nd + ns:]
    per_step = []
    for t in range(steps):
        given = {id(v): e for v, e in zip(body.data_vars + body.state_vars + body.free_vars,
                                          [(s, t) for s in slices] + states + free)}
        got = _clone(node, body.order, body.heads, given, f"{node.name}_t{t}_")
        per_step.append(got[:no])
        states = got[no:]
    stacked = [(Node(stacker, f"{node.name}_output{k}", {"num_args": steps, "axis": 0},
                     [step[k] for step in per_step]), 0) for k in range(no)]
    return stacked + states


def _inline(node: Node, ins: List[Entry]) -> List[Entry]:
    body: CallBody = node.parsed_attrs["body"]
    return _clone(node, body.order, body.heads, {id(v): e for v, e in zip(body.inputs, ins)}, f"{node.name}_")


def _clone(node: Node, order: Sequence[Node], heads: Sequence[Entry], given: Dict[int, Entry],
           prefix: str) -> List[Entry]:
    """Copies of the operators of `order` (one of `node`'s graphs) reading `given` (id(variable) -> entry);
    the copies of `heads`."""
    clones: Dict[int, Node] = {}

    def entry(c: Node, i: int) -> Entry:
        if id(c) in given:
            return given[id(c)]
        if c.op is None:
            raise MXNetError(f"{node.op.name} '{node.name}': its graph reads '{c.name}', which none of its "
                             "inputs feeds")
        return clones[id(c)], i
    for n in order:
        if n.op is not None:
            clones[id(n)] = Node(n.op, f"{prefix}{n.name}", n.attrs, [entry(c, i) for c, i in n.inputs], n.user_attrs)
    return [entry(c, i) for c, i in heads]
