"""Symbolic loops: `mx.sym.contrib.foreach` and `while_loop` (MXNet's `_foreach` / `_while_loop`), and the
`_CachedOp` node `autograd.get_symbol` makes of a hybridized block's call.

`foreach(body, data, init_states)` traces `body(data[i], states) -> (outputs, new_states)` once, on
variables standing for one step's slices and states, into a graph of its own (`ForeachBody`); what
the body reads from outside the loop (parameters, other outer entries) becomes further inputs of the
one `_foreach` node.  The node infers shapes and dtypes through its body, so a graph holding it
infers, and Gluon's deferred parameters learn their shapes through it.  An executor unrolls it
before its passes run (`expand_loops`, once the sequence length is known from the bound shapes):
the steps become ordinary nodes reading `SliceChannel` slices and `stack`ed into the outputs, so
the gradient pass, the memory planner and the engine treat a loop like any other graph (expand.py).
A while loop's length is known only when it runs: executors keep the `_while_loop` node, whose
kernel runs the cond and func graphs step by step inside the node's engine op (graph_run.py), and
`_backward_while_loop` back-propagates through the steps taken.  In symbol JSON the nodes are
MXNet's (subgraph_json.py).
"""
from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import nested
from ..base import DTypeError, MXNetError, ShapeError
from ..ops.registry import Attr, OpDef, register
from .graph import Entry, Node, aux_variable_ids, topo_order
from .graph_run import (BoundGraphs, GradFeed, backward_opdef, generator_in, gradient_by, kernel_device, rng_state,
                        scalar_truth)
from .infer import infer_dtypes, infer_shapes
from .naming import AttrScope, NameManager
from .symbol import Symbol


COND, FUNC = 0, 1  # a while loop's graphs


class UnusedLoopInput(MXNetError, AssertionError):
    """A foreach body that leaves a data or state input unused (MXNet raises an AssertionError)."""


class ForeachBody:
    """The loop body as its own graph: `heads` (the step's outputs, then its new states) computed from
    `data_vars` (one step's slices), `state_vars` and `free_vars` (the outer entries it reads)."""

    __slots__ = ("heads", "data_vars", "state_vars", "free_vars", "num_out_data", "order")

    def __init__(self, heads: List[Entry], data_vars: List[Node], state_vars: List[Node], free_vars: List[Node],
                 num_out_data: int):
        self.heads = heads
        self.data_vars = data_vars
        self.state_vars = state_vars
        self.free_vars = free_vars
        self.num_out_data = num_out_data
        self.order = topo_order(heads)

    def __repr__(self) -> str:
        return f"<foreach body: {sum(n.op is not None for n in self.order)} operators>"


def _symbol_leaf(value):
    if not isinstance(value, Symbol):
        return None
    n = len(value.list_outputs())
    return ([value], 0) if n == 1 else ([value[i] for i in range(n)], n)


def _flatten(value, what: str) -> Tuple[List[Symbol], object]:
    """(flat list of one-output Symbols, format to rebuild the nesting; a grouped Symbol counts its outputs)."""
    return nested.flatten(value, _symbol_leaf, what, "Symbols")


def _regroup(flat: List[Symbol], fmt):
    return nested.regroup(flat, fmt, lambda items: Symbol([s._outputs[0] for s in items]))


def foreach(body: Callable, data, init_states, name: str = "foreach"):
    """Run `body(data_slice, states) -> (outputs, new_states)` over axis 0 of `data` (a Symbol or a
    list of Symbols sliced together), in the graph: returns (outputs stacked along a new axis 0,
    final states), with the nesting `body` gives them (MXNet's `mx.sym.contrib.foreach`)."""
    flat_data, data_fmt = _flatten(data, "foreach: data")
    if not flat_data:
        raise ValueError("foreach: data must hold at least one Symbol")
    flat_states, state_fmt = _flatten(init_states, "foreach: init_states")
    node_name = NameManager.current.get(None if name == "foreach" else name, "_foreach")
    data_vars = [Node(None, f"{node_name}_data{i}") for i in range(len(flat_data))]
    state_vars = [Node(None, f"{node_name}_state{i}") for i in range(len(flat_states))]
    with AttrScope(__subgraph_name__=node_name):  # marks what the body makes (MXNet's mark, as in its JSON)
        outs, new_states = body(_regroup([Symbol([(v, 0)]) for v in data_vars], data_fmt)[0],
                                _regroup([Symbol([(v, 0)]) for v in state_vars], state_fmt)[0] if flat_states else [])
    flat_out, out_fmt = _flatten(outs, "foreach: the body's outputs")
    flat_new, _ = _flatten(new_states, "foreach: the body's new states")
    if len(flat_new) != len(flat_states):
        raise ValueError(f"foreach: the body returns {len(flat_new)} states for {len(flat_states)} initial states")
    heads, free_entries, free_vars = _cut(node_name, [s._outputs[0] for s in flat_out + flat_new],
                                          data_vars + state_vars)
    used = {id(n) for n in topo_order(heads) if n.op is None}
    unused = [v.name for v in data_vars + state_vars if id(v) not in used]
    if unused:
        raise UnusedLoopInput(f"foreach: the body does not use {unused}; every data and state input must be "
                              "used in the loop body (as MXNet's foreach requires)")
    loop_body = ForeachBody(heads, data_vars, state_vars, free_vars, len(flat_out))
    node = Node(_FOREACH, node_name,
                {"num_data": len(flat_data), "num_states": len(flat_states), "num_out_data": len(flat_out),
                 "num_free": len(free_vars), "body": loop_body},
                [s._outputs[0] for s in flat_data + flat_states] + free_entries,
                AttrScope.current.get(None))  # (a loop inside a loop's body is part of that body)
    results = [Symbol([(node, i)]) for i in range(len(flat_out) + len(flat_states))]
    outputs = _regroup(results[:len(flat_out)], out_fmt)[0]
    states = _regroup(results[len(flat_out):], state_fmt)[0] if flat_states else []
    return outputs, states


def _cut(name: str, heads: List[Entry], placeholders: List[Node]) -> Tuple[List[Entry], List[Entry], List[Node]]:
    """The body graph as its own: (its heads, the outer entries it reads, the variables standing for
    them).  An operator belongs to the body when the body made it (it carries the loop's
    `__subgraph_name__`: it runs at every step, a random draw too) or it depends on a placeholder;
    what it reads from any other node is an outer entry, read through a variable (an outer
    variable's own name)."""
    order = topo_order(heads)
    inside = {id(p) for p in placeholders}
    for n in order:
        if n.op is not None and (n.user_attrs.get("__subgraph_name__") == name
                                 or any(id(c) in inside for c, _ in n.inputs)):
            inside.add(id(n))
    free_entries: List[Entry] = []
    free_vars: List[Node] = []
    mapped: Dict[Tuple[int, int], Entry] = {}

    def outer(entry: Entry) -> Entry:
        key = (id(entry[0]), entry[1])
        if key not in mapped:
            src = entry[0]
            var = Node(None, src.name if src.op is None else f"{name}_free{len(free_vars)}")
            free_entries.append(entry)
            free_vars.append(var)
            mapped[key] = (var, 0)
        return mapped[key]

    clones: Dict[int, Node] = {id(p): p for p in placeholders}
    for n in order:
        if id(n) not in inside or n.op is None:
            continue
        ins = [(clones[id(c)], i) if id(c) in inside else outer((c, i)) for c, i in n.inputs]
        clone = Node(n.op, n.name, n.attrs, ins, n.user_attrs)
        clones[id(n)] = clone
    body_heads = [(clones[id(c)], i) if id(c) in inside else outer((c, i)) for c, i in heads]
    return body_heads, free_entries, free_vars


class WhileBody(BoundGraphs):
    """A while loop's two graphs: `cond_heads` (one scalar) and `func_heads` (the step's outputs, then
    the new loop variables), each reading the variables `cond_inputs` / `func_inputs`, which the node's
    inputs at `cond_locs` / `func_locs` feed; `var_locs[j]`: where loop variable j is among
    `func_inputs` (so its start is node input `func_locs[var_locs[j]]`, MXNet's encoding).  The
    node's kernels run the graphs as graph_run.BoundGraphs (COND, FUNC)."""

    __slots__ = ("cond_heads", "func_heads", "cond_inputs", "func_inputs", "cond_locs", "func_locs", "var_locs",
                 "var_inputs", "num_out_data")

    def __init__(self, cond_heads, func_heads, cond_inputs, func_inputs, cond_locs, func_locs, var_locs,
                 num_out_data: int):
        super().__init__([(cond_heads, cond_inputs, cond_locs), (func_heads, func_inputs, func_locs)])
        self.cond_heads, self.func_heads = cond_heads, func_heads
        self.cond_inputs, self.func_inputs = cond_inputs, func_inputs
        self.cond_locs, self.func_locs, self.var_locs = cond_locs, func_locs, var_locs
        self.var_inputs = [func_locs[i] for i in var_locs]  # the node input holding loop variable j's start
        if len(set(self.var_inputs)) != len(self.var_inputs):
            raise ValueError(f"while_loop: two loop variables start from one node input ({self.var_inputs})")
        self.num_out_data = num_out_data

    @property
    def cond_order(self) -> List[Node]:
        return self.orders[COND]

    @property
    def func_order(self) -> List[Node]:
        return self.orders[FUNC]

    def __repr__(self) -> str:
        return f"<while_loop body: {sum(n.op is not None for n in self.func_order)} operators>"


def while_loop(cond: Callable, func: Callable, loop_vars, max_iterations: Optional[int] = None,
               name: str = "while_loop"):
    """Run `func(*loop_vars) -> (step_outputs, new_loop_vars)` while `cond(*loop_vars)` (a scalar) is
    true, at most `max_iterations` times, in the graph (MXNet's `mx.sym.contrib.while_loop`): returns
    (step outputs stacked along a new axis 0 of length max_iterations, zero past the last step; the
    final loop variables).  Executors run it as a loop: only the steps cond allows."""
    if max_iterations is None:
        raise ValueError("while_loop: max_iterations should be specified")
    max_iterations = int(max_iterations)
    if max_iterations < 1:
        raise ValueError(f"while_loop: max_iterations must be >= 1, got {max_iterations}")
    flat_vars, var_fmt = _flatten(loop_vars, "while_loop: loop_vars")
    if not flat_vars:
        raise ValueError("while_loop: loop_vars must hold at least one Symbol")
    node_name = NameManager.current.get(None if name == "while_loop" else name, "_while_loop")
    placeholders = [Node(None, f"{node_name}_var{i}") for i in range(len(flat_vars))]
    given = _regroup([Symbol([(v, 0)]) for v in placeholders], var_fmt)[0]
    args = given if isinstance(given, list) else [given]
    with AttrScope(__subgraph_name__=node_name):
        pred, _ = _flatten(cond(*args), "while_loop: the value of cond")
        step_output, new_vars = func(*args)
        if step_output is None:  # no step outputs (MXNet's while_loop allows None)
            step_output = []
    if len(pred) != 1:
        raise ValueError(f"while_loop: cond must return one scalar Symbol, got {len(pred)}")
    flat_out, out_fmt = _flatten(step_output, "while_loop: func's step outputs")
    flat_new, _ = _flatten(new_vars, "while_loop: func's new loop variables")
    if len(flat_new) != len(flat_vars):
        raise ValueError(f"while_loop: func returned {len(flat_new)} loop variables, expected {len(flat_vars)}")
    cond_heads, cond_free, cond_fvars = _cut(node_name, [pred[0]._outputs[0]], placeholders)
    func_heads, func_free, func_fvars = _cut(node_name, [s._outputs[0] for s in flat_out + flat_new], placeholders)
    node_inputs = [s._outputs[0] for s in flat_vars]
    where: Dict[Tuple[int, int], int] = {}
    for e in cond_free + func_free:  # the outer entries both graphs read, each once
        if (id(e[0]), e[1]) not in where:
            where[(id(e[0]), e[1])] = len(node_inputs)
            node_inputs.append(e)

    def locate(heads, free, fvars):
        inputs = [n for n in topo_order(heads) if n.op is None]
        slot = {id(p): j for j, p in enumerate(placeholders)}
        slot.update({id(v): where[(id(e[0]), e[1])] for e, v in zip(free, fvars)})
        return inputs, [slot[id(v)] for v in inputs]
    cond_inputs, cond_locs = locate(cond_heads, cond_free, cond_fvars)
    func_inputs, func_locs = locate(func_heads, func_free, func_fvars)
    missing = [p.name for p in placeholders if p not in func_inputs]
    if missing:
        raise ValueError(f"while_loop: func must use every loop variable (as MXNet's), {missing} unused")
    body = WhileBody(cond_heads, func_heads, cond_inputs, func_inputs, cond_locs, func_locs,
                     [func_inputs.index(p) for p in placeholders], len(flat_out))
    node = Node(_WHILE, node_name, {"num_vars": len(flat_vars), "num_out_data": len(flat_out),
                                    "num_inputs": len(node_inputs), "max_iterations": max_iterations, "body": body},
                node_inputs, AttrScope.current.get(None))
    results = [Symbol([(node, i)]) for i in range(len(flat_out) + len(flat_vars))]
    outputs = _regroup(results[:len(flat_out)], out_fmt)[0] if flat_out else []
    return outputs, _regroup(results[len(flat_out):], var_fmt)[0]


# -- the operator --------------------------------------------------------------------------------
def _counts(attrs) -> Tuple[int, int, int, int]:
    return attrs["num_data"], attrs["num_states"], attrs["num_out_data"], attrs["num_free"]


def _inputs(attrs) -> List[str]:
    nd, ns, _, nf = _counts(attrs)
    return [f"data{i}" for i in range(nd)] + [f"state{i}" for i in range(ns)] + [f"free{i}" for i in range(nf)]


def _outputs(attrs) -> List[str]:
    _, ns, no, _ = _counts(attrs)
    return [f"output{i}" for i in range(no)] + [f"state_output{i}" for i in range(ns)]


def _infer_through(order: Sequence[Node], inputs: Sequence[Node], given: Sequence, heads: Sequence[Entry],
                   kind: str) -> Tuple[list, list]:
    """`kind` inference ('shape' or 'dtype') over a graph whose variables `inputs` have the values `given`
    (None: unknown): (the variables' values, the heads' values) it learns."""
    values = (infer_shapes if kind == "shape" else infer_dtypes)(
        order, {(id(v), 0): x for v, x in zip(inputs, given) if x is not None})
    return [values.get((id(v), 0)) for v in inputs], [values.get((id(c), i)) for c, i in heads]


def _through_body(attrs, given: Sequence, kind: str):
    """Run `kind` inference ('shape' or 'dtype') through the body: (inputs, outputs) as the outer
    node sees them, a sequence's length added to the sliced data and the stacked outputs."""
    body: ForeachBody = attrs["body"]
    nd, ns, no, nf = _counts(attrs)
    data, states, free = given[:nd], given[nd:nd + ns], given[nd + ns:]
    is_shape = kind == "shape"
    steps = None
    if is_shape:
        lengths = {d[0] for d in data if d is not None and len(d) and d[0] is not None}
        if len(lengths) > 1:
            raise ShapeError(f"_foreach: every data input needs the same length on axis 0, got {sorted(lengths)}")
        steps = lengths.pop() if lengths else None
        data = [None if d is None else tuple(d[1:]) for d in data]
    var_values, got = _infer_through(body.order, body.data_vars + body.state_vars + body.free_vars,
                                     list(data) + list(states) + list(free), body.heads, kind)
    out_data, out_states = got[:no], got[no:]
    if is_shape:  # (an unknown length leaves the step shapes known: MXNet's partial shapes)
        out_data = [None if s is None else (steps,) + tuple(s) for s in out_data]
    ins_data = var_values[:nd]
    if is_shape:
        ins_data = [None if s is None else (steps,) + tuple(s) for s in ins_data]
    for i, (a, b) in enumerate(zip(var_values[nd:nd + ns], out_states)):
        if a is not None and b is not None and (tuple(a) if is_shape else a) != (tuple(b) if is_shape else b):
            raise (ShapeError if is_shape else DTypeError)(
                f"_foreach: state {i} enters the body as {a} and leaves it as {b}; a loop state keeps its {kind}")
    ins_states = [a if a is not None else b for a, b in zip(var_values[nd:nd + ns], out_states)]
    return ins_data + ins_states + var_values[nd + ns:], out_data + ins_states


class _BodyAttr(Attr):
    def parse(self, value, op, name):
        if not isinstance(value, (ForeachBody, CallBody, WhileBody)):
            raise MXNetError(f"{op}: '{name}' must be the graph foreach / autograd.get_symbol traced or "
                             f"load_json read, got {type(value).__name__}")
        return value


_FOREACH = register(OpDef(
    name="_foreach",
    attrs={"num_data": Attr("int"), "num_states": Attr("int"), "num_out_data": Attr("int"),
           "num_free": Attr("int"), "body": _BodyAttr("any")},
    inputs=_inputs, outputs=_outputs,
    infer_shape=lambda a, s: _through_body(a, s, "shape"),
    infer_type=lambda a, d: _through_body(a, d, "dtype"),
    kernels={}, probe_partial_shapes=False,
    doc="A loop over axis 0 of its data inputs (mx.sym.contrib.foreach); executors unroll it before "
        "their passes (ember/symbolic/control_flow.py)."))


def _through_while(attrs, given: Sequence, kind: str):
    """`kind` inference through a while loop's graphs: (inputs, outputs) as the node sees them."""
    body: WhileBody = attrs["body"]
    no, steps = attrs["num_out_data"], attrs["max_iterations"]
    is_shape = kind == "shape"
    ins = list(given)
    got = None
    for inputs, locs, order, heads in ((body.func_inputs, body.func_locs, body.func_order, body.func_heads),
                                       (body.cond_inputs, body.cond_locs, body.cond_order, body.cond_heads)):
        learnt, outs = _infer_through(order, inputs, [ins[loc] for loc in locs], heads, kind)
        for value, loc in zip(learnt, locs):
            if ins[loc] is None:
                ins[loc] = value
        got = outs if got is None else got  # func's: the step outputs and new loop variables
    outs, new_vars = got[:no], got[no:]
    for j, (loc, b) in enumerate(zip(body.var_inputs, new_vars)):
        a = ins[loc]
        if a is not None and b is not None and (tuple(a) if is_shape else a) != (tuple(b) if is_shape else b):
            raise (ShapeError if is_shape else DTypeError)(
                f"_while_loop: loop variable {j} enters func as {a} and leaves it as {b}; it must keep its {kind}")
        if a is None:
            ins[loc] = b
    if is_shape:
        outs = [None if o is None else (steps,) + tuple(o) for o in outs]
    return ins, outs + [ins[loc] for loc in body.var_inputs]


def _run_loop(body: WhileBody, ins: Sequence, no: int, steps: int, dev, is_train: bool, rng, step_outs,
              on_step=None) -> list:
    """Run the loop on the node's inputs `ins`: step t's outputs into row t of `step_outs` (None: not
    kept), `on_step(t, loop_vars)` before each step; the final loop variables."""
    cur = list(ins)  # the node's inputs, the loop variables' places holding their current values
    t = 0
    while t < steps and scalar_truth(body.run(COND, cur, None, dev, is_train, rng)[0], "while_loop: cond"):
        if on_step is not None:
            on_step(t, [cur[loc] for loc in body.var_inputs])
        got = body.run(FUNC, cur, None, dev, is_train, rng)
        if step_outs is not None:
            for k in range(no):
                step_outs[k][t] = got[k]
        for loc, new in zip(body.var_inputs, got[no:]):
            cur[loc] = new.copy()  # (the run's own arrays: its next call overwrites them)
        t += 1
    if step_outs is not None:
        for out in step_outs:
            out[t:] = 0  # past the last step (MXNet leaves these rows undefined)
    return [cur[loc] for loc in body.var_inputs]


def _while_kernel(ctx, attrs, inputs, outputs, aux):
    body: WhileBody = attrs["body"]
    no = attrs["num_out_data"]
    dev, rng = kernel_device(ctx), ctx.rng
    body.save_rng(rng, inputs)  # for the backward's replay
    final = _run_loop(body, inputs, no, attrs["max_iterations"], dev, ctx.is_train, rng, outputs[:no])
    for dst, src in zip(outputs[no:], final):
        dst[...] = src


def _backward_while_kernel(ctx, attrs, inputs, outputs, aux):
    """Back-propagation through the steps the forward took: the loop runs again (drawing what the
    forward drew) keeping each step's loop variables and generator state, then each step's gradient
    graph runs from the last step to the first, the loop variables' gradients carried back."""
    body: WhileBody = attrs["body"]
    no, nv = attrs["num_out_data"], attrs["num_vars"]
    head_grads, ins = inputs[:no + nv], inputs[no + nv:]
    dev, is_train = kernel_device(ctx), ctx.is_train
    rng = body.replay_rng(ctx.rng, ins)
    draws = body.replayable(rng)
    saved = []

    def keep(t, loop_vars):
        saved.append((loop_vars, rng_state(rng) if draws else None))
    _run_loop(body, ins, no, attrs["max_iterations"], dev, is_train, rng, None, keep)
    for o in outputs:
        o[...] = 0
    targets = body.grad_graph(FUNC)[3]
    var_of = {loc: j for j, loc in enumerate(body.var_inputs)}
    carried = list(head_grads[no:])  # the gradients of the loop variables after the step
    for t in range(len(saved) - 1, -1, -1):
        loop_vars, state = saved[t]
        cur = list(ins)
        for loc, value in zip(body.var_inputs, loop_vars):
            cur[loc] = value
        step_rng = rng if state is None else generator_in(rng, state)  # as when the forward ran this step
        heads = [g[t] for g in head_grads[:no]] + carried
        got = body.run(FUNC, GradFeed(cur, heads), None, dev, is_train, step_rng, grad=True)
        carried = [np.zeros_like(c) if isinstance(c, np.ndarray) else c * 0 for c in carried]
        for loc, g in zip(targets, got[len(got) - len(targets):]):  # (func's outputs come first)
            if loc in var_of:
                carried[var_of[loc]] = carried[var_of[loc]] + g
            else:
                outputs[loc][...] += g
    for loc, g in zip(body.var_inputs, carried):
        outputs[loc][...] += g


_WHILE = register(OpDef(
    name="_while_loop",
    attrs={"num_vars": Attr("int"), "num_out_data": Attr("int"), "num_inputs": Attr("int"),
           "max_iterations": Attr("int"), "body": _BodyAttr("any")},
    inputs=lambda a: [f"arg{i}" for i in range(a["num_inputs"])],
    outputs=lambda a: [f"output{i}" for i in range(a["num_out_data"])] + [f"var_output{i}" for i in
                                                                           range(a["num_vars"])],
    infer_shape=lambda a, s: _through_while(a, s, "shape"), infer_type=lambda a, d: _through_while(a, d, "dtype"),
    kernels={"any": _while_kernel}, resources=["rng"], gradient=gradient_by("_backward_while_loop"),
    probe_partial_shapes=False,
    doc="A while loop of at most max_iterations steps (mx.sym.contrib.while_loop): its kernel runs func "
        "while cond holds (ember/symbolic/control_flow.py)."))

register(backward_opdef(
    "_backward_while_loop", _WHILE.attrs, lambda a: a["num_out_data"] + a["num_vars"], _backward_while_kernel,
    "Gradient of _while_loop: the steps' gradient graphs from the last step to the first."))


# -- a call of a whole graph (a hybridized block's step, as autograd.get_symbol shows it) ----------
class CallBody:
    """A graph called as one node: its `heads`, and the variables `inputs` the node's inputs feed (the
    last `num_aux` of them are auxiliary states inside the graph: the node's aux inputs)."""

    __slots__ = ("heads", "inputs", "order", "num_aux")

    def __init__(self, heads: List[Entry], inputs: List[Node], num_aux: int = 0):
        self.heads = heads
        self.inputs = inputs
        self.order = topo_order(heads)
        self.num_aux = num_aux

    def __repr__(self) -> str:
        return f"<cached graph: {sum(n.op is not None for n in self.order)} operators>"


def call(graph: Symbol, input_names: Sequence[str], args: Sequence[Symbol], name: Optional[str] = None) -> Symbol:
    """One `_CachedOp` node running `graph` on `args` (fed to its variables `input_names`, in order)."""
    by_name = {n.name: n for n in topo_order(graph._outputs) if n.op is None}
    missing = [n for n in input_names if n not in by_name]
    if missing:
        raise MXNetError(f"_CachedOp: the graph has no inputs {missing}")
    # variables the graph uses as auxiliary states (BatchNorm's moving statistics) are the node's aux
    # inputs, after the others (each group in the given order), as list_arguments/list_auxiliary_states expect
    aux_ids = aux_variable_ids(topo_order(graph._outputs))
    fed = [(by_name[n], a) for n, a in zip(input_names, args)]
    fed = [p for p in fed if id(p[0]) not in aux_ids] + [p for p in fed if id(p[0]) in aux_ids]
    body = CallBody(list(graph._outputs), [v for v, _ in fed], sum(id(v) in aux_ids for v, _ in fed))
    node = Node(_CACHED_OP, NameManager.current.get(name, "_cachedop"), {"body": body},
                [a._outputs[0] for _, a in fed])
    return Symbol([(node, i) for i in range(len(body.heads))])


# MXNet's CachedOp flags: accepted by cached_op_symbol; ember's executors inline and plan the graph anyway
_CACHED_OP_FLAGS = {"static_alloc", "static_shape", "is_dynamic", "inline_limit", "forward_bulk_size",
                    "backward_bulk_size", "data_indices", "param_indices"}


def cached_op_symbol(*args: Symbol, subgraph: str, name: Optional[str] = None, **flags) -> Symbol:
    """MXNet's `mx.sym._internal._CachedOp(*args, subgraph=json)`: one `_CachedOp` node running the graph
    whose JSON is `subgraph` on `args`, fed to its inputs in `list_inputs()` order."""
    from .json_io import load_json
    unknown = sorted(set(flags) - _CACHED_OP_FLAGS)
    if unknown:
        raise MXNetError(f"_CachedOp: unknown attributes {unknown} (known: subgraph, "
                         f"{', '.join(sorted(_CACHED_OP_FLAGS))})")
    if not isinstance(subgraph, str):
        raise MXNetError(f"_CachedOp: 'subgraph' must be a symbol's JSON string, got {type(subgraph).__name__}")
    graph = load_json(subgraph)
    inputs = graph.list_inputs()
    if len(args) != len(inputs) or not all(isinstance(a, Symbol) for a in args):
        raise MXNetError(f"_CachedOp: the graph takes {len(inputs)} symbols ({', '.join(inputs)}), "
                         f"got {len(args)}: {[type(a).__name__ for a in args]}")
    return call(graph, inputs, args, name)


def _call_infer(attrs, given: Sequence, kind: str, aux_given: Optional[Sequence] = None):
    """`kind` inference through the called graph: (inputs, outputs), and the aux states' values when the
    graph has any (given: `aux_given` for shapes; unknown for dtypes, which the registry gives no aux of)."""
    body: CallBody = attrs["body"]
    if not body.num_aux:
        return _infer_through(body.order, body.inputs, given, body.heads, kind)
    aux_given = list(aux_given) if aux_given is not None else [None] * body.num_aux
    learnt, outs = _infer_through(body.order, body.inputs, list(given) + aux_given, body.heads, kind)
    n = len(body.inputs) - body.num_aux
    return learnt[:n], outs, learnt[n:]


_CACHED_OP = register(OpDef(
    name="_CachedOp",
    attrs={"body": _BodyAttr("any", doc="the graph called")},
    inputs=lambda a: [f"arg{i}" for i in range(len(a["body"].inputs) - a["body"].num_aux)],
    aux=lambda a: [f"aux{i}" for i in range(a["body"].num_aux)],
    outputs=lambda a: [f"output{i}" for i in range(len(a["body"].heads))],
    infer_shape=lambda a, s, aux=None: _call_infer(a, s, "shape", aux),
    infer_type=lambda a, d: _call_infer(a, d, "dtype"),
    kernels={}, probe_partial_shapes=False,
    doc="A graph run as one step (a hybridized block's call, as autograd.get_symbol shows it); executors "
        "inline it before their passes (ember/symbolic/control_flow.py)."))
