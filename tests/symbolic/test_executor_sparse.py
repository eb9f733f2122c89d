"""Executors bound with sparse arguments and sparse gradient arrays: the graph computes densely, the
arguments are read at each forward, the gradients cast into the given arrays after each backward."""
import numpy as np
import pytest

import ember as mx
from ember.base import ArgumentError
from ember.test_utils import check_numeric_gradient, check_symbolic_backward


def _sparse_values(shape, seed):
    rng = np.random.RandomState(seed)
    return (rng.uniform(-1, 1, shape) * (rng.uniform(0, 1, shape) > 0.5)).astype(np.float32)


def test_csr_argument_and_gradient():
    xn, wn = _sparse_values((4, 5), 0), np.random.RandomState(1).uniform(-1, 1, (4, 5)).astype(np.float32)
    sym = mx.sym.square(mx.sym.var("data", stype="csr")) * mx.sym.var("w")
    x, w = mx.nd.array(xn).tostype("csr"), mx.nd.array(wn)
    gx, gw = mx.nd.zeros((4, 5)).tostype("csr"), mx.nd.zeros((4, 5))
    ex = sym.bind(mx.cpu(), {"data": x, "w": w}, args_grad={"data": gx, "w": gw})
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), xn ** 2 * wn, rtol=1e-6)
    ex.backward(mx.nd.ones((4, 5)))
    assert ex.arg_dict["data"] is x and ex.grad_dict["data"] is gx and gx.stype == "csr"
    np.testing.assert_allclose(gx.asnumpy(), 2 * xn * wn, rtol=1e-6)
    np.testing.assert_allclose(gw.asnumpy(), xn ** 2, rtol=1e-6)
    # a new value in the sparse argument is read by the next forward; the gradient is rewritten
    x2 = _sparse_values((4, 5), 2)
    mx.nd.array(x2).tostype("csr").copyto(x)
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), x2 ** 2 * wn, rtol=1e-6)
    ex.backward(mx.nd.ones((4, 5)) * 2)
    np.testing.assert_allclose(gx.asnumpy(), 4 * x2 * wn, rtol=1e-6)
    with pytest.raises(ArgumentError, match="sparse gradient arrays take grad_req 'write'"):
        sym.bind(mx.cpu(), {"data": x, "w": w}, args_grad={"data": gx, "w": gw}, grad_req="add")


def test_test_utils_bind_the_gradient_storage_types_asked_for():
    data, weight = mx.sym.var("data"), mx.sym.var("weight")
    sym = mx.sym.dot(data, weight)
    xn = _sparse_values((3, 4), 3)
    wn = np.random.RandomState(4).uniform(-1, 1, (4, 2)).astype(np.float32)
    check_numeric_gradient(sym, [xn, wn], grad_stype_dict={"data": "csr", "weight": "row_sparse"},
                           numeric_eps=1e-2, rtol=1e-2, atol=1e-3)
    head = np.ones((3, 2), np.float32)
    grads = check_symbolic_backward(sym, [xn, wn], [head], [head @ wn.T, xn.T @ head],
                                    grad_stypes={"weight": "row_sparse"}, rtol=1e-5, atol=1e-6)
    assert grads["weight"].stype == "row_sparse" and grads["data"].stype == "default"


def test_sparse_aux_states_are_read_densely_and_written_back():
    # BatchNorm's moving statistics given row_sparse (MXNet's storage fallback): the forward reads
    # them densely and its update is cast back into the given arrays, which stay row_sparse and intact
    # (bound raw, the update once wrote float data over a row_sparse array's row indices)
    rng = np.random.RandomState(3)
    xn, mean, var = rng.normal(0, 1, (4, 3)).astype(np.float32), rng.uniform(size=3), rng.uniform(0.5, 1, size=3)
    sym = mx.sym.BatchNorm(mx.sym.var("data"), fix_gamma=False, momentum=0.9, name="bn")
    aux = {"bn_moving_mean": mx.nd.array(mean).tostype("row_sparse"),
           "bn_moving_var": mx.nd.array(var).tostype("row_sparse")}
    args = {"data": mx.nd.array(xn), "bn_gamma": mx.nd.ones((3,)), "bn_beta": mx.nd.zeros((3,))}
    ex = sym.bind(mx.cpu(), args, aux_states=aux)
    out = ex.forward(is_train=True)[0].asnumpy()
    mu, sigma2 = xn.mean(axis=0), xn.var(axis=0)
    np.testing.assert_allclose(out, (xn - mu) / np.sqrt(sigma2 + 1e-3), rtol=1e-4, atol=1e-5)
    for name, before, batch in (("bn_moving_mean", mean, mu), ("bn_moving_var", var, sigma2)):
        got = ex.aux_dict[name]
        assert got is aux[name] and got.stype == "row_sparse"
        np.testing.assert_array_equal(got.indices.asnumpy(), [0, 1, 2])
        np.testing.assert_allclose(got.asnumpy(), 0.9 * before + 0.1 * batch, rtol=1e-5)
    # inference reads the updated statistics
    ex2 = sym.bind(mx.cpu(), args, aux_states=aux)
    want = (xn - aux["bn_moving_mean"].asnumpy()) / np.sqrt(aux["bn_moving_var"].asnumpy() + 1e-3)
    np.testing.assert_allclose(ex2.forward(is_train=False)[0].asnumpy(), want, rtol=1e-4, atol=1e-5)


def test_check_numeric_gradient_of_batchnorm_with_row_sparse_inputs_and_aux():
    rng = np.random.RandomState(0)
    ins = [mx.nd.array(a).tostype("row_sparse") for a in (rng.normal(-0.1, 0.1, (2, 3)), np.ones(3), np.ones(3))]
    aux = [mx.nd.array(rng.uniform(size=3)).tostype("row_sparse") for _ in range(2)]
    sym = mx.sym.BatchNorm(mx.sym.var("data", stype="row_sparse"), fix_gamma=False)
    check_numeric_gradient(sym, ins, aux, numeric_eps=1e-3, rtol=0.16, atol=1e-2)
    assert all(np.array_equal(a.indices.asnumpy(), [0, 1, 2]) for a in aux)


# -- output and gradient storage types from the registry's storage-type rules (MXNet's inference) --------

def _rsp(shape, rows, seed):
    """A dense array with values only in `rows`, and its row_sparse form."""
    dense = np.zeros(shape, np.float32)
    dense[rows] = np.random.RandomState(seed).uniform(0.5, 1.5, (len(rows),) + tuple(shape[1:]))
    return dense, mx.nd.array(dense).tostype("row_sparse")


def _forward(sym, args):
    return sym.bind(mx.cpu(), args).forward()[0]


def test_outputs_take_the_inferred_storage_type_and_the_dense_values():
    an, a = _rsp((6, 3), [1, 4], 0)
    bn, b = _rsp((6, 3), [4, 5], 1)
    rsp_a, rsp_b = mx.sym.var("a", stype="row_sparse"), mx.sym.var("b", stype="row_sparse")
    out = _forward(mx.sym.sparse.elemwise_add(rsp_a, rsp_b), {"a": a, "b": b})
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), an + bn, rtol=1e-6)
    out = _forward(mx.sym.sqrt(rsp_a), {"a": a})
    assert out.stype == "row_sparse" and sorted(out.indices.asnumpy()) == [1, 4]
    np.testing.assert_allclose(out.asnumpy(), np.sqrt(an), rtol=1e-6)
    out = _forward(mx.sym._internal._square_sum(rsp_a, axis=1, keepdims=True), {"a": a})
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), (an ** 2).sum(axis=1, keepdims=True), rtol=1e-6)
    out = _forward(mx.sym._internal._square_sum(rsp_a, axis=0), {"a": a})
    assert out.stype == "default"
    # csr * dense keeps csr; csr . dense is dense; csr.T . dense is row_sparse
    cn = _sparse_values((4, 6), 5)
    c = mx.nd.array(cn).tostype("csr")
    dn = np.random.RandomState(6).uniform(-1, 1, (4, 6)).astype(np.float32)
    csr = mx.sym.var("c", stype="csr")
    out = _forward(mx.sym.sparse.elemwise_mul(csr, mx.sym.var("d")), {"c": c, "d": mx.nd.array(dn)})
    assert out.stype == "csr"
    np.testing.assert_allclose(out.asnumpy(), cn * dn, rtol=1e-6)
    wn = np.random.RandomState(7).uniform(-1, 1, (6, 2)).astype(np.float32)
    out = _forward(mx.sym.sparse.dot(csr, mx.sym.var("w")), {"c": c, "w": mx.nd.array(wn)})
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), cn @ wn, rtol=1e-5)
    out = _forward(mx.sym.sparse.dot(csr, mx.sym.var("v"), transpose_a=True), {"c": c, "v": mx.nd.array(dn)})
    assert out.stype == "row_sparse"
    np.testing.assert_allclose(out.asnumpy(), cn.T @ dn, rtol=1e-5)
    # a rule's output of dense inputs: cast_storage in a graph gives the asked storage type
    out = _forward(mx.sym.cast_storage(mx.sym.var("d"), stype="csr"), {"d": mx.nd.array(cn)})
    assert out.stype == "csr"
    np.testing.assert_array_equal(out.asnumpy(), cn)


def test_sparse_outputs_are_refreshed_at_each_forward():
    an, a = _rsp((5, 2), [0], 0)
    ex = mx.sym.sparse.negative(mx.sym.var("a", stype="row_sparse")).bind(mx.cpu(), {"a": a})
    out = ex.forward()[0]
    np.testing.assert_allclose(out.asnumpy(), -an)
    bn, b = _rsp((5, 2), [2, 3], 1)
    b.copyto(a)
    assert ex.forward()[0] is out
    np.testing.assert_allclose(out.asnumpy(), -bn)
    assert sorted(out.indices.asnumpy()) == [2, 3]


def test_dense_graphs_hand_out_the_planned_arrays():
    # no sparse storage anywhere: no sparse outputs, forward_copied's one-op path stays available
    x = mx.sym.var("x")
    ex = mx.sym.sqrt(x + 1).bind(mx.cpu(), {"x": mx.nd.ones((2, 2))})
    assert ex._sparse_outs == [] and type(ex.outputs[0]) is mx.nd.NDArray
    src = mx.nd.ones((2, 2)) * 3
    got = ex.forward_copied([src], [ex.arg_dict["x"]], False)
    assert got is not None
    np.testing.assert_allclose(got[0].asnumpy(), 2.0)


def test_simple_bind_storage_types_of_arguments_and_gradients():
    data = mx.sym.var("data")
    for weight_stype in ("default", "row_sparse"):
        for sparse_grad in (True, False):
            weight = mx.sym.var("w", stype=weight_stype)
            sym = mx.sym.Embedding(data, weight, input_dim=10, output_dim=3, sparse_grad=sparse_grad)
            ex = sym.simple_bind(mx.cpu(), grad_req={"data": "null", "w": "write"}, data=(4,))
            assert ex.arg_dict["w"].stype == weight_stype
            assert ex.grad_dict["w"].stype == ("row_sparse" if sparse_grad else "default")
            wn = np.random.RandomState(0).uniform(-1, 1, (10, 3)).astype(np.float32)
            ex.arg_dict["w"][:] = mx.nd.array(wn).tostype(weight_stype)
            idx = np.array([1, 7, 1, 3])
            ex.arg_dict["data"][:] = idx
            np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(), wn[idx], rtol=1e-6)
            head = np.random.RandomState(1).uniform(-1, 1, (4, 3)).astype(np.float32)
            ex.backward(mx.nd.array(head))
            onehot = np.eye(10, dtype=np.float32)[idx]
            np.testing.assert_allclose(ex.grad_dict["w"].asnumpy(), onehot.T @ head, rtol=1e-5, atol=1e-6)
    # stype_dict overrides what the variable declares; a bad name is refused
    sym = mx.sym.sqrt(mx.sym.var("a"))
    ex = sym.simple_bind(mx.cpu(), stype_dict={"a": "csr"}, a=(2, 3))
    assert ex.arg_dict["a"].stype == "csr" and ex.outputs[0].stype == "csr"
    with pytest.raises(ValueError, match="storage type of 'a'"):
        sym.simple_bind(mx.cpu(), stype_dict={"a": "coo"}, a=(2, 3))


def test_batchnorm_fix_gamma_refuses_sparse_inputs_as_mxnet():
    xn = np.random.RandomState(0).uniform(-1, 1, (4, 3)).astype(np.float32)
    args = {"data": mx.nd.array(xn).tostype("row_sparse"), "bn_gamma": mx.nd.ones((3,)), "bn_beta": mx.nd.zeros((3,))}
    aux = {"bn_moving_mean": mx.nd.zeros((3,)), "bn_moving_var": mx.nd.ones((3,))}
    data = mx.sym.var("data", stype="row_sparse")
    with pytest.raises(mx.base.MXNetError, match="fix_gamma=True is not supported for sparse"):
        mx.sym.BatchNorm(data, fix_gamma=True, name="bn").bind(mx.cpu(), args, aux_states=aux)
    with pytest.raises(mx.base.MXNetError, match="fix_gamma=True is not supported for sparse"):
        mx.nd.BatchNorm(args["data"], args["bn_gamma"], args["bn_beta"], aux["bn_moving_mean"],
                        aux["bn_moving_var"], fix_gamma=True)
    out = mx.sym.BatchNorm(data, fix_gamma=False, name="bn").bind(mx.cpu(), args, aux_states=aux).forward()[0]
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), xn / np.sqrt(1 + 1e-3), rtol=1e-5)


def test_scatter_ops_in_a_graph_keep_the_sparse_pattern():
    an, a = _rsp((5, 2), [1, 3], 0)
    out = _forward(mx.sym._internal._scatter_plus_scalar(mx.sym.var("a", stype="row_sparse"), scalar=2.0), {"a": a})
    assert out.stype == "row_sparse" and sorted(out.indices.asnumpy()) == [1, 3]
    np.testing.assert_allclose(out.asnumpy(), np.where(an != 0, an + 2, 0), rtol=1e-6)
    bn = np.random.RandomState(1).uniform(1, 2, (5, 2)).astype(np.float32)
    out = _forward(mx.sym._internal._scatter_elemwise_div(mx.sym.var("a", stype="row_sparse"), mx.sym.var("b")),
                   {"a": a, "b": mx.nd.array(bn)})
    assert out.stype == "row_sparse" and sorted(out.indices.asnumpy()) == [1, 3]
    np.testing.assert_allclose(out.asnumpy(), an / bn, rtol=1e-6)
    # dense input: the plain op
    out = _forward(mx.sym._internal._scatter_minus_scalar(mx.sym.var("d"), scalar=2.0), {"d": mx.nd.array(an)})
    assert out.stype == "default"
    np.testing.assert_allclose(out.asnumpy(), an - 2, rtol=1e-6)
