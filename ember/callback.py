"""`mx.callback`: the usual batch/epoch callbacks for Module.fit."""
from __future__ import annotations

import logging
import time
from typing import Callable


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
    """Batch-end callback logging samples/s (and the metric) every `frequent` batches."""

    def __init__(self, batch_size: int, frequent: int = 50, auto_reset: bool = True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0.0
        self.last_count = 0

    def __call__(self, param) -> None:
        count = param.nbatch
        if self.last_count > count:
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent == 0:
            elapsed = max(time.time() - self.tic, 1e-9)
            speed = self.frequent * self.batch_size / elapsed
            msg = "Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" % (param.epoch, count - self.frequent, count, speed)
            if param.eval_metric is not None:
                pairs = param.eval_metric.get_name_value()
                if self.auto_reset:
                    param.eval_metric.reset_local()
                msg += "".join("\t%s=%f" % pair for pair in pairs)
            logging.info(msg)
            self.tic = time.time()
