"""Executors expand the nodes that carry graphs before their passes run (ember/symbolic/control_flow.py):
a `_foreach` loop is unrolled (its length known from the bound shapes), a `_while_loop` becomes
`max_iterations` masked steps, a `_CachedOp` is inlined.  The result is an ordinary graph for the
gradient pass, the planner and the engine."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from .. import ops as _ops
from ..base import MXNetError, ShapeError
from .control_flow import _CACHED_OP, _FOREACH, _WHILE, CallBody, ForeachBody, WhileBody, _counts
from .graph import Entry, Node, topo_order
from .infer import infer_shapes


_EXPANDED = (_FOREACH, _WHILE, _CACHED_OP)


def expand_loops(heads: Sequence[Entry], arg_shapes: Dict[str, tuple]) -> Sequence[Entry]:
    """`heads` with every `_foreach`, `_while_loop` and `_CachedOp` node expanded (those inside their
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
            elif n.op is _WHILE:
                new[id(n)] = _unroll_while(n, ins, shapes)
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


def _unroll_while(node: Node, ins: List[Entry], shapes: Dict) -> List[Entry]:
    """max_iterations masked steps: each evaluates cond and func; a step after cond first failed keeps the
    loop variables and outputs zeros (MXNet leaves those rows undefined)."""
    a = node.parsed_attrs
    body: WhileBody = a["body"]
    no, steps = a["num_out_data"], a["max_iterations"]

    def ndim(key) -> int:
        shape = shapes.get(key)
        if shape is None:
            raise ShapeError(f"while_loop '{node.name}': the shapes of its loop are not known from the bound shapes")
        return len(shape)

    def op(name: str, label: str, inputs: List[Entry], **attrs) -> Entry:
        return Node(_ops.get(name), f"{node.name}_{label}", attrs, inputs), 0

    starts = [node.inputs[loc] for loc in body.var_inputs]
    var_dims = [ndim((id(e[0]), e[1])) for e in starts]
    out_dims = [ndim((id(node), k)) - 1 for k in range(no)]

    def masked(running: Entry, x: Entry, otherwise: Entry, dims: int, label: str) -> Entry:
        flag = op("broadcast_like", f"{label}_flag", [op("Reshape", f"{label}_r", [running], shape=(1,) * dims), x])
        return op("where", label, [flag, x, otherwise])
    loop_vars = [ins[loc] for loc in body.var_inputs]
    var_of = {loc: j for j, loc in enumerate(body.var_inputs)}  # node input -> the loop variable it starts
    running = None
    per_step = []
    for t in range(steps):
        def feed(inputs, locs):
            return {id(v): (loop_vars[var_of[loc]] if loc in var_of else ins[loc]) for v, loc in zip(inputs, locs)}
        (pred,) = _clone(node, body.cond_order, body.cond_heads, feed(body.cond_inputs, body.cond_locs),
                         f"{node.name}_t{t}_")
        holds = op("_not_equal_scalar", f"t{t}_holds", [pred], scalar=0.0)
        running = holds if running is None else op("elemwise_mul", f"t{t}_running", [running, holds])
        got = _clone(node, body.func_order, body.func_heads, feed(body.func_inputs, body.func_locs),
                     f"{node.name}_t{t}_")
        per_step.append([masked(running, o, op("zeros_like", f"t{t}_zero{k}", [o]), out_dims[k], f"t{t}_out{k}")
                         for k, o in enumerate(got[:no])])
        loop_vars = [masked(running, new, old, var_dims[j], f"t{t}_var{j}")
                     for j, (new, old) in enumerate(zip(got[no:], loop_vars))]
    stacked = [op("stack", f"output{k}", [step[k] for step in per_step], num_args=steps, axis=0) for k in range(no)]
    return stacked + loop_vars
