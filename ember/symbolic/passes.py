"""The graph passes an executor runs, each a function ``GraphState -> GraphState``, listed in `PASSES`.

A `GraphState` is the graph being compiled: the forward heads, the explicit node
list in execution order (forward nodes first), and what passes have computed so far
(gradient entries, shapes, dtypes, in-place pairs, memory plan).  Adding a pass is
writing one function and putting it in `PASSES`.
"""
from __future__ import annotations

import gc
import math
import os
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from ..base import OperatorError, ShapeError
from ..ops import nn_rnn
from . import planner
from .gradient import build_gradient
from .graph import Entry, Node, aux_variable_ids, topo_order
from .infer import infer_dtypes, infer_shapes, is_complete_shape

Key = Tuple[int, int]


@dataclass
class GraphState:
    """A graph being compiled for an executor, and every pass's results."""

    heads: List[Entry]                               # forward outputs
    grad_req: Dict[str, str]                         # argument name -> 'write' | 'add' | 'null'
    known_shapes: Dict[str, tuple]
    known_dtypes: Dict[str, np.dtype]
    mirror: bool = False
    nodes: List[Node] = field(default_factory=list)  # execution order
    num_forward: int = 0
    grad_entries: Dict[str, Optional[Entry]] = field(default_factory=dict)
    head_grad_vars: List[Node] = field(default_factory=list)
    shapes: Dict[Key, tuple] = field(default_factory=dict)
    dtypes: Dict[Key, np.dtype] = field(default_factory=dict)
    external: Dict[Key, str] = field(default_factory=dict)   # entry -> argument whose grad array holds it
    inplace: Dict[Key, Key] = field(default_factory=dict)    # output entry -> input entry whose bytes it takes
    plan: Optional["MemoryPlan"] = None
    plan_method: str = "best"
    stats: dict = field(default_factory=dict)
    uses_cache: Optional[tuple] = None               # (node list, its length, _use_steps result)

    def all_heads(self) -> List[Entry]:
        return list(self.heads) + [e for e in self.grad_entries.values() if e is not None]


@dataclass
class MemoryPlan:
    """Storage of every planned entry: group (in-place sharing), block and offset, and totals."""

    group_of: Dict[Key, int]
    sizes: List[int]
    starts: List[int]
    ends: List[int]
    placement: planner.Placement
    naive_bytes: int
    lower_bound: int

    @property
    def total_bytes(self) -> int:
        return self.placement.total


# -- passes -------------------------------------------------------------------------
def order_forward(g: GraphState) -> GraphState:
    """Forward nodes in DFS post-order."""
    g.nodes = topo_order(g.heads)
    g.num_forward = len(g.nodes)
    return g


def gradient(g: GraphState) -> GraphState:
    """Add backward nodes for every argument whose grad_req is not 'null'."""
    aux = aux_variable_ids(g.nodes)
    wrt = [n for n in g.nodes if n.op is None and id(n) not in aux and g.grad_req.get(n.name, "null") != "null"]
    if not wrt:
        return g
    entries, g.head_grad_vars = build_gradient(g.heads, wrt, g.nodes)
    g.grad_entries = {n.name: e for n, e in zip(wrt, entries)}
    fwd = {id(n) for n in g.nodes}
    full = topo_order(g.all_heads() + [(v, 0) for v in g.head_grad_vars])
    g.nodes = g.nodes + [n for n in full if id(n) not in fwd]
    return g


def _wants_mirror(node: Node, enabled: bool) -> bool:
    if node.op is None or "rng" in tuple(node.op.resources) or node.num_aux() or node.op.mutates:
        return False
    forced = node.user_attrs.get("__force_mirroring__")
    if forced is not None:
        return forced.strip().lower() in ("true", "1")
    return enabled and not node.op.expensive  # OpDef's cost class


def mirror(g: GraphState) -> GraphState:
    """Recompute cheap forward results in backward instead of keeping them alive (Chen et al. 2016)."""
    fwd = g.nodes[:g.num_forward]
    if not g.grad_entries or not any(_wants_mirror(n, g.mirror) for n in fwd):
        return g
    fwd_ids = {id(n) for n in fwd}
    head_ids = {id(n) for n, _ in g.heads}   # alive until the end anyway: nothing to save
    clones: Dict[int, Node] = {}
    # A chain of mirrored nodes is recomputed at most this deep (bounds recompute, like MXNet's
    # MXNET_BACKWARD_MIRROR_STEP); deeper inputs are kept from the forward pass.
    max_depth = int(os.environ.get("EMBER_BACKWARD_MIRROR_STEP", os.environ.get("MXNET_BACKWARD_MIRROR_STEP", "100")))

    def mirrored(entry: Entry, depth: int = 0) -> Entry:
        node, i = entry
        if (id(node) not in fwd_ids or id(node) in head_ids or depth >= max_depth
                or not _wants_mirror(node, g.mirror)):
            return entry
        c = clones.get(id(node))
        if c is None:
            c = Node(node.op, node.name + "_mirror", node.attrs, [mirrored(e, depth + 1) for e in node.inputs],
                     node.user_attrs)
            c._parsed = node._parsed
            clones[id(node)] = c
        return (c, i)

    for node in g.nodes[g.num_forward:]:
        if node.op is not None:
            node.inputs = [mirrored(e) for e in node.inputs]
    g.grad_entries = {k: (mirrored(e) if e is not None else None) for k, e in g.grad_entries.items()}
    bwd = topo_order(g.all_heads() + [(v, 0) for v in g.head_grad_vars])
    g.nodes = fwd + [n for n in bwd if id(n) not in fwd_ids]
    g.stats["mirrored_nodes"] = len(clones)
    return g


def dead_node_elimination(g: GraphState) -> GraphState:
    """Drop nodes that no head or gradient depends on: reachability backwards from the heads.

    A stack walk over each node's own input list; copying the graph into networkx first cost
    more than the whole walk (0.25 s of CPU at 20,000 nodes, bench/plan_time.py).
    """
    live = set()
    stack = [node for node, _ in g.all_heads()]
    while stack:
        node = stack.pop()
        if id(node) in live:
            continue
        live.add(id(node))
        stack.extend(c for c, _ in node.inputs if id(c) not in live)
    keep_vars = {id(v) for v in g.head_grad_vars}
    kept = [n for n in g.nodes if id(n) in live or (n.op is None and id(n) in keep_vars)]
    fwd_ids = {id(n) for n in g.nodes[:g.num_forward]}
    g.stats["dead_nodes_removed"] = len(g.nodes) - len(kept)
    g.num_forward = sum(1 for n in kept if id(n) in fwd_ids)
    g.nodes = kept
    return g


_CHANNEL_FIRST = (None, "NCW", "NCHW", "NCDHW")


def _pass_enabled(g: GraphState, variable: str) -> bool:
    """A rewriting pass runs on a forward-only graph, unless its environment variable says 0 / false / no."""
    return (not g.grad_entries and g.num_forward == len(g.nodes)
            and os.environ.get(variable, "1").strip().lower() not in ("0", "false", "no"))


def _conv_bn_chain(bn: Node, readers: Dict[Key, List[Node]], heads: set) -> Optional[List[Node]]:
    """[conv, bn] or [conv, bn, relu] when `bn` can be folded with the Convolution feeding it:
    only BatchNorm reads the convolution's output, nothing reads its hidden statistics, channel
    axis 1 of a channel-first convolution, and no node of the chain is placed by ctx_group."""
    if bn.op.name != "BatchNorm" or not bn.inputs:
        return None
    a = bn.parsed_attrs
    conv, j = bn.inputs[0]
    if (a["axis"] != 1 or a["output_mean_var"] or j != 0 or conv.op is None or conv.op.name != "Convolution"
            or conv.parsed_attrs["layout"] not in _CHANNEL_FIRST):
        return None
    if not _read_only_by(readers, heads, (id(conv), 0), bn):
        return None
    if any(readers.get((id(bn), i)) or (id(bn), i) in heads for i in (1, 2)):
        return None
    chain = [conv, bn]
    users = readers.get((id(bn), 0), [])
    if len(users) == 1 and (id(bn), 0) not in heads:
        act = users[0]
        if (act.op is not None and act.op.name == "Activation" and act.parsed_attrs["act_type"] == "relu"
                and len(act.inputs) == 1):
            chain.append(act)
    if any("__ctx_group__" in n.user_attrs for n in chain):
        return None
    return chain


def _fused_node(chain: List[Node], new) -> Node:
    from .. import ops
    conv, bn = chain[0], chain[1]
    attrs = {k: v for k, v in conv.attrs.items() if not (k.startswith("__") and k.endswith("__"))}
    pa = bn.parsed_attrs
    attrs.update({k: pa[k] for k in ("eps", "momentum", "fix_gamma", "use_global_stats")})
    attrs["act_type"] = "relu" if len(chain) == 3 else "none"
    k = bn.num_inputs()
    inputs = [new(e) for e in conv.inputs] + [new(e) for e in bn.inputs[1:k]] + [new(e) for e in bn.inputs[k:]]
    last = chain[-1]
    return Node(ops.get("_fused_conv_bn_act"), last.name, attrs, inputs, last.user_attrs)


def _readers(nodes: List[Node]) -> Dict[Key, List[Node]]:
    """entry -> the nodes reading it (a node twice when it reads the entry twice)."""
    readers: Dict[Key, List[Node]] = {}
    for n in nodes:
        for c, i in n.inputs:
            readers.setdefault((id(c), i), []).append(n)
    return readers


def _read_only_by(readers: Dict[Key, List[Node]], heads: set, key: Key, node: Node) -> bool:
    return [id(r) for r in readers.get(key, [])] == [id(node)] and key not in heads


def _rewrite_forward(g: GraphState, replace: Dict[int, Callable], dropped: set, stat: str) -> None:
    """Rebuild a forward-only node list: node id -> replace[id](new), where `new` maps an entry of the
    old graph to the rebuilt one; the nodes in `dropped` left out; g.stats[stat] counts the nodes
    replaced.  Nothing is done without any to replace.  The caller's nodes are never changed: nodes
    reading a rebuilt one are copied."""
    if not replace:
        return
    rebuilt: Dict[int, Node] = {}   # id(original) -> the node standing for it

    def new(entry: Entry) -> Entry:
        node, i = entry
        return (rebuilt.get(id(node), node), i)

    nodes = []
    for n in g.nodes:
        if id(n) in replace:
            rebuilt[id(n)] = replace[id(n)](new)
            nodes.append(rebuilt[id(n)])
        elif id(n) in dropped:
            continue
        elif n.op is not None and any(id(c) in rebuilt for c, _ in n.inputs):
            copy = Node(n.op, n.name, n.attrs, [new(e) for e in n.inputs], n.user_attrs)
            copy._parsed, copy._arity = n._parsed, n._arity
            rebuilt[id(n)] = copy
            nodes.append(copy)
        else:
            nodes.append(n)
    g.heads = [new(e) for e in g.heads]
    g.nodes = nodes
    g.num_forward = len(nodes)
    g.stats[stat] = len(replace)


def fuse_conv_bn(g: GraphState) -> GraphState:
    """Fold BatchNorm (and a relu after it) into the Convolution before it: one
    `_fused_conv_bn_act` node (ember/ops/nn_fused.py), in forward-only graphs only, where no
    gradient needs the intermediate results.  The node does exactly what the chain does while
    training (batch statistics, moving statistics updated); in inference it folds the scale into
    the weights and the shift into the GEMM's store.  EMBER_FUSE_CONV_BN=0 turns it off."""
    if not _pass_enabled(g, "EMBER_FUSE_CONV_BN"):
        return g
    readers = _readers(g.nodes)
    heads = {(id(n), i) for n, i in g.heads}
    replace: Dict[int, Callable] = {}   # id(last node of a chain) -> the fused node's maker
    fused_ids = set()
    for n in g.nodes:
        if n.op is not None and n.op.name == "BatchNorm":
            chain = _conv_bn_chain(n, readers, heads)
            if chain is not None:
                replace[id(chain[-1])] = partial(_fused_node, chain)
                fused_ids.update(id(c) for c in chain)
    _rewrite_forward(g, replace, fused_ids, "fused_conv_bn")
    return g


def _flattening(node: Node) -> bool:
    """A Reshape to one dimension (a Gluon RNN layer's `weight.reshape(-1)`)."""
    if node.op is None or node.op.name != "Reshape":
        return False
    a = node.parsed_attrs
    return tuple(a["shape"]) == (-1,) and not a["reverse"] and not a["target_shape"]


def _variable_size(g: GraphState, entry: Entry) -> Optional[int]:
    """Elements of a variable whose whole shape the caller gave, or of a flattening Reshape of one;
    None for anything else."""
    node = entry[0]
    while _flattening(node):
        node = node.inputs[0][0]
    shape = g.known_shapes.get(node.name) if node.op is None else None
    if shape is None or not is_complete_shape(tuple(shape)):
        return None
    return math.prod(shape)


def _apart_node(rnn: Node, params: List[Entry], new) -> Node:
    from .. import ops
    attrs = {k: v for k, v in rnn.attrs.items() if not (k.startswith("__") and k.endswith("__"))}
    attrs["num_params"] = len(params)
    inputs = [new(rnn.inputs[0])] + [new(e) for e in params] + [new(e) for e in rnn.inputs[2:]]
    return Node(ops.get("_RNN_apart"), rnn.name, attrs, inputs, rnn.user_attrs)


def rnn_params_apart(g: GraphState) -> GraphState:
    """An RNN whose parameter vector is a `_rnn_param_concat` read by nothing else (a Gluon RNN
    layer's graph) becomes one `_RNN_apart` node taking the concatenated arrays as inputs of their
    own, each with the flattening Reshape in front of it dropped where only the concat read it.  No
    step then copies the weights into the vector, nor the vector's gradient back out: the backward
    writes each parameter's gradient into its own array.  Runs on the forward graph, before the
    gradient pass.  EMBER_RNN_PARAMS_APART=0 turns it off."""
    if not _pass_enabled(g, "EMBER_RNN_PARAMS_APART"):
        return g
    rnns = [n for n in g.nodes if n.op is not None and n.op.name == "RNN"]
    if not rnns:
        return g
    readers = _readers(g.nodes)
    heads = {(id(n), i) for n, i in g.heads}
    replace: Dict[int, Callable] = {}
    dropped = set()
    for n in rnns:
        cat, j = n.inputs[1]
        if (cat.op is None or cat.op.name != "_rnn_param_concat" or cat.parsed_attrs["dim"] != 0
                or not _read_only_by(readers, heads, (id(cat), j), n)
                or any("__ctx_group__" in m.user_attrs for m in (n, cat))):
            continue
        params, drops = [], []
        for e in cat.inputs:
            src = e[0]
            if (_flattening(src) and _read_only_by(readers, heads, (id(src), e[1]), cat)
                    and "__ctx_group__" not in src.user_attrs):
                params.append(src.inputs[0])
                drops.append(id(src))
            else:
                params.append(e)
        # each array must be one parameter of the network (a variable of known size): a vector made
        # of other pieces is left as it is
        sizes = [_variable_size(g, e) for e in params]
        if None in sizes or not nn_rnn.params_fit(n.parsed_attrs, sizes):
            continue
        dropped.update(drops)
        dropped.add(id(cat))
        replace[id(n)] = partial(_apart_node, n, params)
    _rewrite_forward(g, replace, dropped, "rnn_params_apart")
    return g


def infer_shape(g: GraphState) -> GraphState:
    """Shapes of every entry; every argument must end up known."""
    known = {(id(n), 0): tuple(g.known_shapes[n.name]) for n in g.nodes if n.op is None and n.name in g.known_shapes}
    from ..util import is_np_shape
    zero_is_unknown = not is_np_shape()  # under NumPy shape semantics () and 0 are real sizes
    shapes = infer_shapes(g.nodes[:g.num_forward], known, zero_is_unknown)
    if g.num_forward < len(g.nodes):
        # head gradients take their head's shape; then only backward nodes remain to infer
        for (node, i), v in zip(g.heads, g.head_grad_vars):
            if (id(node), i) in shapes:
                shapes[(id(v), 0)] = shapes[(id(node), i)]
        shapes = infer_shapes(g.nodes[g.num_forward:], shapes, zero_is_unknown)
    missing = [n.name for n in g.nodes if n.op is None and not is_complete_shape(shapes.get((id(n), 0)))]
    if missing:
        raise ShapeError(f"cannot infer the shapes of {missing}; give them to simple_bind/bind "
                         "(e.g. data=(batch, ...))")
    for n in g.nodes:
        for i in range(n.num_outputs()):
            if not is_complete_shape(shapes.get((id(n), i))):
                raise ShapeError(f"shape inference could not determine output {i} of node '{n.name}'")
    g.shapes = shapes
    return g


def infer_type(g: GraphState) -> GraphState:
    """Dtypes of every entry (float32 for variables nothing determines, as MXNet)."""
    known = {(id(n), 0): np.dtype(g.known_dtypes[n.name]) for n in g.nodes if n.op is None and n.name in g.known_dtypes}
    fwd = g.nodes[:g.num_forward]
    if not known:  # nothing to infer from: every variable takes MXNet's default, float32
        known = {(id(n), 0): np.dtype(np.float32) for n in fwd if n.op is None}
    dtypes = infer_dtypes(fwd, known)
    defaulted = [n for n in fwd if n.op is None and dtypes.get((id(n), 0)) is None]
    if defaulted:
        dtypes.update({(id(n), 0): np.dtype(np.float32) for n in defaulted})
        dtypes = infer_dtypes(fwd, dtypes)
    if g.num_forward < len(g.nodes):
        for (node, i), v in zip(g.heads, g.head_grad_vars):
            dtypes[(id(v), 0)] = dtypes.get((id(node), i)) or np.dtype(np.float32)
        dtypes = infer_dtypes(g.nodes[g.num_forward:], dtypes)
    for n in g.nodes:
        for i in range(n.num_outputs()):
            if dtypes.get((id(n), i)) is None:
                dtypes[(id(n), i)] = np.dtype(np.float32)
    g.dtypes = dtypes
    return g


def schedule_backward(g: GraphState) -> GraphState:
    """Reorder backward nodes (topologically) so that nodes freeing at least what they allocate run first.

    Kahn's algorithm with priority (0 if the node's outputs take no more bytes than the inputs it is the
    only reader of, else 1; then the DFS position).  Gradient sums and other consumers run as soon
    as their inputs exist, so partial results do not pile up (e.g. the 64 weight-gradient terms of
    an unrolled LSTM).
    """
    nf = g.num_forward
    bwd = g.nodes[nf:]
    if len(bwd) < 2:
        return g
    pos = {id(n): i for i, n in enumerate(bwd)}
    readers: Dict[Key, int] = {}
    for n in g.nodes:
        for c, i in n.inputs:
            readers[(id(c), i)] = readers.get((id(c), i), 0) + 1
    heads = {(id(n), i) for n, i in g.all_heads()}
    indeg = {}
    users: Dict[int, List[Node]] = {}
    prio = {}
    for n in bwd:
        deps = {id(c) for c, _ in n.inputs if id(c) in pos}
        indeg[id(n)] = len(deps)
        for d in deps:
            users.setdefault(d, []).append(n)
        if n.op is None:
            prio[id(n)] = (0, pos[id(n)])
            continue
        out_b = sum(_nbytes(g, (id(n), i)) for i in range(n.num_outputs()))
        freed = sum(_nbytes(g, (id(c), i)) for c, i in set(n.inputs)
                    if c.op is not None and readers[(id(c), i)] == 1 and (id(c), i) not in heads)
        prio[id(n)] = (0 if out_b <= freed else 1, pos[id(n)])
    import heapq
    ready = [(prio[id(n)], id(n)) for n in bwd if indeg[id(n)] == 0]
    heapq.heapify(ready)
    by_id = {id(n): n for n in bwd}
    order = []
    while ready:
        _, nid = heapq.heappop(ready)
        order.append(by_id[nid])
        for u in users.get(nid, ()):
            indeg[id(u)] -= 1
            if indeg[id(u)] == 0:
                heapq.heappush(ready, (prio[id(u)], id(u)))
    if len(order) != len(bwd):
        raise OperatorError("schedule_backward: the backward graph has a cycle")
    g.nodes = g.nodes[:nf] + order
    return g


def _nbytes(g: GraphState, key: Key) -> int:
    dt = g.dtypes[key]
    return math.prod(g.shapes[key]) * (dt.itemsize if isinstance(dt, np.dtype) else np.dtype(dt).itemsize)


def bind_gradients(g: GraphState) -> GraphState:
    """Let a gradient computed by a backward op be written straight into its argument's grad array."""
    fwd = {id(n) for n in g.nodes[:g.num_forward]}
    taken = set()
    head_keys = {(id(n), i) for n, i in g.heads}
    for name, e in g.grad_entries.items():
        if e is None or g.grad_req.get(name) != "write":
            continue
        key = (id(e[0]), e[1])
        if e[0].op is None or id(e[0]) in fwd or key in taken or key in head_keys:
            continue
        taken.add(key)
        g.external[key] = name
    return g


def _use_steps(g: GraphState) -> Tuple[Dict[Key, List[int]], Dict[int, int]]:
    """(entry -> steps reading its bytes, id(node) -> step); kept on `g` while the node list is unchanged."""
    c = g.uses_cache
    if c is not None and c[0] is g.nodes and c[1] == len(g.nodes):
        return c[2]
    uses: Dict[Key, List[int]] = {}
    for step, n in enumerate(g.nodes):
        # an input the op reads for its shape only (OpDef.shape_only_inputs) needs no live bytes
        skip = n.op.shape_only(n.parsed_attrs) if n.op is not None and n.op.shape_only_inputs else ()
        for k, (c_, i) in enumerate(n.inputs):
            if k not in skip:
                uses.setdefault((id(c_), i), []).append(step)
    res = (uses, {id(n): s for s, n in enumerate(g.nodes)})
    g.uses_cache = (g.nodes, len(g.nodes), res)
    return res


def inplace(g: GraphState) -> GraphState:
    """An output takes an input's bytes when the op allows it and that input is read there last."""
    if os.environ.get("EMBER_EXEC_ENABLE_INPLACE", os.environ.get("MXNET_EXEC_ENABLE_INPLACE", "1")) in ("0", "false"):
        return g
    uses, _ = _use_steps(g)
    head_keys = {(id(n), i) for n, i in g.all_heads()}
    root: Dict[Key, Key] = {}
    for step, n in enumerate(g.nodes):
        if n.op is None or not n.op.inplace or n.op.mutates:
            continue
        taken_inputs = set()
        for in_i, out_i in n.op.inplace_pairs(n.parsed_attrs):
            if in_i >= len(n.inputs):
                continue
            c, j = n.inputs[in_i]
            ikey, okey = (id(c), j), (id(n), out_i)
            if (c.op is None or ikey in head_keys or ikey in g.external or okey in g.external
                    or okey in g.inplace or ikey in taken_inputs):
                continue
            if uses.get(ikey) != [step] or sum(1 for e in n.inputs if e == (c, j)) != 1:
                continue  # read later (or twice here): its bytes must survive this node
            if _nbytes(g, ikey) != _nbytes(g, okey):
                continue
            g.inplace[okey] = root.get(ikey, ikey)
            root[okey] = root.get(ikey, ikey)
            taken_inputs.add(ikey)
    g.stats["inplace_pairs"] = len(g.inplace)
    return g


def plan_memory(g: GraphState) -> GraphState:
    """Liveness intervals of every planned entry, then the packing of `planner.plan`."""
    uses, step_of = _use_steps(g)
    last = len(g.nodes)
    head_keys = {(id(n), i) for n, i in g.all_heads()}
    group_of: Dict[Key, int] = {}
    sizes: List[int] = []
    starts: List[int] = []
    ends: List[int] = []
    naive = 0
    for step, n in enumerate(g.nodes):
        if n.op is None:
            continue
        for i in range(n.num_outputs()):
            key = (id(n), i)
            if key in g.external:
                continue
            nbytes = _nbytes(g, key)
            naive += nbytes
            end = last if key in head_keys else max(uses.get(key, [step]))
            share = g.inplace.get(key)
            if share is not None and share in group_of:
                gid = group_of[share]
                ends[gid] = max(ends[gid], end)
            else:
                gid = len(sizes)
                sizes.append(nbytes)
                starts.append(step)
                ends.append(end)
            group_of[key] = gid
    placement = planner.plan(sizes, starts, ends, g.plan_method)
    aligned = [planner.align(s) for s in sizes]
    g.plan = MemoryPlan(group_of, aligned, starts, ends, placement, naive,
                        planner.lower_bound(aligned, starts, ends))
    return g


PASSES: List[Callable[[GraphState], GraphState]] = [
    order_forward, rnn_params_apart, gradient, mirror, dead_node_elimination, fuse_conv_bn, infer_shape, infer_type,
    schedule_backward, bind_gradients, inplace, plan_memory,
]


def compile_graph(g: GraphState, passes: Optional[List[Callable]] = None) -> GraphState:
    """Run every pass of `passes` (default `PASSES`) in order.

    Python's cyclic collector is paused meanwhile: the passes allocate many long-lived objects
    (nodes, per-entry dict items), which trigger full collections that each walk the whole
    heap, making big graphs superlinear (100,000 nodes: 2x the CPU time; bench/plan_time.py).
    Nothing here makes garbage cycles, so nothing is lost by collecting later.
    """
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        for p in passes or PASSES:
            g = p(g)
    finally:
        if paused:
            gc.enable()
    return g


def mirror_enabled() -> bool:
    """EMBER_BACKWARD_DO_MIRROR / MXNET_BACKWARD_DO_MIRROR set to a true value."""
    v = os.environ.get("EMBER_BACKWARD_DO_MIRROR", os.environ.get("MXNET_BACKWARD_DO_MIRROR", "0"))
    return v.strip().lower() in ("1", "true", "yes")
