"""DGL graph operators (ember/ops/dgl_graph.py) against plain numpy/scipy references on small graphs;
the samplers by the properties every sample must have."""
import numpy as np
import pytest
import scipy.sparse as sp

import ember as mx
from ember.base import DTypeError, IndexRangeError, OperatorError, ShapeError

CONTRIB = mx.nd.contrib


def _graph(n=8, density=0.4, seed=0):
    """(scipy csr with edge ids 0..nnz-1 as values, the same as an int64 CSRNDArray)."""
    rng = np.random.RandomState(seed)
    dense = (rng.rand(n, n) < density).astype(np.int64)
    g = sp.csr_matrix(dense)
    g.sort_indices()
    g.data = np.arange(g.nnz, dtype=np.int64)
    nd = mx.nd.sparse.csr_matrix((g.data, g.indices.astype(np.int64), g.indptr.astype(np.int64)), shape=(n, n))
    return g, nd


def _complete(n=5):
    rows = [[j for j in range(n) if j != i] for i in range(n)]
    indices = np.array(sum(rows, []), dtype=np.int64)
    indptr = np.arange(0, n * (n - 1) + 1, n - 1, dtype=np.int64)
    data = np.arange(1, indices.size + 1, dtype=np.int64)
    return mx.nd.sparse.csr_matrix((data, indices, indptr), shape=(n, n)), data, indices, indptr


# ------------------------------------------------------------------ edge_id, adjacency

def test_edge_id_matches_dense_lookup():
    g, nd = _graph()
    ref = np.full(g.shape, -1, dtype=np.int64)
    coo = g.tocoo()
    ref[coo.row, coo.col] = coo.data
    u = np.array([0, 1, 2, 3, 7, 7, 5, 0])
    v = np.array([0, 3, 2, 7, 1, 7, 4, 6])
    out = CONTRIB.edge_id(nd, mx.nd.array(u, dtype="int64"), mx.nd.array(v, dtype="int64"))
    assert out.dtype == np.int64 and out.stype == "default"
    np.testing.assert_array_equal(out.asnumpy(), ref[u, v])
    # float data, float32 u/v (as MXNet's test)
    f = mx.nd.sparse.csr_matrix(sp.csr_matrix(np.array([[0, 2.5, 0], [1.5, 0, 0], [0, 0, 0]], np.float32)))
    got = CONTRIB.edge_id(f, mx.nd.array([0, 1, 2, 0]), mx.nd.array([1, 0, 2, 0])).asnumpy()
    np.testing.assert_allclose(got, [2.5, 1.5, -1, -1])


def test_edge_id_errors():
    _, nd = _graph()
    with pytest.raises(ShapeError, match="same length"):
        CONTRIB.edge_id(nd, mx.nd.array([0, 1]), mx.nd.array([0]))
    with pytest.raises(IndexRangeError, match="row 9"):
        CONTRIB.edge_id(nd, mx.nd.array([9]), mx.nd.array([0]))
    with pytest.raises(OperatorError, match="csr storage"):
        CONTRIB.edge_id(nd.tostype("default"), mx.nd.array([0]), mx.nd.array([0])).asnumpy()


def test_adjacency():
    g, nd = _graph(seed=3)
    adj = CONTRIB.dgl_adjacency(nd)
    assert adj.stype == "csr" and adj.dtype == np.float32 and adj.shape == g.shape
    np.testing.assert_array_equal(adj.indptr.asnumpy(), g.indptr)
    np.testing.assert_array_equal(adj.indices.asnumpy(), g.indices)
    ones = sp.csr_matrix((np.ones(g.nnz, np.float32), g.indices, g.indptr), shape=g.shape)  # edge id 0 is stored too
    np.testing.assert_array_equal(adj.asnumpy(), ones.toarray())
    np.testing.assert_array_equal(adj.data.asnumpy(), np.ones(g.nnz, np.float32))
    with pytest.raises(DTypeError, match="int64"):
        CONTRIB.dgl_adjacency(nd.astype("float32"))


# ------------------------------------------------------------------ dgl_subgraph

def _induced_reference(g, vids):
    sub = g[vids][:, vids].tocsr()  # scipy keeps the parent's edge ids as values
    sub.sort_indices()
    return sub


@pytest.mark.parametrize("vids", [[0, 2, 3, 5], [1], [0, 1, 2, 3, 4, 5, 6, 7], []])
def test_subgraph_against_scipy(vids):
    g, nd = _graph(seed=1)
    v = np.array(vids, dtype=np.int64)
    sub, mapping = CONTRIB.dgl_subgraph(nd, mx.nd.array(v, dtype="int64"), return_mapping=True)
    ref = _induced_reference(g, v)
    assert sub.shape == mapping.shape == (len(v), len(v))
    sub.check_format(full_check=True)
    np.testing.assert_array_equal(sub.indptr.asnumpy(), ref.indptr)
    np.testing.assert_array_equal(sub.indices.asnumpy(), ref.indices)
    np.testing.assert_array_equal(sub.data.asnumpy(), np.arange(ref.nnz))
    np.testing.assert_array_equal(mapping.indices.asnumpy(), ref.indices)
    np.testing.assert_array_equal(mapping.data.asnumpy(), ref.data)


def test_subgraph_several_vertex_lists_and_no_mapping():
    g, nd = _graph(seed=2)
    a, b = np.array([0, 4, 6]), np.array([1, 2, 3, 7])
    outs = CONTRIB.dgl_subgraph(nd, mx.nd.array(a, dtype="int64"), mx.nd.array(b, dtype="int64"),
                                return_mapping=False)
    assert len(outs) == 2
    for out, v in zip(outs, (a, b)):
        ref = _induced_reference(g, v)
        np.testing.assert_array_equal(out.indices.asnumpy(), ref.indices)
        np.testing.assert_array_equal(out.indptr.asnumpy(), ref.indptr)


def test_subgraph_errors():
    _, nd = _graph()
    with pytest.raises(OperatorError, match="sorted"):
        CONTRIB.dgl_subgraph(nd, mx.nd.array([3, 1], dtype="int64"), return_mapping=False)
    with pytest.raises(IndexRangeError, match="isn't in a graph of 8"):
        CONTRIB.dgl_subgraph(nd, mx.nd.array([1, 8], dtype="int64"), return_mapping=False)
    with pytest.raises(DTypeError, match="varray0 must be int64"):
        CONTRIB.dgl_subgraph(nd, mx.nd.array([1, 2]), return_mapping=False)
    with pytest.raises(OperatorError, match="return_mapping"):
        CONTRIB.dgl_subgraph(nd, mx.nd.array([1, 2], dtype="int64"))


# ------------------------------------------------------------------ samplers

def _check_sample(out, graph, seeds, num_hops, num_neighbor, m, prob=None):
    """Every property a neighbourhood sample of `graph` (scipy csr) from `seeds` must have."""
    ids_full = out[0].asnumpy()
    sub = out[1]
    layer = out[-1].asnumpy()
    assert ids_full.shape == (m + 1,) and layer.shape == (m,) and sub.shape == (m, graph.shape[1])
    n = int(ids_full[-1])
    ids = ids_full[:n]
    assert 0 < n <= m
    assert np.all(ids_full[n:m] == -1) and np.all(layer[n:] == -1)
    assert np.all(np.diff(ids) > 0)                         # sorted, unique
    useeds = np.unique(seeds)
    assert set(useeds.tolist()) <= set(ids.tolist())
    assert np.all(layer[np.searchsorted(ids, useeds)] == 0)
    assert np.all((layer[:n] >= 0) & (layer[:n] <= num_hops))
    sub.check_format(full_check=True)
    indptr, indices, data = sub.indptr.asnumpy(), sub.indices.asnumpy(), sub.data.asnumpy()
    assert np.all(indptr[n:] == indptr[n])
    hop_of = dict(zip(ids.tolist(), layer[:n].tolist()))
    for i, v in enumerate(ids.tolist()):
        cols, eids = indices[indptr[i]:indptr[i + 1]], data[indptr[i]:indptr[i + 1]]
        if hop_of[v] == num_hops:
            assert cols.size == 0                            # last-hop vertices are not expanded
        degree = graph.indptr[v + 1] - graph.indptr[v]
        assert cols.size <= min(degree, num_neighbor)
        for c, e in zip(cols.tolist(), eids.tolist()):
            assert graph[v, c] == e                          # a real edge of v with its edge id (ids start at 1)
            if c in hop_of:                                  # reached neighbours are one hop further at most
                assert hop_of[c] <= hop_of[v] + 1
        # a vertex expanded while room was left takes min(degree, num_neighbor) neighbours
    if prob is not None:
        p = out[2].asnumpy()
        np.testing.assert_allclose(p[:n], prob[ids])
        assert np.all(p[n:] == -1)
    return n, ids, layer[:n]


@pytest.mark.parametrize("seeds,hops,k,m", [([0], 1, 2, 5), ([0], 2, 1, 3), ([0, 4], 2, 2, 5), ([1, 1, 3], 3, 2, 7),
                                            ([0, 1, 2, 3, 4], 1, 2, 5)])
def test_uniform_sample_properties(seeds, hops, k, m):
    nd, data, indices, indptr = _complete(5)
    g = sp.csr_matrix((data, indices, indptr), shape=(5, 5))
    for _ in range(5):
        out = CONTRIB.dgl_csr_neighbor_uniform_sample(nd, mx.nd.array(seeds, dtype="int64"), num_args=2,
                                                      num_hops=hops, num_neighbor=k, max_num_vertices=m)
        assert len(out) == 3 and out[1].stype == "csr" and out[0].dtype == np.int64
        _check_sample(out, g, np.array(seeds), hops, k, m)


def test_uniform_sample_whole_neighbourhood_and_bfs():
    # a path 0-1-2-3-4-5 (both directions): with num_neighbor >= the degree the sample is the exact BFS ball
    n = 6
    dense = np.zeros((n, n), np.int64)
    for i in range(n - 1):
        dense[i, i + 1] = dense[i + 1, i] = 1
    g = sp.csr_matrix(dense)
    g.data = np.arange(1, g.nnz + 1, dtype=np.int64)
    nd = mx.nd.sparse.csr_matrix((g.data, g.indices.astype(np.int64), g.indptr.astype(np.int64)), shape=(n, n))
    out = CONTRIB.dgl_csr_neighbor_uniform_sample(nd, mx.nd.array([2], dtype="int64"), num_args=2, num_hops=2,
                                                  num_neighbor=5, max_num_vertices=6)
    ids = out[0].asnumpy()
    np.testing.assert_array_equal(ids, [0, 1, 2, 3, 4, -1, 5])
    np.testing.assert_array_equal(out[2].asnumpy(), [2, 1, 0, 1, 2, -1])
    sub = out[1].asnumpy()
    ref = np.zeros((6, n), np.int64)
    ref[1] = g.toarray()[1]      # vertex 1 (row 1) expanded, hop 1
    ref[2] = g.toarray()[2]      # the seed
    ref[3] = g.toarray()[3]
    np.testing.assert_array_equal(sub, ref)
    compact = CONTRIB.dgl_graph_compact(out[1], out[0], graph_sizes=5, return_mapping=False)
    # columns renumbered to positions in the ids (here ids 0..4 are positions 0..4)
    np.testing.assert_array_equal(compact.indices.asnumpy(), out[1].indices.asnumpy())
    np.testing.assert_array_equal(compact.data.asnumpy(), np.arange(compact.indices.shape[0]))


def test_uniform_sample_several_seed_arrays_and_reproducible():
    nd, data, indices, indptr = _complete(5)
    args = dict(num_args=3, num_hops=2, num_neighbor=2, max_num_vertices=4)
    s1, s2 = mx.nd.array([0], dtype="int64"), mx.nd.array([3, 4], dtype="int64")
    mx.random.seed(7)
    a = CONTRIB.dgl_csr_neighbor_uniform_sample(nd, s1, s2, **args)
    mx.random.seed(7)
    b = CONTRIB.dgl_csr_neighbor_uniform_sample(nd, s1, s2, **args)
    assert len(a) == 6
    g = sp.csr_matrix((data, indices, indptr), shape=(5, 5))
    for i, seeds in enumerate(([0], [3, 4])):
        _check_sample([a[i], a[2 + i], a[4 + i]], g, np.array(seeds), 2, 2, 4)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    draws = {tuple(CONTRIB.dgl_csr_neighbor_uniform_sample(nd, s1, num_args=2, num_hops=1, num_neighbor=2,
                                                           max_num_vertices=5)[0].asnumpy()) for _ in range(40)}
    assert len(draws) > 1  # the neighbours are drawn, not fixed


def test_non_uniform_sample_properties_and_weights():
    nd, data, indices, indptr = _complete(5)
    g = sp.csr_matrix((data, indices, indptr), shape=(5, 5))
    prob = np.array([0.9, 0.8, 0.2, 0.4, 0.1], np.float32)
    for seeds, hops, k, m in (([0], 1, 1, 4), ([0], 2, 1, 4), ([0, 4], 2, 2, 5)):
        out = CONTRIB.dgl_csr_neighbor_non_uniform_sample(nd, mx.nd.array(prob), mx.nd.array(seeds, dtype="int64"),
                                                          num_args=3, num_hops=hops, num_neighbor=k,
                                                          max_num_vertices=m)
        assert len(out) == 4 and out[2].dtype == np.float32
        _check_sample(out, g, np.array(seeds), hops, k, m, prob)
    # a zero-probability neighbour is never drawn while positive ones remain
    zero = np.array([0.0, 1.0, 0.0, 3.0, 0.0], np.float32)
    for _ in range(20):
        out = CONTRIB.dgl_csr_neighbor_non_uniform_sample(nd, mx.nd.array(zero), mx.nd.array([0], dtype="int64"),
                                                          num_args=3, num_hops=1, num_neighbor=2, max_num_vertices=5)
        sub = out[1]
        np.testing.assert_array_equal(sub.indices.asnumpy(), [1, 3])
        np.testing.assert_array_equal(sub.data.asnumpy(), [1, 3])  # (neighbour, edge id) pairs kept together
    # heavier neighbours are drawn more often
    skew = np.array([1.0, 50.0, 1.0, 1.0, 1.0], np.float32)
    hits = sum(1 in CONTRIB.dgl_csr_neighbor_non_uniform_sample(
        nd, mx.nd.array(skew), mx.nd.array([0], dtype="int64"), num_args=3, num_hops=1, num_neighbor=1,
        max_num_vertices=5)[1].indices.asnumpy() for _ in range(40))
    assert hits >= 30


def test_sampler_errors():
    nd, *_ = _complete(5)
    seeds = mx.nd.array([0], dtype="int64")
    f = CONTRIB.dgl_csr_neighbor_uniform_sample
    with pytest.raises(OperatorError, match="do not fit max_num_vertices=2"):
        f(nd, mx.nd.array([0, 1, 2], dtype="int64"), num_args=2, max_num_vertices=2)
    with pytest.raises(IndexRangeError, match="seed vertex 5"):
        f(nd, mx.nd.array([5], dtype="int64"), num_args=2)
    with pytest.raises(DTypeError, match="seed_arrays0 must be int64"):
        f(nd, mx.nd.array([0]), num_args=2)
    with pytest.raises(ShapeError, match="square"):
        f(mx.nd.sparse.csr_matrix(np.ones((2, 3), np.int64)), seeds, num_args=2)
    with pytest.raises(OperatorError, match="takes 2 input arrays, got 3"):
        f(nd, seeds, seeds, num_args=2)
    with pytest.raises(OperatorError, match="csr storage"):
        f(nd.tostype("default"), seeds, num_args=2)[0].asnumpy()
    nf = CONTRIB.dgl_csr_neighbor_non_uniform_sample
    with pytest.raises(DTypeError, match="probability must be float32"):
        nf(nd, mx.nd.ones((5,), dtype="float64"), seeds, num_args=3)
    with pytest.raises(ShapeError, match="one value per vertex"):
        nf(nd, mx.nd.ones((4,)), seeds, num_args=3)
    with pytest.raises(OperatorError, match="finite and >= 0"):
        nf(nd, mx.nd.array([1, -1, 1, 1, 1]), seeds, num_args=3)


# ------------------------------------------------------------------ dgl_graph_compact

def test_compact_against_reference():
    # a sampler-shaped input: 4 valid rows out of 6, vertex ids [2, 5, 7, 9] (padded), columns are ids
    ids = np.array([2, 5, 7, 9, -1, -1, 4], np.int64)
    dense = np.zeros((6, 10), np.int64)
    dense[0, 5], dense[0, 9], dense[1, 2], dense[2, 7], dense[3, 2], dense[3, 5] = 11, 12, 13, 14, 15, 16
    csr = mx.nd.sparse.csr_matrix(sp.csr_matrix(dense))
    out, mapping = CONTRIB.dgl_graph_compact(csr, mx.nd.array(ids, dtype="int64"), graph_sizes=(4,),
                                             return_mapping=True)
    assert out.shape == mapping.shape == (4, 4) and out.dtype == np.int64
    pos = {2: 0, 5: 1, 7: 2, 9: 3}
    ref = np.zeros((4, 4), np.int64)
    k = 0
    for r in range(4):
        for c in np.flatnonzero(dense[r]):
            ref[r, pos[c]] = k
            k += 1
    # stored zeros (edge id 0) are entries too: compare the structure and the values
    np.testing.assert_array_equal(out.indptr.asnumpy(), [0, 2, 3, 4, 6])
    np.testing.assert_array_equal(out.indices.asnumpy(), [1, 3, 0, 2, 0, 1])
    np.testing.assert_array_equal(out.data.asnumpy(), np.arange(6))
    np.testing.assert_array_equal(out.asnumpy(), ref)
    np.testing.assert_array_equal(mapping.data.asnumpy(), [11, 12, 13, 14, 15, 16])


def test_compact_errors():
    ids = mx.nd.array([0, 1, -1, 2], dtype="int64")
    csr = mx.nd.sparse.csr_matrix(sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], np.int64)))
    with pytest.raises(OperatorError, match="differs from the vertex count 2"):
        CONTRIB.dgl_graph_compact(csr, ids, graph_sizes=1, return_mapping=False)
    with pytest.raises(ShapeError, match="one entry per row"):
        CONTRIB.dgl_graph_compact(csr, mx.nd.array([0, 1, 2], dtype="int64"), graph_sizes=2, return_mapping=False)
    with pytest.raises(OperatorError, match="graph_sizes"):
        CONTRIB.dgl_graph_compact(csr, ids, graph_sizes="x", return_mapping=False)
    bad = mx.nd.sparse.csr_matrix(sp.csr_matrix(np.array([[0, 0, 1], [1, 0, 0], [0, 0, 0]], np.int64)))
    with pytest.raises(OperatorError, match="edge to vertex 2"):
        CONTRIB.dgl_graph_compact(bad, ids, graph_sizes=2, return_mapping=False)
    with pytest.raises(OperatorError, match="even number"):
        CONTRIB.dgl_graph_compact(csr, ids, csr, graph_sizes=(2, 2), return_mapping=False)
