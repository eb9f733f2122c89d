"""MXNet's symbol JSON format: write (`tojson`) and read (`load_json`), legacy keys included.

Layout: {"nodes": [{"op", "name", "attrs", "inputs": [[node, output, version]]}],
"arg_nodes": [variable node ids], "node_row_ptr": [first entry id of each node],
"heads": [[node, output, 0]], "attrs": {"mxnet_version": ["int", 10901]}}.  Every
attribute value is a string.  Old files keep operator parameters under "param"
and user attributes under "attr"; both are read.
"""
from __future__ import annotations

import json
from typing import List

from .. import ops as _ops
from ..base import FormatError, OperatorError
from . import subgraph_json as _subgraph_json
from .graph import Entry, Node, node_index, topo_order
from .symbol import Symbol, format_attr_value

MXNET_VERSION = 10901


def _graph_doc(outputs) -> dict:
    """nodes, arg_nodes, node_row_ptr and heads of the graph ending in `outputs` (a loop node carries
    its body as a graph of its own in 'subgraphs', as MXNet writes it)."""
    order = topo_order(outputs)
    index = node_index(order)
    nodes, arg_nodes, row_ptr = [], [], [0]
    for i, n in enumerate(order):
        rec = {"op": "null" if n.op is None else n.op.name, "name": n.name}
        attrs = {}
        if n.op is not None and n.op.name in ("_foreach", "_CachedOp"):
            write = _subgraph_json.foreach_to_json if n.op.name == "_foreach" else _subgraph_json.call_to_json
            attrs, body_heads = write(n)
            rec["subgraphs"] = [_graph_doc(body_heads)]
        elif n.op is not None and n.op.name in ("_while_loop", "_cond"):
            write = _subgraph_json.while_to_json if n.op.name == "_while_loop" else _subgraph_json.cond_to_json
            attrs, graphs = write(n)
            rec["subgraphs"] = [_graph_doc(heads) for heads in graphs]
        elif n.op is not None:
            attrs.update({k: format_attr_value(n.op, k, v) for k, v in n.attrs.items()})
        attrs.update(n.user_attrs)
        if attrs:
            rec["attrs"] = dict(sorted(attrs.items()))
        k = n.num_inputs()
        rec["inputs"] = [[index[id(c)], j, 1 if (pos >= k and c.op is None) else 0]
                         for pos, (c, j) in enumerate(n.inputs)]
        if "subgraphs" in rec:  # MXNet's key order: the body after the inputs
            rec["subgraphs"] = rec.pop("subgraphs")
        nodes.append(rec)
        if n.op is None:
            arg_nodes.append(i)
        row_ptr.append(row_ptr[-1] + n.num_outputs())
    return {"nodes": nodes, "arg_nodes": arg_nodes, "node_row_ptr": row_ptr,
            "heads": [[index[id(n)], j, 0] for n, j in outputs]}


def to_json(sym: Symbol) -> str:
    """The MXNet JSON text of `sym` (nodes in DFS post-order, like MXNet)."""
    doc = _graph_doc(sym._outputs)
    graph_attrs = {"mxnet_version": ["int", MXNET_VERSION]}
    from ..util import is_np_shape
    if is_np_shape():  # as MXNet 1.6+: the file's 0 dimensions are zero-size, -1 unknown
        graph_attrs = {"is_np_shape": ["int", 1], **graph_attrs}
    doc["attrs"] = graph_attrs
    # One node per line keeps files small and diffable (MXNet's reader accepts any layout).
    parts = ['{\n  "nodes": [\n', ",\n".join("    " + json.dumps(n) for n in doc["nodes"]), "\n  ],\n"]
    for key in ("arg_nodes", "node_row_ptr", "heads", "attrs"):
        parts.append(f'  "{key}": {json.dumps(doc[key])}' + (",\n" if key != "attrs" else "\n"))
    parts.append("}")
    return "".join(parts)


def _fail(msg: str):
    raise FormatError(f"malformed symbol JSON: {msg}")


def from_json(text: str) -> Symbol:
    """Rebuild a Symbol from MXNet JSON (raises FormatError / OperatorError naming the problem)."""
    if not isinstance(text, (str, bytes)):
        raise TypeError(f"load_json expects a JSON string, got {type(text).__name__}")
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            _fail(f"not UTF-8 text ({e.reason} at byte {e.start})")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        _fail(f"not valid JSON ({e})")
    except RecursionError:
        _fail("nested too deeply")
    return Symbol(_build(doc))


def _build(doc, where: str = "") -> List[Entry]:
    """The heads of the graph a JSON document (or a loop node's 'subgraphs' entry) describes."""
    if not isinstance(doc, dict) or not isinstance(doc.get("nodes"), list) or not isinstance(doc.get("heads"), list):
        _fail(f"expected an object with 'nodes' and 'heads' lists{where}")
    built: List[Node] = []
    for i, rec in enumerate(doc["nodes"]):
        if not isinstance(rec, dict) or not isinstance(rec.get("op"), str) or not isinstance(rec.get("name"), str):
            _fail(f"node {i}{where} needs 'op' and 'name' (strings)")
        op_name = rec["op"]
        raw = {}
        for key in ("param", "attr", "attrs"):
            val = rec.get(key) or {}
            if not isinstance(val, dict):
                _fail(f"node {i} ('{rec['name']}'): '{key}' must be an object")
            raw.update({k: str(v) for k, v in val.items()})
        inputs = []
        for e in rec.get("inputs", []):
            if not isinstance(e, list) or len(e) < 2 or not all(isinstance(x, int) for x in e):
                _fail(f"node {i} ('{rec['name']}'): bad input entry {e!r}")
            if not 0 <= e[0] < i:
                _fail(f"node {i} ('{rec['name']}'): input refers to node {e[0]}, which does not precede it")
            child = built[e[0]]
            if e[1] >= child.num_outputs():
                _fail(f"node {i} ('{rec['name']}'): input {e!r} refers to output {e[1]} of '{child.name}', "
                      f"which has {child.num_outputs()}")
            inputs.append((child, e[1]))
        if op_name == "null":
            if inputs:
                _fail(f"variable node {i} ('{rec['name']}') has inputs")
            built.append(Node(None, rec["name"], user_attrs=raw))
            continue
        try:
            opdef = _ops.get(op_name)
        except OperatorError:
            raise OperatorError(f"load_json: node '{rec['name']}' uses unknown operator '{op_name}'") from None
        user = {k: v for k, v in raw.items() if k.startswith("__") and k.endswith("__")}
        params = {k: v for k, v in raw.items() if k not in user}
        if op_name in ("_while_loop", "_cond"):
            subs = rec.get("subgraphs")
            count, what = (2, "cond and func graphs") if op_name == "_while_loop" else (3, "cond, then and else graphs")
            if not isinstance(subs, list) or len(subs) != count:
                _fail(f"node {i} ('{rec['name']}', {op_name}) needs its {what} in 'subgraphs'")
            graphs = [_build(sub, f" in a graph of '{rec['name']}'") for sub in subs]
            try:
                read = _subgraph_json.while_from_json if op_name == "_while_loop" else _subgraph_json.cond_from_json
                params = read(params, graphs, len(inputs))
            except ValueError as e:
                _fail(f"node {i} ('{rec['name']}', {op_name}): {e}")
        elif op_name in ("_foreach", "_CachedOp"):
            subs = rec.get("subgraphs")
            if subs is not None and (not isinstance(subs, list) or len(subs) != 1):
                _fail(f"node {i} ('{rec['name']}', {op_name}): 'subgraphs' must hold one graph")
            if subs is None and op_name == "_foreach":
                _fail(f"node {i} ('{rec['name']}', _foreach) needs its loop body in 'subgraphs'")
            body_heads = _build(subs[0], f" in the graph of '{rec['name']}'") if subs else None
            try:
                read = _subgraph_json.foreach_from_json if op_name == "_foreach" else _subgraph_json.call_from_json
                params = read(params, body_heads, len(inputs))
            except ValueError as e:
                _fail(f"node {i} ('{rec['name']}', {op_name}): {e}")
        node = Node(opdef, rec["name"], params, inputs, user)
        _ = node.parsed_attrs  # attribute errors surface now, naming the node
        expected = node.num_inputs() + node.num_aux()
        if len(inputs) != expected:
            _fail(f"node {i} ('{rec['name']}', {op_name}) has {len(inputs)} inputs, the operator takes {expected}")
        built.append(node)
    heads = []
    for h in doc["heads"]:
        if not isinstance(h, list) or len(h) < 2 or not 0 <= h[0] < len(built):
            _fail(f"bad head entry {h!r}{where}")
        if h[1] >= built[h[0]].num_outputs():
            _fail(f"head {h!r} refers to a missing output of '{built[h[0]].name}'")
        heads.append((built[h[0]], h[1]))
    if not heads:
        _fail(f"no heads{where}")
    return heads


def load_json(json_str: str) -> Symbol:
    """`mx.sym.load_json`: a Symbol from MXNet JSON text."""
    return from_json(json_str)


def load(fname: str) -> Symbol:
    """`mx.sym.load`: a Symbol from an MXNet JSON file."""
    if not isinstance(fname, str):
        raise TypeError("fname must be a file name")
    # Read bytes: the file's text must be UTF-8 whatever the locale, and a binary file is a
    # FormatError naming the file rather than a UnicodeDecodeError.
    from ..imperative.serialization import open_existing
    with open_existing(fname) as f:
        data = f.read()
    try:
        return from_json(data)
    except FormatError as e:
        raise FormatError(f"{fname}: {e}") from None
