"""`mx.viz`: `print_summary` (a layer table) and `plot_network` (graphviz; .dot source without it)."""
from __future__ import annotations

import warnings
from typing import Dict, Optional

import numpy as np

from .symbolic.graph import aux_variable_ids, topo_order


def _shapes(symbol, shape: Optional[dict]) -> Dict[str, tuple]:
    if not shape:
        return {}
    internals = symbol.get_internals()
    _, out_shapes, _ = internals.infer_shape_partial(**shape)
    return dict(zip(internals.list_outputs(), out_shapes))


def print_summary(symbol, shape: Optional[dict] = None, line_length: int = 120,
                  positions=(.44, .64, .74, 1.)) -> None:
    """Print each operator with its output shape, parameter count and inputs, then the total."""
    from .symbol import Symbol
    if not isinstance(symbol, Symbol):
        raise TypeError("print_summary: symbol must be a Symbol")
    shapes = _shapes(symbol, shape)
    arg_shapes = {}
    if shape:
        args, _, auxs = symbol.infer_shape_partial(**shape)
        arg_shapes = dict(zip(symbol.list_arguments(), args))
        arg_shapes.update(zip(symbol.list_auxiliary_states(), auxs))
    cols = [int(line_length * p) for p in positions]
    header = ["Layer (type)", "Output Shape", "Param #", "Previous Layer"]

    def row(fields):
        line = ""
        for f, c in zip(fields, cols):
            line = (line + str(f))[:c].ljust(c)
        print(line)
    print("_" * line_length)
    row(header)
    print("=" * line_length)
    total = 0
    order = topo_order(symbol._outputs)
    input_names = set(shape or {})
    for n in order:
        if n.op is None and n.name not in input_names:
            continue
        params = 0
        prev = []
        for c, j in n.inputs:
            if c.op is None and c.name not in input_names:
                if c.name.endswith("_label"):  # loss labels are data, not parameters
                    continue
                s = arg_shapes.get(c.name)
                if s:
                    params += int(np.prod(s))
            else:
                prev.append(c.name)
        total += params
        out = shapes.get(n.output_name(0), "")
        kind = "null" if n.op is None else n.op.name
        row([f"{n.name}({kind})", "x".join(str(d) for d in out) if out else "", params, prev[0] if prev else ""])
        for p in prev[1:]:
            row(["", "", "", p])
        print("_" * line_length)
    print(f"Total params: {total}")
    print("_" * line_length)


def _warn_repeated_names(order) -> None:
    # MXNet warns: nodes are drawn by name in its plots, so a repeated name may draw a cycle
    seen, repeated = set(), []
    for n in order:
        if n.name in seen and n.name not in repeated:
            repeated.append(n.name)
        seen.add(n.name)
    if repeated:
        warnings.warn("There are multiple variables with the same name in your graph, this may result in cyclic "
                      "graph. Repeated names: " + ",".join(repeated), RuntimeWarning, stacklevel=3)


def _dot_source(symbol, title: str, shapes: Dict[str, tuple], hide_weights: bool,
                node_attrs: Optional[dict] = None) -> str:
    order = topo_order(symbol._outputs)
    _warn_repeated_names(order)
    aux = aux_variable_ids(order)
    heads = {id(n) for n, _ in symbol._outputs}
    hidden = set()
    style = {"shape": "box", "fixedsize": "false", "style": "filled", "fillcolor": "#8dd3c7", **(node_attrs or {})}
    defaults = ", ".join(f'{k}="{v}"' for k, v in style.items())
    lines = [f'digraph "{title}" {{', f"  node [{defaults}];"]
    for n in order:
        if n.op is None:
            is_weight = n.name.endswith(("_weight", "_bias", "_gamma", "_beta", "_label")) or id(n) in aux
            if hide_weights and is_weight:
                hidden.add(id(n))
                continue
            lines.append(f'  "{id(n)}" [label="{n.name}", shape=oval, fillcolor="#fccde5"];')
            continue
        label = f"{n.op.name}\\n{n.name}"
        for key in ("num_hidden", "num_filter", "kernel", "act_type", "pool_type"):
            if key in n.attrs:
                label += f"\\n{key}={n.attrs[key]}"
        color = "#fb8072" if id(n) in heads else "#80b1d3"
        lines.append(f'  "{id(n)}" [label="{label}", fillcolor="{color}"];')
    for n in order:
        for c, j in n.inputs:
            if id(c) in hidden:
                continue
            lab = shapes.get(c.output_name(j))
            extra = f' [label="{"x".join(map(str, lab))}"]' if lab else ""
            lines.append(f'  "{id(c)}" -> "{id(n)}"{extra};')
    lines.append("}")
    return "\n".join(lines) + "\n"


class _DotSource:
    """What plot_network returns without the graphviz package: the source, savable and renderable later."""

    def __init__(self, source: str, filename: str):
        self.source = source
        self.filename = filename

    def save(self, filename: Optional[str] = None, directory: Optional[str] = None) -> str:
        import os
        path = filename or self.filename
        if directory:
            path = os.path.join(directory, path)
        with open(path, "w") as f:
            f.write(self.source)
        return path

    def render(self, filename: Optional[str] = None, **kwargs) -> str:
        return self.save(filename)

    def __str__(self):
        return self.source


def plot_network(symbol, title: str = "plot", save_format: str = "pdf", shape: Optional[dict] = None,
                 dtype=None, node_attrs: Optional[dict] = None, hide_weights: bool = True):
    """A graphviz Digraph of the network (a `.source`/`.save()` object when graphviz is not installed)."""
    from .symbol import Symbol
    if not isinstance(symbol, Symbol):
        raise TypeError("plot_network: symbol must be a Symbol")
    if node_attrs is not None and not isinstance(node_attrs, dict):
        raise TypeError(f"plot_network: node_attrs must be a dict of graphviz node attributes, got {node_attrs!r}")
    src = _dot_source(symbol, title, _shapes(symbol, shape), hide_weights, node_attrs)
    try:
        import graphviz
    except ImportError:
        return _DotSource(src, f"{title}.gv")
    return graphviz.Source(src, filename=f"{title}.gv", format=save_format)
