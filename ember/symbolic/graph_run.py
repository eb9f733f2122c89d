"""Graphs an operator runs inside its own engine op: the branches of `_cond` (cond.py) and the
two graphs of `_while_loop` (control_flow.py), whose kernels decide at run time what runs.

`BoundGraphs` holds such a node's graphs, each as (heads, variables, locs): graph variable i is fed by
the node's input `locs[i]`.  `run` binds a graph once per input signature and thread (`_GraphRun`) and
calls its forward segments directly on arrays of its own; with `grad` it runs the graph's gradient
graph instead (the graph's outputs first, then a gradient per variable that has one), fed by the
node's inputs and head gradients (`GradFeed`).  `save_rng` / `replay_rng` let a backward kernel draw
again what its own node's forward drew (a Dropout inside a graph gets the forward's mask).
`backward_opdef` / `gradient_by` give such a node its gradient op, the same shape for every kind.
"""
from __future__ import annotations

import copy
import threading
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np

from ..context import current_context
from ..ops.registry import Attr, OpDef
from .graph import Entry, Node, topo_order
from .symbol import Symbol


class BoundGraphs:
    """A node's graphs (heads, variables, locs) and their bound runs, per input signature and thread."""

    __slots__ = ("graphs", "orders", "_runs", "_grad_graphs", "_rng_states")

    def __init__(self, graphs: Sequence[Tuple[List[Entry], List[Node], List[int]]]):
        self.graphs = [(list(h), list(v), list(l)) for h, v, l in graphs]
        self.orders = [topo_order(h) for h, _, _ in self.graphs]
        self._runs: Dict[tuple, "_GraphRun"] = {}
        self._grad_graphs: Dict[int, tuple] = {}
        # the generator's state before the last forward that drew, per place of the node's inputs: one
        # graph object serves every node that holds it (two executors of a symbol, a loop's unrolled
        # copies), and each backward must replay its own node's forward
        self._rng_states: Dict[tuple, object] = {}

    def run(self, which: int, ins, outs, ctx, is_train: bool, rng, grad: bool = False) -> list:
        """Graph `which` (its gradient graph with `grad`: `ins` a GradFeed) on the node's arrays `ins`
        (indexed by the graph's locs), written into `outs` (or returned when `outs` is None: the run's
        own arrays, overwritten by its next call)."""
        heads, variables, sources = self.grad_graph(which)[:3] if grad else self.graphs[which]
        values = [ins[s] for s in sources]
        key = (which, grad, ctx, threading.get_ident(), tuple((v.shape, v.dtype.str) for v in values))
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = _GraphRun(heads, variables, values, ctx)
        return run(values, outs, is_train, rng)

    def grad_graph(self, which: int) -> tuple:
        """(heads, variables, where each variable reads: a node input or ("head", j), the node input each
        gradient is for).  The heads are the graph's outputs, then a gradient per graph variable that
        has one: the graph itself runs first, in its own order, so it draws the same random numbers as
        the forward did from the same generator state."""
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

    def replayable(self, rng) -> bool:
        """Whether the graphs draw from `rng`, a generator whose state can be kept and restored."""
        return rng is not None and hasattr(rng, "bit_generator") and self.draws()

    def save_rng(self, rng, ins: Sequence) -> None:
        """Keep the generator's state before a forward that draws on the node's inputs `ins`, for
        the backward's replay."""
        if self.replayable(rng):
            states = self._rng_states
            states[_places(ins)] = rng_state(rng)
            if len(states) > _RNG_STATES_KEPT:
                del states[next(iter(states))]  # the oldest: a node not run since

    def replay_rng(self, rng, ins: Sequence):
        """A generator in the state the last forward on the node's inputs `ins` (the backward's, at
        the same places) started from, drawing the same numbers again; `rng` when none drew."""
        if rng is None or not hasattr(rng, "bit_generator") or not self._rng_states:
            return rng
        state = self._rng_states.get(_places(ins))
        return rng if state is None else generator_in(rng, state)


_RNG_STATES_KEPT = 256


def _places(arrays: Sequence) -> tuple:
    """Where the arrays are (data address, shape): the same for a node's forward and its backward,
    which read the node's inputs from the same storage."""
    return tuple((x.data.ptr if hasattr(x.data, "ptr") else x.__array_interface__["data"][0], x.shape)
                 for x in arrays)


def rng_state(rng):
    """A copy of the generator's state (for generator_in)."""
    return copy.deepcopy(rng.bit_generator.state)


def generator_in(rng, state):
    """A new generator of `rng`'s kind in `state`: it draws again what `rng` drew from there."""
    replica = np.random.Generator(type(rng.bit_generator)())
    replica.bit_generator.state = copy.deepcopy(state)
    return replica


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


class GradFeed:
    """A gradient graph's sources by index: a node input (an int) or ("head", j), head gradient j."""

    __slots__ = ("ins", "heads")

    def __init__(self, ins, heads):
        self.ins, self.heads = ins, heads

    def __getitem__(self, source):
        return self.heads[source[1]] if isinstance(source, tuple) else self.ins[source]


def scalar_truth(value, what: str) -> bool:
    """The truth of a graph's one-element result (a predicate); MXNetError if it has another size."""
    from ..base import MXNetError
    if value.size != 1:
        raise MXNetError(f"{what} must be a scalar (one element), got shape {value.shape}")
    host = value if isinstance(value, np.ndarray) else value.get()  # (a device array: its one element copied back)
    return bool(host.reshape(-1)[0])


def kernel_device(ctx):
    """The device a kernel's graphs run on: its context's, else the current one."""
    return ctx.device if ctx.device is not None else current_context()


def gradient_by(backward_op: str) -> Callable:
    """A graph-carrying node's `gradient`: its backward op on (head gradients, the node's inputs),
    given the node's own attributes; a gradient per input."""
    def gradient(F, attrs, inputs, outputs, out_grads):
        n = attrs["num_inputs"]
        res = getattr(F, backward_op)(*out_grads, *inputs, **attrs)
        return [res[i] for i in range(n)] if n > 1 else [res]
    return gradient


def backward_opdef(name: str, attrs: Dict[str, Attr], heads: Callable[[dict], int], kernel: Callable,
                   doc: str) -> OpDef:
    """The gradient op of a graph-carrying node with attributes `attrs` (num_inputs among them): in,
    `heads(attrs)` head gradients then the node's inputs; out, a gradient per node input (of its
    shape and dtype)."""
    return OpDef(
        name=name, attrs=attrs,
        inputs=lambda a: [f"head_grad{i}" for i in range(heads(a))] + [f"arg{i}" for i in range(a["num_inputs"])],
        outputs=lambda a: [f"arg{i}_grad" for i in range(a["num_inputs"])],
        infer_shape=lambda a, s: (s, list(s[heads(a):])), infer_type=lambda a, d: (d, list(d[heads(a):])),
        kernels={"any": kernel}, resources=["rng"], probe_partial_shapes=False, doc=doc)
