"""row_sparse Gluon parameters and gradients (MXNet 1.9.1's stype / grad_stype): storage types,
autograd into row_sparse gradient buffers, the store's sparse push / row_sparse_pull, lazy
updates, Embedding(sparse_grad=True); numbers against numpy and runs recorded from MXNet 1.9.1
(tests/data/make_sparse_params_fixtures.py)."""
import json
import os
import warnings

import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon
from ember.kvstore.errors import KVStoreError

with open(os.path.join(os.path.dirname(__file__), "..", "data", "sparse_params", "cases.json")) as _f:
    CASES = json.load(_f)["cases"]


def _rows(arr):
    return arr.indices.asnumpy().tolist()


# -- storage types ------------------------------------------------------------------------------------
def test_row_sparse_parameter_holds_row_sparse_value_and_empty_row_sparse_gradients():
    p = gluon.Parameter("weight", shape=(6, 3), stype="row_sparse", grad_stype="row_sparse")
    p.initialize(mx.init.Constant(3.0), ctx=[mx.cpu(0), mx.cpu(1)])
    assert [type(d).__name__ for d in p._data] == ["RowSparseNDArray"] * 2
    np.testing.assert_array_equal(p._data[1].asnumpy(), np.full((6, 3), 3.0))
    for g, ctx in zip(p.list_grad(), [mx.cpu(0), mx.cpu(1)]):
        assert g.stype == "row_sparse" and g.context == ctx and _rows(g) == []
    assert p.var().attr("__storage_type__") == "1"
    with pytest.raises(RuntimeError, match="row_sparse_data"):
        p.data()
    with pytest.raises(RuntimeError, match="no Trainer"):
        p.row_sparse_data(mx.nd.array([0]))


def test_row_sparse_data_pulls_unique_sorted_rows_through_the_trainer():
    p = gluon.Parameter("weight", shape=(5, 2), stype="row_sparse")
    value = np.arange(10, dtype=np.float32).reshape(5, 2)
    p.initialize(mx.init.Constant(mx.nd.array(value)), ctx=[mx.cpu(0), mx.cpu(1)])
    gluon.Trainer([p], "sgd")
    got = p.row_sparse_data(mx.nd.array([4, 1, 4], ctx=mx.cpu(1)))
    assert got.context == mx.cpu(1) and got.stype == "row_sparse" and _rows(got) == [1, 4]
    want = np.zeros_like(value)
    want[[1, 4]] = value[[1, 4]]
    np.testing.assert_array_equal(got.asnumpy(), want)
    both = p.list_row_sparse_data(mx.nd.array([2]))
    assert [b.context for b in both] == [mx.cpu(0), mx.cpu(1)]
    for b in both:
        assert _rows(b) == [2]
        np.testing.assert_array_equal(b.asnumpy()[2], value[2])


def test_zero_grad_leaves_no_stored_rows():
    params = gluon.ParameterDict()
    w = params.get("w", shape=(4, 2), grad_stype="row_sparse")
    d = params.get("d", shape=(3,))
    params.initialize(mx.init.One())
    with autograd.record():
        loss = (w.data() * 2).sum() + d.data().sum()
    loss.backward()
    assert _rows(w.grad()) == [0, 1, 2, 3]
    params.zero_grad()
    assert _rows(w.grad()) == [] and not d.grad().asnumpy().any()
    with autograd.record():
        loss = (w.data() * 2).sum()
    loss.backward()
    w.zero_grad()
    assert _rows(w.grad()) == []


# -- autograd into row_sparse gradient buffers ---------------------------------------------------------------
def test_dense_gradient_is_written_as_its_nonzero_rows():
    w = gluon.Parameter("w", shape=(4, 3), grad_stype="row_sparse")
    w.initialize(mx.init.One())
    coef = np.array([[0, 0, 0], [1, 2, 3], [0, 0, 0], [0, -1, 0]], dtype=np.float32)
    with autograd.record():
        loss = (w.data() * mx.nd.array(coef)).sum()
    loss.backward()
    g = w.grad()
    assert g.stype == "row_sparse" and _rows(g) == [1, 3]
    np.testing.assert_array_equal(g.asnumpy(), coef)


def test_grad_req_add_accumulates_into_the_row_sparse_buffer():
    w = gluon.Parameter("w", shape=(4, 2), grad_stype="row_sparse", grad_req="add")
    w.initialize(mx.init.One())
    first = np.array([[1, 1], [0, 0], [0, 0], [0, 0]], dtype=np.float32)
    second = np.array([[0, 0], [0, 0], [2, 0], [0, 0]], dtype=np.float32)
    for coef in (first, second):
        with autograd.record():
            loss = (w.data() * mx.nd.array(coef)).sum()
        loss.backward()
    assert _rows(w.grad()) == [0, 2]
    np.testing.assert_array_equal(w.grad().asnumpy(), first + second)


def test_gradient_reaches_a_row_sparse_weight_through_the_dense_fallback():
    w = gluon.Parameter("w", shape=(3, 2), stype="row_sparse", grad_stype="row_sparse")
    w.initialize(mx.init.One())
    gluon.Trainer([w], "sgd")
    x = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    with autograd.record():
        weight = w.row_sparse_data(mx.nd.arange(0, 3))
        loss = mx.nd.dot(mx.nd.array(x), weight, transpose_b=True).sum()  # dense op on a sparse input
    loss.backward()
    np.testing.assert_allclose(w.grad().asnumpy(), np.tile(x.sum(axis=0), (3, 1)))


def test_embedding_sparse_grad_stores_the_indexed_rows():
    layer = gluon.nn.Embedding(8, 3, sparse_grad=True)
    layer.initialize()
    ids = np.array([[5, 1], [1, 7]])
    head = np.array([[[1, 1, 1], [0, 0, 0]], [[0, 0, 0], [2, 2, 2]]], dtype=np.float32)
    with autograd.record():
        out = layer(mx.nd.array(ids))
    out.backward(mx.nd.array(head))
    g = layer.weight.grad()
    assert g.stype == "row_sparse" and _rows(g) == [1, 5, 7]  # row 1 indexed, its gradient is 0
    want = np.zeros((8, 3), np.float32)
    np.add.at(want, ids.ravel(), head.reshape(-1, 3))
    np.testing.assert_array_equal(g.asnumpy(), want)
    np.testing.assert_array_equal(g.data.asnumpy(), want[[1, 5, 7]])


def test_hybridized_embedding_sparse_grad_numbers():
    layer = gluon.nn.Embedding(6, 2, sparse_grad=True)
    layer.initialize()
    layer.hybridize(inline_limit=0)  # the cached graph, not the inlined one-operator call
    ids = np.array([0, 3, 3, 2])
    with autograd.record():
        loss = (layer(mx.nd.array(ids)) * 3).sum()
    loss.backward()
    g = layer.weight.grad()
    assert g.stype == "row_sparse" and _rows(g) == [0, 2, 3]
    want = np.zeros((6, 2), np.float32)
    np.add.at(want, ids, 3.0)
    np.testing.assert_array_equal(g.asnumpy(), want)


# -- the store -----------------------------------------------------------------------------------------
def test_kvstore_sums_sparse_pushes_over_the_union_of_rows():
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.zeros((5, 2)).tostype("row_sparse"))
    a = np.zeros((5, 2), np.float32)
    a[1] = [1, 2]
    b = np.zeros((5, 2), np.float32)
    b[[1, 4]] = [[3, 3], [5, 6]]
    kv.push("w", [mx.nd.array(a).tostype("row_sparse"), mx.nd.array(b, ctx=mx.cpu(1)).tostype("row_sparse")])
    out = mx.nd.sparse.zeros("row_sparse", (5, 2))
    kv.pull("w", out=out)  # ignore_sparse: left as it was
    assert _rows(out) == []
    kv.pull("w", out=out, ignore_sparse=False)
    assert _rows(out) == [1, 4]
    np.testing.assert_array_equal(out.asnumpy(), a + b)
    dense = mx.nd.zeros((5, 2))
    kv.pull("w", out=dense)
    np.testing.assert_array_equal(dense.asnumpy(), a + b)
    part = mx.nd.sparse.zeros("row_sparse", (5, 2))
    kv.row_sparse_pull("w", out=part, row_ids=mx.nd.array([4, 0]))
    assert _rows(part) == [0, 4]
    np.testing.assert_array_equal(part.asnumpy(), np.where(np.arange(5)[:, None] == 4, a + b, 0))


def test_kvstore_row_sparse_pull_with_one_row_id_fills_every_output():
    kv = mx.kv.create("local")
    value = np.arange(8, dtype=np.float32).reshape(4, 2)
    kv.init(0, mx.nd.array(value))
    outs = [mx.nd.sparse.zeros("row_sparse", (4, 2), ctx=mx.cpu(i)) for i in range(2)]
    kv.row_sparse_pull(0, out=outs, row_ids=mx.nd.array([3]))
    for o, ctx in zip(outs, [mx.cpu(0), mx.cpu(1)]):
        assert o.context == ctx and _rows(o) == [3]
        np.testing.assert_array_equal(o.asnumpy()[3], value[3])


def test_kvstore_row_sparse_pull_errors():
    kv = mx.kv.create("local")
    kv.init(0, mx.nd.zeros((3, 2)))
    out = mx.nd.sparse.zeros("row_sparse", (3, 2))
    with pytest.raises(KVStoreError, match="needs `out`"):
        kv.row_sparse_pull(0, row_ids=mx.nd.array([0]))
    with pytest.raises(KVStoreError, match="needs `row_ids`"):
        kv.row_sparse_pull(0, out=out)
    with pytest.raises(KVStoreError, match="row_sparse outputs"):
        kv.row_sparse_pull(0, out=mx.nd.zeros((3, 2)), row_ids=mx.nd.array([0]))
    with pytest.raises(KVStoreError, match=r"must be in \[0, 3\)"):
        kv.row_sparse_pull(0, out=out, row_ids=mx.nd.array([3]))
    with pytest.raises(KVStoreError, match="doesn't match"):
        kv.row_sparse_pull(0, out=[out, out.copy()], row_ids=[mx.nd.array([0])] * 3)


def test_store_update_with_sparse_gradient_is_lazy():
    kv = mx.kv.create("local")
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5, wd=0.1))
    kv.init(0, mx.nd.ones((4, 2)).tostype("row_sparse"))
    grad = np.zeros((4, 2), np.float32)
    grad[2] = [1, -1]
    kv.push(0, mx.nd.array(grad).tostype("row_sparse"))
    out = mx.nd.sparse.zeros("row_sparse", (4, 2))
    kv.row_sparse_pull(0, out=out, row_ids=mx.nd.arange(0, 4))
    want = np.ones((4, 2), np.float32)
    want[2] = 1 - 0.5 * (grad[2] + 0.1 * 1)  # only the gradient's row moves (weight decay too)
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-6)


# -- against MXNet 1.9.1 ------------------------------------------------------------------------------------
def _check_grad(got, rec):
    assert got.stype == rec["stype"]
    if rec["indices"] is not None:
        assert _rows(got) == rec["indices"]
    np.testing.assert_allclose(got.asnumpy(), np.array(rec["dense"]), rtol=1e-6)


@pytest.mark.parametrize("name", ["embedding_sgd_mom_wd", "embedding_sgd_standard", "embedding_adam_wd"])
def test_embedding_training_matches_mxnet(name):
    case = CASES[name]
    layer = gluon.nn.Embedding(6, 2, sparse_grad=True)
    layer.initialize(mx.init.One())
    trainer = gluon.Trainer(layer.collect_params(), case["optimizer"], dict(case["optimizer_params"]))
    ids = mx.nd.array([[3, 1], [1, 4]])
    mask = mx.nd.array([[[1, 1], [0, 0]], [[0, 0], [1, 2]]])
    for rec in case["grads"]:
        with autograd.record():
            loss = (layer(ids) * mask).sum()
        loss.backward()
        _check_grad(layer.weight.grad(), rec)
        trainer.step(1)
    np.testing.assert_allclose(layer.weight.data().asnumpy(), np.array(case["weight"]), rtol=1e-5, atol=1e-7)


def test_row_sparse_weight_on_two_contexts_matches_mxnet():
    case = CASES["row_sparse_weight"]
    w = gluon.Parameter("w", shape=(5, 3), stype="row_sparse", grad_stype="row_sparse")
    ctxs = [mx.cpu(0), mx.cpu(1)]
    w.initialize(mx.init.Constant(2.0), ctx=ctxs)
    trainer = gluon.Trainer([w], "sgd", {"learning_rate": 0.5, "momentum": 0.5, "wd": 0.1})
    for recs in case["grads"]:
        with autograd.record():
            losses = [(w.row_sparse_data(mx.nd.array(r, ctx=c)) * mx.nd.array(k, ctx=c)).sum()
                      for c, r, k in zip(ctxs, case["rows"], case["coef"])]
        autograd.backward(losses)
        for g, rec in zip(w.list_grad(), recs):
            _check_grad(g, rec)
        trainer.step(2)
    pulled = w.row_sparse_data(mx.nd.array([4, 0, 3]))
    assert _rows(pulled) == case["pulled_indices"]
    np.testing.assert_allclose(pulled.asnumpy(), np.array(case["pulled"]), rtol=1e-6)
    np.testing.assert_allclose(w.row_sparse_data(mx.nd.arange(0, 5)).asnumpy(), np.array(case["weight"]),
                               rtol=1e-6)


def test_dense_weight_with_sparse_gradient_on_two_contexts_matches_mxnet():
    case = CASES["dense_weight_sparse_grad"]
    w = gluon.Parameter("w", shape=(4, 2), grad_stype="row_sparse")
    w.initialize(mx.init.Constant(1.0), ctx=[mx.cpu(0), mx.cpu(1)])
    trainer = gluon.Trainer([w], "sgd", {"learning_rate": 0.5, "momentum": 0.5, "wd": 0.2})
    for recs in case["grads"]:
        with autograd.record():
            losses = [(x * mx.nd.array(c, ctx=x.context)).sum() for x, c in zip(w.list_data(), case["coef"])]
        autograd.backward(losses)
        for g, rec in zip(w.list_grad(), recs):
            _check_grad(g, rec)
        trainer.step(1)
    assert trainer._kvstore.type == case["kvstore"] and trainer._update_on_kvstore is case["update_on_kvstore"]
    for x, want in zip(w.list_data(), case["weights"]):
        np.testing.assert_allclose(x.asnumpy(), np.array(want), rtol=1e-6)


# -- files, blocks, helpers ----------------------------------------------------------------------------------
def test_row_sparse_parameters_save_every_row_and_load_back(tmp_path):
    params = gluon.ParameterDict("net_")
    w = params.get("w", shape=(4, 2), stype="row_sparse")
    value = np.arange(8, dtype=np.float32).reshape(4, 2) - 3
    params.initialize(mx.init.Constant(mx.nd.array(value)))
    gluon.Trainer(params, "sgd")
    path = str(tmp_path / "rsp.params")
    params.save(path)
    saved = mx.nd.load(path)["net_w"]
    assert saved.stype == "row_sparse"
    np.testing.assert_array_equal(saved.asnumpy(), value)
    other = gluon.ParameterDict("net_")
    v = other.get("w", shape=(4, 2), stype="row_sparse")
    other.load(path)
    assert v._data[0].stype == "row_sparse"
    np.testing.assert_array_equal(v._data[0].asnumpy(), value)


def test_symbol_block_refuses_row_sparse_variables():
    data = mx.sym.var("data")
    weight = mx.sym.var("weight", stype="row_sparse")
    out = mx.sym.dot(data, weight)
    with pytest.raises(AssertionError, match="'weight' because its storage type is 'row_sparse'"):
        gluon.SymbolBlock(out, data)


def test_hybridized_block_takes_sparse_inputs():
    net = gluon.nn.Dense(3, in_units=4, use_bias=False)
    net.initialize(mx.init.One())
    net.hybridize()
    x = np.array([[0, 1, 0, 2], [0, 0, 0, 0]], dtype=np.float32)
    out = net(mx.nd.array(x).tostype("csr"))
    np.testing.assert_array_equal(out.asnumpy(), x @ np.ones((4, 3), np.float32))


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_clip_global_norm_on_sparse_arrays(stype):
    a = np.array([[3.0, 0.0], [0.0, 0.0]], dtype=np.float32)
    b = np.array([[0.0, 4.0], [0.0, 0.0]], dtype=np.float32)
    arrays = [mx.nd.array(a).tostype(stype), mx.nd.array(b).tostype(stype)]
    norm = gluon.utils.clip_global_norm(arrays, 1.0)
    assert norm == pytest.approx(5.0)
    for arr, ref in zip(arrays, (a, b)):
        assert arr.stype == stype
        np.testing.assert_allclose(arr.asnumpy(), ref / 5.0, rtol=1e-6)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gluon.utils.clip_global_norm([mx.nd.array([[1.0, np.nan]]).tostype(stype)], 1.0)
    assert len(caught) == 1
