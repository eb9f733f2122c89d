"""`CheckpointHandler`: periodic, rotating and best-model checkpoints, and resuming from them.

Files in `model_dir` (MXNet 1.9.1's names): `{prefix}-epoch{E}batch{B}.params` / `.states` (the network's
`save_parameters` and the trainer's `save_states`), `{prefix}-best.params` / `.states` with `save_best`, and
`{prefix}-symbol.json` after the first batch when the network is a hybridized HybridBlock.  E counts epochs
from 0; B is the number of batches done when saved at epoch end, the 0-based index of the batch when saved
at batch end.
"""
from __future__ import annotations

import math
import os
import re
import warnings
from typing import List, Optional, Tuple

from ....metric import EvalMetric
from .handler_base import BatchEnd, EpochEnd, TrainBegin
from .utils import _improvement_op, _worst_value

__all__ = ["CheckpointHandler"]


class CheckpointHandler(TrainBegin, BatchEnd, EpochEnd):
    """Saves parameters and trainer states every `epoch_period` epochs or `batch_period` batches.

    Keeps the newest `max_checkpoints` periodic checkpoints (the best one is not counted); with
    `save_best=True` also keeps the checkpoint where `monitor` was best (`mode` 'min', 'max' or 'auto').
    With `resume_from_checkpoint=True` the newest checkpoint in `model_dir` is loaded at train begin and the
    estimator's epoch (or batch) budget is reduced by what it already trained.
    """

    def __init__(self, model_dir: str, model_prefix: str = "model", monitor: Optional[EvalMetric] = None,
                 verbose: int = 0, save_best: bool = False, mode: str = "auto", epoch_period: Optional[int] = 1,
                 batch_period: Optional[int] = None, max_checkpoints: int = 5,
                 resume_from_checkpoint: bool = False):
        if save_best and not isinstance(monitor, EvalMetric):
            raise ValueError("save_best=True needs a monitor: pass one of the metric objects from "
                             "estimator.train_metrics or estimator.val_metrics.")
        os.makedirs(model_dir, exist_ok=True)
        self.model_dir = model_dir
        self.model_prefix = model_prefix
        self.monitor = monitor
        self.verbose = verbose
        self.save_best = save_best
        self.epoch_period = epoch_period
        self.batch_period = batch_period
        self.max_checkpoints = max_checkpoints
        self.resume_from_checkpoint = resume_from_checkpoint
        self.current_batch = 0
        self.current_epoch = 0
        self.trained_epoch = -1
        self.trained_batch = -1
        self.saved_checkpoints: List[str] = []
        if save_best:
            self.monitor_op = _improvement_op(mode, monitor, "CheckpointHandler")
            self.best = _worst_value(self.monitor_op)

    def train_begin(self, estimator, *args, **kwargs) -> None:
        self.current_epoch = 0
        self.current_batch = 0
        if self.save_best:
            self.best = _worst_value(self.monitor_op)
        if self.resume_from_checkpoint:
            # the checkpoint numbers are only meaningful when counted in the unit training is limited by
            if estimator.max_batch:
                wanted, other = self.batch_period, self.epoch_period
            else:
                wanted, other = self.epoch_period, self.batch_period
            if not wanted or other:
                raise AssertionError("To resume from a checkpoint, save only by the period type training is "
                                     "limited by: epoch_period (and batch_period=None) when training for a "
                                     "number of epochs, batch_period (and epoch_period=None) for batches.")
            self._resume(estimator)

    def batch_end(self, estimator, *args, **kwargs) -> bool:
        if self.current_batch == 0:
            # the graph exists only after a hybridized forward, so the symbol is written after the first batch
            self._save_symbol(estimator)
        if self.batch_period and (self.current_batch + 1) % self.batch_period == 0:
            self._save_checkpoint(estimator)
        self.current_batch += 1
        return False

    def epoch_end(self, estimator, *args, **kwargs) -> bool:
        if self.epoch_period and (self.current_epoch + 1) % self.epoch_period == 0:
            self._save_checkpoint(estimator)
        self.current_epoch += 1
        return False

    # -- saving ---------------------------------------------------------------------------------------------
    def _checkpoint_numbers(self, estimator) -> Tuple[int, int]:
        if not self.resume_from_checkpoint:
            return self.current_epoch, self.current_batch
        # continue the numbering of the run resumed from; at epoch end the batch counter is already advanced
        batch = self.current_batch + self.trained_batch + (0 if estimator.max_epoch else 1)
        return self.current_epoch + self.trained_epoch + 1, batch

    def _save_checkpoint(self, estimator) -> None:
        epoch, batch = self._checkpoint_numbers(estimator)
        prefix = "%s-epoch%dbatch%d" % (self.model_prefix, epoch, batch)
        self._save_params_and_trainer(estimator, prefix)
        self._rotate(prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: trained total %d batches, saving model at %s "
                                  "with prefix: %s", self.current_epoch, self.current_batch + 1,
                                  self.model_dir, prefix)
        if self.save_best:
            self._save_if_best(estimator)

    def _save_if_best(self, estimator) -> None:
        name, value = self.monitor.get()
        if math.isnan(value):
            warnings.warn(f"CheckpointHandler: skipping the best-model check because {name} has no value; pass "
                          "a metric from estimator.train_metrics or estimator.val_metrics as monitor.",
                          RuntimeWarning)
            return
        if not self.monitor_op(value, self.best):
            if self.verbose > 0:
                estimator.logger.info("[Epoch %d] CheckpointHandler: %s did not improve from %0.5f, not "
                                      "updating the best model", self.current_epoch, name, self.best)
            return
        prefix = self.model_prefix + "-best"
        self._save_params_and_trainer(estimator, prefix)
        if self.verbose > 0:
            estimator.logger.info("[Epoch %d] CheckpointHandler: %s improved from %0.5f to %0.5f, updating the "
                                  "best model at %s with prefix: %s", self.current_epoch, name, self.best,
                                  value, self.model_dir, prefix)
        self.best = value

    def _save_params_and_trainer(self, estimator, prefix: str) -> None:
        estimator.net.save_parameters(os.path.join(self.model_dir, prefix + ".params"))
        estimator.trainer.save_states(os.path.join(self.model_dir, prefix + ".states"))

    def _rotate(self, prefix: str) -> None:
        """Record a new periodic checkpoint and delete the oldest ones beyond `max_checkpoints`."""
        self.saved_checkpoints.append(prefix)
        while len(self.saved_checkpoints) > self.max_checkpoints:
            oldest = self.saved_checkpoints.pop(0)
            for ext in (".params", ".states"):
                path = os.path.join(self.model_dir, oldest + ext)
                if os.path.exists(path):
                    os.remove(path)

    def _save_symbol(self, estimator) -> None:
        symbol_file = os.path.join(self.model_dir, self.model_prefix + "-symbol.json")
        graph = getattr(estimator.net, "_cached_graph", None)
        if graph:
            graph[1].save(symbol_file)
        else:
            estimator.logger.info("Model architecture (symbol file) is not saved: build the model from "
                                  "HybridBlocks and call net.hybridize() before passing it to the Estimator to "
                                  "save it as %s.", symbol_file)

    # -- resuming -------------------------------------------------------------------------------------------
    def _existing_checkpoints(self) -> List[Tuple[int, int, str]]:
        """(epoch, batch, prefix) of every periodic checkpoint in model_dir, oldest first."""
        start = self.model_prefix + "-epoch"
        pattern = re.compile(re.escape(start) + r"(\d+)batch(\d+)\.params$")
        found = []
        for fname in os.listdir(self.model_dir):
            if not (fname.startswith(start) and ".params" in fname):
                continue
            match = pattern.match(fname)
            if match is None:
                raise ValueError(f"Cannot parse checkpoint file {fname!r}: checkpoints must be named "
                                 "{model_prefix}-epoch{epoch}batch{batch}.params, each with a .states file")
            found.append((int(match.group(1)), int(match.group(2)), fname[:-len(".params")]))
        return sorted(found)

    def _resume(self, estimator) -> None:
        existing = self._existing_checkpoints()
        # checkpoints of the earlier run count towards max_checkpoints, oldest deleted first
        self.saved_checkpoints = [prefix for _, _, prefix in existing]
        if not existing:
            self.trained_epoch = self.trained_batch = -1
            budget = ("%d batches" % estimator.max_batch if estimator.max_batch
                      else "%d epochs" % estimator.max_epoch)
            estimator.logger.info("CheckpointHandler: no checkpoint found, training from scratch for %s", budget)
            return
        self.trained_epoch, self.trained_batch, prefix = existing[-1]
        if estimator.max_epoch:
            if self.trained_epoch >= estimator.max_epoch - 1:
                raise ValueError(f"Found a checkpoint that already reached the maximum of {estimator.max_epoch} "
                                 "epochs; pass resume_from_checkpoint=False to train from scratch.")
            estimator.max_epoch -= self.trained_epoch + 1
            budget = "%d epochs" % estimator.max_epoch
        else:
            if self.trained_batch >= estimator.max_batch - 1:
                raise ValueError(f"Found a checkpoint that already reached the maximum of {estimator.max_batch} "
                                 "batches; pass resume_from_checkpoint=False to train from scratch.")
            estimator.max_batch -= self.trained_batch + 1
            budget = "%d batches" % estimator.max_batch
        param_file = os.path.join(self.model_dir, prefix + ".params")
        states_file = os.path.join(self.model_dir, prefix + ".states")
        if not os.path.exists(states_file):
            raise AssertionError(f"Failed to load checkpoint: {states_file} does not exist")
        estimator.net.load_parameters(param_file, ctx=estimator.context)
        estimator.trainer.load_states(states_file)
        estimator.logger.warning("CheckpointHandler: resumed from epoch %d batch %d, continuing to train for %s",
                                 self.trained_epoch, self.trained_batch, budget)
