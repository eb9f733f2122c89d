"""Backward through the recorded tape: gradients come only from the registry's OpDef.gradient.

The tape is the DAG of `Node`s reachable from the heads through the `_ag`
entries of NDArrays.  Nodes run in reverse topological order; each calls
`opdef.gradient(ember.nd, attrs, inputs, outputs, out_grads)`, whose ops are
recorded too when `create_graph` is set (second-order gradients).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

from ..base import EmberError
from ..engine.native import pool_prewake
from . import autograd_state as state
from .ndarray import NDArray


class AutogradError(EmberError):
    """Autograd was used wrongly (no graph, graph already freed, op without gradient)."""


def _key(entry):
    return ("v", id(entry)) if isinstance(entry, state.Leaf) else (id(entry.node), entry.index)


def _topo_nodes(heads: Sequence[NDArray]) -> List[state.Node]:
    """Nodes reachable from the heads, inputs before users."""
    order, seen = [], set()
    stack = []
    head_nodes = set()
    for h in heads:
        if isinstance(h._ag, state.Entry):
            stack.append((h._ag.node, False))
            head_nodes.add(id(h._ag.node))
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.freed and id(node) not in head_nodes:
            # an output of a graph an earlier backward freed, used again in a new recording: a
            # constant there, as in MXNet (whose new graph starts at such an array)
            continue
        if node.freed:
            raise AutogradError(
                f"cannot differentiate through '{node.opdef.name}' again: its graph was freed by an "
                "earlier backward; pass retain_graph=True to the first backward to differentiate twice")
        stack.append((node, True))
        for x in node.inputs:
            if isinstance(x._ag, state.Entry) and id(x._ag.node) not in seen:
                stack.append((x._ag.node, False))
    return order


# A node's gradient function may return this for an input instead of an array: it already wrote
# (or added, as the variable's grad_req says) that gradient into the variable's `.grad` itself.
# Offered only by backward(), only for a variable that the node is the sole path to (see
# `_direct_leaves`), and only to OpDefs that define `gradient_into`: a hybridized block's cached
# graph binds its gradient outputs to the parameters' `.grad` buffers, so no copy is made.
WRITTEN = object()


def _direct_leaves(heads: Sequence[NDArray], nodes: List[state.Node], leaves: Dict) -> Dict:
    """Of `leaves` (key -> Leaf), those reached by exactly one input of one node and not a head,
    with a dense gradient buffer: a node may write their gradient straight into `.grad`."""
    uses: Dict = {}
    for h in heads:
        if h._ag is not None:
            k = _key(h._ag)
            uses[k] = uses.get(k, 0) + 2  # a head's own gradient always goes through the dict
    for node in nodes:
        for x in node.inputs:
            if isinstance(x._ag, state.Leaf):
                k = _key(x._ag)
                uses[k] = uses.get(k, 0) + 1
    return {k: leaf for k, leaf in leaves.items()
            if uses.get(k) == 1 and leaf.grad_req in ("write", "add") and leaf.grad.stype == "default"}


def _accumulate(grads: Dict, key, g: NDArray) -> None:
    prev = grads.get(key)
    grads[key] = g if prev is None else prev + g


def run_backward(heads: Sequence[NDArray], head_grads: Optional[Sequence[Optional[NDArray]]],
                 retain_graph: bool, train_mode: bool, create_graph: bool, leaves: Optional[Dict] = None) -> Dict:
    """Gradients of the heads keyed by graph entry; leaves keyed ('v', id(leaf)).

    `leaves` (key -> Leaf, from backward()): variables whose `.grad` a node with `gradient_into`
    may fill itself; their entry is then `WRITTEN` instead of an array."""
    from . import creation
    from .. import ndarray as F
    heads = list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    if len(head_grads) != len(heads):
        raise ValueError(f"backward: {len(heads)} heads but {len(head_grads)} head gradients")
    grads: Dict = {}
    for h, hg in zip(heads, head_grads):
        if not isinstance(h, NDArray):
            raise TypeError(f"backward: heads must be NDArrays, got {type(h).__name__}")
        if h._ag is None:
            raise AutogradError(
                "cannot differentiate: the array is not in a computational graph; compute it inside "
                "autograd.record() from arrays that had attach_grad() called")
        if hg is None:
            hg = creation.ones_now(h)
        elif hg.shape != h.shape:
            raise ValueError(f"backward: head gradient shape {hg.shape} differs from head shape {h.shape}")
        _accumulate(grads, _key(h._ag), hg)
    nodes = _topo_nodes(heads)
    for node in nodes:
        if node.opdef.expensive:  # products ahead: wake the CPU team while the rest goes first
            pool_prewake()
            break
    direct = _direct_leaves(heads, nodes, leaves) if leaves and not create_graph else {}
    prev_rec = state.set_recording(create_graph)
    prev_train = state.set_training(train_mode)
    try:
        for node in reversed(nodes):
            nid = id(node)
            outs = node.outputs
            out_grads = [grads.pop((nid, i), None) for i in range(len(outs))]
            if all(g is None for g in out_grads):
                continue
            opdef = node.opdef
            if opdef.gradient is None:
                raise AutogradError(f"operator '{opdef.name}' has no gradient registered, so autograd "
                                    "cannot differentiate through it")
            outputs = []
            for i, (data, chunk) in enumerate(outs):
                o = NDArray(data, chunk)
                o._ag = state.Entry(node, i)
                outputs.append(o)
            # a hidden output (Dropout's mask) is never returned, so nothing downstream gives it a
            # gradient: the op's gradient gets None there rather than a buffer of zeros
            n_vis = len(outs) if opdef.num_visible_outputs is None else opdef.visible_outputs(node.attrs)
            out_grads = [creation.zeros_like(outputs[i]) if g is None and i < n_vis else g
                         for i, g in enumerate(out_grads)]
            # inputs outside the graph need no gradient: an op that says so may skip them
            kw = {"needed": [x._ag is not None for x in node.inputs]} if opdef.gradient_takes_needed else {}
            if opdef.gradient_takes_aux:
                kw["aux"] = list(node.aux)
            if direct and opdef.gradient_into is not None:
                dests = [direct.get(_key(x._ag)) if isinstance(x._ag, state.Leaf) else None for x in node.inputs]
                in_grads = opdef.gradient_into(F, node.attrs, list(node.inputs), outputs, out_grads, dests, **kw)
            else:
                in_grads = opdef.gradient(F, node.attrs, list(node.inputs), outputs, out_grads, **kw)
            if len(in_grads) < len(node.inputs):
                raise AutogradError(f"gradient of '{opdef.name}' returned {len(in_grads)} values for "
                                    f"{len(node.inputs)} inputs")
            for x, g in zip(node.inputs, in_grads):
                if g is None or x._ag is None:
                    continue
                if g is WRITTEN:
                    grads[_key(x._ag)] = WRITTEN  # a direct leaf has no other contribution
                    continue
                if g.shape != x.shape:
                    raise AutogradError(f"gradient of '{opdef.name}' has shape {g.shape} but its input "
                                        f"has shape {x.shape}")
                _accumulate(grads, _key(x._ag), g)
    finally:
        state.set_recording(prev_rec)
        state.set_training(prev_train)
    if not retain_graph:
        for node in nodes:
            node.freed = True
            node.inputs = []
            node.aux = ()
            node.outputs = []
    return grads


def _leaf_of(var: NDArray) -> state.Leaf:
    if not isinstance(var._ag, state.Leaf):
        raise AutogradError("the array is not an autograd variable; call attach_grad() or "
                            "autograd.mark_variables() on it first")
    return var._ag


def backward(heads, head_grads=None, retain_graph: bool = False, train_mode: bool = True) -> None:
    """Write (or add) the heads' gradients into the `.grad` of every reachable variable."""
    heads = [heads] if isinstance(heads, NDArray) else list(heads)
    if isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    leaves = {}
    for h in heads:
        _collect_leaves(h, leaves)  # before run_backward, which may free the graph
    grads = run_backward(heads, head_grads, retain_graph, train_mode, create_graph=False, leaves=leaves)
    from . import creation
    for key, leaf in leaves.items():
        if leaf.grad_req == "null":
            continue
        g = grads.get(key)
        if g is WRITTEN:
            pass
        elif g is None:
            # reached, but every path blocks the gradient (BlockGrad, argmax, ...): as in MXNet,
            # the gradient is zero ('write' stores it, 'add' adds nothing) and counts as written
            if leaf.grad_req == "write":
                creation.zeros_like(leaf.grad, out=leaf.grad)  # a row_sparse buffer keeps no rows
        else:
            if g.dtype != leaf.grad.dtype:
                g = g.astype(leaf.grad.dtype)
            # a row_sparse gradient buffer receives a dense gradient's rows that hold a non-zero
            # (MXNet's cast_storage), a sparse gradient's stored rows (sparse_ops.assign)
            if leaf.grad_req == "add":
                leaf.grad += g.detach()
            else:
                g.detach().copyto(leaf.grad)
        leaf.fresh_grad = True


def _collect_leaves(head: NDArray, out: Dict) -> None:
    stack, seen = [head], set()
    while stack:
        x = stack.pop()
        entry = x._ag
        if isinstance(entry, state.Leaf):
            out[_key(entry)] = entry
        elif isinstance(entry, state.Entry) and id(entry.node) not in seen:
            seen.add(id(entry.node))
            stack.extend(entry.node.inputs)


def grad(heads, variables, head_grads=None, retain_graph: Optional[bool] = None,
         create_graph: bool = False, train_mode: bool = True) -> List[NDArray]:
    """Gradients of the heads w.r.t. `variables`, returned (not written to `.grad`)."""
    heads = [heads] if isinstance(heads, NDArray) else list(heads)
    variables = [variables] if isinstance(variables, NDArray) else list(variables)
    if isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    if retain_graph is None:
        retain_graph = create_graph
    keys = [_key(_leaf_of(v)) for v in variables]
    grads = run_backward(heads, head_grads, retain_graph, train_mode, create_graph)
    from . import creation
    result = []
    for v, k in zip(variables, keys):
        g = grads.get(k)
        result.append(creation.zeros_like(v) if g is None else g)
    return result
