"""`mx.sym.contrib.cond`: a branch chosen at run time, in the graph (MXNet's `_cond`).

`cond(pred, then_func, else_func)` traces the three graphs (the predicate's, then_func's and
else_func's) into a `CondBody`; what they read from outside becomes the inputs of the one `_cond`
node, each graph's variables fed by the node's inputs at its `locs` (MXNet's encoding, also in JSON).
Executors keep the node: its kernel evaluates the predicate and runs only the branch it picks, each
graph bound once per input signature and run inside the node's own engine op (graph_run.py: its
segments are called directly on arrays of its own).  The gradient is a
`_backward_cond` node that runs the gradient graph of the branch the predicate picks (the
predicate is evaluated again on the same inputs), so the branch not taken contributes nothing,
not even a NaN.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from ..base import DTypeError, MXNetError, ShapeError
from ..ops.registry import Attr, OpDef, register
from .control_flow import _cut, _flatten, _infer_through, _regroup
from .graph import Entry, Node, topo_order
from .graph_run import BoundGraphs, GradFeed, backward_opdef, gradient_by, kernel_device, scalar_truth
from .naming import AttrScope, NameManager
from .symbol import Symbol

PRED, THEN, ELSE = 0, 1, 2


class CondBody(BoundGraphs):
    """cond's graphs (predicate, then, else), each as (heads, variables, locs): its variables are fed by
    the node's inputs at `locs` (graph_run.BoundGraphs)."""

    __slots__ = ()

    def __repr__(self) -> str:
        counts = [sum(n.op is not None for n in o) for o in self.orders]
        return f"<cond: predicate {counts[0]}, then {counts[1]}, else {counts[2]} operators>"


def cond(pred: Symbol, then_func, else_func, name: str = "cond"):
    """then_func() if the scalar `pred` is true, else else_func(), in the graph: only the branch taken
    runs (MXNet's `mx.sym.contrib.cond`); both return the same number of Symbols, of the same shapes."""
    if not isinstance(pred, Symbol) or len(pred.list_outputs()) != 1:
        raise ValueError("cond: pred must be one Symbol with one output (a scalar)")
    node_name = NameManager.current.get(None if name == "cond" else name, "_cond")
    # MXNet's marks for what each graph makes: '<name>_pred<n>', '_then<n>', '_else<n>' (counted per name)
    marks = [AttrScope.unique_subgraph_name(name + suffix) for suffix in ("_pred", "_then", "_else")]
    branches = []
    for mark, fn, what in ((marks[1], then_func, "then"), (marks[2], else_func, "else")):
        with AttrScope(__subgraph_name__=mark):
            out = fn()
        branches.append(_flatten(out, f"cond: {what}_func's outputs"))
    (flat_then, fmt), (flat_else, _) = branches
    if len(flat_then) != len(flat_else):
        raise ValueError(f"cond: then_func gives {len(flat_then)} outputs, else_func {len(flat_else)}; they must "
                         "give the same number")
    if not flat_then:
        raise ValueError("cond: the branches give no output")
    cuts = [_cut(marks[0], [pred._outputs[0]], []), _cut(marks[1], [s._outputs[0] for s in flat_then], []),
            _cut(marks[2], [s._outputs[0] for s in flat_else], [])]
    node_inputs: List[Entry] = []
    where: Dict[Tuple[int, int], int] = {}
    for _, free, _ in cuts:  # the outer entries the graphs read, each once
        for e in free:
            if (id(e[0]), e[1]) not in where:
                where[(id(e[0]), e[1])] = len(node_inputs)
                node_inputs.append(e)
    graphs = []
    for heads, free, fvars in cuts:
        slot = {id(v): where[(id(e[0]), e[1])] for e, v in zip(free, fvars)}
        variables = [n for n in topo_order(heads) if n.op is None]
        graphs.append((heads, variables, [slot[id(v)] for v in variables]))
    node = Node(_COND, node_name, {"num_inputs": len(node_inputs), "num_outputs": len(flat_then),
                                   "body": CondBody(graphs)},
                node_inputs, AttrScope.current.get(None))
    return _regroup([Symbol([(node, i)]) for i in range(len(flat_then))], fmt)[0]


# -- the operators ---------------------------------------------------------------------------------
class _CondAttr(Attr):
    def parse(self, value, op, name):
        if not isinstance(value, CondBody):
            raise MXNetError(f"{op}: '{name}' must be the graphs cond traced or load_json read, "
                             f"got {type(value).__name__}")
        return value


def _through_cond(attrs, given: Sequence, kind: str):
    """`kind` inference through the three graphs: (inputs, outputs) as the node sees them; the two
    branches must agree on each output."""
    body: CondBody = attrs["body"]
    ins = list(given)
    outs = None
    for which in (THEN, ELSE, PRED):
        heads, variables, locs = body.graphs[which]
        learnt, got = _infer_through(body.orders[which], variables, [ins[loc] for loc in locs], heads, kind)
        for value, loc in zip(learnt, locs):
            if value is not None:  # (what the graph learnt completes a partly known shape)
                ins[loc] = value
        if which == THEN:
            outs = got
        elif which == ELSE:
            for i, (a, b) in enumerate(zip(outs, got)):
                same = a is None or b is None or (tuple(a) == tuple(b) if kind == "shape" else a == b)
                if not same:
                    raise (ShapeError if kind == "shape" else DTypeError)(
                        f"_cond: output {i} is {a} from then_func and {b} from else_func; the branches must "
                        f"agree on each output's {kind}")
                if a is None:
                    outs[i] = b
    return ins, outs


def _taken(body: CondBody, ins, ctx, is_train: bool, rng) -> int:
    value = body.run(PRED, ins, None, ctx, is_train, rng)[0]
    return THEN if scalar_truth(value, "cond: the predicate") else ELSE


def _cond_kernel(ctx, attrs, inputs, outputs, aux):
    body: CondBody = attrs["body"]
    dev, rng = kernel_device(ctx), ctx.rng
    body.save_rng(rng, inputs)  # for the backward's replay
    body.run(_taken(body, inputs, dev, ctx.is_train, rng), inputs, outputs, dev, ctx.is_train, rng)


def _backward_cond_kernel(ctx, attrs, inputs, outputs, aux):
    body: CondBody = attrs["body"]
    k = attrs["num_outputs"]
    head_grads, ins = inputs[:k], inputs[k:]
    dev = kernel_device(ctx)
    rng = body.replay_rng(ctx.rng, ins)  # the predicate and the branch draw what the forward drew
    which = _taken(body, ins, dev, ctx.is_train, rng)
    targets = body.grad_graph(which)[3]
    got = body.run(which, GradFeed(ins, head_grads), None, dev, ctx.is_train, rng, grad=True)
    for o in outputs:
        o[...] = 0
    for loc, g in zip(targets, got[len(got) - len(targets):]):  # (the branch's outputs come first)
        outputs[loc][...] += g


_COND = register(OpDef(
    name="_cond",
    attrs={"num_inputs": Attr("int"), "num_outputs": Attr("int"), "body": _CondAttr("any")},
    inputs=lambda a: [f"arg{i}" for i in range(a["num_inputs"])],
    outputs=lambda a: [f"output{i}" for i in range(a["num_outputs"])],
    infer_shape=lambda a, s: _through_cond(a, s, "shape"), infer_type=lambda a, d: _through_cond(a, d, "dtype"),
    kernels={"any": _cond_kernel}, resources=["rng"], gradient=gradient_by("_backward_cond"),
    probe_partial_shapes=False,
    doc="then or else, as the predicate says (mx.sym.contrib.cond): only the branch taken runs "
        "(ember/symbolic/cond.py)."))

register(backward_opdef(
    "_backward_cond", _COND.attrs, lambda a: a["num_outputs"], _backward_cond_kernel,
    "Gradient of _cond: the gradient graph of the branch the predicate picks; zero for inputs that "
    "branch does not read."))
