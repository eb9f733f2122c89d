"""MXNet's JSON form of the nodes that carry graphs (ember/symbolic/control_flow.py, cond.py): `_foreach`,
`_while_loop` and `_cond` as MXNet 1.9.1 writes them (the graphs in the node's 'subgraphs', their inputs
located by `*_locs` attributes), and ember's `_CachedOp` (MXNet writes that one without its graph)."""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from ..base import MXNetError
from .cond import CondBody
from .control_flow import CallBody, ForeachBody, WhileBody, _counts
from .graph import Entry, Node, aux_variable_ids, topo_order


def _read_attrs(params: Dict[str, str], lists: Tuple[str, ...], ints: Tuple[str, ...], what: str) -> list:
    """The list-valued attributes `lists`, then the int-valued `ints`, of a node read from JSON."""
    try:
        return [list(ast.literal_eval(params[k])) for k in lists] + [int(params[k]) for k in ints]
    except (KeyError, ValueError, SyntaxError, TypeError) as e:
        raise ValueError(f"bad or missing {what} attributes ({type(e).__name__}: {e})") from None


def foreach_to_json(node: Node) -> Tuple[Dict[str, str], List[Entry]]:
    """(MXNet's attributes of a `_foreach` node, the body's heads to write as its subgraph): the body's
    inputs in graph order, located by `in_data_locs`, `in_state_locs` and `remain_locs`."""
    attrs = node.parsed_attrs
    body: ForeachBody = attrs["body"]
    nd, ns, no, nf = _counts(attrs)
    inputs = [n for n in body.order if n.op is None]
    where = {id(n): i for i, n in enumerate(inputs)}
    unused = [v.name for v in body.data_vars + body.state_vars if id(v) not in where]
    if unused:
        raise MXNetError(f"tojson: loop '{node.name}' does not use {unused} in its body; MXNet's format needs every "
                         "data and state input used (as its foreach requires)")
    locs = [[where[id(v)] for v in vs] for vs in (body.data_vars, body.state_vars, body.free_vars)]
    return ({"num_args": str(1 + nd + ns + nf), "num_outputs": str(no + ns), "num_out_data": str(no),
             "in_data_locs": str(locs[0]), "in_state_locs": str(locs[1]), "remain_locs": str(locs[2])},
            body.heads)


def call_to_json(node: Node) -> Tuple[Dict[str, str], List[Entry]]:
    """(attributes of a `_CachedOp` node, its graph's heads to write as its subgraph): `input_locs` places
    each input among the graph's variables (MXNet writes no graph for this node: ember's files can
    be read back, MXNet's cannot)."""
    body: CallBody = node.parsed_attrs["body"]
    where = {id(n): i for i, n in enumerate(n for n in body.order if n.op is None)}
    return {"input_locs": str([where[id(v)] for v in body.inputs])}, body.heads


def call_from_json(params: Dict[str, str], body_heads: Optional[List[Entry]], num_inputs: int) -> dict:
    """ember's attributes of a `_CachedOp` node read from JSON."""
    if body_heads is None:
        raise ValueError("the node carries no graph ('subgraphs'), as MXNet writes autograd.get_symbol's "
                         "_CachedOp nodes: it cannot be rebuilt")
    inputs = [n for n in topo_order(body_heads) if n.op is None]
    try:
        locs = list(ast.literal_eval(params.get("input_locs", str(list(range(len(inputs)))))))
    except (ValueError, SyntaxError) as e:
        raise ValueError(f"bad input_locs ({e})") from None
    if len(locs) != num_inputs or not all(isinstance(i, int) and 0 <= i < len(inputs) for i in locs):
        raise ValueError(f"input_locs {locs} do not match the node's {num_inputs} inputs and the graph's "
                         f"{len(inputs)} variables")
    fed = [inputs[i] for i in locs]
    aux_ids = aux_variable_ids(topo_order(body_heads))  # the node's aux inputs come last (call())
    return {"body": CallBody(body_heads, fed, sum(id(v) in aux_ids for v in fed))}


def foreach_from_json(params: Dict[str, str], body_heads: List[Entry], num_inputs: int) -> dict:
    """ember's attributes of a `_foreach` node read from MXNet's (`params`) and its subgraph's heads."""
    data_locs, state_locs, remain_locs, out_data = _read_attrs(
        params, ("in_data_locs", "in_state_locs", "remain_locs"), ("num_out_data",), "loop")
    inputs = [n for n in topo_order(body_heads) if n.op is None]
    locs = data_locs + state_locs + remain_locs
    if sorted(locs) != list(range(len(inputs))) or len(locs) != num_inputs:
        raise ValueError(f"the locations {locs} do not match the body's {len(inputs)} inputs and the node's "
                         f"{num_inputs}")
    if not 0 <= out_data <= len(body_heads) - len(state_locs):
        raise ValueError(f"num_out_data {out_data} for a body with {len(body_heads)} outputs")
    pick = lambda ls: [inputs[i] for i in ls]  # noqa: E731
    body = ForeachBody(body_heads, pick(data_locs), pick(state_locs), pick(remain_locs), out_data)
    return {"num_data": len(data_locs), "num_states": len(state_locs), "num_out_data": out_data,
            "num_free": len(remain_locs), "body": body}


def while_to_json(node: Node) -> Tuple[Dict[str, str], List[List[Entry]]]:
    """(MXNet's attributes of a `_while_loop` node, the heads of its cond and func graphs)."""
    a = node.parsed_attrs
    body: WhileBody = a["body"]
    return ({"num_args": str(2 + a["num_inputs"]), "num_outputs": str(a["num_out_data"] + a["num_vars"]),
             "num_out_data": str(a["num_out_data"]), "max_iterations": str(a["max_iterations"]),
             "cond_input_locs": str(body.cond_locs), "func_input_locs": str(body.func_locs),
             "func_var_locs": str(body.var_locs)}, [body.cond_heads, body.func_heads])


def while_from_json(params: Dict[str, str], graphs: List[List[Entry]], num_inputs: int) -> dict:
    """ember's attributes of a `_while_loop` node read from MXNet's and its two graphs' heads."""
    cond_locs, func_locs, var_locs, out_data, steps = _read_attrs(
        params, ("cond_input_locs", "func_input_locs", "func_var_locs"), ("num_out_data", "max_iterations"), "loop")
    if len(graphs) != 2:
        raise ValueError(f"a while loop has two graphs (cond, func), got {len(graphs)}")
    cond_inputs = [n for n in topo_order(graphs[0]) if n.op is None]
    func_inputs = [n for n in topo_order(graphs[1]) if n.op is None]
    nv = len(var_locs)
    if len(cond_locs) != len(cond_inputs) or len(func_locs) != len(func_inputs) or \
            not all(isinstance(i, int) and 0 <= i < num_inputs for i in cond_locs + func_locs) or \
            not all(isinstance(i, int) and 0 <= i < len(func_inputs) for i in var_locs):
        raise ValueError(f"the locations (cond {cond_locs}, func {func_locs}, vars {var_locs}) do not match the "
                         f"graphs' inputs and the node's {num_inputs}")
    if len(graphs[1]) != out_data + nv:
        raise ValueError(f"func has {len(graphs[1])} outputs for {out_data} step outputs and {nv} loop variables")
    body = WhileBody(graphs[0], graphs[1], cond_inputs, func_inputs, cond_locs, func_locs, var_locs, out_data)
    return {"num_vars": nv, "num_out_data": out_data, "num_inputs": num_inputs, "max_iterations": steps,
            "body": body}


_COND_LOCS = ("cond_input_locs", "then_input_locs", "else_input_locs")


def cond_to_json(node: Node) -> Tuple[Dict[str, str], List[List[Entry]]]:
    """(MXNet's attributes of a `_cond` node, the heads of its predicate, then and else graphs)."""
    a = node.parsed_attrs
    body: CondBody = a["body"]
    attrs = {"num_args": str(3 + a["num_inputs"]), "num_outputs": str(a["num_outputs"])}
    attrs.update({key: str(locs) for key, (_, _, locs) in zip(_COND_LOCS, body.graphs)})
    return attrs, [heads for heads, _, _ in body.graphs]


def cond_from_json(params: Dict[str, str], graphs: List[List[Entry]], num_inputs: int) -> dict:
    """ember's attributes of a `_cond` node read from MXNet's and its three graphs' heads."""
    *all_locs, num_outputs = _read_attrs(params, _COND_LOCS, ("num_outputs",), "cond")
    if len(graphs) != 3:
        raise ValueError(f"a cond has three graphs (predicate, then, else), got {len(graphs)}")
    parts = []
    for heads, locs, what in zip(graphs, all_locs, ("predicate", "then", "else")):
        variables = [n for n in topo_order(heads) if n.op is None]
        if len(locs) != len(variables) or not all(isinstance(i, int) and 0 <= i < num_inputs for i in locs):
            raise ValueError(f"the {what} graph's locations {locs} do not match its {len(variables)} inputs and "
                             f"the node's {num_inputs}")
        parts.append((heads, variables, locs))
    if len(graphs[0]) != 1 or len(graphs[1]) != num_outputs or len(graphs[2]) != num_outputs:
        raise ValueError(f"the graphs give {[len(g) for g in graphs]} outputs; the predicate gives one, each branch "
                         f"num_outputs ({num_outputs})")
    return {"num_inputs": num_inputs, "num_outputs": num_outputs, "body": CondBody(parts)}
