"""mx.contrib.svrg_optimization: the SVRG step against a hand computation on a linear model, the
full-gradient pass, fit, the optimizers' dispatch, and argument errors."""
import logging

import numpy as np
import pytest

import ember as mx
from ember.contrib.svrg_optimization import SVRGModule, _SVRGOptimizer

LR = 0.05


def _linear_problem(n=8, batch=4, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, (n, 2)).astype(np.float32)
    y = (x @ np.array([1.5, -2.0]) + 0.3).astype(np.float32)
    it = mx.io.NDArrayIter(x, y, batch_size=batch, shuffle=False, label_name="lin_reg_label")
    out = mx.sym.LinearRegressionOutput(
        mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1, name="fc1"),
        label=mx.sym.var("lin_reg_label"), name="lro")
    return x, y, it, out


def _module(sym, it, update_freq=2):
    mod = SVRGModule(sym, data_names=["data"], label_names=["lin_reg_label"], update_freq=update_freq,
                     logger=logging.getLogger("svrg-test"))
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    mod.init_params(initializer=mx.init.Constant(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params=(("learning_rate", LR),))
    return mod


def _weights(mod):
    args, _ = mod.get_params()
    return args["fc1_weight"].asnumpy()[0].astype(np.float64), float(args["fc1_bias"].asnumpy()[0])


def _batch_grads(w, b, x, y):
    """Summed gradient of 0.5 * (x.w + b - y)^2 over a batch (LinearRegressionOutput's gradient)."""
    r = x @ w + b - y
    return r @ x, r.sum()


def test_full_gradient_pass_is_the_mean_batch_gradient():
    x, y, it, sym = _linear_problem()
    mod = _module(sym, it)
    mod.update_full_grads(it)
    w, b = _weights(mod)
    gw, gb = zip(*[_batch_grads(w, b, x[i:i + 4], y[i:i + 4]) for i in (0, 4)])
    np.testing.assert_allclose(mod._param_dict[0]["fc1_weight"].asnumpy()[0], np.mean(gw, axis=0), rtol=1e-5)
    np.testing.assert_allclose(mod._param_dict[0]["fc1_bias"].asnumpy(), [np.mean(gb)], rtol=1e-5)
    # a second pass recomputes the mean (not added to the previous one)
    mod.update_full_grads(it)
    np.testing.assert_allclose(mod._param_dict[0]["fc1_weight"].asnumpy()[0], np.mean(gw, axis=0), rtol=1e-5)


def test_update_is_the_svrg_step():
    x, y, it, sym = _linear_problem()
    mod = _module(sym, it)
    mod.update_full_grads(it)  # snapshot w~ = the initial weights
    w_snap, b_snap = _weights(mod)
    mu_w, mu_b = (np.mean(g, axis=0) for g in zip(*[_batch_grads(w_snap, b_snap, x[i:i + 4], y[i:i + 4])
                                                     for i in (0, 4)]))
    w, b = w_snap.copy(), b_snap
    it.reset()
    for k, batch in enumerate(it):
        mod.forward_backward(batch)
        mod.update()
        xb, yb = x[4 * k:4 * k + 4], y[4 * k:4 * k + 4]
        gw, gb = _batch_grads(w, b, xb, yb)
        sw, sb = _batch_grads(w_snap, b_snap, xb, yb)
        # w -= lr * (g_i(w) - g_i(w~) + mu), gradients rescaled by 1/batch_size as Module does
        w = w - LR * (gw - sw + mu_w) / 4
        b = b - LR * (gb - sb + mu_b) / 4
    args, _ = mod.get_params()
    np.testing.assert_allclose(args["fc1_weight"].asnumpy()[0], w, rtol=1e-5)
    np.testing.assert_allclose(args["fc1_bias"].asnumpy(), [b], rtol=1e-5)


def test_fit_reduces_the_loss():
    _, _, it, sym = _linear_problem(n=32, batch=8)
    mod = SVRGModule(sym, data_names=["data"], label_names=["lin_reg_label"], update_freq=2,
                     logger=logging.getLogger("svrg-test"))
    calls = []
    real = mod.update_full_grads
    mod.update_full_grads = lambda data: (calls.append(1), real(data))
    metric = mx.metric.create("mse")
    mod.fit(it, eval_metric=metric, optimizer="sgd", optimizer_params=(("learning_rate", 0.2),), num_epoch=1,
            progress_bar=False)
    first = metric.get()[1]
    mod.fit(it, eval_metric=metric, optimizer="sgd", optimizer_params=(("learning_rate", 0.2),), num_epoch=12,
            begin_epoch=1, progress_bar=False)
    assert metric.get()[1] < 0.01 * first
    assert len(calls) == 6  # epochs 0, 2, 4, ..., 10


def test_optimizer_dispatch_through_a_kvstore():
    opt = _SVRGOptimizer(default_optimizer="sgd", param_idx2name={0: "w", 1: "w_full", 2: "fullyconnected0_weight"},
                         learning_rate=0.5)
    kv = mx.kv.create("local")
    kv.set_optimizer(opt)
    for key in (0, 1, 2):
        kv.init(key, mx.nd.ones(3))
        kv.push(key, mx.nd.full(3, 4.0))
    out = [mx.nd.zeros(3) for _ in range(3)]
    for key in (0, 1, 2):
        kv.pull(key, out=out[key])
    np.testing.assert_allclose(out[0].asnumpy(), -1.0)  # sgd: 1 - 0.5 * 4
    np.testing.assert_allclose(out[1].asnumpy(), 4.0)  # a '_full' key stores what it is pushed
    np.testing.assert_allclose(out[2].asnumpy(), -1.0)  # 'full' inside a name is not a '_full' key
    assert opt.default_opt.lr == 0.5


def test_init_optimizer_installs_the_wrapper_and_full_keys():
    _, _, it, sym = _linear_problem()
    mod = SVRGModule(sym, data_names=["data"], label_names=["lin_reg_label"], update_freq=1)
    mod.bind(data_shapes=it.provide_data, label_shapes=it.provide_label)
    assert mod._mod_aux.binded
    mod.init_params()
    mod.init_optimizer(kvstore=mx.kv.create("local"), optimizer="sgd")
    assert isinstance(mod._optimizer, _SVRGOptimizer)
    assert {"fc1_weight_full", "fc1_bias_full"} <= set(mod._optimizer.idx2name.values())
    mod.update_full_grads(it)  # goes through the store's '_full' keys
    assert mod._param_dict[0]["fc1_weight"].shape == (1, 2)


def test_bad_arguments():
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=1)
    with pytest.raises(TypeError, match="update_freq must be an int"):
        SVRGModule(sym, label_names=None)
    with pytest.raises(ValueError, match="positive integer"):
        SVRGModule(sym, label_names=None, update_freq=0)
    with pytest.raises(mx.base.MXNetError, match="default_optimizer"):
        _SVRGOptimizer(default_optimizer=3)
    mod = SVRGModule(sym, label_names=None, update_freq=1)
    with pytest.raises(TypeError):
        mod.bind(data_shapes=["data", mx.nd.zeros((2, 1))])
