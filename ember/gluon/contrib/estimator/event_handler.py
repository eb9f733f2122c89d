"""Estimator event handlers (MXNet 1.9.1's `gluon.contrib.estimator.event_handler`).

The Estimator adds `StoppingHandler`, `GradientUpdateHandler`, `MetricHandler`, `ValidationHandler` (when
there is validation data) and `LoggingHandler` unless the user passed one of that class, then sorts all
handlers by `priority` (stable, so equal priorities keep the user's order before the defaults): gradient
update (-2000), metrics and validation (-1000), user handlers and stopping (0), logging (+inf).
"""
from __future__ import annotations

import time
from typing import Callable, Optional, Union

from ....metric import Loss as LossMetric
from .checkpoint_handler import CheckpointHandler
from .early_stopping import EarlyStoppingHandler
from .handler_base import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, TrainBegin, TrainEnd,
                           EventHandler, _check_event_handlers)  # noqa: F401 (MXNet's module defines both)
from .utils import _check_metrics

__all__ = ["TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd",
           "StoppingHandler", "MetricHandler", "ValidationHandler",
           "LoggingHandler", "CheckpointHandler", "EarlyStoppingHandler", "GradientUpdateHandler"]

class StoppingHandler(TrainBegin, BatchEnd, EpochEnd):
    """Stops `fit` after `estimator.max_epoch` epochs or `estimator.max_batch` batches (read at train begin)."""

    def __init__(self, max_epoch: Optional[int] = None, max_batch: Optional[int] = None):
        self.max_epoch = max_epoch
        self.max_batch = max_batch
        self.current_batch = 0
        self.current_epoch = 0
        self.stop_training = False

    def train_begin(self, estimator, *args, **kwargs) -> None:
        # the estimator's limits win: a resumed CheckpointHandler may have lowered them before this runs
        self.max_epoch = estimator.max_epoch
        self.max_batch = estimator.max_batch
        self.current_batch = 0
        self.current_epoch = 0

    def batch_end(self, estimator, *args, **kwargs) -> bool:
        self.current_batch += 1
        if self.current_batch == self.max_batch:
            self.stop_training = True
        return self.stop_training

    def epoch_end(self, estimator, *args, **kwargs) -> bool:
        self.current_epoch += 1
        if self.current_epoch == self.max_epoch:
            self.stop_training = True
        return self.stop_training


class MetricHandler(EpochBegin, BatchEnd):
    """Resets `metrics` at epoch begin and updates them at batch end (a `mx.metric.Loss` with the losses,
    every other metric with labels and predictions)."""

    def __init__(self, metrics, priority: float = -1000):
        self.metrics = _check_metrics(metrics)
        # before user handlers and logging, which read the metrics of the batch just done
        self.priority = priority

    def epoch_begin(self, estimator, *args, **kwargs) -> None:
        for metric in self.metrics:
            metric.reset()

    def batch_end(self, estimator, *args, **kwargs) -> bool:
        for metric in self.metrics:
            if isinstance(metric, LossMetric):
                metric.update(0, kwargs["loss"])
            else:
                metric.update(kwargs["label"], kwargs["pred"])
        return False


class ValidationHandler(TrainBegin, BatchEnd, EpochEnd):
    """Runs `eval_fn(val_data=..., batch_axis=..., event_handlers=...)` every `epoch_period` epochs and/or
    every `batch_period` batches (usually `eval_fn` is `estimator.evaluate`)."""

    def __init__(self, val_data, eval_fn: Callable, epoch_period: Optional[int] = 1,
                 batch_period: Optional[int] = None, priority: float = -1000, event_handlers=None):
        self.val_data = val_data
        self.eval_fn = eval_fn
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.current_batch = 0
        self.current_epoch = 0
        # before user handlers (early stopping, checkpoints) that monitor validation metrics
        self.priority = priority
        self.event_handlers = event_handlers

    def train_begin(self, estimator, *args, **kwargs) -> None:
        self.current_batch = 0
        self.current_epoch = 0

    def _validate(self, estimator) -> None:
        self.eval_fn(val_data=self.val_data, batch_axis=estimator.batch_axis,
                     event_handlers=self.event_handlers)

    def batch_end(self, estimator, *args, **kwargs) -> bool:
        self.current_batch += 1
        if self.batch_period and self.current_batch % self.batch_period == 0:
            self._validate(estimator)
        return False

    def epoch_end(self, estimator, *args, **kwargs) -> bool:
        self.current_epoch += 1
        if self.epoch_period and self.current_epoch % self.epoch_period == 0:
            self._validate(estimator)
        return False


def _metrics_text(metrics) -> str:
    return ", ".join("%s: %.4f" % metric.get() for metric in metrics)


class LoggingHandler(TrainBegin, TrainEnd, EpochBegin, EpochEnd, BatchBegin, BatchEnd):
    """Logs the optimizer, epoch/batch progress and `metrics` to `estimator.logger`.

    `log_interval='epoch'` logs at epoch begin and end; an integer k also logs every k-th batch of an epoch
    (batches 0, k, 2k, ...).
    """

    def __init__(self, log_interval: Union[int, str] = "epoch", metrics=None, priority: float = float("inf")):
        if not isinstance(log_interval, int) and log_interval != "epoch":
            raise ValueError(f"log_interval must be an integer or the string 'epoch', got {log_interval!r}")
        self.metrics = _check_metrics(metrics)
        self.log_interval = log_interval
        # last of all, so the metrics it prints are already updated for this batch or epoch
        self.priority = priority
        self.batch_index = 0
        self.current_epoch = 0
        self.processed_samples = 0
        self.log_interval_time = 0.0
        self.train_start = self.epoch_start = self.batch_start = time.time()

    def train_begin(self, estimator, *args, **kwargs) -> None:
        self.train_start = time.time()
        trainer = estimator.trainer
        estimator.logger.info("Training begin: using optimizer %s with current learning rate %.4f ",
                              type(trainer.optimizer).__name__, trainer.learning_rate)
        if estimator.max_epoch:
            estimator.logger.info("Train for %d epochs.", estimator.max_epoch)
        else:
            estimator.logger.info("Train for %d batches.", estimator.max_batch)
        self.current_epoch = 0
        self.batch_index = 0
        self.processed_samples = 0
        self.log_interval_time = 0.0

    def train_end(self, estimator, *args, **kwargs) -> None:
        msg = "Train finished using total %ds with %d epochs. " % (time.time() - self.train_start,
                                                                   self.current_epoch)
        estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(", "))

    def batch_begin(self, estimator, *args, **kwargs) -> None:
        if isinstance(self.log_interval, int):
            self.batch_start = time.time()

    def batch_end(self, estimator, *args, **kwargs) -> bool:
        if isinstance(self.log_interval, int):
            self.processed_samples += kwargs["batch"][0].shape[0]
            self.log_interval_time += time.time() - self.batch_start
            if self.batch_index % self.log_interval == 0:
                msg = "[Epoch %d][Batch %d][Samples %s] time/interval: %.3fs " % (
                    self.current_epoch, self.batch_index, self.processed_samples, self.log_interval_time)
                self.log_interval_time = 0.0
                estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(", "))
        self.batch_index += 1
        return False

    def epoch_begin(self, estimator, *args, **kwargs) -> None:
        self.epoch_start = time.time()
        # the Estimator names its training metrics 'training ...': without one this is a validation pass
        if any("training" in metric.name for metric in self.metrics):
            estimator.logger.info("[Epoch %d] Begin, current learning rate: %.4f",
                                  self.current_epoch, estimator.trainer.learning_rate)
        else:
            estimator.logger.info("Validation Begin")

    def epoch_end(self, estimator, *args, **kwargs) -> bool:
        msg = "[Epoch %d] Finished in %.3fs, " % (self.current_epoch, time.time() - self.epoch_start)
        estimator.logger.info((msg + _metrics_text(self.metrics)).rstrip(", "))
        self.current_epoch += 1
        self.batch_index = 0
        return False


class GradientUpdateHandler(BatchEnd):
    """Takes the optimizer step at batch end, normalizing by the batch size (the losses' first dimension
    summed over contexts); priority -2000 runs it before every other handler."""

    def __init__(self, priority: float = -2000):
        self.priority = priority

    def batch_end(self, estimator, *args, **kwargs) -> bool:
        loss = kwargs["loss"]
        shards = loss if isinstance(loss, list) else [loss]
        estimator.trainer.step(sum(shard.shape[0] for shard in shards))
        return False
