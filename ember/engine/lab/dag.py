"""A trace's dependency DAG as a networkx.DiGraph, and the analyses a scheduling study starts with."""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import networkx as nx
import numpy as np

from .trace_format import Trace


def to_networkx(trace: Trace, cost_s: Optional[Sequence[float]] = None) -> nx.DiGraph:
    """Nodes are op indices (attributes: name, queue, priority, cost_s); an edge carries the
    variables and kinds ('raw', 'war', 'waw') that make it.  cost_s defaults to measured times."""
    costs = np.nan_to_num(trace.durations_s()) if cost_s is None else np.asarray(cost_s, dtype=np.float64)
    g = nx.DiGraph()
    for i, name in enumerate(trace.names):
        g.add_node(i, name=name, queue=int(trace.queue[i]), priority=int(trace.priority[i]),
                   cost_s=float(costs[i]))
    for src, dst, v, kind in trace.edges:
        if g.has_edge(src, dst):
            data = g.edges[src, dst]
            data["vars"].append(v)
            data["kinds"].append(kind)
        else:
            g.add_edge(src, dst, vars=[v], kinds=[kind])
    return g


def critical_path(g: nx.DiGraph, weight: str = "cost_s") -> Tuple[float, List[int]]:
    """(length, ops) of the heaviest path, op costs from the node attribute `weight`."""
    best: Dict[int, float] = {}
    prev: Dict[int, Optional[int]] = {}
    for n in nx.topological_sort(g):
        w = g.nodes[n].get(weight, 0.0)
        p = max(g.predecessors(n), key=lambda m: best[m], default=None)
        best[n] = w + (best[p] if p is not None else 0.0)
        prev[n] = p
    if not best:
        return 0.0, []
    end = max(best, key=best.get)
    path = [end]
    while prev[path[-1]] is not None:
        path.append(prev[path[-1]])
    return best[end], path[::-1]


def levels(g: nx.DiGraph) -> Dict[int, int]:
    """Each op's level: 0 for ops with no predecessor, else 1 + the largest level among them."""
    lvl: Dict[int, int] = {}
    for n in nx.topological_sort(g):
        lvl[n] = 1 + max((lvl[m] for m in g.predecessors(n)), default=-1)
    return lvl


def width_per_level(g: nx.DiGraph) -> List[int]:
    """How many ops sit at each level (the parallelism a level-by-level schedule could use)."""
    counts: Dict[int, int] = {}
    for lv in levels(g).values():
        counts[lv] = counts.get(lv, 0) + 1
    return [counts[i] for i in range(len(counts))]


def transitive_reduction(g: nx.DiGraph) -> nx.DiGraph:
    """The DAG with every edge implied by a longer path removed (node attributes kept)."""
    r = nx.transitive_reduction(g)
    r.add_nodes_from(g.nodes(data=True))
    r.add_edges_from((u, v, g.edges[u, v]) for u, v in r.edges)
    return r
