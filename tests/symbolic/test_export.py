"""ember.symbolic.to_networkx: a symbol's graph as networkx sees it, node for node the symbol's JSON."""
import json

import networkx as nx

import ember as mx
from ember.symbolic import to_networkx


def _net():
    data, w = mx.sym.var("data"), mx.sym.var("w")
    fc = mx.sym.FullyConnected(data, weight=w, num_hidden=4, no_bias=True, name="fc")
    bn = mx.sym.BatchNorm(fc, name="bn")  # aux states: inputs past the arguments
    parts = mx.sym.SliceChannel(bn, num_outputs=2, axis=1, name="split")
    return mx.sym.Group([parts[1] * parts[1] + data.sum(), parts[0]])  # one output read twice


def test_nodes_edges_and_heads_match_the_json():
    sym = _net()
    g = to_networkx(sym)
    doc = json.loads(sym.tojson())
    assert [g.nodes[i]["name"] for i in g] == [n["name"] for n in doc["nodes"]]
    assert [g.nodes[i]["op"] for i in g] == [n["op"] for n in doc["nodes"]]
    for i, node in enumerate(doc["nodes"]):
        got = sorted((d["position"], src, d["index"]) for src, _, d in g.in_edges(i, data=True))
        assert [(src, j) for _, src, j in got] == [(src, j) for src, j, _ in node["inputs"]]
    assert g.graph["heads"] == [(n, i) for n, i, _ in doc["heads"]]
    assert g.nodes[[n["name"] for n in doc["nodes"]].index("fc")]["attrs"] == {"num_hidden": 4, "no_bias": True}


def test_graph_algorithms_apply():
    sym = _net()
    g = to_networkx(sym)
    assert nx.is_directed_acyclic_graph(g)
    order = list(nx.topological_sort(g))
    assert all(order.index(u) < order.index(v) for u, v in g.edges())
    head = g.graph["heads"][0][0]
    names = {g.nodes[i]["name"] for i in nx.ancestors(g, head)}
    assert {"data", "w", "fc", "bn_gamma", "bn_moving_mean", "split"} <= names
    square = next(i for i in g if g.nodes[i]["name"].startswith("_mul"))
    assert g.number_of_edges(next(i for i in g if g.nodes[i]["name"] == "split"), square) == 2
