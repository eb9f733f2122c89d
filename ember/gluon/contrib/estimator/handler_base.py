"""The event-handler base class and its six event mixins.

A handler takes part in an event by inheriting that event's mixin: the Estimator sorts its handlers into one
list per mixin, so only handlers that declare an event are called for it.  `batch_end` and `epoch_end` return
True to ask the Estimator to stop training.
"""
from __future__ import annotations

from typing import List

__all__ = ["EventHandler", "TrainBegin", "TrainEnd", "EpochBegin", "EpochEnd", "BatchBegin", "BatchEnd"]


class EventHandler:
    """Base class of every Estimator event handler; `priority` (default 0) orders handlers, lowest first."""


def _check_event_handlers(handlers) -> List[EventHandler]:
    """Normalize None / one handler / a list of handlers to a new list (the caller's list is not changed)."""
    if isinstance(handlers, EventHandler):
        return [handlers]
    handlers = list(handlers or [])
    if not all(isinstance(handler, EventHandler) for handler in handlers):
        raise ValueError(f"handlers must be an EventHandler or a list of EventHandler, got: {handlers!r}")
    return handlers


class TrainBegin(EventHandler):
    """Called once before the first epoch of `fit`."""

    def train_begin(self, estimator, *args, **kwargs) -> None:
        """Hook: training is about to start."""


class TrainEnd(EventHandler):
    """Called once after `fit` stops."""

    def train_end(self, estimator, *args, **kwargs) -> None:
        """Hook: training has finished."""


class EpochBegin(EventHandler):
    """Called before each pass over the data (in `evaluate`: before the single pass)."""

    def epoch_begin(self, estimator, *args, **kwargs) -> None:
        """Hook: an epoch is about to start."""


class EpochEnd(EventHandler):
    """Called after each pass over the data; returning True stops training."""

    def epoch_end(self, estimator, *args, **kwargs) -> bool:
        """Hook: an epoch has finished; return True to stop training."""
        return False


class BatchBegin(EventHandler):
    """Called before each batch with `batch=`."""

    def batch_begin(self, estimator, *args, **kwargs) -> None:
        """Hook: a batch is about to be processed."""


class BatchEnd(EventHandler):
    """Called after each batch with `batch=`, `pred=`, `label=`, `loss=`; returning True stops training."""

    def batch_end(self, estimator, *args, **kwargs) -> bool:
        """Hook: a batch has been processed; return True to stop training."""
        return False
