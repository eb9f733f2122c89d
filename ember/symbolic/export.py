"""A symbol's graph as a `networkx.MultiDiGraph`, for graph algorithms, analysis and drawing."""
from __future__ import annotations

from .graph import node_index, topo_order


def to_networkx(symbol):
    """The graph of `symbol` (an `mx.sym.Symbol`) as a networkx.MultiDiGraph.

    Nodes are positions in ember's node order (the order of `symbol.tojson()`'s nodes), with
    attributes `name`, `op` ('null' for variables) and `attrs` (operator parameters as given).
    Each operator input is one edge from the node producing it, with `index` (which output of
    that node) and `position` (which input); the graph attribute `heads` lists the symbol's
    outputs as (node, index) pairs, as the JSON's "heads".
    """
    import networkx as nx  # imported on use: `import ember` does not pay for it

    order = topo_order(symbol._outputs)
    pos = node_index(order)
    g = nx.MultiDiGraph(heads=[(pos[id(n)], i) for n, i in symbol._outputs])
    for i, node in enumerate(order):
        g.add_node(i, name=node.name, op=node.op.name if node.op is not None else "null", attrs=dict(node.attrs))
        for k, (src, j) in enumerate(node.inputs):
            g.add_edge(pos[id(src)], i, key=k, index=j, position=k)
    return g
