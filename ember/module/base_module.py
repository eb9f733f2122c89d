"""BaseModule: the training loop (fit), evaluation (score) and inference (predict) shared by modules.

A concrete module supplies bind / init_params / init_optimizer / forward /
backward / update / get_outputs / update_metric; this class drives them over a
DataIter, with a tqdm progress bar, per-epoch metrics and MXNet's callbacks.
"""
from __future__ import annotations

import logging
import time
import warnings
from typing import Optional

import numpy as np

from .. import metric as metric_mod
from .. import ndarray as nd
from ..base import EmberError
from ..initializer import Uniform
from ..model import BatchEndParam


class ModuleError(EmberError, RuntimeError):
    """A module was used out of order (forward before bind, update before init_optimizer, ...) or
    given incomplete parameters (a RuntimeError, as MXNet raises)."""


class ParamsError(ModuleError, ValueError):
    """Parameters the module does not have were given (a ValueError, as MXNet raises)."""


def _as_list(obj) -> list:
    if obj is None:
        return []
    return list(obj) if isinstance(obj, (list, tuple)) else [obj]


def _call_all(callbacks, *args) -> None:
    """Call a callback or each of a list of them (None: none)."""
    for cb in _as_list(callbacks):
        cb(*args)


def _num_batches(data_iter) -> Optional[int]:
    """Batches per epoch when the iterator tells its size (NDArrayIter), for the progress bar."""
    n, bs = getattr(data_iter, "num_data", None), getattr(data_iter, "batch_size", None)
    if not n or not bs:
        return None
    if getattr(data_iter, "last_batch_handle", "pad") == "pad":
        return -(-n // bs)
    return n // bs


def _progress(iterable, enabled: bool, total: Optional[int], desc: str):
    if not enabled:
        return iterable
    try:
        from tqdm import tqdm
    except ImportError:  # the progress bar is optional: MXNet code does not expect one
        return iterable
    return tqdm(iterable, total=total, desc=desc, unit="batch", leave=False, dynamic_ncols=True, mininterval=0.5)


class BaseModule:
    """Shared high-level API of modules (MXNet's mx.module.BaseModule)."""

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None

    def _set_params_front(self, arg_params, aux_params, allow_missing: bool, force_init: bool,
                          allow_extra: bool) -> bool:
        """The part of MXNet's set_params every module shares: without allow_missing it is init_params;
        an initialized module without force_init warns and keeps its values. True when that settled it."""
        if not allow_missing:
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init, allow_extra=allow_extra)
            return True
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. set_params call ignored.",
                          stacklevel=3)
            return True
        return False

    # -- checks ----------------------------------------------------------------------------
    def _require(self, binded: bool = True, params: bool = False, optimizer: bool = False, what: str = "") -> None:
        if binded and not self.binded:
            raise ModuleError(f"{what}: call bind() first")
        if params and not self.params_initialized:
            raise ModuleError(f"{what}: call init_params() (or set_params) first")
        if optimizer and not self.optimizer_initialized:
            raise ModuleError(f"{what}: call init_optimizer() first")

    @property
    def symbol(self):
        """The module's symbol."""
        return self._symbol

    # -- composite steps ---------------------------------------------------------------------
    def forward_backward(self, data_batch) -> None:
        """forward(is_train=True) then backward()."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def score(self, eval_data, eval_metric, num_batch: Optional[int] = None, batch_end_callback=None,
              score_end_callback=None, reset: bool = True, epoch: int = 0, sparse_row_id_fn=None):
        """Evaluate `eval_metric` over `eval_data`; returns its [(name, value)]."""
        self._require(params=True, what="score")
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric_mod.EvalMetric):
            eval_metric = metric_mod.create(eval_metric)
        eval_metric.reset()
        nbatch = 0
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            self.update_metric(eval_metric, batch.label)
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
        _call_all(score_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
        return eval_metric.get_name_value()

    def iter_predict(self, eval_data, num_batch: Optional[int] = None, reset: bool = True):
        """Yield (outputs without padding, batch index, batch) for each batch."""
        self._require(params=True, what="iter_predict")
        if reset:
            eval_data.reset()
        for nbatch, batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.forward(batch, is_train=False)
            pad = batch.pad or 0
            outputs = [out[0:out.shape[0] - pad].copy() for out in self.get_outputs()]
            yield outputs, nbatch, batch

    def predict(self, eval_data, num_batch: Optional[int] = None, merge_batches: bool = True,
                reset: bool = True, always_output_list: bool = False):
        """The outputs over `eval_data` (padding removed), concatenated over batches when merge_batches."""
        self._require(params=True, what="predict")
        if isinstance(eval_data, (nd.NDArray, np.ndarray)):
            from ..io import NDArrayIter
            eval_data = NDArrayIter(eval_data, batch_size=self._bound_batch_size())
        per_batch = [outs for outs, _, _ in self.iter_predict(eval_data, num_batch=num_batch, reset=reset)]
        if not per_batch:
            return []
        if not merge_batches:
            return per_batch
        num_outputs = len(per_batch[0])
        for outs in per_batch:
            if len(outs) != num_outputs:
                raise ModuleError("predict: batches have different numbers of outputs; use merge_batches=False")
        merged = [nd.array(np.concatenate([outs[i].asnumpy() for outs in per_batch], axis=0),
                           dtype=per_batch[0][i].dtype) for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    def _bound_batch_size(self) -> int:
        raise NotImplementedError

    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=Uniform(0.01), arg_params=None, aux_params=None,
            allow_missing: bool = False, force_rebind: bool = False, force_init: bool = False,
            begin_epoch: int = 0, num_epoch: Optional[int] = None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None, progress_bar: bool = True):
        """Train for epochs begin_epoch .. num_epoch-1 (binds, initializes and sets up the optimizer).

        Each epoch logs (and, with the progress bar, prints) the training metric, the time
        taken and, given eval_data, the validation metric.
        """
        if num_epoch is None:
            raise ValueError("fit: please specify num_epoch")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        if monitor is not None:
            self.install_monitor(monitor)
        self.init_params(initializer=initializer, arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer, optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric_mod.EvalMetric):
            eval_metric = metric_mod.create(eval_metric)
        total = _num_batches(train_data)
        history = []
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            eval_metric.reset()
            self._fit_epoch_begin(epoch, train_data)
            nbatch = 0
            bar = _progress(train_data, progress_bar, total, f"Epoch {epoch}")
            for nbatch, data_batch in enumerate(bar):
                if monitor is not None:
                    monitor.tic()
                self.forward_backward(data_batch)
                self.update()
                self.update_metric(eval_metric, data_batch.label)
                if monitor is not None:
                    monitor.toc_print()
                if hasattr(bar, "set_postfix") and nbatch % 10 == 0:
                    bar.set_postfix({n: f"{v:.4f}" for n, v in eval_metric.get_name_value()}, refresh=False)
                _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            if hasattr(bar, "close"):
                bar.close()
            train_values = eval_metric.get_name_value()
            lines = [f"Epoch[{epoch}] Train-{n}={v:f}" for n, v in train_values]
            lines.append(f"Epoch[{epoch}] Time cost={time.time() - tic:.3f}")
            arg_params_now, aux_params_now = self.get_params()
            _call_all(epoch_end_callback, epoch, self.symbol, arg_params_now, aux_params_now)
            record = {"epoch": epoch, "train": dict(train_values)}
            if eval_data is not None:
                res = self.score(eval_data, validation_metric, score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                lines.extend(f"Epoch[{epoch}] Validation-{n}={v:f}" for n, v in res)
                record["validation"] = dict(res)
            for line in lines:
                self.logger.info(line)
                if progress_bar:
                    print(line, flush=True)
            history.append(record)
            train_data.reset()
        return history

    def _fit_epoch_begin(self, epoch: int, train_data) -> None:
        """Hook run by fit before each epoch's batches (SVRGModule's full-gradient pass); no-op here."""

    def install_monitor(self, mon) -> None:
        """Install a monitor (its install(executor) is called for the bound executor)."""
        raise NotImplementedError(f"{type(self).__name__} does not support monitors")
