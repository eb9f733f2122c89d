"""mx.mon.Monitor on modules and executors, and mx.callback (MXNet's messages and checkpoints)."""
import logging
import os
from functools import reduce

import numpy as np
import pytest

import ember as mx


def _net():
    x = mx.sym.Variable("data")
    x = mx.sym.FullyConnected(name="fc_0", data=x, num_hidden=2)
    x = mx.sym.Activation(name="act_0", data=x, act_type="sigmoid")
    x = mx.sym.FullyConnected(name="fc_1", data=x, num_hidden=2)
    x = mx.sym.Activation(name="act_1", data=x, act_type="sigmoid")
    return mx.sym.LinearRegressionOutput(data=x, name="softmax", grad_scale=2)


ARGS = {"fc_0_weight": [[.15, .20], [.25, .30]], "fc_0_bias": [.35, .35],
        "fc_1_weight": [[.40, .45], [.50, .55]], "fc_1_bias": [.60, .60]}


def _mean_abs(x):
    return mx.nd.sum(mx.nd.abs(x)) / reduce(lambda a, b: a * b, x.shape)


def _module_with_monitor(mon, contexts=(mx.cpu(),)):
    n = len(contexts)
    it = mx.io.NDArrayIter(mx.nd.array([[0.05, .10]] * n), mx.nd.array([[.01, 0.99]] * n), batch_size=n)
    mod = mx.mod.Module(_net(), context=list(contexts))
    mod.bind(it.provide_data, label_shapes=it.provide_label, for_training=True)
    mod.install_monitor(mon)
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in ARGS.items()})
    return mod, next(iter(it))


def test_monitor_collects_forward_backward_and_arguments():
    mon = mx.mon.Monitor(1, stat_func=_mean_abs, pattern=".*", sort=True)
    mod, batch = _module_with_monitor(mon)
    mon.tic()
    mod.forward_backward(batch)
    res = mon.toc()
    names = [k for _, k, _ in res]
    assert names == sorted(names)
    # as MXNet's test_monitor: LinearRegressionOutput's backward has a second output, the label's
    # gradient (MXNet never writes it; ember zeroes it)
    assert set(names) == {"act_0_output", "act_0_backward_output", "act_1_output", "act_1_backward_output",
                          "data", "fc_0_output", "fc_0_backward_output0", "fc_0_backward_output1",
                          "fc_0_backward_output2", "fc_0_weight", "fc_0_bias", "fc_1_output",
                          "fc_1_backward_output0", "fc_1_backward_output1", "fc_1_backward_output2",
                          "fc_1_weight", "fc_1_bias", "softmax_output", "softmax_backward_output0",
                          "softmax_backward_output1", "softmax_label"}
    assert len(res) == 21
    stats = {k: float(v) for _, k, v in res}
    # numbers against numpy: the forward pass of the 2-2-2 network above
    x = np.array([[0.05, .10]])
    h = 1 / (1 + np.exp(-(x @ np.array(ARGS["fc_0_weight"]).T + ARGS["fc_0_bias"])))
    o = 1 / (1 + np.exp(-(h @ np.array(ARGS["fc_1_weight"]).T + ARGS["fc_1_bias"])))
    np.testing.assert_allclose(stats["act_0_output"], np.abs(h).mean(), rtol=1e-5)
    np.testing.assert_allclose(stats["softmax_output"], np.abs(o).mean(), rtol=1e-5)
    np.testing.assert_allclose(stats["fc_0_weight"], np.abs(ARGS["fc_0_weight"]).mean(), rtol=1e-5)
    d_o = 2 / 2 * (o - np.array([[.01, 0.99]]))  # grad_scale / outputs per sample, as MXNet
    np.testing.assert_allclose(stats["softmax_backward_output0"], np.abs(d_o).mean(), rtol=1e-5)
    assert stats["softmax_backward_output1"] == 0
    d_z1 = d_o * o * (1 - o)
    np.testing.assert_allclose(stats["fc_1_backward_output1"], np.abs(d_z1.T @ h).mean(), rtol=1e-5)


def test_monitor_interval_pattern_and_default_stat():
    mon = mx.mon.Monitor(2, pattern="fc_1.*weight")
    mod, batch = _module_with_monitor(mon, contexts=(mx.cpu(0), mx.cpu(1)))
    results = []
    for _ in range(4):
        mon.tic()
        mod.forward(batch, is_train=False)
        results.append(mon.toc())
    assert [len(r) for r in results] == [2, 0, 2, 0]  # every 2nd batch, one per device
    step, name, value = results[0][0]
    assert (step, name) == (1, "fc_1_weight")
    w = np.array(ARGS["fc_1_weight"])
    np.testing.assert_allclose(float(value), np.sqrt((w ** 2).mean()), rtol=1e-5)  # norm / sqrt(size)
    with pytest.raises(ValueError, match="interval"):
        mx.mon.Monitor(0)


def test_monitor_in_fit_and_toc_print(caplog):
    mon = mx.mon.Monitor(1, pattern="softmax_output")
    it = mx.io.NDArrayIter(np.random.RandomState(0).rand(4, 2).astype(np.float32),
                           np.random.RandomState(1).rand(4, 2).astype(np.float32), batch_size=2)
    mod = mx.mod.Module(_net())
    with caplog.at_level(logging.INFO):
        mod.fit(it, num_epoch=1, monitor=mon, eval_metric="mse", progress_bar=False)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Batch:")]
    assert len(lines) == 2 and "softmax_output" in lines[0]


class _Param:
    def __init__(self, epoch, nbatch, metric):
        self.epoch, self.nbatch, self.eval_metric, self.locals = epoch, nbatch, metric, None


def _metric(value):
    m = mx.metric.MSE()
    m.update([mx.nd.array([0.0])], [mx.nd.array([value ** 0.5])])
    return m


def test_speedometer_messages(caplog):
    with caplog.at_level(logging.INFO):
        speed = mx.callback.Speedometer(batch_size=4, frequent=2)
        metric = _metric(4.0)
        for n in range(5):
            speed(_Param(0, n, metric))
    msgs = [r.getMessage() for r in caplog.records]
    assert len(msgs) == 2
    assert msgs[0].startswith("Epoch[0] Batch [0-2]\tSpeed: ") and msgs[0].endswith("samples/sec\tmse=4.000000")
    assert msgs[1].startswith("Epoch[0] Batch [2-4]")  # the metric was reset after the first log
    caplog.clear()
    with caplog.at_level(logging.INFO):
        speed = mx.callback.Speedometer(batch_size=4, frequent=1, auto_reset=False)
        for n in range(2):
            speed(_Param(1, n, None))
    assert caplog.records[0].getMessage().startswith("Iter[1] Batch [1]\tSpeed: ")


def test_progress_bar_and_validation_log(caplog):
    with caplog.at_level(logging.INFO):
        bar = mx.callback.ProgressBar(total=4, length=8)
        bar(_Param(0, 2, None))
        mx.callback.LogValidationMetricsCallback()(_Param(3, 0, _metric(0.25)))
        mx.callback.log_train_metric(period=1)(_Param(2, 5, _metric(1.0)))
    msgs = [r.getMessage() for r in caplog.records]
    assert msgs[0] == "[====----] 50%\r"
    assert msgs[1] == "Epoch[3] Validation-mse=0.250000"
    assert msgs[2] == "Iter[2] Batch[5] Train-mse=1.000000"


def test_checkpoint_callbacks(tmp_path):
    it = mx.io.NDArrayIter(np.ones((4, 2), np.float32), np.ones((4, 2), np.float32), batch_size=2)
    mod = mx.mod.Module(_net())
    prefix = str(tmp_path / "net")
    mod.fit(it, num_epoch=2, progress_bar=False, eval_metric="mse",
            optimizer_params={"learning_rate": 0.1},
            epoch_end_callback=[mx.callback.do_checkpoint(prefix, period=2),
                                mx.callback.module_checkpoint(mod, prefix + "-mod", save_optimizer_states=True)])
    assert not os.path.exists(prefix + "-0001.params") and os.path.exists(prefix + "-0002.params")
    assert os.path.exists(prefix + "-mod-0001.params") and os.path.exists(prefix + "-mod-0002.states")
    _, args, _ = mx.model.load_checkpoint(prefix, 2)
    now = mod.get_params()[0]
    for k in now:
        np.testing.assert_array_equal(args[k].asnumpy(), now[k].asnumpy())
