"""`Estimator`: MXNet 1.9.1's high-level training loop over a Gluon network, driven by event handlers."""
from __future__ import annotations

import copy
import logging
import sys
import warnings
from typing import List, Optional, Tuple

from ....context import Context, cpu, gpu, num_gpus
from ....metric import Loss as LossMetric
from ...data import DataLoader
from ...loss import Loss as GluonLoss
from ...trainer import Trainer
from .batch_processor import BatchProcessor
from .event_handler import (BatchBegin, BatchEnd, EpochBegin, EpochEnd, GradientUpdateHandler, LoggingHandler,
                            MetricHandler, StoppingHandler, TrainBegin, TrainEnd, ValidationHandler)
from .handler_base import _check_event_handlers
from .utils import _check_handler_metric_ref, _check_metrics, _split_batch, _suggest_metric_for_loss

__all__ = ["Estimator"]

_TRAIN_PREFIX = "training"
_VAL_PREFIX = "validation"


def _require_dataloader(data, what: str) -> None:
    if not isinstance(data, DataLoader):
        raise ValueError(f"Estimator only accepts a gluon.data.DataLoader as {what}, got {type(data).__name__}; "
                         "wrap a DataIter or NDArrays in a Dataset and a DataLoader.")


def _lacks(handlers: list, cls: type) -> bool:
    """True if no handler is a `cls`: the Estimator then adds its default one."""
    return not any(isinstance(handler, cls) for handler in handlers)


class Estimator:
    """Trains and evaluates `net` with `loss`, calling event handlers at train/epoch/batch begin and end.

    Metrics default to `[Accuracy()]` for softmax cross-entropy plus a `mx.metric.Loss` named after the loss;
    training metrics are renamed 'training <name>', validation metrics (default: copies of the training ones)
    'validation <name>'.  The network is initialized on `context` (default: gpu(0) if there is a GPU, else
    cpu()) unless it already is; the trainer defaults to SGD with learning rate 0.001.  `val_net` / `val_loss`
    (default: `net` / `loss`) are used for validation; `batch_processor` does the per-batch work.
    """

    #: logging.Logger of this estimator and its handlers (INFO and above to stdout); add handlers to redirect
    logger: Optional[logging.Logger] = None

    def __init__(self, net, loss, train_metrics=None, val_metrics=None, initializer=None, trainer=None,
                 context=None, val_net=None, val_loss=None, batch_processor=None):
        self.net = net
        self.loss = self._check_loss(loss)
        self._train_metrics = _check_metrics(train_metrics)
        self._val_metrics = _check_metrics(val_metrics)
        self._add_default_training_metrics()
        self._add_validation_metrics()
        self.val_loss = self.loss if val_loss is None else self._check_loss(val_loss)
        self.val_net = self.net if val_net is None else val_net
        # a private Logger (not logging.getLogger): each estimator's handlers and level stay its own
        self.logger = logging.Logger(name="Estimator", level=logging.INFO)
        self.logger.addHandler(logging.StreamHandler(sys.stdout))
        self.context = self._check_context(context)
        self._initialize(initializer)
        self.trainer = self._check_trainer(trainer)
        self.batch_processor = self._check_batch_processor(batch_processor)
        self.max_epoch: Optional[int] = None
        self.max_batch: Optional[int] = None
        self.batch_axis = 0

    # -- construction checks ----------------------------------------------------------------------------------
    @staticmethod
    def _check_loss(loss) -> GluonLoss:
        if not isinstance(loss, GluonLoss):
            raise ValueError(f"loss must be a gluon.loss.Loss, got {loss!r}")
        return loss

    @staticmethod
    def _check_context(context) -> List[Context]:
        available_gpus = [gpu(i) for i in range(num_gpus())]
        if not context:
            if len(available_gpus) > 1:
                warnings.warn("You have multiple GPUs, gpu(0) will be used by default. To use all of them, pass "
                              "context=[mx.gpu(0), mx.gpu(1), ...].")
            return [available_gpus[0]] if available_gpus else [cpu()]
        if isinstance(context, Context):
            context = [context]
        elif not (isinstance(context, list) and all(isinstance(c, Context) for c in context)):
            raise ValueError("context must be a Context or a list of Context, e.g. mx.cpu() or "
                             f"[mx.gpu(0), mx.gpu(1)], got {context!r}")
        for ctx in context:
            if ctx not in available_gpus and not str(ctx).startswith("cpu"):
                # AssertionError, as MXNet raises for an unavailable device
                raise AssertionError(f"{ctx} is not available; use one of: mx.cpu(), "
                                     + ", ".join(str(c) for c in available_gpus))
        return context

    def _is_initialized(self) -> bool:
        params = self.net.collect_params()
        try:
            for param in params.values():
                param.list_ctx()  # raises for a parameter neither initialized nor deferred
        except RuntimeError:
            return False
        return True

    def _initialize(self, initializer) -> None:
        if not self._is_initialized():
            # partially initialized nets (fine-tuning a new head) keep their initialized layers
            self.net.initialize(init=initializer if initializer else None, ctx=self.context)
        elif initializer:
            warnings.warn("Network already fully initialized, skipping initialization. You don't need to pass "
                          "an initializer for an initialized net; use net.initialize(init=your_initializer, "
                          "force_reinit=True) to re-initialize it.")

    def _check_trainer(self, trainer) -> Trainer:
        if trainer is None:
            warnings.warn("No trainer specified, default SGD optimizer with learning rate 0.001 is used.")
            return Trainer(self.net.collect_params(), "sgd", {"learning_rate": 0.001})
        if not isinstance(trainer, Trainer):
            raise ValueError(f"trainer must be a gluon.Trainer, got {trainer!r}")
        return trainer

    @staticmethod
    def _check_batch_processor(batch_processor) -> BatchProcessor:
        if batch_processor is None:
            return BatchProcessor()
        if not (callable(getattr(batch_processor, "fit_batch", None))
                and callable(getattr(batch_processor, "evaluate_batch", None))):
            raise ValueError("A custom batch processor must have fit_batch() and evaluate_batch() methods")
        return batch_processor

    # -- metrics --------------------------------------------------------------------------------------------
    def _add_default_training_metrics(self) -> None:
        if not self._train_metrics:
            suggested = _suggest_metric_for_loss(self.loss)
            self._train_metrics = [suggested] if suggested else []
            # the loss block's name without its instance counter: 'l2loss0' -> 'l2loss'
            self._train_metrics.append(LossMetric(self.loss.name.rstrip("0123456789")))
        # the prefixes let handlers (LoggingHandler) tell training from validation metrics
        for metric in self._train_metrics:
            if not metric.name.startswith(_TRAIN_PREFIX + " "):
                metric.name = f"{_TRAIN_PREFIX} {metric.name}"

    def _add_validation_metrics(self) -> None:
        if not self._val_metrics:
            self._val_metrics = [copy.deepcopy(metric) for metric in self._train_metrics]
        for metric in self._val_metrics:
            if _TRAIN_PREFIX in metric.name:
                metric.name = metric.name.replace(_TRAIN_PREFIX, _VAL_PREFIX)
            else:
                metric.name = f"{_VAL_PREFIX} {metric.name}"

    @property
    def train_metrics(self) -> list:
        """The training metrics (names prefixed 'training ')."""
        return self._train_metrics

    @property
    def val_metrics(self) -> list:
        """The validation metrics (names prefixed 'validation ')."""
        return self._val_metrics

    def _get_data_and_label(self, batch, ctx, batch_axis: int = 0) -> Tuple[list, list]:
        return _split_batch(batch, ctx, batch_axis)

    # -- running --------------------------------------------------------------------------------------------
    def evaluate(self, val_data, batch_axis: int = 0, event_handlers=None) -> None:
        """One pass of `val_net` over `val_data` updating `val_metrics` (through a default MetricHandler and
        LoggingHandler unless `event_handlers` has handlers of those classes)."""
        _require_dataloader(val_data, "validation data")
        for metric in self.val_metrics:
            metric.reset()
        handlers = self._prepare_default_validation_handlers(event_handlers)
        _, epoch_begin, batch_begin, batch_end, epoch_end, _ = self._categorize_handlers(handlers)
        self._run_epoch(val_data, self.batch_processor.evaluate_batch, batch_axis,
                        (epoch_begin, batch_begin, batch_end), stoppable=False)
        for handler in epoch_end:
            handler.epoch_end(self)

    def fit(self, train_data, val_data=None, epochs: Optional[int] = None, event_handlers=None,
            batches: Optional[int] = None, batch_axis: int = 0) -> None:
        """Train for exactly one of `epochs` or `batches`, validating on `val_data` (if given) every epoch.

        Besides `event_handlers`, a StoppingHandler, GradientUpdateHandler, MetricHandler, LoggingHandler and
        (with `val_data`) ValidationHandler are added unless one of that class was passed.  Training stops
        when any batch-end or epoch-end handler returns True; the epoch-end handlers still run after a
        batch-end stop.
        """
        _require_dataloader(train_data, "training data")
        if val_data is not None:
            _require_dataloader(val_data, "validation data")
        if (not epochs) == (not batches):
            raise ValueError("fit trains by exactly one kind of limit: pass either epochs or batches, not both "
                             "and not neither.")
        self.max_epoch = epochs
        self.max_batch = batches
        self.batch_axis = batch_axis
        handlers = self._prepare_default_handlers(val_data, event_handlers)
        train_begin, epoch_begin, batch_begin, batch_end, epoch_end, train_end = \
            self._categorize_handlers(handlers)
        for handler in train_begin:
            handler.train_begin(self)
        while True:
            self._run_epoch(train_data, self.batch_processor.fit_batch, batch_axis,
                            (epoch_begin, batch_begin, batch_end), stoppable=True)
            # every epoch-end handler runs (also after a batch-end stop) before the stop is honoured
            if any([handler.epoch_end(self) for handler in epoch_end]):
                break
        for handler in train_end:
            handler.train_end(self)

    def _run_epoch(self, data, process_batch, batch_axis: int, handlers: tuple, stoppable: bool) -> None:
        """One pass over `data` calling the epoch-begin, batch-begin and batch-end handlers around
        `process_batch`; with `stoppable`, a batch-end handler returning True ends the pass early."""
        epoch_begin, batch_begin, batch_end = handlers
        for handler in epoch_begin:
            handler.epoch_begin(self)
        for batch in data:
            for handler in batch_begin:
                handler.batch_begin(self, batch=batch)
            _, label, pred, loss = process_batch(self, batch, batch_axis)
            # every handler sees the batch even when an earlier one already asked to stop
            stops = [handler.batch_end(self, batch=batch, pred=pred, label=label, loss=loss)
                     for handler in batch_end]
            if stoppable and any(stops):
                return

    # -- handlers -------------------------------------------------------------------------------------------
    def _prepare_default_handlers(self, val_data, event_handlers) -> list:
        given = _check_event_handlers(event_handlers)
        defaults = [StoppingHandler(self.max_epoch, self.max_batch)]
        if _lacks(given, GradientUpdateHandler):
            defaults.append(GradientUpdateHandler())
        if _lacks(given, MetricHandler):
            defaults.append(MetricHandler(metrics=self.train_metrics))
        if _lacks(given, ValidationHandler) and val_data:
            defaults.append(ValidationHandler(val_data=val_data, eval_fn=self.evaluate))
        if _lacks(given, LoggingHandler):
            defaults.append(LoggingHandler(metrics=self.train_metrics))
        return self._merge_handlers(given, defaults, self.train_metrics + self.val_metrics)

    def _prepare_default_validation_handlers(self, event_handlers) -> list:
        given = _check_event_handlers(event_handlers)
        defaults = []
        if _lacks(given, MetricHandler):
            defaults.append(MetricHandler(metrics=self.val_metrics))
        if _lacks(given, LoggingHandler):
            defaults.append(LoggingHandler(metrics=self.val_metrics))
        return self._merge_handlers(given, defaults, self.val_metrics)

    @staticmethod
    def _merge_handlers(given: list, defaults: list, known_metrics: list) -> list:
        """User handlers, then defaults, stably sorted by priority; when both kinds are present every handler
        must refer only to the estimator's own metrics (the ones the default handlers update)."""
        handlers = given + defaults
        if given and defaults:
            for handler in handlers:
                _check_handler_metric_ref(handler, known_metrics)
        handlers.sort(key=lambda handler: getattr(handler, "priority", 0))
        return handlers

    @staticmethod
    def _categorize_handlers(event_handlers) -> tuple:
        """Split handlers into the lists called at train begin, epoch begin, batch begin, batch end, epoch end
        and train end, by the event mixins each one inherits."""
        events = (TrainBegin, EpochBegin, BatchBegin, BatchEnd, EpochEnd, TrainEnd)
        return tuple([handler for handler in event_handlers if isinstance(handler, event)] for event in events)
