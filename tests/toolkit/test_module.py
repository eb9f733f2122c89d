"""mx.mod.Module: one SGD step against numpy, fit on a tiny problem, score/predict, checkpoints, errors."""
import logging

import numpy as np
import pytest

import ember as mx
from ember.module import ModuleError


def _linreg_symbol():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=1, name="fc")
    return mx.sym.LinearRegressionOutput(fc, mx.sym.Variable("lin_label"), name="lro")


def _mlp_symbol(hidden=16, classes=3):
    data = mx.sym.Variable("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=hidden, name="fc1"), act_type="relu")
    out = mx.sym.FullyConnected(h, num_hidden=classes, name="fc2")
    return mx.sym.SoftmaxOutput(out, name="softmax")


def _blobs(n=96, classes=3, dim=4, seed=0):
    rs = np.random.RandomState(seed)
    centers = rs.randn(classes, dim) * 3
    y = rs.randint(0, classes, size=n)
    x = centers[y] + rs.randn(n, dim) * 0.5
    return x.astype(np.float32), y.astype(np.float32)


def test_one_sgd_step_matches_numpy():
    rs = np.random.RandomState(1)
    x, y = rs.randn(8, 3).astype(np.float32), rs.randn(8).astype(np.float32)
    w0, b0 = rs.randn(1, 3).astype(np.float32), np.array([0.5], np.float32)
    mod = mx.mod.Module(_linreg_symbol(), data_names=["data"], label_names=["lin_label"])
    mod.bind(data_shapes=[("data", (8, 3))], label_shapes=[("lin_label", (8, 1))])
    mod.init_params(arg_params={"fc_weight": mx.nd.array(w0), "fc_bias": mx.nd.array(b0)})
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "wd": 0.01})
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y.reshape(8, 1))])
    mod.forward(batch, is_train=True)
    pred = mod.get_outputs()[0].asnumpy()
    np.testing.assert_allclose(pred, x @ w0.T + b0, rtol=1e-5)
    mod.backward()
    mod.update()
    # LinearRegressionOutput's gradient is (pred - label); rescale_grad = 1/batch; wd only on the weight
    resid = (x @ w0.T + b0) - y.reshape(8, 1)
    gw, gb = resid.T @ x / 8, resid.sum(0) / 8
    args, _ = mod.get_params()
    np.testing.assert_allclose(args["fc_weight"].asnumpy(), (1 - 0.1 * 0.01) * w0 - 0.1 * gw, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(args["fc_bias"].asnumpy(), b0 - 0.1 * gb, rtol=1e-5, atol=1e-6)


def test_fit_reduces_loss_and_learns(capsys):
    x, y = _blobs()
    train = mx.io.NDArrayIter(x, y, batch_size=16, shuffle=True)
    mod = mx.mod.Module(_mlp_symbol())
    mx.random.seed(0)
    np.random.seed(0)
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params(mx.init.Xavier())
    before = dict(mod.score(train, ["ce", "acc"]))
    seen = []
    with pytest.warns(UserWarning, match="already initialized"):  # fit keeps the params set above
            history = mod.fit(train, eval_data=mx.io.NDArrayIter(x, y, batch_size=16), eval_metric=["ce", "acc"],
                          optimizer="adam", optimizer_params={"learning_rate": 0.05}, num_epoch=6,
                          batch_end_callback=lambda p: seen.append((p.epoch, p.nbatch)),
                          epoch_end_callback=lambda e, s, a, x_: seen.append(("end", e)))
    after = dict(mod.score(train, ["ce", "acc"]))
    assert after["cross-entropy"] < 0.5 * before["cross-entropy"]
    assert after["accuracy"] > 0.95
    assert ("end", 5) in seen and (5, 5) in seen
    assert len(history) == 6 and "validation" in history[-1]
    printed = capsys.readouterr().out
    assert "Epoch[5] Train-accuracy=" in printed and "Epoch[5] Validation-cross-entropy=" in printed


def test_predict_removes_padding_and_score():
    x, y = _blobs(n=10)
    mod = mx.mod.Module(_mlp_symbol())
    it = mx.io.NDArrayIter(x, y, batch_size=4)
    mod.bind(it.provide_data, it.provide_label, for_training=False)
    mod.init_params(mx.init.Xavier())
    out = mod.predict(it)
    assert out.shape == (10, 3)
    # same as a forward over all 10 samples at once
    full = mx.mod.Module(_mlp_symbol())
    full.bind([("data", (10, 4))], [("softmax_label", (10,))], for_training=False)
    full.set_params(*mod.get_params())
    full.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
    np.testing.assert_allclose(out.asnumpy(), full.get_outputs()[0].asnumpy(), rtol=1e-5, atol=1e-6)
    # score counts the padded last batch in full, as MXNet does (samples 0 and 1 wrap around)
    acc = dict(mod.score(it, "acc"))["accuracy"]
    padded = np.concatenate([out.asnumpy().argmax(1) == y, out.asnumpy()[:2].argmax(1) == y[:2]])
    assert acc == pytest.approx(np.mean(padded))
    with pytest.raises(ModuleError, match="for_training=False"):
        mod.backward()


def test_forward_with_other_batch_size_reshapes():
    x, y = _blobs(n=12)
    mod = mx.mod.Module(_mlp_symbol())
    mod.bind([("data", (4, 4))], [("softmax_label", (4,))], for_training=False)
    mod.init_params(mx.init.Xavier())
    mod.forward(mx.io.DataBatch([mx.nd.array(x[:6])], [mx.nd.array(y[:6])]))
    assert mod.get_outputs()[0].shape == (6, 3)


def test_checkpoint_and_optimizer_states_round_trip(tmp_path):
    x, y = _blobs(n=32)
    it = mx.io.NDArrayIter(x, y, batch_size=8)
    mod = mx.mod.Module(_mlp_symbol())
    mod.fit(it, num_epoch=1, optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9},
            initializer=mx.init.Xavier(), progress_bar=False)
    prefix = str(tmp_path / "mlp")
    mod.save_checkpoint(prefix, 3, save_optimizer_states=True)
    loaded = mx.mod.Module.load(prefix, 3, load_optimizer_states=True)
    loaded.bind(it.provide_data, it.provide_label)
    loaded.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9})
    args_a, _ = mod.get_params()
    args_b, _ = loaded.get_params()
    for k in args_a:
        np.testing.assert_array_equal(args_a[k].asnumpy(), args_b[k].asnumpy())
    # one more identical step on both: momentum states were restored, so the weights stay equal
    batch = next(iter(mx.io.NDArrayIter(x, y, batch_size=8)))
    for m in (mod, loaded):
        m.forward_backward(batch)
        m.update()
    for k in args_a:
        np.testing.assert_allclose(mod.get_params()[0][k].asnumpy(), loaded.get_params()[0][k].asnumpy(),
                                   rtol=1e-6, atol=1e-7)
    sym, arg_params, aux_params = mx.model.load_checkpoint(prefix, 3)
    assert set(arg_params) == {"fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"}


def test_fixed_params_and_explicit_kvstore():
    x, y = _blobs(n=16)
    it = mx.io.NDArrayIter(x, y, batch_size=8)
    mod = mx.mod.Module(_mlp_symbol(), fixed_param_names=["fc1_weight"])
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(kvstore=mx.kv.create("local"), optimizer_params={"learning_rate": 0.5})
    before, _ = mod.get_params()
    for batch in it:
        mod.forward_backward(batch)
        mod.update()
    after, _ = mod.get_params()
    np.testing.assert_array_equal(before["fc1_weight"].asnumpy(), after["fc1_weight"].asnumpy())
    assert not np.allclose(before["fc2_weight"].asnumpy(), after["fc2_weight"].asnumpy())


def test_errors():
    sym = _mlp_symbol()
    mod = mx.mod.Module(sym)
    with pytest.raises(ModuleError, match="bind"):
        mod.forward(mx.io.DataBatch([mx.nd.zeros((2, 4))]))
    with pytest.raises(ModuleError, match="not arguments"):
        mx.mod.Module(sym, data_names=["image"])
    with pytest.raises(ModuleError, match="work_load_list"):  # several contexts are fine (data parallel)
        mx.mod.Module(sym, context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1])
    mod.bind([("data", (2, 4))], [("softmax_label", (2,))])
    with pytest.raises(ModuleError, match="init_params"):
        mod.init_optimizer()
    with pytest.raises(ModuleError, match="not in the given parameters"):
        mod.init_params(arg_params={"fc1_weight": mx.nd.zeros((16, 4))})
    with pytest.raises(ModuleError, match="does not use"):
        mod.init_params(arg_params={"conv_weight": mx.nd.zeros((1,))}, allow_missing=True)
    with pytest.raises(ModuleError, match="shape"):
        mod.init_params(arg_params={"fc1_weight": mx.nd.zeros((3, 3))}, allow_missing=True)
    mod.init_params()
    with pytest.raises(ModuleError, match="init_optimizer"):
        mod.update()
    with pytest.raises(ModuleError, match="data_names"):
        mx.mod.Module(sym).bind([("x", (2, 4))])
    with pytest.raises(ValueError, match="num_epoch"):
        mod.fit(mx.io.NDArrayIter(np.zeros((2, 4)), np.zeros(2), batch_size=2))
    with pytest.raises(mx.kv.KVStoreError):
        mod.init_optimizer(kvstore="nonsense")


def test_logging_of_epochs(caplog):
    x, y = _blobs(n=16)
    mod = mx.mod.Module(_mlp_symbol())
    with caplog.at_level(logging.INFO):
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=8), num_epoch=1, progress_bar=False,
                initializer=mx.init.Xavier())
    assert any("Epoch[0] Train-accuracy=" in r.message for r in caplog.records)
    assert any("Epoch[0] Time cost=" in r.message for r in caplog.records)


def test_variable_init_attribute_wins_over_the_module_initializer():
    w = mx.sym.Variable("fc_weight", init=mx.init.Constant(0.25))
    net = mx.sym.FullyConnected(mx.sym.Variable("data"), weight=w, num_hidden=2, name="fc")
    mod = mx.mod.Module(net, label_names=None)
    mod.bind([("data", (1, 3))], for_training=False)
    mod.init_params(mx.init.Xavier())
    args, _ = mod.get_params()
    np.testing.assert_array_equal(args["fc_weight"].asnumpy(), np.full((2, 3), 0.25, np.float32))
    np.testing.assert_array_equal(args["fc_bias"].asnumpy(), np.zeros(2, np.float32))


def test_batchnorm_statistics_are_aux_params_and_get_trained():
    data = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    x = mx.sym.BatchNorm(x, name="bn", fix_gamma=False)
    x = mx.sym.Activation(x, act_type="relu")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(x, num_hidden=3, name="fc2"), name="softmax")
    x_np, y_np = _blobs(n=32)
    it = mx.io.NDArrayIter(x_np, y_np, batch_size=8)
    mod = mx.mod.Module(net)
    mod.fit(it, num_epoch=2, initializer=mx.init.Xavier(), progress_bar=False,
            optimizer_params={"learning_rate": 0.1})
    args, aux = mod.get_params()
    assert set(aux) == {"bn_moving_mean", "bn_moving_var"}
    assert "bn_gamma" in args and "bn_beta" in args
    assert np.abs(aux["bn_moving_mean"].asnumpy()).max() > 0  # initialized to 0, moved by training
    # inference uses the moving statistics: same result from a fresh module loaded with the params
    other = mx.mod.Module(net)
    other.bind(it.provide_data, it.provide_label, for_training=False)
    other.set_params(args, aux)
    np.testing.assert_allclose(other.predict(it).asnumpy(), mod.predict(it).asnumpy(), rtol=1e-5, atol=1e-6)


def test_fit_without_labels_on_a_makeloss_objective():
    # minimise mean((x·w - 3)^2) with no label input: the loss is the network's output
    data = mx.sym.Variable("data")
    pred = mx.sym.FullyConnected(data, num_hidden=1, no_bias=True, name="fc")
    loss = mx.sym.MakeLoss(mx.sym.square(pred - 3.0), name="loss")
    x = np.ones((16, 2), np.float32)
    mod = mx.mod.Module(loss, data_names=["data"], label_names=None)
    it = mx.io.NDArrayIter(x, batch_size=8)
    mod.fit(it, eval_metric="loss", num_epoch=30, progress_bar=False, initializer=mx.init.Zero(),
            optimizer_params={"learning_rate": 0.05, "rescale_grad": 1.0 / 8})
    w = mod.get_params()[0]["fc_weight"].asnumpy()
    assert w.sum() == pytest.approx(3.0, abs=1e-3)
    assert dict(mod.score(it, "loss"))["loss"] < 1e-5


def _sparse_regression(weight_stype):
    x = mx.sym.var("data", stype="csr")
    v = mx.sym.var("v", shape=(12, 1), init=mx.init.Constant(0.25), stype=weight_stype)
    return mx.sym.LinearRegressionOutput(mx.sym.dot(x, v), mx.sym.var("label"), name="out")


@pytest.mark.parametrize("contexts, kvstore", [([mx.cpu(0)], "local"), ([mx.cpu(0), mx.cpu(1)], "device")])
def test_declared_row_sparse_parameters_are_kept_row_sparse(contexts, kvstore):
    # As MXNet: the module's parameter copies take the storage type the variable declares; the
    # values (initializer, training) are those of the dense model.
    rs = np.random.RandomState(3)
    data = (rs.rand(32, 12) * (rs.rand(32, 12) > 0.6)).astype(np.float32)
    label = data @ rs.rand(12, 1).astype(np.float32)
    results = {}
    for stype in ("row_sparse", "default"):
        it = mx.io.NDArrayIter(mx.nd.array(data).tostype("csr"), {"label": mx.nd.array(label)}, batch_size=8,
                               last_batch_handle="discard")  # (CSR batches: MXNet takes only 'discard')
        mod = mx.mod.Module(_sparse_regression(stype), data_names=["data"], label_names=["label"],
                            context=contexts)
        mod.bind(it.provide_data, it.provide_label)
        mod.init_params()
        args, _ = mod.get_params()
        assert args["v"].stype == stype
        np.testing.assert_array_equal(args["v"].asnumpy(), np.full((12, 1), 0.25, np.float32))
        mod.fit(it, num_epoch=3, kvstore=kvstore, optimizer="sgd", optimizer_params={"learning_rate": 0.1})
        args, _ = mod.get_params()
        assert args["v"].stype == stype
        results[stype] = args["v"].asnumpy()
    np.testing.assert_allclose(results["row_sparse"], results["default"], rtol=1e-6)
    assert not np.allclose(results["default"], 0.25)
