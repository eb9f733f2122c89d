"""Argument checks and small helpers shared by the Estimator, its handlers and its batch processor."""
from __future__ import annotations

import warnings
from typing import Callable, Iterable, List, Sequence, Tuple

import numpy as np

from ....metric import Accuracy, CompositeEvalMetric, EvalMetric
from ...loss import SoftmaxCrossEntropyLoss
from ...utils import split_and_load

__all__: List[str] = []  # helpers only; nothing here is part of the public API


def _check_metrics(metrics) -> List[EvalMetric]:
    """Normalize None / one metric / a list of metrics to a flat list; a composite is unpacked into its parts
    (handlers update and log each part separately, as MXNet does)."""
    if isinstance(metrics, CompositeEvalMetric):
        return [part for metric in metrics.metrics for part in _check_metrics(metric)]
    if isinstance(metrics, EvalMetric):
        return [metrics]
    metrics = list(metrics or [])
    if not all(isinstance(metric, EvalMetric) for metric in metrics):
        raise ValueError("metrics must be an EvalMetric or a list of EvalMetric (see mx.metric.EvalMetric), "
                         f"got {metrics!r}")
    return metrics


def _handler_metric_refs(handler) -> Iterable[EvalMetric]:
    """Every metric a handler holds in an attribute whose name contains 'metric' (the attributes MXNet checks)."""
    for attribute in dir(handler):
        if "metric" not in attribute:
            continue
        value = getattr(handler, attribute, None)
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, EvalMetric):
                yield item


def _check_handler_metric_ref(handler, known_metrics) -> None:
    """Raise ValueError if `handler` refers to a metric the estimator does not update: such a metric would
    stay empty (nan) while the estimator's default handlers update their own copies."""
    for metric in _handler_metric_refs(handler):
        if metric not in known_metrics:
            raise ValueError(f"Event handler {type(handler).__name__} refers to metric {metric.name!r}, which is "
                             "neither in estimator.train_metrics nor in estimator.val_metrics; use the metric "
                             "objects from those lists so that the estimator updates them.")


def _suggest_metric_for_loss(loss):
    """The metric that goes with a loss when the user gave none (accuracy for softmax cross-entropy)."""
    return Accuracy() if isinstance(loss, SoftmaxCrossEntropyLoss) else None


def _split_batch(batch: Sequence, ctx_list, batch_axis: int = 0) -> Tuple[list, list]:
    """Slice a (data, label) batch along `batch_axis` into one shard per context."""
    data = split_and_load(batch[0], ctx_list=ctx_list, batch_axis=batch_axis)
    label = split_and_load(batch[1], ctx_list=ctx_list, batch_axis=batch_axis)
    return data, label


def _improvement_op(mode: str, monitor: EvalMetric, owner: str) -> Callable:
    """The comparison (np.less or np.greater) saying whether a monitored value improved.

    'auto' picks np.greater for accuracy- and F1-like metric names and np.less otherwise, and warns which one
    it chose, as MXNet warns; an unknown mode warns and falls back to 'auto'.
    """
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{owner} mode {mode!r} is unknown, falling back to 'auto' (max for accuracy and f1 "
                      "metrics, min otherwise)", RuntimeWarning)
        mode = "auto"
    if mode == "min":
        return np.less
    if mode == "max":
        return np.greater
    name = monitor.get()[0]
    if "acc" in name.lower() or "f1" in name.lower():
        warnings.warn(f"`greater` operator will be used to determine if {name} has improved. Specify "
                      "mode='min' to use `less` instead, or mode='max' to silence this warning.")
        return np.greater
    warnings.warn(f"`less` operator will be used to determine if {name} has improved. Specify "
                  "mode='max' to use `greater` instead, or mode='min' to silence this warning.")
    return np.less


def _worst_value(op: Callable) -> float:
    """The starting 'best' value for an improvement comparison: anything real improves on it."""
    return float("inf") if op is np.less else float("-inf")
