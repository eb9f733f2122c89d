"""Module over several contexts (MXNet's DataParallelExecutorGroup): batch split by work load,
outputs merged, gradients summed through the KVStore, group2ctxs, set_params, error classes."""
import numpy as np
import pytest

import ember as mx
from ember.module.executor_group import DataParallelExecutorGroup, prepare_group2ctxs, split_input_slice


def _mlp():
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=6, name="fc1"), act_type="tanh")
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")


def _params(seed=0):
    rs = np.random.RandomState(seed)
    return {"fc1_weight": mx.nd.array(rs.randn(6, 4) * 0.5), "fc1_bias": mx.nd.array(rs.randn(6) * 0.1),
            "fc2_weight": mx.nd.array(rs.randn(3, 6) * 0.5), "fc2_bias": mx.nd.array(rs.randn(3) * 0.1)}


def _train(contexts, steps=4, work_load_list=None, kvstore="local", **opt):
    rs = np.random.RandomState(3)
    mod = mx.mod.Module(_mlp(), context=contexts, work_load_list=work_load_list)
    mod.bind([("data", (8, 4))], [("softmax_label", (8,))])
    mod.init_params(arg_params=_params())
    mod.init_optimizer(kvstore=kvstore, optimizer="sgd",
                       optimizer_params={"learning_rate": 0.5, "momentum": 0.9, "wd": 0.01, **opt})
    outs = []
    for _ in range(steps):
        x = rs.randn(8, 4).astype(np.float32)
        y = rs.randint(0, 3, 8).astype(np.float32)
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
        outs.append(mod.get_outputs()[0].asnumpy())
        mod.update()
    return mod, outs


def test_split_input_slice_as_mxnet():
    assert split_input_slice(10, [1, 1]) == [slice(0, 5), slice(5, 10)]
    assert split_input_slice(7, [1, 1]) == [slice(0, 4), slice(4, 7)]  # round(3.5) = 4 (banker's: 4)
    assert split_input_slice(8, [1, 3]) == [slice(0, 2), slice(2, 8)]
    assert split_input_slice(5, [1, 1, 1]) == [slice(0, 2), slice(2, 4), slice(4, 5)]
    with pytest.raises(ValueError, match="Too many slices"):
        split_input_slice(2, [1, 1, 1])


def test_prepare_group2ctxs():
    c = [mx.cpu(i) for i in range(4)]
    assert prepare_group2ctxs(None, 2) == [None, None]
    assert prepare_group2ctxs({"a": c[2], "b": [c[3]]}, 2) == [{"a": c[2], "b": c[3]}, {"a": c[2], "b": c[3]}]
    assert prepare_group2ctxs({"a": [c[2], c[3]]}, 2) == [{"a": c[2]}, {"a": c[3]}]
    with pytest.raises(ValueError, match="give 1 or 2"):
        prepare_group2ctxs({"a": [c[1], c[2], c[3]]}, 2)


@pytest.mark.parametrize("update_on_kvstore", ["1", "0"])
@pytest.mark.parametrize("work_load_list", [None, [1, 3]])
def test_two_devices_train_like_one(monkeypatch, update_on_kvstore, work_load_list):
    """Splitting each batch over two devices and summing their gradients gives one device's training."""
    monkeypatch.setenv("MXNET_UPDATE_ON_KVSTORE", update_on_kvstore)
    one, outs1 = _train([mx.cpu(0)])
    two, outs2 = _train([mx.cpu(0), mx.cpu(1)], work_load_list=work_load_list)
    assert two._kvstore is not None and one._kvstore is None  # MXNet: no store for one device
    assert two._update_on_kvstore == (update_on_kvstore == "1")
    for a, b in zip(outs1, outs2):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    p1, p2 = one.get_params()[0], two.get_params()[0]
    for k in p1:
        np.testing.assert_allclose(p1[k].asnumpy(), p2[k].asnumpy(), rtol=1e-5, atol=1e-6)
    # each device holds the same weights, and its slice of the batch
    group = two._exec_group
    assert [e.arg_dict["data"].shape[0] for e in group.execs] == ([4, 4] if work_load_list is None else [2, 6])
    w0, w1 = (e.arg_dict["fc1_weight"].asnumpy() for e in group.execs)
    np.testing.assert_allclose(w0, w1, rtol=1e-6)


def test_optimizer_indices_per_device():
    mod, _ = _train([mx.cpu(0), mx.cpu(1)], steps=1)
    names = mod._exec_group.param_names
    assert mod._optimizer.idx2name == dict(enumerate(names))  # updates on the store: one index per name
    one, _ = _train([mx.cpu(0)], steps=1)
    assert one._optimizer.idx2name == dict(enumerate(names))


def test_outputs_merge_along_the_layout_batch_axis():
    sym = mx.sym.Activation(mx.sym.Variable("data"), act_type="relu", __layout__="TNC")
    mod = mx.mod.Module(sym, ("data",), None, context=[mx.cpu(0), mx.cpu(1)])
    x = np.random.RandomState(0).randn(3, 8, 7).astype(np.float16)
    mod.bind(data_shapes=[mx.io.DataDesc("data", x.shape, np.float16, layout="TNC")])
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.array(x, dtype=np.float16)]))
    out = mod.get_outputs()[0]
    assert out.dtype == np.float16 and out.shape == (3, 8, 7)
    np.testing.assert_array_equal(out.asnumpy(), np.maximum(x, 0))
    parts = mod.get_outputs(merge_multi_context=False)[0]
    assert [p.shape for p in parts] == [(3, 4, 7), (3, 4, 7)]
    np.testing.assert_array_equal(parts[1].asnumpy(), np.maximum(x[:, 4:], 0))
    mod.backward([mx.nd.ones(x.shape, dtype=np.float16)])


def test_input_grads_over_devices():
    a, b, c = (mx.sym.Variable(n, __layout__="NC") for n in "abc")
    net = mx.mod.Module(a + 2 * b + 3 * c, data_names=["b", "c", "a"], label_names=None,
                        context=[mx.cpu(0), mx.cpu(1)])
    net.bind(data_shapes=[["b", (5, 5)], ["c", (5, 5)], ["a", (5, 5)]], inputs_need_grad=True)
    net.init_params()
    net.forward(mx.io.DataBatch([mx.nd.ones((5, 5))] * 3))
    net.backward(out_grads=[mx.nd.ones((5, 5))])
    grads = net.get_input_grads()
    assert [g.shape for g in grads] == [(5, 5)] * 3
    for g, want in zip(grads, (2, 3, 1)):
        np.testing.assert_array_equal(g.asnumpy(), np.full((5, 5), want))


@pytest.mark.parametrize("ctxs,group2ctxs", [
    ([mx.cpu(0)], {"dev1": mx.cpu(1), "dev2": mx.cpu(2)}),
    ([mx.cpu(0), mx.cpu(1)], [{"dev1": mx.cpu(2), "dev2": mx.cpu(3)}, {"dev1": mx.cpu(4), "dev2": mx.cpu(5)}]),
    ([mx.cpu(0), mx.cpu(1)], {"dev1": [mx.cpu(2), mx.cpu(2)], "dev2": [mx.cpu(3)]}),
])
def test_group2ctxs(ctxs, group2ctxs):
    with mx.AttrScope(ctx_group="dev1"):
        a = mx.sym.Variable("a") * 2
    with mx.AttrScope(ctx_group="dev2"):
        c = a + mx.sym.Variable("b")
    mod = mx.mod.Module(c, context=ctxs, data_names=["a", "b"], label_names=None, group2ctxs=group2ctxs)
    mod.bind(data_shapes=[["a", (2, 5)], ["b", (2, 5)]], inputs_need_grad=True)
    mod.init_params()
    mod.forward(mx.io.DataBatch([mx.nd.ones((2, 5)), mx.nd.ones((2, 5))]), is_train=True)
    mod.backward([mx.nd.ones((2, 5))])
    ga, gb = mod.get_input_grads()
    np.testing.assert_array_equal(ga.asnumpy(), np.full((2, 5), 2.0))
    np.testing.assert_array_equal(gb.asnumpy(), np.ones((2, 5)))
    if len(ctxs) == 1:
        assert ga.context == mx.cpu(1) and gb.context == mx.cpu(2)


def test_reshape_keeps_training_over_devices():
    sym = mx.sym.FullyConnected(mx.sym.Variable("data"), num_hidden=20, name="fc")
    mod = mx.mod.Module(sym, ("data",), None, context=[mx.cpu(0), mx.cpu(1)])
    mod.bind(data_shapes=[("data", (7, 20))])
    mod.init_params()
    mod.init_optimizer(optimizer_params={"learning_rate": 1})
    # rescale_grad stays 1/7 (the bound batch): each step lowers the bias by n/7
    for n, want in ((7, -1.0), (14, -3.0), (6, -3.0 - 6 / 7)):
        mod.forward(mx.io.DataBatch([mx.nd.ones((n, 20))]))
        mod.backward([mx.nd.ones((n, 20))])
        mod.update()
        assert mod.get_outputs()[0].shape == (n, 20)
        assert [e.arg_dict["data"].shape[0] for e in mod._exec_group.execs] == [(n + 1) // 2, n // 2]
        np.testing.assert_allclose(mod.get_params()[0]["fc_bias"].asnumpy(), np.full(20, want), rtol=1e-5)


def test_set_params_allow_missing_keeps_values_and_error_classes():
    mod = mx.mod.Module(_mlp(), context=[mx.cpu(0), mx.cpu(1)])
    mod.bind([("data", (4, 4))], [("softmax_label", (4,))])
    full = _params()
    mod.set_params(full, {})
    partial = {"fc1_weight": mx.nd.zeros((6, 4))}
    mod.set_params(partial, {}, allow_missing=True)
    args = mod.get_params()[0]
    np.testing.assert_array_equal(args["fc1_weight"].asnumpy(), np.zeros((6, 4)))
    np.testing.assert_allclose(args["fc2_weight"].asnumpy(), full["fc2_weight"].asnumpy())  # kept
    for e in mod._exec_group.execs:
        np.testing.assert_allclose(e.arg_dict["fc2_bias"].asnumpy(), full["fc2_bias"].asnumpy())
    with pytest.raises(RuntimeError, match="fc1_bias"):  # MXNet raises RuntimeError for a missing one
        mod.set_params(partial, {}, allow_missing=False)
    extra = dict(full, fc3_weight=mx.nd.zeros((2,)))
    mod.set_params(extra, {}, allow_missing=True, allow_extra=True)
    with pytest.raises(ValueError, match="fc3_weight"):
        mod.set_params(extra, {}, allow_missing=True, allow_extra=False)
    with pytest.raises(RuntimeError):
        mod.set_params({"fc3_weight": mx.nd.zeros((2,))}, {}, allow_missing=False)


def test_bind_rejects_array_shapes():
    mod = mx.mod.Module(_mlp(), context=[mx.cpu(0), mx.cpu(1)])
    with pytest.raises(TypeError, match="tuple of ints"):
        mod.bind(data_shapes=[("data", mx.nd.array([10, 10]))])
    assert not mod.binded
    with pytest.raises(mx.mod.ModuleError, match="work_load_list"):
        mx.mod.Module(_mlp(), context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1, 2, 3])


def test_executor_group_shares_with_a_shared_group():
    sym = _mlp()
    params = [n for n in sym.list_arguments() if n not in ("data", "softmax_label")]
    kw = dict(symbol=sym, contexts=[mx.cpu(0), mx.cpu(1)], workload=[1, 1], data_shapes=[("data", (8, 4))],
              label_shapes=[("softmax_label", (8,))], param_names=params, for_training=True, inputs_need_grad=False)
    g1 = DataParallelExecutorGroup(**kw)
    assert [sorted(d) for d in g1.shared_data_arrays] == [["data", "softmax_label"]] * 2
    g2 = DataParallelExecutorGroup(shared_group=g1, **kw)
    for e1, e2 in zip(g1.execs, g2.execs):
        for n in params:
            assert e1.arg_dict[n] is e2.arg_dict[n] and e1.grad_dict[n] is e2.grad_dict[n]
    assert g1.grad_req == g2.grad_req and g1.grad_req["data"] == "null"
    assert g1.shared_data_arrays is g2.shared_data_arrays


def test_save_load_over_devices(tmp_path):
    mod, _ = _train([mx.cpu(0), mx.cpu(1)], steps=2)
    prefix = str(tmp_path / "m")
    mod.save_checkpoint(prefix, 0, save_optimizer_states=True)
    mod2 = mx.mod.Module.load(prefix, 0, load_optimizer_states=True, context=[mx.cpu(0), mx.cpu(1)])
    mod2.bind([("data", (8, 4))], [("softmax_label", (8,))])
    mod2.init_optimizer(optimizer_params={"learning_rate": 0.5, "momentum": 0.9, "wd": 0.01})
    a, b = mod.get_params()[0], mod2.get_params()[0]
    for k in a:
        np.testing.assert_array_equal(a[k].asnumpy(), b[k].asnumpy())
    sa, sb = mod._kvstore._updater.states, mod2._kvstore._updater.states
    assert set(sa) == set(sb)
    for k in sa:
        np.testing.assert_array_equal(sa[k].asnumpy(), sb[k].asnumpy())


@pytest.mark.parametrize("contexts", [[mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]])
def test_batches_of_other_shapes_from_an_iterator_with_its_own_names(contexts):
    """NDArrayIter names list inputs '_0_data', ...: the module feeds them by position, as MXNet."""
    a, b = mx.sym.var("data1"), mx.sym.var("data2")
    net = mx.sym.MakeLoss(mx.sym.sum(a, axis=1) + 2 * mx.sym.sum(b, axis=1))
    mod = mx.mod.Module(net, data_names=["data1", "data2"], label_names=None, context=contexts)
    mod.bind([("data1", (4, 3)), ("data2", (4, 2))], for_training=False)
    mod.init_params()
    rs = np.random.RandomState(0)
    x1, x2 = rs.rand(6, 5).astype(np.float32), rs.rand(6, 2).astype(np.float32)
    it = mx.io.NDArrayIter(data=[mx.nd.array(x1), mx.nd.array(x2)], batch_size=2)
    out = mod.predict(it)
    np.testing.assert_allclose(out.asnumpy(), x1.sum(1) + 2 * x2.sum(1), rtol=1e-5)
    assert mod.data_shapes[0].name == "data1" and mod.data_shapes[0].shape == (2, 5)


def test_params_given_before_bind_are_copied_not_kept():
    mod = mx.mod.Module(_mlp(), context=[mx.cpu(0), mx.cpu(1)])
    given = _params()
    before = {k: v.asnumpy().copy() for k, v in given.items()}
    mod.set_params(given, {})
    mod.bind([("data", (4, 4))], [("softmax_label", (4,))])
    mod.init_optimizer(optimizer_params={"learning_rate": 1.0})
    mod.forward_backward(mx.io.DataBatch([mx.nd.ones((4, 4))], [mx.nd.zeros((4,))]))
    mod.update()
    after = mod.get_params()[0]
    assert not np.allclose(after["fc2_bias"].asnumpy(), before["fc2_bias"])  # trained
    for k, v in given.items():  # the caller's arrays are untouched
        np.testing.assert_array_equal(v.asnumpy(), before[k])
    assert mod._arg_params["fc1_weight"] is not given["fc1_weight"]
