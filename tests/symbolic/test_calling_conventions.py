"""MXNet's calling conventions on mx.sym: positional attributes, numpy dtypes, lr_mult on layers,
simple_bind keywords, monitor callback arguments, mx.operator introspection.

Expected names and attribute strings are what MXNet 1.9.1 produces for the same calls."""
import numpy as np
import pytest

import ember as mx
from ember.base import MXNetError, OperatorError


def test_attributes_positionally_like_nd():
    x = mx.sym.var("data")
    assert mx.sym.Dropout(x, 0.5, name="d").list_attr()["p"] == "0.5"
    r = mx.sym.Reshape(x, (2, 3), name="r")
    assert r.list_attr()["shape"] == "(2, 3)"
    out = r.eval(data=mx.nd.array(np.arange(6.0)))[0]
    np.testing.assert_array_equal(out.asnumpy(), np.arange(6.0).reshape(2, 3))
    # the method form passes the symbol first: x.reshape((3, 2))
    assert x.reshape((3, 2)).infer_shape(data=(6,))[1] == [(3, 2)]


def test_none_leaves_an_input_out():
    x, w = mx.sym.var("data"), mx.sym.var("w")
    c = mx.sym.Convolution(x, w, None, kernel=(3, 3), num_filter=4, name="c")
    assert c.list_arguments() == ["data", "w", "c_bias"]  # MXNet creates the bias variable
    c2 = mx.sym.Convolution(x, w, None, (3, 3), num_filter=4, no_bias=True, name="c2")
    assert c2.list_arguments() == ["data", "w"]
    assert c2.list_attr()["kernel"] == "(3, 3)"
    fc = mx.sym.FullyConnected(x, None, None, 5, name="fc")  # num_hidden is the first attribute
    assert fc.list_arguments() == ["data", "fc_weight", "fc_bias"]
    assert fc.infer_shape(data=(2, 3))[1] == [(2, 5)]


def test_positional_errors():
    a = mx.sym.var("a")
    with pytest.raises(TypeError, match="positional argument 2"):
        mx.sym.elemwise_add(a, a, 3)
    with pytest.raises(TypeError, match="inputs come before attributes"):
        mx.sym.Dropout(a, 0.5, a)


@pytest.mark.parametrize("dtype", [np.float16, np.dtype("float16"), "float16"])
def test_numpy_dtype_objects(dtype):
    x = mx.sym.var("x", dtype=dtype)
    assert x.list_attr()["__dtype__"] == "2"
    y = mx.sym.Cast(mx.sym.var("d"), dtype)  # positionally too
    assert y.infer_type(d=np.float32)[1] == [np.float16]
    exe = (mx.sym.var("d") * 2).simple_bind(mx.cpu(), type_dict={"d": dtype}, d=(3,))
    assert exe.arg_dict["d"].dtype == np.float16
    assert mx.sym.zeros((2,), dtype=dtype).infer_type()[1] == [np.float16]
    assert mx.base.mx_real_t is np.float32


def test_simple_bind_ignores_unknown_keywords():
    x = mx.sym.var("data")
    exe = (x * 2).simple_bind(mx.cpu(), data=(4, 3), softmax_label=(4,))
    assert list(exe.arg_dict) == ["data"]
    out = exe.forward(data=mx.nd.ones((4, 3)))[0]
    np.testing.assert_array_equal(out.asnumpy(), np.full((4, 3), 2.0))


def test_lr_mult_on_layers_and_variables():
    x = mx.sym.var("data")
    fc = mx.sym.FullyConnected(x, num_hidden=3, lr_mult=2, name="fc")
    attrs = fc.attr_dict()
    for name in ("fc", "fc_weight", "fc_bias"):  # as MXNet: the layer's attribute reaches its variables
        assert attrs[name]["__lr_mult__"] == "2"
        assert attrs[name]["lr_mult"] == "2"
    assert "lr_mult" not in fc._outputs[0][0].attrs and "num_hidden" in fc._outputs[0][0].attrs  # no op parameter
    v = mx.sym.var("w", lr_mult=0.5, wd_mult=0.0)
    assert v.list_attr()["__lr_mult__"] == "0.5" and v.list_attr()["__wd_mult__"] == "0.0"
    with mx.AttrScope(ctx_group="dev1"):
        g = mx.sym.FullyConnected(x, num_hidden=2, name="g")
    assert g.attr_dict()["g_weight"]["__ctx_group__"] == "dev1"


def test_lr_mult_reaches_the_module_optimizer():
    """One SGD step (lr 1): a weight with lr_mult=0 keeps its value, lr_mult=0.5 moves half as far."""
    data = mx.sym.var("data")
    w1 = mx.sym.var("a_weight", lr_mult=0.0)
    h = mx.sym.FullyConnected(data, weight=w1, num_hidden=2, no_bias=True, name="a")
    out = mx.sym.FullyConnected(h, num_hidden=1, no_bias=True, name="b", lr_mult=0.5)
    loss = mx.sym.MakeLoss(mx.sym.sum(out))
    x = np.ones((1, 2), np.float32)

    def step(sym_loss):
        mod = mx.mod.Module(sym_loss, label_names=None)
        mod.bind([("data", (1, 2))])
        mod.init_params(mx.init.One())
        mod.init_optimizer(optimizer_params={"learning_rate": 1.0, "rescale_grad": 1.0})
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)]))
        mod.update()
        return mod.get_params()[0]
    params = step(loss)
    np.testing.assert_array_equal(params["a_weight"].asnumpy(), np.ones((2, 2)))
    # d(sum)/d(b_weight) = h = [2, 2]; with lr_mult 0.5: 1 - 0.5 * 2 = 0
    np.testing.assert_allclose(params["b_weight"].asnumpy(), np.zeros((1, 2)))


def _names(sym, monitor_all, **shapes):
    exe = sym.simple_bind(mx.cpu(), grad_req="null", **shapes)
    seen = []

    def callback(name, arr):
        assert isinstance(name, str) and isinstance(arr, mx.nd.NDArray)
        seen.append((name.decode(), arr.asnumpy()))  # MXNet's py_str(name) works too
    exe.set_monitor_callback(callback, monitor_all=monitor_all)
    exe.arg_dict["data"][:] = 1.0
    outs = exe.forward()
    return seen, outs, exe


def test_monitor_callback_names_and_values_as_mxnet():
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    seen, outs, _ = _names(fc, False, data=(2, 3))
    assert [n for n, _ in seen] == ["fc_output"]
    np.testing.assert_array_equal(seen[0][1], outs[0].asnumpy())
    seen, _, exe = _names(fc, True, data=(2, 3))
    # MXNet 1.9.1 reports exactly these for FullyConnected with monitor_all=True
    assert [n for n, _ in seen] == ["data", "fc_data", "fc_weight", "fc_weight", "fc_bias", "fc_bias", "fc_output"]
    np.testing.assert_array_equal(seen[2][1], exe.arg_dict["fc_weight"].asnumpy())
    cat = mx.sym.concat(data, data, dim=0, name="concat")
    seen, _, _ = _names(cat, True, data=(2, 3))
    assert [n for n, _ in seen][:4] == ["data", "concat_arg0", "data", "concat_arg1"]
    # Activation is registered in MXNet without input names: its input shows as input0
    act = mx.sym.Activation(data, act_type="relu", name="act")
    seen, _, _ = _names(act, True, data=(2, 3))
    assert [n for n, _ in seen] == ["data", "act_input0", "act_output"]


def test_monitor_values_survive_storage_reuse():
    """Each copy is taken right after its node, before later nodes reuse the bytes."""
    data = mx.sym.var("data")
    a = mx.sym.relu(data, name="a")
    b = mx.sym.exp(a, name="b")
    c = mx.sym.sqrt(b, name="c")
    exe = c.simple_bind(mx.cpu(), data=(64,), grad_req="null")
    got = {}
    exe.set_monitor_callback(lambda n, arr: got.__setitem__(str(n), arr))
    x = np.linspace(-2, 2, 64).astype(np.float32)
    exe.forward(data=mx.nd.array(x))
    np.testing.assert_allclose(got["a_output"].asnumpy(), np.maximum(x, 0), rtol=1e-6)
    np.testing.assert_allclose(got["b_output"].asnumpy(), np.exp(np.maximum(x, 0)), rtol=1e-6)
    np.testing.assert_allclose(got["c_output"].asnumpy(), np.exp(np.maximum(x, 0) / 2), rtol=1e-6)


def test_operator_introspection():
    ops = mx.operator.get_all_registered_operators()
    assert {"FullyConnected", "Convolution", "elemwise_add", "Dropout"} <= set(ops)
    args = mx.operator.get_operator_arguments("FullyConnected")
    assert args.names == ["data", "weight", "bias", "num_hidden", "no_bias", "flatten"]  # MXNet's order
    assert args.narg == 6
    assert args.types[0] == "NDArray-or-Symbol" and args.types[3] == "int, required"
    assert mx.operator.get_operator_arguments("elemwise_add").names == ["lhs", "rhs"]
    # choices are listed sorted, as MXNet's argument descriptions
    assert mx.operator.get_operator_arguments("Activation").types[1] == \
        "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"
    assert mx.operator.get_operator_arguments("Dropout").names[:2] == ["data", "p"]
    assert mx.operator.get_operator_arguments("Concat").types[0] == "NDArray-or-Symbol[]"
    with pytest.raises(MXNetError, match="nope is not registered"):
        mx.operator.get_operator_arguments("nope")
    assert issubclass(OperatorError, MXNetError)


def test_symbol_or_scalar_functions():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    xv, yv = np.array([3.0, -5.0, 2.0]), np.array([1.0, 4.0, 2.5])
    feed = {"x": mx.nd.array(xv), "y": mx.nd.array(yv)}
    cases = [(mx.sym.maximum(x, y), np.maximum(xv, yv)), (mx.sym.maximum(x, 2.5), np.maximum(xv, 2.5)),
             (mx.sym.maximum(2.5, x), np.maximum(xv, 2.5)), (mx.sym.minimum(x, y), np.minimum(xv, yv)),
             (mx.sym.minimum(0, x), np.minimum(xv, 0)), (mx.sym.hypot(x, y), np.hypot(xv, yv)),
             (mx.sym.hypot(x, 3), np.hypot(xv, 3)), (mx.sym.pow(y, 2), yv ** 2), (mx.sym.power(2, x), 2.0 ** xv),
             (mx.sym.pow(y, y), yv ** yv)]
    for sym, want in cases:
        got = sym.eval(**{k: v for k, v in feed.items() if k in sym.list_arguments()})[0]
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5)
    assert mx.sym.maximum(2, 3.5) == 3.5 and mx.sym.minimum(2, 3.5) == 2
    with pytest.raises(TypeError, match="not supported"):
        mx.sym.maximum(x, "2")


def test_atomic_symbol():
    x, w = mx.sym.var("x"), mx.sym.var("w")
    fc = mx.sym.FullyConnected(x, w, num_hidden=3, no_bias=True, name="fc")
    atom = fc._gen_atomic_symbol()
    assert atom.list_arguments() == [] and atom.list_attr()["num_hidden"] == "3"
    again = atom(data=mx.sym.var("y"), weight=w, name="fc2")
    assert again.list_arguments() == ["y", "w"] and again.name == "fc2"
    assert again.infer_shape(y=(2, 4))[1] == [(2, 3)]
    with pytest.raises(OperatorError, match="variable"):
        x._gen_atomic_symbol()


def test_abs_of_a_symbol():
    data = mx.sym.var("data")
    magic = abs(data)
    assert magic.get_internals()._outputs[-1][0].op.name == "abs"
    np.testing.assert_array_equal(magic.eval(data=mx.nd.array([-1.5, 2.0]))[0].asnumpy(), [1.5, 2.0])


def test_numpy_dtypes_for_string_dtype_attributes():
    """Random ops keep their dtype as a string attribute; numpy dtype objects are accepted too."""
    assert mx.nd.random.uniform(shape=(2,), dtype=np.float64).dtype == np.float64
    assert mx.nd.random.randint(0, 5, shape=(3,), dtype=np.dtype("int32")).dtype == np.int32
    s = mx.sym.random.normal(shape=(2,), dtype=np.float16)
    assert s.list_attr()["dtype"] == "float16" and s.infer_type()[1] == [np.float16]
    with pytest.raises(OperatorError, match="must be one of"):
        mx.nd.random.uniform(shape=(2,), dtype=np.int8)
