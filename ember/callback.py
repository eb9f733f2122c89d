"""`mx.callback`: the usual batch/epoch callbacks for Module.fit."""
from __future__ import annotations

import logging
import math
import time
from typing import Callable


def module_checkpoint(mod, prefix: str, period: int = 1, save_optimizer_states: bool = False) -> Callable:
    """Epoch-end callback calling mod.save_checkpoint every `period` epochs (as epoch+1, like MXNet)."""
    period = int(max(1, period))

    def _callback(iter_no, sym=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def do_checkpoint(prefix: str, period: int = 1) -> Callable:
    """Epoch-end callback saving a checkpoint every `period` epochs (as epoch+1, like MXNet)."""
    from .model import save_checkpoint
    period = int(max(1, period))

    def _callback(iter_no, sym, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, sym, arg, aux)
    return _callback


def log_train_metric(period: int, auto_reset: bool = False) -> Callable:
    """Batch-end callback logging the training metric every `period` batches."""
    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch, name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Batch-end callback logging samples/s (and the metric) every `frequent` batches, as MXNet's:
    'Epoch[e] Batch [a-b]\tSpeed: x samples/sec\tname=value' (with auto_reset the metric is reset
    after each log; without it the range starts at 0)."""

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0.0
        self.last_count = 0

    def __call__(self, param) -> None:
        count = param.nbatch
        if self.last_count > count:  # a new epoch
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        if param.eval_metric is not None:
            pairs = param.eval_metric.get_name_value()
            values = [x for pair in pairs for x in pair]
            if self.auto_reset:
                param.eval_metric.reset_local()
            logging.info("Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" + "\t%s=%f" * len(pairs),
                         param.epoch, count - self.frequent if self.auto_reset else 0, count, speed, *values)
        else:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count, speed)
        self.tic = time.time()


class ProgressBar:
    """Batch-end callback logging a bar of the share of the epoch's `total` batches done."""

    def __init__(self, total: int, length: int = 80):
        if total <= 0:
            raise ValueError(f"ProgressBar: total must be a positive number of batches, got {total}")
        self.bar_len = length
        self.total = total

    def __call__(self, param) -> None:
        count = param.nbatch
        filled = int(round(self.bar_len * count / float(self.total)))
        percents = math.ceil(100.0 * count / float(self.total))
        logging.info("[%s] %s%s\r", "=" * filled + "-" * (self.bar_len - filled), percents, "%")


class LogValidationMetricsCallback:
    """Eval-end callback logging 'Epoch[e] Validation-name=value' for each metric value."""

    def __call__(self, param) -> None:
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
