"""The gradient pass: extend a forward graph with the nodes computing d(heads)/d(arguments).

Each operator's registry `gradient(F, attrs, inputs, outputs, out_grads)` is called with
F = `ember.symbol`, so it returns Symbols: new graph nodes that read the forward
entries they need.  Contributions to one entry are summed by a chain of
`elemwise_add`.  Visible outputs nobody differentiates get `zeros_like` as their
gradient.  Head gradients are variables fed by the executor.  An op with
`gradient_takes_needed` gets `needed=` (per input: does any wanted argument lie behind it) and may return
None for the others without computing them (FullyConnected skips the first layer's data gradient).
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from .. import ops as _ops
from ..base import OperatorError
from .graph import Entry, Node, topo_order
from .naming import Prefix
from .symbol import Symbol


def _sum(entries: List[Entry], name: str) -> Entry:
    from .. import symbol as F
    if len(entries) == 1:
        return entries[0]
    # A chain of two-input adds (not one add_n): each contribution is summed, and its buffer freed,
    # as soon as it exists, and the running sum can stay in place (MXNet does the same past 8 terms).
    syms = [Symbol([e]) for e in entries]
    with Prefix(name + "_"):
        acc = syms[0]
        for i, s in enumerate(syms[1:]):
            acc = F.elemwise_add(acc, s, name=f"sum{i}")
        return acc._outputs[0]


def build_gradient(heads: Sequence[Entry], wrt: Sequence[Node],
                   order: Optional[Sequence[Node]] = None) -> Tuple[List[Optional[Entry]], List[Node]]:
    """(gradient entry or None for each node in `wrt`, head-gradient variables, one per head).

    `order`: the forward nodes in topological order, when the caller has them already.
    """
    from .. import symbol as F
    if order is None:
        order = topo_order(heads)
    wanted = {id(n) for n in wrt}
    needs = set()
    for n in order:
        if id(n) in wanted or any(id(c) in needs for c, _ in n.inputs):
            needs.add(id(n))
    grads: Dict[Tuple[int, int], List[Entry]] = {}
    head_vars = []
    for h, (node, idx) in enumerate(heads):
        hv = Node(None, f"{node.output_name(idx)}_head_grad_{h}")
        head_vars.append(hv)
        grads.setdefault((id(node), idx), []).append((hv, 0))
    for node in reversed(order):
        if node.op is None or id(node) not in needs:
            continue
        nout = node.num_outputs()
        if not any((id(node), i) in grads for i in range(nout)):
            continue
        if node.op.gradient is None:
            raise OperatorError(f"gradient pass: operator '{node.op.name}' (node '{node.name}') has no gradient, "
                                "but an argument before it needs one (set its grad_req to 'null')")
        out_grads = []
        for i in range(nout):
            got = grads.get((id(node), i))
            if got:
                out_grads.append(Symbol([got[0] if len(got) == 1 else _sum(got, f"{node.name}_out{i}_grad")]))
            elif i < node.num_visible_outputs() and _ops.exists("zeros_like"):
                with Prefix(f"{node.name}_"):
                    out_grads.append(F.zeros_like(Symbol([(node, i)]), name=f"out{i}_zerograd"))
            else:
                out_grads.append(None)
        k = node.num_inputs()
        inputs = [Symbol([e]) for e in node.inputs[:k]]
        outputs = [Symbol([(node, i)]) for i in range(nout)]
        with Prefix(f"{node.name}_"):
            kw = {}
            if node.op.gradient_takes_needed:  # it may skip gradients nobody reads
                kw["needed"] = [id(child) in needs for child, _ in node.inputs[:k]]
            if node.op.gradient_takes_aux:
                kw["aux"] = [Symbol([e]) for e in node.inputs[k:]]
            res = node.op.gradient(F, node.parsed_attrs, inputs, outputs, out_grads, **kw)
        res = list(res) if res is not None else []
        if len(res) not in (k, k + node.num_aux()):
            raise OperatorError(f"gradient of '{node.op.name}' (node '{node.name}') returned {len(res)} "
                                f"gradients for {k} inputs")
        for (child, j), g in zip(node.inputs[:k], res[:k]):
            if g is None or id(child) not in needs:
                continue
            if not isinstance(g, Symbol) or len(g._outputs) != 1:
                raise OperatorError(f"gradient of '{node.op.name}' (node '{node.name}') must return Symbols "
                                    f"when F is ember.symbol, got {type(g).__name__}")
            grads.setdefault((id(child), j), []).append(g._outputs[0])
    result = []
    for n in wrt:
        got = grads.get((id(n), 0))
        result.append(_sum(got, f"{n.name}_grad") if got else None)
    return result, head_vars
