"""MXNet 1.9.1's DGL graph operators on CSR graphs (`mx.nd.contrib.<name>`, registry `_contrib_<name>`).

A graph of N vertices is an N x N CSR matrix whose row v lists v's neighbours (column ids) and whose
stored values are edge ids (int64).

* `dgl_csr_neighbor_uniform_sample(csr, seed0, seed1, ..., num_args, num_hops, num_neighbor,
  max_num_vertices)`: per seed array, a breadth-first neighbourhood sample (at most `num_neighbor`
  neighbours drawn without replacement per expanded vertex, up to `num_hops` hops, at most
  `max_num_vertices` vertices).  Outputs, each a set with one array per seed array: the sampled vertex
  ids, sorted, padded with -1 to max_num_vertices, the count in the last element (length
  max_num_vertices + 1); the sampled edges as a (max_num_vertices, N) CSR matrix whose row i holds
  the sampled neighbours (original column ids) and edge ids of sampled vertex i (rows past the count
  and rows of vertices in the last hop are empty); the hop at which each vertex was reached (-1 padded).
* `dgl_csr_neighbor_non_uniform_sample(csr, probability, seeds..., ...)`: the same, neighbours drawn
  with probability proportional to `probability[neighbour]` (successive sampling without
  replacement); an extra output set holds each sampled vertex's probability (-1 padded).
* `dgl_subgraph(graph, v0, v1, ..., return_mapping)`: the subgraph induced by each sorted vertex
  list, a len(v) x len(v) CSR matrix with new edge ids 0..nnz-1 in row order; with return_mapping a
  second CSR per list with the same structure holding the parent graph's edge ids.
* `edge_id(data, u, v)`: data[u[i], v[i]] where the edge is stored, else -1.
* `dgl_adjacency(data)`: the int64 graph's structure with float32 ones as values.
* `dgl_graph_compact(g0, ..., vids0, ..., graph_sizes, return_mapping)`: a sampler's sub-CSR matrix
  and vertex ids compacted to a graph_sizes[i] x graph_sizes[i] CSR matrix whose columns are renumbered
  to positions in the vertex ids and whose values are new edge ids 0..nnz-1; with return_mapping a
  second CSR with the same structure holds the input's edge ids (MXNet 1.9.1 declares those outputs
  but never writes them).

MXNet has CPU kernels only and no gradients for these ops, and computes them on CSR storage only:
the kernels here are sparse kernels (`ember.imperative.sparse_ops.SPARSE_KERNELS`) run on the host;
the registry's dense kernels refuse dense inputs, as MXNet's storage-type inference does, so the ops
do not run inside executors (which compute densely).  The samplers draw one seed per call from the
device's random generator through the registry's `_random_randint` (so `mx.random.seed` reproduces
them) and sample with a numpy generator made from it, as MXNet draws one seed from its random
resource per call.  Differences from MXNet's exact draws are expected (different generators); MXNet
also reuses that one seed for every expanded vertex, which ember does not.  MXNet sorts a
non-uniform sample's neighbour ids and edge ids independently; ember keeps each (neighbour, edge)
pair together, ordered by neighbour id (the same result whenever edge ids increase along a row).
"""
from __future__ import annotations

import logging

import numpy as np

from ..base import DTypeError, IndexRangeError, OperatorError, ShapeError
from .registry import REQUIRED, Attr, OpDef, register

_I64 = np.dtype(np.int64)
_F32 = np.dtype(np.float32)
_log = logging.getLogger(__name__)


# ------------------------------------------------------------------ common checks

def _stype_error(op: str, what: str, got: str, want: str):
    return OperatorError(f"{op}: {what} must have {want} storage, got {got}")


def _graph_then_dense(op: str, names, in_stypes) -> None:
    """The storage check of an op on one CSR graph (input 0) and dense arrays (the rest), in input order."""
    if in_stypes[0] != "csr":
        raise _stype_error(op, names[0], in_stypes[0], "csr")
    for name, st in zip(names[1:], in_stypes[1:]):
        if st != "default":
            raise _stype_error(op, name, st, "default (dense)")


def _require_dtype(op: str, what: str, dtype, want=_I64) -> None:
    if dtype is not None and np.dtype(dtype) != want:
        raise DTypeError(f"{op}: {what} must be {want.name}, got {np.dtype(dtype).name}")


def _dense_refused(op: str, first: str):
    def kernel(ctx, attrs, inputs, outputs, aux):
        raise OperatorError(f"{op}: {first} must have csr storage (MXNet 1.9.1 has CSR kernels only)")
    return kernel


def _host_csr(x):
    """(values, indptr, indices) of a CSRNDArray as host numpy arrays."""
    values, indptr, indices = x._host_components()
    return np.asarray(values), np.asarray(indptr, dtype=np.int64), np.asarray(indices, dtype=np.int64)


def _checked_csr_call(inputs, attrs, stype_rule, shape_rule=None, type_rule=None, n_graphs: int = 1) -> bool:
    """The op's storage-type rule on this call, then, when its first `n_graphs` inputs are CSR, its shape
    and dtype rules (MXNet's checks, in its order).  False, having checked only storage, when a graph is not
    CSR: the op's dense kernel refuses it."""
    from ..imperative.sparse_ndarray import CSRNDArray
    stype_rule(attrs, [getattr(x, "stype", "default") for x in inputs])
    if not all(isinstance(x, CSRNDArray) for x in inputs[:n_graphs]):
        return False
    if shape_rule is not None:
        shape_rule(attrs, [tuple(x.shape) for x in inputs])
    if type_rule is not None:
        type_rule(attrs, [x.dtype for x in inputs])
    return True


def _host(x) -> np.ndarray:
    return x.asnumpy()


def _make_csr(values, indptr, indices, shape, ctx, dtype):
    from ..imperative.sparse_ndarray import make_csr
    return make_csr(np.asarray(values, dtype=dtype), np.asarray(indptr, dtype=np.int64),
                    np.asarray(indices, dtype=np.int64), tuple(int(s) for s in shape), ctx, dtype=dtype)


def _dense(values, ctx, dtype):
    from ..imperative.creation import array
    return array(np.asarray(values, dtype=dtype), ctx=ctx, dtype=dtype)


def _one_or_list(results):
    return results[0] if len(results) == 1 else results


# ------------------------------------------------------------------ neighbour sampling

_SAMPLE_ATTRS = {
    "num_args": Attr("int", doc="number of input arrays (the graph, [the probability], the seed arrays)"),
    "num_hops": Attr("int", 1, doc="number of hops"),
    "num_neighbor": Attr("int", 2, doc="neighbours sampled per expanded vertex"),
    "max_num_vertices": Attr("int", 100, doc="most vertices a sample holds"),
}


def _n_fixed(non_uniform: bool) -> int:
    return 2 if non_uniform else 1


def _sampler_name(non_uniform: bool) -> str:
    return "_contrib_dgl_csr_neighbor_" + ("non_uniform" if non_uniform else "uniform") + "_sample"


def _check_sample_attrs(op: str, attrs: dict, non_uniform: bool) -> int:
    """The number of seed arrays (subgraphs)."""
    fixed = _n_fixed(non_uniform)
    if attrs["num_args"] < fixed + 1:
        need = "the graph, the probability and" if non_uniform else "the graph and"
        raise OperatorError(f"{op}: num_args must be at least {fixed + 1} ({need} at least one seed array), "
                            f"got {attrs['num_args']}")
    if attrs["num_hops"] < 0:
        raise OperatorError(f"{op}: num_hops must be >= 0, got {attrs['num_hops']}")
    if attrs["num_neighbor"] < 0:
        raise OperatorError(f"{op}: num_neighbor must be >= 0, got {attrs['num_neighbor']}")
    if attrs["max_num_vertices"] < 1:
        raise OperatorError(f"{op}: max_num_vertices must be >= 1, got {attrs['max_num_vertices']}")
    return attrs["num_args"] - fixed


def _sampler_inputs(non_uniform: bool):
    def names(attrs):
        fixed = ["csr_matrix", "probability"] if non_uniform else ["csr_matrix"]
        return fixed + [f"seed_arrays{i}" for i in range(max(attrs["num_args"] - len(fixed), 0))]
    return names


def _sampler_outputs(non_uniform: bool):
    sets = ("sample_id", "sub_csr", "sub_probability", "sub_layer") if non_uniform else \
        ("sample_id", "sub_csr", "sub_layer")

    def names(attrs):
        n = max(attrs["num_args"] - _n_fixed(non_uniform), 0)
        return [f"{s}{i}" for s in sets for i in range(n)]
    return names


def _sampler_stype(non_uniform: bool):
    op = _sampler_name(non_uniform)

    def rule(attrs, in_stypes):
        n = _check_sample_attrs(op, attrs, non_uniform)
        _graph_then_dense(op, _sampler_inputs(non_uniform)(attrs), in_stypes)
        sets = ["default", "csr", "default", "default"] if non_uniform else ["default", "csr", "default"]
        return [s for s in sets for _ in range(n)]
    return rule


def _sampler_shape(non_uniform: bool):
    op = _sampler_name(non_uniform)

    def infer(attrs, in_shapes):
        n = _check_sample_attrs(op, attrs, non_uniform)
        names = _sampler_inputs(non_uniform)(attrs)
        g = in_shapes[0]
        if g is not None and (len(g) != 2 or (None not in g and g[0] != g[1])):
            raise ShapeError(f"{op}: csr_matrix must be a square 2-D matrix (a graph), got shape {tuple(g)}")
        for name, s in zip(names[1:], in_shapes[1:]):
            if s is not None and len(s) != 1:
                raise ShapeError(f"{op}: {name} must be 1-D, got shape {tuple(s)}")
        if non_uniform and g is not None and in_shapes[1] is not None and None not in g \
                and in_shapes[1][0] is not None and in_shapes[1][0] != g[0]:
            raise ShapeError(f"{op}: probability must hold one value per vertex ({g[0]}), "
                             f"got shape {tuple(in_shapes[1])}")
        m = attrs["max_num_vertices"]
        sub_csr = None if g is None else (m, g[1])
        sets = [(m + 1,), sub_csr, (m,), (m,)] if non_uniform else [(m + 1,), sub_csr, (m,)]
        return in_shapes, [s for s in sets for _ in range(n)]
    return infer


def _sampler_type(non_uniform: bool):
    op = _sampler_name(non_uniform)

    def infer(attrs, in_dtypes):
        n = _check_sample_attrs(op, attrs, non_uniform)
        names = _sampler_inputs(non_uniform)(attrs)
        _require_dtype(op, "csr_matrix (its values are edge ids)", in_dtypes[0])
        if non_uniform:
            _require_dtype(op, "probability", in_dtypes[1], _F32)
        for name, d in zip(names[_n_fixed(non_uniform):], in_dtypes[_n_fixed(non_uniform):]):
            _require_dtype(op, name, d)
        seed_t = in_dtypes[_n_fixed(non_uniform)]
        sets = [seed_t, in_dtypes[0], in_dtypes[1], seed_t] if non_uniform else [seed_t, in_dtypes[0], seed_t]
        return in_dtypes, [d for d in sets for _ in range(n)]
    return infer


def _draw_seed(ctx) -> int:
    """One seed from the device's random generator, drawn through the registry (engine-ordered with
    every other random op; `mx.random.seed` reproduces it)."""
    from ..imperative.invoke import invoke
    r = invoke("_random_randint", [], {"low": 0, "high": 2 ** 62, "shape": (1,), "dtype": "int64"}, ctx=ctx)
    return int(r.asnumpy()[0])


def _pick_uniform(gen, n: int, k: int) -> np.ndarray:
    """k distinct positions of [0, n), sorted."""
    return np.sort(gen.choice(n, size=k, replace=False))


def _pick_weighted(gen, weights: np.ndarray, k: int) -> np.ndarray:
    """k distinct positions drawn one after another with probability proportional to `weights` among
    those not drawn yet (positions of weight 0 only once the positive ones are used up, uniformly)."""
    positive = np.flatnonzero(weights > 0)
    if positive.size >= k:
        p = weights[positive] / weights[positive].sum()
        return positive[gen.choice(positive.size, size=k, replace=False, p=p)]
    zero = np.flatnonzero(weights <= 0)
    return np.concatenate([positive, zero[gen.choice(zero.size, size=k - positive.size, replace=False)]])


def sample_subgraph(values, indptr, indices, seeds, num_hops, num_neighbor, max_num_vertices, gen,
                    probability=None, op="dgl_csr_neighbor_uniform_sample"):
    """One breadth-first neighbourhood sample (MXNet's SampleSubgraph).

    Returns (vertex ids sorted, their hops, sub-CSR (values, indptr over max_num_vertices rows,
    indices)) for the vertices reached; the caller pads."""
    n_vertices = indptr.size - 1
    if seeds.size > max_num_vertices:
        raise OperatorError(f"{op}: {seeds.size} seed vertices do not fit max_num_vertices={max_num_vertices}")
    if seeds.size and (seeds.min() < 0 or seeds.max() >= n_vertices):
        bad = seeds[(seeds < 0) | (seeds >= n_vertices)][0]
        raise IndexRangeError(f"{op}: seed vertex {int(bad)} is not in a graph of {n_vertices} vertices")
    hop = {}
    queue = []  # vertices in the order they were reached (the BFS queue)
    for s in seeds.tolist():
        if s not in hop:
            hop[s] = 0
            queue.append(s)
    sampled = {}  # expanded vertex -> (neighbour ids, edge ids)
    head = 0
    while head < len(queue) and len(hop) < max_num_vertices:
        v = queue[head]
        head += 1
        level = hop[v]
        if level >= num_hops:
            continue
        lo, hi = int(indptr[v]), int(indptr[v + 1])
        cols, eids = indices[lo:hi], values[lo:hi]
        if hi - lo > num_neighbor:
            if probability is None:
                pos = _pick_uniform(gen, hi - lo, num_neighbor)
            else:
                pos = _pick_weighted(gen, probability[cols], num_neighbor)
                pos = pos[np.argsort(cols[pos], kind="stable")]
            cols, eids = cols[pos], eids[pos]
        sampled[v] = (cols, eids)
        for c in cols.tolist():
            if len(hop) >= max_num_vertices:
                break
            if c not in hop:
                hop[c] = level + 1
                queue.append(c)
    if any(hop[v] < num_hops for v in queue[head:]):
        _log.warning("%s: the sampling is truncated because it reached max_num_vertices=%d; use fewer seeds "
                     "or a smaller neighbourhood", op, max_num_vertices)
    ids = np.array(sorted(hop), dtype=np.int64)
    hops = np.array([hop[v] for v in ids.tolist()], dtype=np.int64)
    counts = np.zeros(max_num_vertices, dtype=np.int64)
    col_parts, val_parts = [], []
    for i, v in enumerate(ids.tolist()):
        if v in sampled:
            cols, eids = sampled[v]
            counts[i] = cols.size
            col_parts.append(cols)
            val_parts.append(eids)
    sub_indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    sub_indices = np.concatenate(col_parts).astype(np.int64) if col_parts else np.zeros(0, np.int64)
    sub_values = np.concatenate(val_parts) if val_parts else np.zeros(0, values.dtype)
    return ids, hops, (sub_values, sub_indptr, sub_indices)


def _sampler_kernel(non_uniform: bool):
    op = _sampler_name(non_uniform)
    stype_rule, shape_rule, type_rule = _sampler_stype(non_uniform), _sampler_shape(non_uniform), \
        _sampler_type(non_uniform)

    def kernel(inputs, attrs):
        if not _checked_csr_call(inputs, attrs, stype_rule, shape_rule, type_rule):
            return None
        graph = inputs[0]
        ctx = graph.context
        values, indptr, indices = _host_csr(graph)
        probability = None
        if non_uniform:
            probability = _host(inputs[1]).astype(np.float32)
            if not np.all(np.isfinite(probability)) or np.any(probability < 0):
                raise OperatorError(f"{op}: probability must be finite and >= 0")
        m = attrs["max_num_vertices"]
        gen = np.random.Generator(np.random.PCG64(_draw_seed(ctx)))
        ids_out, csr_out, prob_out, layer_out = [], [], [], []
        for seed_arr in inputs[_n_fixed(non_uniform):]:
            ids, hops, (sv, sp, si) = sample_subgraph(values, indptr, indices, _host(seed_arr).astype(np.int64),
                                                      attrs["num_hops"], attrs["num_neighbor"], m, gen,
                                                      probability, op)
            n = ids.size
            padded = np.full(m + 1, -1, dtype=np.int64)
            padded[:n] = ids
            padded[m] = n
            ids_out.append(_dense(padded, ctx, seed_arr.dtype))
            csr_out.append(_make_csr(sv, sp, si, (m, graph.shape[1]), ctx, graph.dtype))
            layer = np.full(m, -1, dtype=np.int64)
            layer[:n] = hops
            layer_out.append(_dense(layer, ctx, seed_arr.dtype))
            if non_uniform:
                p = np.full(m, -1, dtype=np.float32)
                p[:n] = probability[ids]
                prob_out.append(_dense(p, ctx, inputs[1].dtype))
        return ids_out + csr_out + prob_out + layer_out if non_uniform else ids_out + csr_out + layer_out
    return kernel


for _nu in (False, True):
    register(OpDef(
        name=_sampler_name(_nu), attrs=dict(_SAMPLE_ATTRS), inputs=_sampler_inputs(_nu),
        outputs=_sampler_outputs(_nu), key_var_num_args="num_args",
        infer_shape=_sampler_shape(_nu), infer_type=_sampler_type(_nu), infer_stype=_sampler_stype(_nu),
        kernels={"cpu": _dense_refused(_sampler_name(_nu), "csr_matrix")}, resources=("rng",),
        doc=("Neighbourhood samples of a CSR graph from seed vertices, neighbours drawn "
             + ("with probability proportional to `probability`" if _nu else "uniformly")
             + ": sampled vertex ids (padded with -1, count last), sub-CSR matrices, "
             + ("probabilities, " if _nu else "") + "hops.")))


# ------------------------------------------------------------------ induced subgraphs

_SUBGRAPH_OP = "_contrib_dgl_subgraph"


def _subgraph_n(attrs) -> int:
    if attrs["num_args"] < 2:
        raise OperatorError(f"{_SUBGRAPH_OP}: num_args must be at least 2 (the graph and a vertex array), "
                            f"got {attrs['num_args']}")
    return attrs["num_args"] - 1


def _subgraph_outputs(attrs):
    n = max(attrs["num_args"] - 1, 0)
    return [f"subgraph{i}" for i in range(n)] + ([f"mapping{i}" for i in range(n)] if attrs["return_mapping"] else [])


def _subgraph_stype(attrs, in_stypes):
    _subgraph_n(attrs)
    _graph_then_dense(_SUBGRAPH_OP, _varray_inputs(attrs), in_stypes)
    return ["csr"] * len(_subgraph_outputs(attrs))


def _subgraph_shape(attrs, in_shapes):
    n = _subgraph_n(attrs)
    g = in_shapes[0]
    if g is not None and len(g) != 2:
        raise ShapeError(f"{_SUBGRAPH_OP}: graph must be 2-D, got shape {tuple(g)}")
    for i, s in enumerate(in_shapes[1:]):
        if s is not None and len(s) != 1:
            raise ShapeError(f"{_SUBGRAPH_OP}: varray{i} must be 1-D, got shape {tuple(s)}")
    outs = [None if s is None else (s[0], s[0]) for s in in_shapes[1:]]
    return in_shapes, outs + (outs if attrs["return_mapping"] else [])


def _subgraph_type(attrs, in_dtypes):
    _subgraph_n(attrs)
    _require_dtype(_SUBGRAPH_OP, "graph (its values are edge ids)", in_dtypes[0])
    for i, d in enumerate(in_dtypes[1:]):
        _require_dtype(_SUBGRAPH_OP, f"varray{i}", d)
    return in_dtypes, [in_dtypes[0]] * len(_subgraph_outputs(attrs))


def induced_subgraph(values, indptr, indices, vids, op=_SUBGRAPH_OP):
    """(indptr, indices (new ids), parent edge ids) of the subgraph induced by sorted `vids`."""
    n_vertices = indptr.size - 1
    if vids.size and np.any(np.diff(vids) < 0):
        raise OperatorError(f"{op}: the input vertex list has to be sorted")
    if vids.size and (vids.min() < 0 or vids.max() >= n_vertices):
        bad = vids[(vids < 0) | (vids >= n_vertices)][0]
        raise IndexRangeError(f"{op}: vertex id {int(bad)} isn't in a graph of {n_vertices} vertices")
    new_id = {}
    for i, v in enumerate(vids.tolist()):
        new_id[v] = i  # a repeated id maps to its last position, as MXNet's table
    rows = np.zeros(vids.size + 1, dtype=np.int64)
    cols, eids = [], []
    for i, v in enumerate(vids.tolist()):
        lo, hi = int(indptr[v]), int(indptr[v + 1])
        for c, e in zip(indices[lo:hi].tolist(), values[lo:hi].tolist()):
            j = new_id.get(c)
            if j is not None:
                cols.append(j)
                eids.append(e)
        rows[i + 1] = len(cols)
    return rows, np.asarray(cols, dtype=np.int64), np.asarray(eids, dtype=values.dtype)


def _subgraph_kernel(inputs, attrs):
    if not _checked_csr_call(inputs, attrs, _subgraph_stype, _subgraph_shape, _subgraph_type):
        return None
    graph = inputs[0]
    ctx = graph.context
    values, indptr, indices = _host_csr(graph)
    subs, maps = [], []
    for varr in inputs[1:]:
        rows, cols, eids = induced_subgraph(values, indptr, indices, _host(varr).astype(np.int64))
        k = varr.shape[0]
        subs.append(_make_csr(np.arange(cols.size), rows, cols, (k, k), ctx, graph.dtype))
        if attrs["return_mapping"]:
            maps.append(_make_csr(eids, rows, cols, (k, k), ctx, graph.dtype))
    return _one_or_list(subs + maps)


def _varray_inputs(attrs):
    return ["graph"] + [f"varray{i}" for i in range(max(attrs["num_args"] - 1, 0))]


register(OpDef(
    name=_SUBGRAPH_OP,
    attrs={"num_args": Attr("int", doc="number of input arrays (the graph and the vertex arrays)"),
           "return_mapping": Attr("bool", REQUIRED, doc="also return CSR matrices holding the parent's edge ids")},
    inputs=_varray_inputs, outputs=_subgraph_outputs, key_var_num_args="num_args",
    infer_shape=_subgraph_shape, infer_type=_subgraph_type, infer_stype=_subgraph_stype,
    kernels={"cpu": _dense_refused(_SUBGRAPH_OP, "graph")},
    doc="Subgraphs of a CSR graph induced by sorted vertex lists (new edge ids; with return_mapping the "
        "parent's edge ids too)."))


# ------------------------------------------------------------------ edge_id

_EDGE_OP = "_contrib_edge_id"


def _edge_stype(attrs, in_stypes):
    _graph_then_dense(_EDGE_OP, ("data", "u", "v"), in_stypes)
    return ["default"]


def _edge_shape(attrs, in_shapes):
    d, u, v = in_shapes
    if d is not None and len(d) != 2:
        raise ShapeError(f"{_EDGE_OP}: data must be a 2-D csr matrix, got shape {tuple(d)}")
    for name, s in (("u", u), ("v", v)):
        if s is not None and len(s) != 1:
            raise ShapeError(f"{_EDGE_OP}: {name} must be 1-D, got shape {tuple(s)}")
    if u is not None and v is not None and u != v:
        raise ShapeError(f"{_EDGE_OP}: u and v must have the same length, got {tuple(u)} and {tuple(v)}")
    out = u if u is not None else v
    return [d, out, out], [out]


def edge_ids(values, indptr, indices, shape, u, v, op=_EDGE_OP):
    """values at (u[i], v[i]) where stored (the first such entry of the row), else -1."""
    rows = u.astype(np.int64)
    cols = v.astype(np.int64)
    if rows.size and (rows.min() < 0 or rows.max() >= shape[0]):
        bad = rows[(rows < 0) | (rows >= shape[0])][0]
        raise IndexRangeError(f"{op}: u holds row {int(bad)}, outside a matrix of {shape[0]} rows")
    out = np.full(rows.size, -1, dtype=values.dtype)
    for i, (r, c) in enumerate(zip(rows.tolist(), cols.tolist())):
        lo, hi = int(indptr[r]), int(indptr[r + 1])
        hit = np.flatnonzero(indices[lo:hi] == c)
        if hit.size:
            out[i] = values[lo + hit[0]]
    return out


def _edge_kernel(inputs, attrs):
    if not _checked_csr_call(inputs, attrs, _edge_stype, _edge_shape):
        return None
    data = inputs[0]
    values, indptr, indices = _host_csr(data)
    out = edge_ids(values, indptr, indices, data.shape, _host(inputs[1]), _host(inputs[2]))
    return _dense(out, data.context, data.dtype)


register(OpDef(
    name=_EDGE_OP, inputs=["data", "u", "v"], outputs=["output"],
    infer_shape=_edge_shape, infer_type=lambda a, d: (list(d), [d[0]]), infer_stype=_edge_stype,
    kernels={"cpu": _dense_refused(_EDGE_OP, "data")},
    doc="data[u[i], v[i]] of a CSR matrix where that entry is stored, else -1."))


# ------------------------------------------------------------------ dgl_adjacency

_ADJ_OP = "_contrib_dgl_adjacency"


def _adj_stype(attrs, in_stypes):
    _graph_then_dense(_ADJ_OP, ("data",), in_stypes)
    return ["csr"]


def _adj_type(attrs, in_dtypes):
    _require_dtype(_ADJ_OP, "data (its values are edge ids)", in_dtypes[0])
    return list(in_dtypes), [_F32]


def _adj_shape(attrs, in_shapes):
    d = in_shapes[0]
    if d is not None and len(d) != 2:
        raise ShapeError(f"{_ADJ_OP}: data must be a 2-D csr matrix, got shape {tuple(d)}")
    return in_shapes, [d]


def _adj_kernel(inputs, attrs):
    if not _checked_csr_call(inputs, attrs, _adj_stype, type_rule=_adj_type):
        return None
    _, indptr, indices = _host_csr(inputs[0])
    return _make_csr(np.ones(indices.size, dtype=_F32), indptr, indices, inputs[0].shape, inputs[0].context, _F32)


register(OpDef(
    name=_ADJ_OP, inputs=["data"], outputs=["output"],
    infer_shape=_adj_shape, infer_type=_adj_type, infer_stype=_adj_stype,
    kernels={"cpu": _dense_refused(_ADJ_OP, "data")},
    doc="The structure of an int64 CSR graph with float32 ones as values."))


# ------------------------------------------------------------------ dgl_graph_compact

_COMPACT_OP = "_contrib_dgl_graph_compact"


def _p_sizes(value):
    """graph_sizes: an int, a sequence of ints, a numpy array or its string form ("(5, 3)", "[5]")."""
    if isinstance(value, str):
        value = value.strip().strip("()[]").replace(",", " ").split()
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim > 1 or np.any(arr != np.floor(arr)):
        raise OperatorError(f"{_COMPACT_OP}: invalid value {value!r} for attribute 'graph_sizes' "
                            "(a tuple of integers expected)")
    return tuple(int(x) for x in arr.reshape(-1))


class _SizesAttr(Attr):
    def parse(self, value, op, name):
        return _p_sizes(value)


def _compact_n(attrs) -> int:
    if attrs["num_args"] < 2 or attrs["num_args"] % 2:
        raise OperatorError(f"{_COMPACT_OP}: num_args must be an even number >= 2 (graphs then as many vertex "
                            f"arrays), got {attrs['num_args']}")
    n = attrs["num_args"] // 2
    sizes = attrs["graph_sizes"]
    if len(sizes) < n:
        raise OperatorError(f"{_COMPACT_OP}: graph_sizes must give one size per graph ({n}), got {sizes}")
    if any(s < 0 for s in sizes):
        raise OperatorError(f"{_COMPACT_OP}: graph_sizes must be >= 0, got {sizes}")
    return n


def _compact_inputs(attrs):
    if attrs["num_args"] % 2:
        raise OperatorError(f"{_COMPACT_OP}: num_args must be an even number >= 2 (graphs then as many vertex "
                            f"arrays), got {attrs['num_args']}")
    n = max(attrs["num_args"] // 2, 0)
    return [f"graph{i}" for i in range(n)] + [f"varray{i}" for i in range(n)]


def _compact_outputs(attrs):
    n = max(attrs["num_args"] // 2, 0)
    return [f"compact{i}" for i in range(n)] + ([f"mapping{i}" for i in range(n)] if attrs["return_mapping"] else [])


def _compact_stype(attrs, in_stypes):
    n = _compact_n(attrs)
    names = _compact_inputs(attrs)
    for i in range(n):
        if in_stypes[i] != "csr":
            raise _stype_error(_COMPACT_OP, names[i], in_stypes[i], "csr")
        if in_stypes[n + i] != "default":
            raise _stype_error(_COMPACT_OP, names[n + i], in_stypes[n + i], "default (dense)")
    return ["csr"] * len(_compact_outputs(attrs))


def _compact_shape(attrs, in_shapes):
    n = _compact_n(attrs)
    sizes = attrs["graph_sizes"]
    for i in range(n):
        g, v, k = in_shapes[i], in_shapes[n + i], sizes[i]
        if g is not None:
            if len(g) != 2:
                raise ShapeError(f"{_COMPACT_OP}: graph{i} must be 2-D, got shape {tuple(g)}")
            if (g[0] is not None and g[0] < k) or (g[1] is not None and g[1] < k):
                raise ShapeError(f"{_COMPACT_OP}: graph{i} of shape {tuple(g)} is smaller than graph_sizes[{i}]={k}")
        if v is not None:
            if len(v) != 1:
                raise ShapeError(f"{_COMPACT_OP}: varray{i} must be 1-D, got shape {tuple(v)}")
            if v[0] is not None and v[0] < k:
                raise ShapeError(f"{_COMPACT_OP}: varray{i} of length {v[0]} is shorter than graph_sizes[{i}]={k}")
    outs = [(sizes[i], sizes[i]) for i in range(n)]
    return in_shapes, outs + (outs if attrs["return_mapping"] else [])


def _compact_type(attrs, in_dtypes):
    names = _compact_inputs(attrs)
    for name, d in zip(names, in_dtypes):
        _require_dtype(_COMPACT_OP, name, d)
    return in_dtypes, [_I64] * len(_compact_outputs(attrs))


def compact(values, indptr, indices, vids, size, op=_COMPACT_OP, which=0):
    """(indptr, indices renumbered to positions in vids[:size], new edge ids, input edge ids)."""
    if vids.size != indptr.size:
        raise ShapeError(f"{op}: varray{which} must have one entry per row of graph{which} plus the count "
                         f"({indptr.size}), as a sampler's vertex ids have, got {vids.size}")
    if int(vids[-1]) != size:
        raise OperatorError(f"{op}: graph_sizes[{which}]={size} differs from the vertex count {int(vids[-1])} "
                            f"stored last in varray{which}")
    ids = vids[:size]
    if np.any(ids == -1):
        raise OperatorError(f"{op}: varray{which} holds -1 among its first {size} vertex ids")
    if int(indptr[size]) != int(indptr[-1]):
        raise OperatorError(f"{op}: graph{which} stores edges in rows at or past graph_sizes[{which}]={size}")
    position = {}
    for i, v in enumerate(ids.tolist()):
        position.setdefault(v, i)
    cols = np.empty(indices.size, dtype=np.int64)
    for j, c in enumerate(indices.tolist()):
        p = position.get(c)
        if p is None:
            raise OperatorError(f"{op}: graph{which} has an edge to vertex {c}, which is not among the first "
                                f"{size} ids of varray{which}")
        cols[j] = p
    return indptr[:size + 1].copy(), cols, np.arange(indices.size, dtype=np.int64), values


def _compact_kernel(inputs, attrs):
    n = _compact_n(attrs)
    if not _checked_csr_call(inputs, attrs, _compact_stype, _compact_shape, _compact_type, n_graphs=n):
        return None
    outs, maps = [], []
    for i in range(n):
        g, k = inputs[i], attrs["graph_sizes"][i]
        values, indptr, indices = _host_csr(g)
        rows, cols, new_eids, old_eids = compact(values, indptr, indices, _host(inputs[n + i]).astype(np.int64), k,
                                                 which=i)
        outs.append(_make_csr(new_eids, rows, cols, (k, k), g.context, _I64))
        if attrs["return_mapping"]:
            maps.append(_make_csr(old_eids, rows, cols, (k, k), g.context, _I64))
    return _one_or_list(outs + maps)


register(OpDef(
    name=_COMPACT_OP,
    attrs={"num_args": Attr("int", doc="number of input arrays (graphs, then as many vertex arrays)"),
           "return_mapping": Attr("bool", REQUIRED, doc="also return CSR matrices holding the input's edge ids"),
           "graph_sizes": _SizesAttr("shape", REQUIRED, doc="the number of vertices of each graph")},
    inputs=_compact_inputs, outputs=_compact_outputs, key_var_num_args="num_args",
    infer_shape=_compact_shape, infer_type=_compact_type, infer_stype=_compact_stype,
    kernels={"cpu": _dense_refused(_COMPACT_OP, "each graph")},
    doc="A sampler's sub-CSR matrices compacted to graph_sizes[i] vertices, columns renumbered to positions "
        "in the vertex ids, new edge ids as values."))


def _install_sparse_kernels() -> None:
    from ..imperative import sparse_ops
    for name, fn in ((_sampler_name(False), _sampler_kernel(False)), (_sampler_name(True), _sampler_kernel(True)),
                     (_SUBGRAPH_OP, _subgraph_kernel), (_EDGE_OP, _edge_kernel), (_ADJ_OP, _adj_kernel),
                     (_COMPACT_OP, _compact_kernel)):
        sparse_ops.SPARSE_KERNELS.setdefault(name, fn)


_install_sparse_kernels()
