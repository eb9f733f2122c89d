"""`mx.sym.contrib.cond`: a branch chosen at run time, in the graph (MXNet's `_cond`).

`cond(pred, then_func, else_func)` traces the three graphs (the predicate's, then_func's and
else_func's) into a `CondBody`; what they read from outside becomes the inputs of the one `_cond`
node, each graph's variables fed by the node's inputs at its `locs` (MXNet's encoding, also in JSON).
Unlike loops, executors keep the node: its kernel evaluates the predicate and runs only the branch it
picks, each graph bound once per input signature and run inside the node's own engine op
(`_GraphRun`: its segments are called directly on arrays of its own).  The gradient is a
`_backward_cond` node that runs the gradient graph of the branch the predicate picks (the
predicate is evaluated again on the same inputs), so the branch not taken contributes nothing,
not even a NaN.
"""
from __future__ import annotations

import copy
import threading
from typing import Dict, List, Sequence, Tuple

import numpy as np

from ..base import DTypeError, MXNetError, ShapeError
from ..context import current_context
from ..ops.registry import Attr, OpDef, register
from .control_flow import _cut, _flatten, _infer_through, _regroup
from .graph import Entry, Node, topo_order
from .naming import AttrScope, NameManager
from .symbol import Symbol

PRED, THEN, ELSE = 0, 1, 2


class CondBody:
    """cond's graphs (predicate, then, else), each as (heads, variables, locs): its variables are fed by
    the node's inputs at `locs`.  Bound graphs are kept per input signature and thread."""

    __slots__ = ("graphs", "orders", "_runs", "_grad_graphs", "forward_rng_state")

    def __init__(self, graphs: Sequence[Tuple[List[Entry], List[Node], List[int]]]):
        self.graphs = [(list(h), list(v), list(l)) for h, v, l in graphs]
        self.orders = [topo_order(h) for h, _, _ in self.graphs]
        self._runs: Dict[tuple, "_GraphRun"] = {}
        self._grad_graphs: Dict[int, tuple] = {}
        self.forward_rng_state = None  # the generator's state before the last forward, if the graphs draw

    def __repr__(self) -> str:
        counts = [sum(n.op is not None for n in o) for o in self.orders]
        return f"<cond: predicate {counts[0]}, then {counts[1]}, else {counts[2]} operators>"

    def run(self, which: int, ins: Sequence, outs: Sequence, ctx, is_train: bool, rng, grad: bool = False) -> list:
        """Graph `which` (its gradient graph with `grad`: inputs = the branch's then its head gradients) on
        the node's arrays `ins`, written into `outs` (or returned when `outs` is None)."""
        heads, variables, sources = self._grad_graph(which)[:3] if grad else self.graphs[which]
        values = [ins[s] for s in sources]
        key = (which, grad, ctx, threading.get_ident(), tuple((v.shape, v.dtype.str) for v in values))
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = _GraphRun(heads, variables, values, ctx)
        return run(values, outs, is_train, rng)

    def _grad_graph(self, which: int) -> tuple:
        """(heads, variables, where each variable reads: a node input or ("head", j), the node input each
        gradient is for).  The heads are the branch's outputs, then a gradient per branch variable that
        has one: the branch itself runs first, in its own order, so it draws the same random numbers
        as the forward did from the same generator state."""
        got = self._grad_graphs.get(which)
        if got is None:
            from .gradient import build_gradient
            heads, variables, locs = self.graphs[which]
            grads, head_vars = build_gradient(heads, variables, self.orders[which])
            present = [(g, loc) for g, loc in zip(grads, locs) if g is not None]
            all_heads = list(heads) + [g for g, _ in present]
            source = {id(v): loc for v, loc in zip(variables, locs)}
            source.update({id(h): ("head", j) for j, h in enumerate(head_vars)})
            used = [n for n in topo_order(all_heads) if n.op is None]
            got = self._grad_graphs[which] = (all_heads, used, [source[id(v)] for v in used],
                                              [loc for _, loc in present])
        return got

    def draws(self) -> bool:
        """Whether any of the graphs draws random numbers (an operator using the generator)."""
        return any(n.op is not None and "rng" in tuple(n.op.resources) for order in self.orders for n in order)


class _GraphRun:
    """One graph bound for fixed input shapes and dtypes, run inside the engine op of the node that owns
    it: its inputs are copied into arrays of its own (made without engine ops) and its forward segments
    called directly; the calling op holds the node's variables, and nothing else reaches these arrays."""

    def __init__(self, heads: List[Entry], variables: List[Node], values: Sequence, ctx):
        from ..imperative import storage
        from ..imperative.ndarray import NDArray
        from .executor import Executor
        self.args = []
        arrays = {}
        for v, x in zip(variables, values):
            data, chunk = storage.alloc(x.shape, x.dtype, ctx)
            arrays[v.name] = NDArray(data, chunk)
            self.args.append(data)
        self.exe = Executor(Symbol(list(heads)), ctx, arrays, grad_req="null") if heads else None

    def __call__(self, values: Sequence, outs, is_train: bool, rng) -> list:
        for dst, src in zip(self.args, values):
            dst[...] = src
        if self.exe is None:
            return []
        exe = self.exe
        exe._refresh_steps()
        for seg in exe._fwd_segments:
            seg.run(is_train, rng)
        results = [o._data for o in exe.outputs]
        if outs is None:
            return results
        for dst, src in zip(outs, results):
            dst[...] = src
        return outs


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
    if value.size != 1:
        raise MXNetError(f"cond: the predicate must be a scalar (one element), got shape {value.shape}")
    host = value if isinstance(value, np.ndarray) else value.get()  # (a device array: its one element copied back)
    return THEN if bool(host.reshape(-1)[0]) else ELSE


def _device(ctx):
    return ctx.device if ctx.device is not None else current_context()


def _cond_kernel(ctx, attrs, inputs, outputs, aux):
    body: CondBody = attrs["body"]
    dev, rng = _device(ctx), ctx.rng
    if rng is not None and hasattr(rng, "bit_generator") and body.draws():  # for the backward's replay
        body.forward_rng_state = copy.deepcopy(rng.bit_generator.state)
    body.run(_taken(body, inputs, dev, ctx.is_train, rng), inputs, outputs, dev, ctx.is_train, rng)


def _replay_rng(body: CondBody, rng):
    """A generator in the state the last forward started from (the same draws again), or `rng`."""
    state = body.forward_rng_state
    if state is None or rng is None or not hasattr(rng, "bit_generator"):
        return rng
    replica = np.random.Generator(type(rng.bit_generator)())
    replica.bit_generator.state = copy.deepcopy(state)
    return replica


def _cond_gradient(F, attrs, inputs, outputs, out_grads):
    res = F._backward_cond(*out_grads, *inputs, body=attrs["body"], num_inputs=attrs["num_inputs"],
                           num_outputs=attrs["num_outputs"])
    n = attrs["num_inputs"]
    return [res[i] for i in range(n)] if n > 1 else [res]


def _backward_cond_kernel(ctx, attrs, inputs, outputs, aux):
    body: CondBody = attrs["body"]
    k = attrs["num_outputs"]
    head_grads, ins = inputs[:k], inputs[k:]
    dev = _device(ctx)
    rng = _replay_rng(body, ctx.rng)  # the predicate and the branch draw what the forward drew
    which = _taken(body, ins, dev, ctx.is_train, rng)
    targets = body._grad_graph(which)[3]
    got = body.run(which, _GradFeed(ins, head_grads), None, dev, ctx.is_train, rng, grad=True)
    for o in outputs:
        o[...] = 0
    for loc, g in zip(targets, got[len(got) - len(targets):]):  # (the branch's outputs come first)
        outputs[loc][...] += g


class _GradFeed:
    """The gradient graph's sources by index: a node input (an int) or ("head", j), head gradient j."""

    __slots__ = ("ins", "heads")

    def __init__(self, ins, heads):
        self.ins, self.heads = ins, heads

    def __getitem__(self, source):
        return self.heads[source[1]] if isinstance(source, tuple) else self.ins[source]


_COND = register(OpDef(
    name="_cond",
    attrs={"num_inputs": Attr("int"), "num_outputs": Attr("int"), "body": _CondAttr("any")},
    inputs=lambda a: [f"arg{i}" for i in range(a["num_inputs"])],
    outputs=lambda a: [f"output{i}" for i in range(a["num_outputs"])],
    infer_shape=lambda a, s: _through_cond(a, s, "shape"), infer_type=lambda a, d: _through_cond(a, d, "dtype"),
    kernels={"any": _cond_kernel}, resources=["rng"], gradient=_cond_gradient, probe_partial_shapes=False,
    doc="then or else, as the predicate says (mx.sym.contrib.cond): only the branch taken runs "
        "(ember/symbolic/cond.py)."))

register(OpDef(
    name="_backward_cond",
    attrs={"num_inputs": Attr("int"), "num_outputs": Attr("int"), "body": _CondAttr("any")},
    inputs=lambda a: [f"head_grad{i}" for i in range(a["num_outputs"])] + [f"arg{i}" for i in range(a["num_inputs"])],
    outputs=lambda a: [f"arg{i}_grad" for i in range(a["num_inputs"])],
    infer_shape=lambda a, s: (s, list(s[a["num_outputs"]:])),
    infer_type=lambda a, d: (d, list(d[a["num_outputs"]:])),
    kernels={"any": _backward_cond_kernel}, resources=["rng"], probe_partial_shapes=False,
    doc="Gradient of _cond: the gradient graph of the branch the predicate picks; zero for inputs that "
        "branch does not read."))
