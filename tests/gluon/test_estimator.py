"""gluon.contrib.estimator: the Estimator's training loop against a hand-written one, handler order, metrics,
checkpoint files and resuming, early stopping, logging, and the errors and warnings MXNet 1.9.1 gives."""
from __future__ import annotations

import io
import logging
import os
import re
import warnings

import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon
from ember.gluon.contrib.estimator import (BatchBegin, BatchEnd, BatchProcessor, CheckpointHandler,
                                           EarlyStoppingHandler, EpochBegin, EpochEnd, Estimator,
                                           GradientUpdateHandler, LoggingHandler, MetricHandler,
                                           StoppingHandler, TrainBegin, TrainEnd, ValidationHandler)

W0 = np.array([[0.5, -0.25, 0.1]], dtype=np.float32)
B0 = np.array([0.2], dtype=np.float32)


def _regression_data(n: int = 12, batch_size: int = 4, seed: int = 0):
    rng = np.random.RandomState(seed)
    x = rng.uniform(-1, 1, size=(n, 3)).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.7]], dtype=np.float32) + 0.3).astype(np.float32)
    dataset = gluon.data.ArrayDataset(mx.nd.array(x), mx.nd.array(y))
    return x, y, gluon.data.DataLoader(dataset, batch_size=batch_size)


def _dense(hybridize: bool = False):
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(1, in_units=3))
    net.initialize(ctx=mx.cpu())
    net[0].weight.set_data(mx.nd.array(W0))
    net[0].bias.set_data(mx.nd.array(B0))
    if hybridize:
        net.hybridize()
    return net


def _estimator(net=None, lr: float = 0.1, **kwargs):
    net = net if net is not None else _dense()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": lr})
    est = Estimator(net, gluon.loss.L2Loss(), trainer=trainer, context=mx.cpu(), **kwargs)
    est.logger.setLevel(logging.WARNING)  # keep the test output quiet; logging is tested on its own
    return est


class _EpochLosses(EpochEnd):
    """Records the training loss metric at each epoch end (after the MetricHandler updated it)."""

    def __init__(self, metric):
        self.metric = metric
        self.values = []

    def epoch_end(self, estimator, *args, **kwargs):
        self.values.append(self.metric.get()[1])
        return False


# -- training numbers ------------------------------------------------------------------------------------------
def test_fit_matches_hand_written_loop_and_reduces_loss():
    x, y, loader = _regression_data()
    est = _estimator()
    losses = _EpochLosses(est.train_metrics[0])
    est.fit(loader, epochs=4, event_handlers=[losses])

    net = _dense()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    loss_fn = gluon.loss.L2Loss()
    manual = []
    for _ in range(4):
        total = 0.0
        for data, label in loader:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
            total += float(loss.sum().asscalar())
        manual.append(total / len(x))
    np.testing.assert_allclose(est.net[0].weight.data().asnumpy(), net[0].weight.data().asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(est.net[0].bias.data().asnumpy(), net[0].bias.data().asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(losses.values, manual, rtol=1e-5)
    assert all(a > b for a, b in zip(losses.values, losses.values[1:]))
    assert losses.values[-1] < 0.6 * losses.values[0]


def test_batches_limit_counts_across_epochs_and_still_ends_the_epoch():
    _, _, loader = _regression_data()  # 3 batches per epoch
    est = _estimator()
    seen = _Recorder()
    est.fit(loader, batches=5, event_handlers=[seen])
    assert seen.events.count("batch_end") == 5
    # the batch-end stop in the 2nd epoch still runs that epoch's end handlers
    assert seen.events.count("epoch_end") == 2
    assert seen.events[-1] == "train_end"


def test_validation_metrics_match_final_network():
    x, y, loader = _regression_data()
    _, _, val_loader = _regression_data(n=8, seed=1)
    est = _estimator()
    est.fit(loader, val_data=val_loader, epochs=2)
    vx, vy, _ = _regression_data(n=8, seed=1)
    pred = vx @ est.net[0].weight.data().asnumpy().T + est.net[0].bias.data().asnumpy()
    expected = np.mean(0.5 * (pred - vy) ** 2)
    name, value = est.val_metrics[0].get()
    assert name == "validation l2loss"
    np.testing.assert_allclose(value, expected, rtol=1e-5)


def test_batch_axis_one_splits_the_second_dimension():
    class Transposed(gluon.data.Dataset):
        def __init__(self, data, label):
            self.data, self.label = data, label

        def __getitem__(self, idx):
            return self.data[:, idx], self.label[:, idx]

        def __len__(self):
            return self.data.shape[1]

    x, y, _ = _regression_data()
    loader = gluon.data.DataLoader(Transposed(x.T.copy(), y.T.copy()), batch_size=4)
    seen = []

    class Processor(BatchProcessor):
        def fit_batch(self, estimator, train_batch, batch_axis=0):
            seen.append(batch_axis)
            data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
            # a loader of column samples still batches along axis 0; batch_axis only picks the split axis
            assert data[0].shape == (4, 3) and label[0].shape == (4, 1)
            return super().fit_batch(estimator, train_batch, batch_axis)

    est = _estimator(batch_processor=Processor())
    est.fit(loader, epochs=1, batch_axis=1)
    assert seen == [1, 1, 1] and est.batch_axis == 1


# -- metrics ---------------------------------------------------------------------------------------------------
def test_default_metrics_and_names():
    est = _estimator()
    assert [type(m) for m in est.train_metrics] == [mx.metric.Loss]
    assert [m.name for m in est.train_metrics] == ["training l2loss"]
    assert [m.name for m in est.val_metrics] == ["validation l2loss"]
    assert est.val_metrics[0] is not est.train_metrics[0]

    net = _dense()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = Estimator(net, gluon.loss.SoftmaxCrossEntropyLoss())
    assert [type(m) for m in est.train_metrics] == [mx.metric.Accuracy, mx.metric.Loss]
    assert [m.name for m in est.train_metrics] == ["training accuracy", "training softmaxcrossentropyloss"]
    assert [m.name for m in est.val_metrics] == ["validation accuracy", "validation softmaxcrossentropyloss"]

    acc = mx.metric.Accuracy()
    composite = mx.metric.CompositeEvalMetric([acc, mx.metric.MAE()])
    est = _estimator(train_metrics=composite, val_metrics=mx.metric.RMSE())
    assert est.train_metrics[0] is acc  # composites are flattened, the user's objects kept
    assert [m.name for m in est.train_metrics] == ["training accuracy", "training mae"]
    assert [m.name for m in est.val_metrics] == ["validation rmse"]


# -- handler order ---------------------------------------------------------------------------------------------
class _Recorder(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    def __init__(self, log=None, tag="rec", priority=0):
        self.events = [] if log is None else log
        self.tag = tag
        self.priority = priority

    def _note(self, event):
        self.events.append(event if self.tag == "rec" else (self.tag, event))

    def train_begin(self, estimator, *args, **kwargs):
        self._note("train_begin")

    def train_end(self, estimator, *args, **kwargs):
        self._note("train_end")

    def epoch_begin(self, estimator, *args, **kwargs):
        self._note("epoch_begin")

    def epoch_end(self, estimator, *args, **kwargs):
        self._note("epoch_end")
        return False

    def batch_begin(self, estimator, *args, **kwargs):
        self._note("batch_begin")

    def batch_end(self, estimator, *args, **kwargs):
        self._note("batch_end")
        return False


def test_default_handlers_sorted_by_mxnet_priorities():
    _, _, loader = _regression_data()
    est = _estimator()
    est.max_epoch, est.max_batch = 1, None
    user = _Recorder()
    given = [user]
    handlers = est._prepare_default_handlers(val_data=loader, event_handlers=given)
    assert [type(h) for h in handlers] == [GradientUpdateHandler, MetricHandler, ValidationHandler, _Recorder,
                                           StoppingHandler, LoggingHandler]
    assert given == [user]  # the caller's list is not extended
    # a user handler of a default's class replaces that default
    own_metric = MetricHandler(est.train_metrics, priority=5)
    handlers = est._prepare_default_handlers(val_data=None, event_handlers=[own_metric])
    assert [type(h) for h in handlers] == [GradientUpdateHandler, StoppingHandler, MetricHandler,
                                           LoggingHandler]
    assert handlers[2] is own_metric
    val_handlers = est._prepare_default_validation_handlers(None)
    assert [type(h) for h in val_handlers] == [MetricHandler, LoggingHandler]


def test_events_fire_in_order_with_priorities():
    _, _, loader = _regression_data(n=8)  # 2 batches per epoch
    est = _estimator()
    log = []
    late, early = _Recorder(log, "late", priority=10), _Recorder(log, "early", priority=-3000)
    est.fit(loader, epochs=2, event_handlers=[late, early])
    batch = ["batch_begin", "batch_end"]
    one_epoch = ["epoch_begin"] + batch + batch + ["epoch_end"]
    expected = ["train_begin"] + one_epoch * 2 + ["train_end"]
    assert [e for t, e in log if t == "late"] == expected
    assert [e for t, e in log if t == "early"] == expected
    # at every event the priority -3000 handler runs before the priority 10 one
    assert [t for t, _ in log] == ["early", "late"] * len(expected)


def test_user_batch_end_sees_updated_weights_and_metrics():
    _, _, loader = _regression_data()
    est = _estimator()
    states = []

    class Probe(BatchEnd):
        def batch_end(self, estimator, *args, **kwargs):
            states.append((estimator.net[0].weight.data().asnumpy().copy(), estimator.train_metrics[0].num_inst))
            return False

    est.fit(loader, batches=1, event_handlers=[Probe()])
    weight, count = states[0]
    assert not np.allclose(weight, W0)  # GradientUpdateHandler (-2000) stepped before the user handler
    assert count == 4  # MetricHandler (-1000) already counted the batch


def test_categorize_handlers_by_mixin():
    class OnlyTrainBegin(TrainBegin):
        pass

    class EpochAndBatch(EpochBegin, BatchEnd):
        pass

    groups = Estimator._categorize_handlers([OnlyTrainBegin(), EpochAndBatch(), _Recorder()])
    assert [len(g) for g in groups] == [2, 2, 1, 2, 1, 1]


# -- checkpoints -----------------------------------------------------------------------------------------------
def test_checkpoint_files_rotation_and_best(tmp_path):
    _, _, loader = _regression_data()  # 3 batches per epoch
    est = _estimator(net=_dense(hybridize=True))
    handler = CheckpointHandler(str(tmp_path), model_prefix="reg", monitor=est.train_metrics[0],
                                save_best=True, mode="min", max_checkpoints=2)
    losses = _EpochLosses(est.train_metrics[0])
    est.fit(loader, epochs=4, event_handlers=[handler, losses])
    names = sorted(os.listdir(tmp_path))
    assert names == ["reg-best.params", "reg-best.states", "reg-epoch2batch9.params", "reg-epoch2batch9.states",
                     "reg-epoch3batch12.params", "reg-epoch3batch12.states", "reg-symbol.json"]
    assert handler.saved_checkpoints == ["reg-epoch2batch9", "reg-epoch3batch12"]
    assert handler.best == min(losses.values)
    # the best file holds the parameters of the epoch with the lowest loss (the last one, loss decreases)
    saved = gluon.nn.HybridSequential()
    with saved.name_scope():
        saved.add(gluon.nn.Dense(1, in_units=3))
    saved.load_parameters(str(tmp_path / "reg-best.params"))
    np.testing.assert_array_equal(saved[0].weight.data().asnumpy(), est.net[0].weight.data().asnumpy())


def test_checkpoint_by_batches_names(tmp_path):
    _, _, loader = _regression_data()
    est = _estimator()  # not hybridized: no symbol file
    handler = CheckpointHandler(str(tmp_path), epoch_period=None, batch_period=2, max_checkpoints=10)
    est.fit(loader, batches=7, event_handlers=[handler])
    prefixes = ["model-epoch0batch1", "model-epoch1batch3", "model-epoch1batch5"]
    assert handler.saved_checkpoints == prefixes
    assert sorted(os.listdir(tmp_path)) == sorted(p + ext for p in prefixes for ext in (".params", ".states"))
    assert (handler.current_batch, handler.current_epoch) == (7, 3)


def test_resume_from_checkpoint_continues_training(tmp_path):
    x, y, loader = _regression_data()
    reference = _estimator()
    reference.fit(loader, epochs=5)

    first = _estimator()
    first.fit(loader, epochs=2, event_handlers=[CheckpointHandler(str(tmp_path), max_checkpoints=3)])
    resumed = _estimator()
    handler = CheckpointHandler(str(tmp_path), max_checkpoints=3, resume_from_checkpoint=True)
    resumed.fit(loader, epochs=5, event_handlers=[handler])
    assert (handler.trained_epoch, handler.trained_batch) == (1, 6)
    assert resumed.max_epoch == 3
    # earlier checkpoints count towards max_checkpoints: epoch0 was deleted when epoch4 was written
    assert handler.saved_checkpoints == ["model-epoch2batch9", "model-epoch3batch12", "model-epoch4batch15"]
    assert not (tmp_path / "model-epoch0batch3.params").exists()
    # 2 + 3 epochs of SGD (stateless) give the weights of 5 uninterrupted epochs
    np.testing.assert_allclose(resumed.net[0].weight.data().asnumpy(), reference.net[0].weight.data().asnumpy(),
                               rtol=1e-6)

    done = _estimator()
    with pytest.raises(ValueError, match="maximum of 5 epochs"):
        done.fit(loader, epochs=5, event_handlers=[CheckpointHandler(str(tmp_path), resume_from_checkpoint=True)])
    wrong_period = CheckpointHandler(str(tmp_path), batch_period=2, resume_from_checkpoint=True)
    with pytest.raises(AssertionError, match="period"):
        _estimator().fit(loader, epochs=6, event_handlers=[wrong_period])


def test_resume_without_checkpoint_trains_from_scratch(tmp_path):
    _, _, loader = _regression_data()
    est = _estimator()
    handler = CheckpointHandler(str(tmp_path / "new"), epoch_period=None, batch_period=1,
                                resume_from_checkpoint=True)
    est.fit(loader, batches=2, event_handlers=[handler])
    assert est.max_batch == 2
    assert handler.saved_checkpoints == ["model-epoch0batch0", "model-epoch0batch1"]

    resumed = _estimator()
    handler = CheckpointHandler(str(tmp_path / "new"), epoch_period=None, batch_period=1,
                                resume_from_checkpoint=True)
    resumed.fit(loader, batches=4, event_handlers=[handler])
    assert resumed.max_batch == 2  # 4 - (trained batch index 1 + 1)
    # batch numbers continue from the resumed run; the epoch counter restarts one past it
    assert handler.saved_checkpoints[-2:] == ["model-epoch1batch2", "model-epoch1batch3"]


# -- early stopping --------------------------------------------------------------------------------------------
class _Scripted(mx.metric.EvalMetric):
    """A metric whose per-epoch value is set by `_Script`, so stopping epochs are exact."""

    def __init__(self):
        super().__init__("scripted")

    def update(self, labels, preds):
        pass


class _Script(EpochEnd):
    def __init__(self, metric, values):
        self.metric, self.values, self.priority = metric, list(values), -500

    def epoch_end(self, estimator, *args, **kwargs):
        self.metric.sum_metric, self.metric.num_inst = self.values.pop(0), 1
        return False


@pytest.mark.parametrize("values,kwargs,stopped,epochs_run", [
    ([1.0, 0.5, 0.6, 0.55, 0.7, 0.1], dict(mode="min", patience=2), 3, 4),
    ([1.0, 0.5, 0.4, 0.3, 0.2, 0.1], dict(mode="min", patience=1), 0, 6),
    ([1.0, 0.85, 0.7, 0.6, 0.5, 0.4], dict(mode="min", patience=1, min_delta=0.2), 1, 2),
    ([0.1, 0.2, 0.2, 0.3, 0.3, 0.3], dict(mode="max", patience=1), 2, 3),
    ([0.4, 0.45, 0.3, 0.3, 0.3, 0.3], dict(mode="max", patience=1, baseline=0.5), 0, 1),
])
def test_early_stopping_stops_at_the_right_epoch(values, kwargs, stopped, epochs_run):
    _, _, loader = _regression_data()
    metric = _Scripted()
    est = _estimator(train_metrics=metric)
    stopper = EarlyStoppingHandler(monitor=metric, **kwargs)
    epochs = _Recorder()
    est.fit(loader, epochs=6, event_handlers=[_Script(metric, values), stopper, epochs])
    assert stopper.stopped_epoch == stopped
    assert stopper.current_epoch == epochs_run
    assert epochs.events.count("epoch_end") == epochs_run


def test_auto_mode_picks_direction_from_the_metric_name():
    with pytest.warns(UserWarning, match="`greater`"):
        assert EarlyStoppingHandler(monitor=mx.metric.Accuracy()).monitor_op is np.greater
    with pytest.warns(UserWarning, match="`less`"):
        assert EarlyStoppingHandler(monitor=mx.metric.Loss()).monitor_op is np.less
    with pytest.warns(RuntimeWarning, match="unknown"), pytest.warns(UserWarning, match="`greater`"):
        assert EarlyStoppingHandler(monitor=mx.metric.F1(), mode="best").monitor_op is np.greater


# -- logging ---------------------------------------------------------------------------------------------------
def test_logging_handler_lines(tmp_path):
    _, _, loader = _regression_data(n=20)  # 5 batches
    est = _estimator()
    est.logger.setLevel(logging.INFO)
    stream = io.StringIO()
    est.logger.handlers = [logging.StreamHandler(stream)]
    est.fit(loader, epochs=2, event_handlers=[LoggingHandler(log_interval=2, metrics=est.train_metrics)])
    lines = stream.getvalue().splitlines()
    assert lines[0] == "Training begin: using optimizer SGD with current learning rate 0.1000 "
    assert lines[1] == "Train for 2 epochs."
    batch_lines = [line for line in lines if line.startswith("[Epoch")
                   and re.match(r"\[Epoch \d\]\[Batch \d\]\[Samples \d+\] time/interval: \d+\.\d{3}s "
                                r"training l2loss: \d+\.\d{4}$", line)]
    assert [line[:line.index(" time")] for line in batch_lines] == [
        "[Epoch 0][Batch 0][Samples 4]", "[Epoch 0][Batch 2][Samples 12]", "[Epoch 0][Batch 4][Samples 20]",
        "[Epoch 1][Batch 0][Samples 24]", "[Epoch 1][Batch 2][Samples 32]", "[Epoch 1][Batch 4][Samples 40]"]
    assert re.match(r"\[Epoch 1\] Finished in \d+\.\d{3}s, training l2loss: \d+\.\d{4}$", lines[-2])
    assert re.match(r"Train finished using total \d+s with 2 epochs\. training l2loss: \d+\.\d{4}$", lines[-1])

    est.evaluate(loader, event_handlers=[LoggingHandler(metrics=est.val_metrics)])
    assert "Validation Begin" in stream.getvalue()


# -- errors and warnings ---------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:No trainer specified")
def test_bad_arguments_raise_like_mxnet():
    net = _dense()
    _, _, loader = _regression_data()
    with pytest.raises(ValueError, match="loss must be a gluon.loss.Loss"):
        Estimator(net, "mse")
    with pytest.raises(ValueError, match="metrics must be"):
        Estimator(net, gluon.loss.L2Loss(), train_metrics="acc")
    with pytest.raises(ValueError, match="trainer must be a gluon.Trainer"):
        Estimator(net, gluon.loss.L2Loss(), trainer="sgd")
    with pytest.raises(ValueError, match="context must be a Context"):
        Estimator(net, gluon.loss.L2Loss(), context="cpu")
    with pytest.raises(AssertionError, match="not available"):
        Estimator(net, gluon.loss.L2Loss(), context=[mx.gpu(100)])
    with pytest.raises(ValueError, match="fit_batch"):
        Estimator(net, gluon.loss.L2Loss(), batch_processor=object(), trainer=None)
    est = _estimator()
    with pytest.raises(ValueError, match="DataLoader"):
        est.fit(mx.io.NDArrayIter(mx.nd.ones((4, 3)), mx.nd.ones((4, 1)), batch_size=2), epochs=1)
    with pytest.raises(ValueError, match="DataLoader"):
        est.fit(loader, val_data=[mx.nd.ones((4, 3))], epochs=1)
    with pytest.raises(ValueError, match="DataLoader"):
        est.evaluate([mx.nd.ones((4, 3))])
    with pytest.raises(ValueError, match="exactly one"):
        est.fit(loader, epochs=1, batches=2)
    with pytest.raises(ValueError, match="exactly one"):
        est.fit(loader)
    with pytest.raises(ValueError, match="EventHandler"):
        est.fit(loader, epochs=1, event_handlers=["logging"])
    with pytest.raises(ValueError, match="neither in estimator.train_metrics"):
        est.fit(loader, epochs=1, event_handlers=[LoggingHandler(metrics=[mx.metric.RMSE()])])
    with pytest.raises(ValueError, match="log_interval"):
        LoggingHandler(log_interval="batch")
    with pytest.raises(ValueError, match="monitor"):
        CheckpointHandler("unused-dir-never-created", save_best=True)
    with pytest.raises(ValueError, match="monitor"):
        EarlyStoppingHandler(monitor=None)
    with pytest.raises(ValueError, match="CompositeEvalMetric"):
        EarlyStoppingHandler(monitor=mx.metric.CompositeEvalMetric([mx.metric.MAE()]))
    assert not os.path.exists("unused-dir-never-created")


def test_warnings_and_defaults():
    net = gluon.nn.Dense(2)  # not initialized: the estimator initializes it on its context
    with pytest.warns(UserWarning, match="No trainer specified"):
        est = Estimator(net, gluon.loss.L2Loss())
    assert est.context == [mx.cpu()]
    assert type(est.trainer.optimizer).__name__ == "SGD" and est.trainer.learning_rate == 0.001
    assert net.weight.list_ctx() == [mx.cpu()]
    assert est.val_net is net and est.val_loss is est.loss
    assert isinstance(est.batch_processor, BatchProcessor)
    assert est.logger.level == logging.INFO

    ready = _dense()
    with pytest.warns(UserWarning, match="Network already fully initialized"):
        _estimator(net=ready, initializer=mx.init.Xavier())
    np.testing.assert_array_equal(ready[0].weight.data().asnumpy(), W0)  # not re-initialized

    partial = gluon.nn.HybridSequential()
    with partial.name_scope():
        partial.add(gluon.nn.Dense(4, in_units=3), gluon.nn.Dense(1, in_units=4))
    partial[0].initialize(mx.init.Constant(0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        Estimator(partial, gluon.loss.L2Loss(), initializer=mx.init.Zero())
    # only the uninitialized head gets the estimator's initializer
    assert partial[0].weight.data().asnumpy().tolist() == [[0.5] * 3] * 4
    assert not partial[1].weight.data().asnumpy().any()
