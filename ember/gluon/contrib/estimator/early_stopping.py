"""`EarlyStoppingHandler`: stop training when a monitored metric stops improving."""
from __future__ import annotations

import math
import warnings
from typing import Optional

from ....metric import CompositeEvalMetric, EvalMetric
from .handler_base import EpochEnd, TrainBegin, TrainEnd
from .utils import _improvement_op, _worst_value

__all__ = ["EarlyStoppingHandler"]


class EarlyStoppingHandler(TrainBegin, EpochEnd, TrainEnd):
    """Stops `fit` once `monitor` has not improved by more than `min_delta` for `patience` epochs in a row.

    `mode` is 'min', 'max' or 'auto' (max for accuracy/F1 names, min otherwise); `baseline`, if given, is the
    value the first epoch must beat.  `stopped_epoch` is the (0-based) epoch training stopped after.
    """

    def __init__(self, monitor: EvalMetric, min_delta: float = 0, patience: int = 0, mode: str = "auto",
                 baseline: Optional[float] = None):
        if not isinstance(monitor, EvalMetric):
            raise ValueError("EarlyStoppingHandler needs a monitor: pass one of the metric objects from "
                             "estimator.train_metrics or estimator.val_metrics.")
        if isinstance(monitor, CompositeEvalMetric):
            raise ValueError("EarlyStoppingHandler cannot monitor a CompositeEvalMetric; pass a single metric.")
        self.monitor = monitor
        self.baseline = baseline
        self.patience = patience
        self.monitor_op = _improvement_op(mode, monitor, "EarlyStoppingHandler")
        # signed so that `value - min_delta` must beat best in the direction of improvement
        self.min_delta = min_delta if self.monitor_op(1, 0) else -min_delta
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.best = _worst_value(self.monitor_op)

    def train_begin(self, estimator, *args, **kwargs) -> None:
        self.wait = 0
        self.stopped_epoch = 0
        self.current_epoch = 0
        self.stop_training = False
        self.best = self.baseline if self.baseline is not None else _worst_value(self.monitor_op)

    def epoch_end(self, estimator, *args, **kwargs) -> bool:
        name, value = self.monitor.get()
        if math.isnan(value):
            warnings.warn(f"EarlyStoppingHandler: {name} has no value; pass a metric from "
                          "estimator.train_metrics or estimator.val_metrics as monitor.", RuntimeWarning)
        elif self.monitor_op(value - self.min_delta, self.best):
            self.best = value
            self.wait = 0
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = self.current_epoch
                self.stop_training = True
        self.current_epoch += 1
        return self.stop_training

    def train_end(self, estimator, *args, **kwargs) -> None:
        if self.stopped_epoch > 0:
            estimator.logger.info("[Epoch %d] EarlyStoppingHandler: early stopping because %s did not improve",
                                  self.stopped_epoch, self.monitor.get()[0])
