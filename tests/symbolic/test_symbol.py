"""Symbol API: naming, listing, attributes, indexing, composition, arithmetic op names, inference."""
import numpy as np
import pytest

import ember as mx
from ember.base import OperatorError, ShapeError


def test_automatic_names_and_arguments():
    with mx.name.NameManager():
        data = mx.sym.var("data")
        fc = mx.sym.FullyConnected(data, num_hidden=10, name="fc1")
        conv = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4)
        conv2 = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4)
        bn = mx.sym.BatchNorm(fc, name="bn")
    assert fc.list_arguments() == ["data", "fc1_weight", "fc1_bias"]
    assert conv.name == "convolution0" and conv2.name == "convolution1"
    assert conv.list_arguments() == ["data", "convolution0_weight", "convolution0_bias"]
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    assert bn.list_arguments() == ["data", "fc1_weight", "fc1_bias", "bn_gamma", "bn_beta"]
    assert bn.list_inputs() == ["data", "fc1_weight", "fc1_bias", "bn_gamma", "bn_beta", "bn_moving_mean",
                                "bn_moving_var"]
    assert bn.list_outputs() == ["bn_output"]
    nb = mx.sym.FullyConnected(data, num_hidden=3, no_bias=True, name="nb")
    assert nb.list_arguments() == ["data", "nb_weight"]



def test_automatic_names_follow_the_name_called():
    # MXNet 1.9.1 names unnamed nodes after the function called (an alias keeps its own name),
    # and contrib/linalg/image functions after the name without the namespace's prefix.
    x = mx.sym.var("x")
    cases = [(lambda: mx.sym.flip(x, axis=0), "flip0", "reverse"), (lambda: x.flip(axis=0), "flip0", "reverse"),
             (lambda: mx.sym.reverse(x, axis=0), "reverse0", "reverse"),
             (lambda: mx.sym.max_axis(x), "max_axis0", "max"), (lambda: mx.sym.identity(x), "identity0", "_copy"),
             (lambda: mx.sym.broadcast_plus(x, x), "broadcast_plus0", "broadcast_add"),
             (lambda: mx.sym.linalg.gemm2(x, x), "gemm20", "_linalg_gemm2"),
             (lambda: mx.sym.random_normal(), "random_normal0", "_random_normal"),
             (lambda: mx.sym.random.normal(), "_random_normal0", "_random_normal"),
             (lambda: mx.sym.Flatten(x), "flatten0", "Flatten")]
    for make, name, op in cases:
        with mx.name.NameManager():
            s = make()
        assert s.name == name
        assert mx.ops.get(s._outputs[0][0].op.name) is mx.ops.get(op)

def test_prefix_and_attr_scope():
    with mx.name.Prefix("net_"):
        s = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=2)
    assert s.name.startswith("net_fullyconnected")
    with mx.AttrScope(ctx_group="dev1"):
        v = mx.sym.var("v")
        t = mx.sym.tanh(v)
    assert v.attr("ctx_group") == "dev1" and t.attr("__ctx_group__") == "dev1"


def test_arithmetic_uses_mxnet_op_names():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    cases = {a + b: "elemwise_add", a - b: "elemwise_sub", a * b: "elemwise_mul", a / b: "elemwise_div",
             a + 1: "_plus_scalar", 1 + a: "_plus_scalar", a - 1: "_minus_scalar", 1 - a: "_rminus_scalar",
             a * 2: "_mul_scalar", a / 2: "_div_scalar", 2 / a: "_rdiv_scalar", a ** 2: "_power_scalar",
             -a: "_mul_scalar", a > 1: "_greater_scalar"}
    for s, op in cases.items():
        assert s.get_internals()._outputs[-1][0].op.name == op
    assert (a + b).name.startswith("_plus") and (a * 2).name.startswith("_mulscalar")
    assert (a * 2).attr("scalar") == "2"


def test_variable_attributes():
    v = mx.sym.var("w", shape=(3, 4), dtype="float16", lr_mult=2.0, wd_mult=0.0, __extra__="yes")
    d = v.list_attr()
    assert d["__shape__"] == "(3, 4)" and d["__dtype__"] == "2" and d["__lr_mult__"] == "2.0"
    assert d["lr_mult"] == "2.0" and d["__extra__"] == "yes"
    with pytest.raises(ValueError, match="double underscores"):
        mx.sym.var("w", extra="no")
    with pytest.raises(TypeError, match="must be a string"):
        mx.sym.var(3)


def test_indexing_internals_children_group():
    a = mx.sym.var("a")
    fc = mx.sym.FullyConnected(a, num_hidden=4, name="fc")
    act = mx.sym.Activation(fc, act_type="relu", name="act")
    internals = act.get_internals()
    assert internals.list_outputs() == ["a", "fc_weight", "fc_bias", "fc_output", "act_output"]
    assert internals["fc_output"].name == "fc"
    assert act.get_children().list_outputs() == ["fc_output"]
    assert a.get_children() is None
    g = mx.sym.Group([fc, act])
    assert g.list_outputs() == ["fc_output", "act_output"] and len(g) == 2
    assert g[1].name == "act" and g[-1].name == "act"
    with pytest.raises(IndexError):
        g[2]
    with pytest.raises(ValueError, match="cannot find output"):
        g["nope"]
    with pytest.raises(OperatorError, match="2 outputs"):
        mx.sym.tanh(g)


def test_compose_replaces_variables():
    x = mx.sym.var("x")
    net = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    y = mx.sym.var("y")
    composed = net(x=mx.sym.tanh(y, name="t"))
    assert composed.list_arguments() == ["y", "fc_weight", "fc_bias"]
    assert net.list_arguments() == ["x", "fc_weight", "fc_bias"]  # the original is unchanged


def test_method_ops_and_unknown_ops():
    a = mx.sym.var("a")
    s = a.sum(axis=1)
    assert s.get_internals()._outputs[-1][0].op.name == "sum"
    with pytest.raises(AttributeError):
        mx.sym.NoSuchOperator
    with pytest.raises(AttributeError):
        a.no_such_method
    with pytest.raises(OperatorError, match="unknown attribute 'num_hiden'"):
        mx.sym.FullyConnected(a, num_hiden=3)
    with pytest.raises(OperatorError, match="required attribute 'num_hidden'"):
        mx.sym.FullyConnected(a)
    with pytest.raises(TypeError, match="positional argument 1"):
        mx.sym.elemwise_add(a, 3)


def test_infer_shape_and_partial_and_type():
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=7, name="fc1"),
                                                  act_type="tanh"), num_hidden=2, name="fc2")
    args, outs, aux = net.infer_shape(data=(5, 3))
    assert args == [(5, 3), (7, 3), (7,), (2, 7), (2,)] and outs == [(5, 2)] and aux == []
    assert net.infer_shape() == (None, None, None)
    args, outs, _ = net.infer_shape_partial()
    assert args[0] == () and outs == [()]
    args, outs, _ = net.infer_shape((5, 3))
    assert outs == [(5, 2)]
    types, otypes, _ = net.infer_type(data="float64")
    assert types == [np.float64] * 5 and otypes == [np.float64]
    with pytest.raises(ValueError, match="not an input"):
        net.infer_shape(dat=(1, 2))
    v = mx.sym.var("v", shape=(2, 3))
    assert mx.sym.exp(v).infer_shape()[1] == [(2, 3)]


def test_infer_shape_conflict_names_node_and_shapes():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    s = mx.sym.elemwise_add(mx.sym.tanh(a), b, name="adder")
    with pytest.raises(ShapeError, match=r"adder.*\(2, 3\).*\(4, 5\)"):
        s.infer_shape(a=(2, 3), b=(4, 5))
    fc = mx.sym.FullyConnected(a, num_hidden=4, name="fc")
    with pytest.raises(ShapeError, match=r"fc.*fc_weight=\(4, 9\).*\(4, 3\)"):
        fc.infer_shape(a=(2, 3), fc_weight=(4, 9))


def test_pickle_and_deepcopy():
    import copy
    import pickle
    s = mx.sym.FullyConnected(mx.sym.var("x"), num_hidden=3, name="fc")
    assert pickle.loads(pickle.dumps(s)).tojson() == s.tojson()
    c = copy.deepcopy(s)
    assert c.tojson() == s.tojson() and c._outputs[0][0] is not s._outputs[0][0]


def test_sym_namespace_lists_registry_ops():
    assert "FullyConnected" in dir(mx.sym) and "elemwise_add" in dir(mx.sym)
    assert mx.symbol.var is mx.sym.var


def test_creation_functions():
    s = mx.sym.zeros((2, 3)) + mx.sym.ones((2, 3)) * 2 + mx.sym.full((2, 3), 0.5)
    assert s.list_arguments() == []
    out = s.bind(mx.cpu(), {}).forward()[0].asnumpy()
    np.testing.assert_allclose(out, np.full((2, 3), 2.5))
    np.testing.assert_allclose(mx.sym.arange(1, 7, 2).bind(mx.cpu(), {}).forward()[0].asnumpy(), [1, 3, 5])


def test_astype_and_reshape_methods():
    x = mx.sym.var("x")
    s = x.astype("float64").reshape(shape=(3, 2))
    assert s.infer_type(x="float32")[1] == [np.float64]
    assert s.infer_shape(x=(2, 3))[1] == [(3, 2)]


def test_sparse_namespace_reaches_operators_with_mxnet_names():
    # mx.sym.sparse.<op> is the registry operator (the executor computes densely), named as MXNet names it
    lhs, rhs = mx.sym.var("lhs", stype="csr"), mx.sym.var("rhs", stype="row_sparse")
    with mx.name.NameManager():
        d = mx.sym.sparse.dot(lhs, rhs, transpose_a=True)
        upd = mx.sym.sparse.adagrad_update
    assert d.name == "dot0" and d._outputs[0][0].op.name == "dot"
    assert upd.__name__ == "_sparse_adagrad_update"
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(8, dtype=np.float32).reshape(2, 4)
    out = d.eval(lhs=mx.nd.array(a), rhs=mx.nd.array(b))[0]
    np.testing.assert_allclose(out.asnumpy(), a.T @ b)
    with pytest.raises(AttributeError, match="sparse has no operator 'no_such_op'"):
        mx.sym.sparse.no_such_op
