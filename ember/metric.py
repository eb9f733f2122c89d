"""`mx.metric`: evaluation metrics accumulated over batches (MXNet 1.x semantics).

Each metric keeps a running `sum_metric` / `num_inst` (reset by `reset_local`,
e.g. every logging interval) and global totals (reset only by `reset`).
`update(labels, preds)` takes lists of NDArrays (or numpy arrays); the values
are read back to numpy, which waits on the engine for the producing ops.
"""
from __future__ import annotations

import json
import math
from collections import OrderedDict
from typing import Callable, Dict, List, Optional, Tuple, Union

import numpy

from .base import EmberError
from .imperative.ndarray import NDArray


class MetricError(EmberError, ValueError):
    """A metric was named wrongly or given labels/predictions it cannot compare."""


_REGISTRY: Dict[str, type] = {}


def register(klass: type) -> type:
    """Class decorator: make an EvalMetric subclass creatable by name and aliases."""
    if not isinstance(klass, type) or not issubclass(klass, EvalMetric):
        raise TypeError(f"only EvalMetric subclasses can be registered, got {klass!r}")
    _REGISTRY[klass.__name__.lower()] = klass
    for alias in getattr(klass, "_aliases", ()):
        _REGISTRY[alias] = klass
    return klass


def alias(*aliases: str) -> Callable[[type], type]:
    """Class decorator: further names `create` accepts for a registered metric (MXNet's mx.metric.alias)."""
    def decorate(klass: type) -> type:
        klass._aliases = tuple(getattr(klass, "_aliases", ())) + tuple(a.lower() for a in aliases)
        for name in aliases:
            _REGISTRY[name.lower()] = klass
        return klass
    return decorate


def _to_numpy(x) -> numpy.ndarray:
    if isinstance(x, NDArray):
        return x.asnumpy()
    if isinstance(x, numpy.ndarray):
        return x
    raise TypeError(f"metric inputs must be NDArrays or numpy arrays, got {type(x).__name__}")


def check_label_shapes(labels, preds, wrap: bool = False, shape: bool = False):
    """Check that labels and preds have the same length (or shape); wrap single arrays in lists."""
    if wrap:
        if isinstance(labels, (NDArray, numpy.ndarray)):
            labels = [labels]
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
    label_shape, pred_shape = (labels.shape, preds.shape) if shape else (len(labels), len(preds))
    if label_shape != pred_shape:
        raise MetricError(f"Shape of labels {label_shape} does not match shape of predictions {pred_shape}")
    return labels, preds


def _checked_pairs(labels, preds):
    """(label, pred) pairs of lists of equal length (single arrays count as one-element lists)."""
    return zip(*check_label_shapes(labels, preds, True))


class EvalMetric:
    """Base class: name, running and global sums, get/get_name_value/reset/update."""

    def __init__(self, name: str, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self) -> str:
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self) -> dict:
        """The constructor arguments, to re-create the metric."""
        config = self._kwargs.copy()
        config.update({"metric": type(self).__name__, "name": self.name, "output_names": self.output_names,
                       "label_names": self.label_names})
        return config

    def update_dict(self, label: dict, pred: dict) -> None:
        """Update from dicts name -> array, selecting output_names / label_names if set."""
        pred = [pred[n] for n in self.output_names] if self.output_names is not None else list(pred.values())
        label = [label[n] for n in self.label_names] if self.label_names is not None else list(label.values())
        self.update(label, pred)

    def update(self, labels, preds) -> None:
        """Accumulate one batch of labels and predictions."""
        raise NotImplementedError(f"{type(self).__name__} must define update()")

    def _add(self, value: float, count: int) -> None:
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self) -> None:
        """Clear the running and the global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self) -> None:
        """Clear the running statistics only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def _value(self, sum_metric, num_inst):
        return float(sum_metric / num_inst)

    def get(self) -> Tuple[str, float]:
        """(name, value) of the running statistics; value is nan before any update."""
        if self.num_inst == 0:
            return self.name, float("nan")
        return self.name, self._value(self.sum_metric, self.num_inst)

    def get_global(self) -> Tuple[str, float]:
        """(name, value) since the last reset()."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return self.name, float("nan")
        return self.name, self._value(self.global_sum_metric, self.global_num_inst)

    @staticmethod
    def _pairs(name, value) -> List[Tuple[str, float]]:
        names = name if isinstance(name, list) else [name]
        values = value if isinstance(value, list) else [value]
        return list(zip(names, values))

    def get_name_value(self) -> List[Tuple[str, float]]:
        """[(name, value)] of the running statistics."""
        return self._pairs(*self.get())

    def get_global_name_value(self) -> List[Tuple[str, float]]:
        """[(name, value)] since the last reset()."""
        return self._pairs(*self.get_global())


@register
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; get() returns lists of names and values."""
    _aliases = ("composite",)

    def __init__(self, metrics=None, name: str = "composite", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric) -> None:
        """Add a metric (instance, name or function)."""
        self.metrics.append(create(metric))

    def get_metric(self, index: int) -> EvalMetric:
        """The child metric at `index`."""
        if not -len(self.metrics) <= index < len(self.metrics):
            raise IndexError(f"metric index {index} is out of range for {len(self.metrics)} metrics")
        return self.metrics[index]

    def update_dict(self, labels: dict, preds: dict) -> None:
        if self.label_names is not None:
            labels = OrderedDict(i for i in labels.items() if i[0] in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict(i for i in preds.items() if i[0] in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds) -> None:
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self) -> None:
        for metric in getattr(self, "metrics", ()):  # reset() runs in __init__ before metrics exist
            metric.reset()

    def reset_local(self) -> None:
        for metric in self.metrics:
            metric.reset_local()

    def _collect(self, getter: str):
        names, values = [], []
        for metric in self.metrics:
            name, value = getattr(metric, getter)()
            names.extend(name if isinstance(name, list) else [name])
            values.extend(value if isinstance(value, list) else [value])
        return names, values

    def get(self):
        return self._collect("get")

    def get_global(self):
        return self._collect("get_global")

    def get_config(self) -> dict:
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


@register
class Accuracy(EvalMetric):
    """Fraction of samples whose argmax (over `axis`) equals the label."""
    _aliases = ("acc",)

    def __init__(self, axis: int = 1, name: str = "accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds) -> None:
        for label, pred in _checked_pairs(labels, preds):
            label, pred = _to_numpy(label), _to_numpy(pred)
            if pred.shape != label.shape:
                pred = numpy.argmax(pred, axis=self.axis)
            pred = pred.astype(numpy.int32).ravel()
            label = label.astype(numpy.int32).ravel()
            if label.shape != pred.shape:
                raise MetricError(f"Accuracy: {label.size} labels but {pred.size} predicted labels")
            self._add(int((pred == label).sum()), len(pred))


@register
class TopKAccuracy(EvalMetric):
    """Fraction of samples whose label is among the `top_k` highest predictions."""
    _aliases = ("top_k_accuracy", "top_k_acc")

    def __init__(self, top_k: int = 1, name: str = "top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names, has_global_stats=True)
        if top_k <= 1:
            raise MetricError(f"TopKAccuracy needs top_k > 1 (use Accuracy for top 1), got {top_k}")
        self.top_k = top_k
        self.name += f"_{top_k}"

    def update(self, labels, preds) -> None:
        for label, pred in _checked_pairs(labels, preds):
            pred = _to_numpy(pred).astype(numpy.float32)
            label = _to_numpy(label).astype(numpy.int64).ravel()
            if pred.ndim == 1:
                pred = pred[:, None]
            if pred.ndim != 2:
                raise MetricError(f"TopKAccuracy: predictions must be 1-D or 2-D, got shape {pred.shape}")
            if pred.shape[0] != label.shape[0]:
                raise MetricError(f"TopKAccuracy: {label.shape[0]} labels but {pred.shape[0]} predictions")
            k = min(pred.shape[1], self.top_k)
            top = numpy.argpartition(pred, -k, axis=1)[:, -k:]
            self._add(int((top == label[:, None]).any(axis=1).sum()), pred.shape[0])


def _pick_probs(label, pred, metric: str) -> numpy.ndarray:
    label = _to_numpy(label).ravel()
    pred = _to_numpy(pred)
    if pred.ndim != 2 or label.shape[0] != pred.shape[0]:
        raise MetricError(f"{metric}: predictions must be (batch, classes) matching {label.shape[0]} labels, "
                          f"got shape {pred.shape}")
    index = label.astype(numpy.int64)
    if index.size and (index.min() < 0 or index.max() >= pred.shape[1]):
        raise MetricError(f"{metric}: labels must be class indices in [0, {pred.shape[1]}), "
                          f"got range [{index.min()}, {index.max()}]")
    return pred[numpy.arange(label.shape[0]), index]


@register
class CrossEntropy(EvalMetric):
    """Mean of -log(p[label] + eps) over samples, for predicted class probabilities."""
    _aliases = ("ce",)

    def __init__(self, eps: float = 1e-12, name: str = "cross-entropy", output_names=None, label_names=None):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names, has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds) -> None:
        for label, pred in _checked_pairs(labels, preds):
            prob = _pick_probs(label, pred, type(self).__name__)
            self._add(float((-numpy.log(prob + self.eps)).sum()), prob.shape[0])


@register
class NegativeLogLikelihood(CrossEntropy):
    """Same value as CrossEntropy, named 'nll-loss'."""
    _aliases = ("nll_loss",)

    def __init__(self, eps: float = 1e-12, name: str = "nll-loss", output_names=None, label_names=None):
        super().__init__(eps=eps, name=name, output_names=output_names, label_names=label_names)


def _as_columns(label, pred):
    label, pred = _to_numpy(label), _to_numpy(pred)
    if label.ndim == 1:
        label = label.reshape(label.shape[0], 1)
    if pred.ndim == 1:
        pred = pred.reshape(pred.shape[0], 1)
    try:
        return numpy.broadcast_arrays(label, pred)
    except ValueError:
        raise MetricError(f"labels of shape {label.shape} and predictions of shape {pred.shape} "
                          "cannot be compared") from None


class _Regression(EvalMetric):
    """Per-batch error averaged over batches (MXNet counts one instance per batch)."""

    def __init__(self, name: str, output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def _batch_error(self, diff: numpy.ndarray) -> float:
        raise NotImplementedError

    def update(self, labels, preds) -> None:
        for label, pred in _checked_pairs(labels, preds):
            label, pred = _as_columns(label, pred)
            self._add(float(self._batch_error(label - pred)), 1)


@register
class MAE(_Regression):
    """Mean absolute error."""

    def __init__(self, name: str = "mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _batch_error(self, diff):
        return numpy.abs(diff).mean()


@register
class MSE(_Regression):
    """Mean squared error."""

    def __init__(self, name: str = "mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _batch_error(self, diff):
        return (diff ** 2.0).mean()


@register
class RMSE(_Regression):
    """Root mean squared error (per batch, then averaged over batches)."""

    def __init__(self, name: str = "rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    def _batch_error(self, diff):
        return numpy.sqrt((diff ** 2.0).mean())


@register
class Loss(EvalMetric):
    """Mean of the predictions themselves (outputs that already are losses); labels are ignored."""

    def __init__(self, name: str = "loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names, has_global_stats=True)

    def update(self, _, preds) -> None:
        if isinstance(preds, (NDArray, numpy.ndarray)):
            preds = [preds]
        for pred in preds:
            pred = _to_numpy(pred)
            self._add(float(pred.sum()), pred.size)


@register
class Torch(Loss):
    """Loss metric named 'torch' (for Torch criterion outputs)."""

    def __init__(self, name: str = "torch", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


@register
class Caffe(Loss):
    """Loss metric named 'caffe' (for Caffe criterion outputs)."""

    def __init__(self, name: str = "caffe", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names)


class _BinaryCounts:
    """True/false positive/negative counts since reset_local (local) and since reset (global):
    the sufficient statistics of F1 and MCC. Label 1 is the positive class; the predicted class is
    the argmax over axis 1 of the prediction."""

    _FIELDS = ("tp", "fp", "fn", "tn")

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.local = numpy.zeros(4, numpy.int64)
        self.total = numpy.zeros(4, numpy.int64)

    def reset_local(self) -> None:
        self.local = numpy.zeros(4, numpy.int64)

    def update(self, label, pred, metric: str) -> None:
        label = _to_numpy(label).astype(numpy.int32).ravel()
        pred = _to_numpy(pred)
        if pred.ndim != 2 or pred.shape[0] != label.shape[0]:
            raise MetricError(f"{metric}: predictions must be (batch, classes) matching {label.shape[0]} labels, "
                              f"got shape {pred.shape}")
        if numpy.unique(label).size > 2:
            raise MetricError(f"{metric} currently only supports binary classification "
                              f"(labels seen: {numpy.unique(label).tolist()})")
        pred_pos, label_pos = pred.argmax(axis=1) == 1, label == 1
        counts = numpy.array([(pred_pos & label_pos).sum(), (pred_pos & ~label_pos).sum(),
                              (~pred_pos & label_pos).sum(), (~pred_pos & ~label_pos).sum()], numpy.int64)
        self.local += counts
        self.total += counts

    @staticmethod
    def fscore(counts) -> float:
        tp, fp, fn, _ = (float(c) for c in counts)
        precision = tp / (tp + fp) if tp + fp > 0 else 0.0
        recall = tp / (tp + fn) if tp + fn > 0 else 0.0
        return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0

    @staticmethod
    def matthews(counts) -> float:
        """MCC; factors of the denominator that are 0 count as 1 (so no division by zero), as in MXNet."""
        tp, fp, fn, tn = (float(c) for c in counts)
        if tp + fp + fn + tn == 0:
            return 0.0
        denom = 1.0
        for term in (tp + fp, tp + fn, tn + fp, tn + fn):
            if term != 0.0:
                denom *= term
        return (tp * tn - fp * fn) / math.sqrt(denom)


class _BinaryMetric(EvalMetric):
    """F1 / MCC over binary counts. average='macro': the score of each update() call, averaged over
    calls; 'micro': the score of the counts since reset_local (get) or reset (get_global), weighted
    by the number of instances, so num_inst counts instances as in MXNet."""

    def __init__(self, name: str, output_names=None, label_names=None, average: str = "macro"):
        if average not in ("macro", "micro"):
            raise MetricError(f"{type(self).__name__}: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        self._counts = _BinaryCounts()
        # `average` is part of the config (MXNet leaves it out, so its configs re-create 'macro')
        super().__init__(name, average=average, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def _score(self, counts) -> float:
        raise NotImplementedError

    def update(self, labels, preds) -> None:
        for label, pred in _checked_pairs(labels, preds):
            self._counts.update(label, pred, type(self).__name__)
        c = self._counts
        if self.average == "macro":
            self._add(self._score(c.local), 1)
            c.reset()  # each call is scored on its own
        else:
            self.num_inst, self.global_num_inst = int(c.local.sum()), int(c.total.sum())
            self.sum_metric = self._score(c.local) * self.num_inst
            self.global_sum_metric = self._score(c.total) * self.global_num_inst

    def reset(self) -> None:
        super().reset()
        self._counts.reset()

    def reset_local(self) -> None:
        super().reset_local()
        self._counts.reset_local()


@register
class F1(_BinaryMetric):
    """F1 = 2 precision recall / (precision + recall) of a binary classification (label 1 positive)."""

    def __init__(self, name: str = "f1", output_names=None, label_names=None, average: str = "macro"):
        super().__init__(name, output_names=output_names, label_names=label_names, average=average)

    def _score(self, counts) -> float:
        return _BinaryCounts.fscore(counts)


@register
class MCC(_BinaryMetric):
    """Matthews correlation coefficient (tp tn - fp fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)) of a
    binary classification; zero factors of the denominator count as 1. See PCC for many classes."""

    def __init__(self, name: str = "mcc", output_names=None, label_names=None, average: str = "macro"):
        super().__init__(name, output_names=output_names, label_names=label_names, average=average)

    def _score(self, counts) -> float:
        return _BinaryCounts.matthews(counts)


@register
class PCC(EvalMetric):
    """Multiclass Matthews correlation (Gorodkin's R_K) of a confusion matrix accumulated over
    updates: (c n - sum_k p_k t_k) / sqrt((n^2 - sum_k p_k^2)(n^2 - sum_k t_k^2)) with c correct
    predictions, n samples, p_k / t_k the predicted / true counts of class k; NaN when every
    prediction or every label is one class. Equals MCC for two classes. Predictions are class
    indices or scores (argmax over axis 1); the matrix grows with the classes seen."""

    def __init__(self, name: str = "pcc", output_names=None, label_names=None, has_global_stats: bool = True):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    def _grow(self, k: int) -> None:
        pad = ((0, k - self.k), (0, k - self.k))
        self.lcm, self.gcm = numpy.pad(self.lcm, pad), numpy.pad(self.gcm, pad)
        self.k = k

    @staticmethod
    def _pcc(cm: numpy.ndarray) -> float:
        n = cm.sum()
        pred_counts, true_counts = cm.sum(axis=1), cm.sum(axis=0)
        var_pred = n * n - (pred_counts ** 2).sum()
        var_true = n * n - (true_counts ** 2).sum()
        if var_pred == 0 or var_true == 0:
            return float("nan")
        cov = numpy.trace(cm) * n - (pred_counts * true_counts).sum()
        return float(cov / math.sqrt(var_pred * var_true))

    def update(self, labels, preds) -> None:
        for label, pred in _checked_pairs(labels, preds):
            label, pred = _to_numpy(label), _to_numpy(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred
            label, pred = label.astype(numpy.int64).ravel(), pred.astype(numpy.int64).ravel()
            if label.shape != pred.shape:
                raise MetricError(f"PCC: {label.size} labels but {pred.size} predicted classes")
            if label.size == 0:
                continue
            if min(label.min(), pred.min()) < 0:
                raise MetricError("PCC: labels and predicted classes must be non-negative class indices")
            k = int(max(label.max(), pred.max())) + 1
            if k > self.k:
                self._grow(k)
            batch = numpy.zeros((self.k, self.k))
            numpy.add.at(batch, (pred, label), 1)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1

    # MXNet exposes the running values as sum_metric / global_sum_metric (value x count)
    @property
    def sum_metric(self) -> float:
        return self._pcc(self.lcm) * self.num_inst

    @sum_metric.setter
    def sum_metric(self, _) -> None:
        pass  # derived from the confusion matrix

    @property
    def global_sum_metric(self) -> float:
        return self._pcc(self.gcm) * self.global_num_inst

    @global_sum_metric.setter
    def global_sum_metric(self, _) -> None:
        pass

    def get(self):
        return (self.name, float("nan")) if self.num_inst == 0 else (self.name, self._pcc(self.lcm))

    def get_global(self):
        if not self._has_global_stats:
            return self.get()
        return (self.name, float("nan")) if self.global_num_inst == 0 else (self.name, self._pcc(self.gcm))

    def reset(self) -> None:
        self.global_num_inst = 0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self) -> None:
        self.num_inst = 0
        self.lcm = numpy.zeros((self.k, self.k))


@register
class Perplexity(EvalMetric):
    """exp of the mean negative log-probability of the labels, skipping `ignore_label`."""

    def __init__(self, ignore_label, axis: int = -1, name: str = "perplexity", output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, axis=axis, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def update(self, labels, preds) -> None:
        for label, pred in _checked_pairs(labels, preds):
            label, pred = _to_numpy(label).ravel(), _to_numpy(pred)
            pred = numpy.moveaxis(pred, self.axis, -1).reshape(-1, pred.shape[self.axis])
            if label.size != pred.shape[0]:
                raise MetricError(f"Perplexity: {label.size} labels for {pred.shape[0]} predicted distributions")
            keep = numpy.ones(label.size, bool) if self.ignore_label is None else label != self.ignore_label
            # MXNet picks with pick()'s default mode 'clip': a label past either end of the class
            # axis reads the first / last class (language-model data often holds the vocabulary size)
            index = numpy.clip(label.astype(numpy.int64), 0, pred.shape[1] - 1)
            prob = pred[numpy.arange(label.size)[keep], index[keep]]
            # kept in the predictions' precision (as MXNet's NDArray sum), not widened to a Python float
            self._add(-numpy.log(numpy.maximum(prob, 1e-10)).sum(), int(keep.sum()))

    # exp in the precision the sums were kept in (float32 predictions give a float32 value, as numpy would)
    def _value(self, sum_metric, num_inst):
        return numpy.exp(sum_metric / num_inst)


class _Moments:
    """Count, means, centred second moments and co-moment of (pred, label) pairs, merged batch by
    batch with Chan et al.'s update (numerically stable, unlike raw power sums)."""

    def __init__(self):
        self.n, self.mean_p, self.mean_l, self.m2_p, self.m2_l, self.c_pl = 0, 0.0, 0.0, 0.0, 0.0, 0.0

    def add(self, pred: numpy.ndarray, label: numpy.ndarray) -> None:
        nb = pred.size
        if nb == 0:
            return
        mp, ml = pred.mean(), label.mean()
        dp, dl = pred - mp, label - ml
        m2p, m2l, cpl = (dp * dp).sum(), (dl * dl).sum(), (dp * dl).sum()
        n = self.n + nb
        delta_p, delta_l = mp - self.mean_p, ml - self.mean_l
        w = self.n * nb / n
        self.m2_p += m2p + delta_p * delta_p * w
        self.m2_l += m2l + delta_l * delta_l * w
        self.c_pl += cpl + delta_p * delta_l * w
        self.mean_p += delta_p * nb / n
        self.mean_l += delta_l * nb / n
        self.n = n

    def correlation(self) -> float:
        return float(self.c_pl / numpy.sqrt(self.m2_p * self.m2_l))


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of predictions and labels: per update() call averaged ('macro') or over
    every value since the last reset ('micro')."""

    def __init__(self, name: str = "pearsonr", output_names=None, label_names=None, average: str = "macro"):
        if average not in ("macro", "micro"):
            raise MetricError(f"PearsonCorrelation: average must be 'macro' or 'micro', got {average!r}")
        self.average = average
        super().__init__(name, average=average, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset(self) -> None:
        super().reset()
        self._moments = _Moments()

    def update(self, labels, preds) -> None:
        for label, pred in _checked_pairs(labels, preds):
            check_label_shapes(label, pred, shape=True)
            label = _to_numpy(label).astype(numpy.float64).ravel()
            pred = _to_numpy(pred).astype(numpy.float64).ravel()
            if self.average == "macro":
                self._add(numpy.corrcoef(pred, label)[0, 1], 1)
            else:
                self._moments.add(pred, label)
                self.num_inst += 1
                self.global_num_inst += 1

    def get(self):
        if self.average == "macro" or self.num_inst == 0:
            return super().get()
        return self.name, self._moments.correlation()

    def get_global(self):
        if self.average == "macro" or self.global_num_inst == 0:
            return super().get_global()
        return self.name, self._moments.correlation()


@register
class CustomMetric(EvalMetric):
    """A metric from feval(label, pred) -> value or (sum, count), on numpy arrays."""

    def __init__(self, feval: Callable, name: Optional[str] = None, allow_extra_outputs: bool = False,
                 output_names=None, label_names=None):
        if not callable(feval):
            raise TypeError(f"CustomMetric: feval must be callable, got {type(feval).__name__}")
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names, has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds) -> None:
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            result = self._feval(_to_numpy(label), _to_numpy(pred))
            if isinstance(result, tuple):
                value, count = result
                self._add(value, count)
            else:
                self._add(result, 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval: Callable, name: Optional[str] = None, allow_extra_outputs: bool = False) -> CustomMetric:
    """A CustomMetric from a function of numpy (label, pred)."""
    return CustomMetric(numpy_feval, name, allow_extra_outputs)


def create(metric: Union[str, EvalMetric, Callable, list, dict, tuple], *args, **kwargs) -> EvalMetric:
    """A metric from a name ('acc', 'ce', 'mse', ...; extra arguments go to its constructor), an
    instance, a function (CustomMetric), a list (CompositeEvalMetric), a config dict
    ({'metric': name, ...kwargs}, as get_config() returns), a (name, kwargs) pair, or the JSON of
    a config or pair (json.dumps(metric.get_config()) round-trips)."""
    if isinstance(metric, EvalMetric):
        if args or kwargs:
            raise MetricError(f"create: {type(metric).__name__} is already a metric instance; "
                              "constructor arguments are only taken with a name")
        return metric
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    if isinstance(metric, dict):
        config = dict(metric, **kwargs)
        if "metric" not in config:
            raise MetricError(f"create: a metric config needs a 'metric' entry naming the metric, got {sorted(config)}")
        return create(config.pop("metric"), *args, **config)
    if isinstance(metric, tuple):
        if len(metric) != 2 or not isinstance(metric[1], dict):
            raise MetricError(f"create: a tuple must be (name, kwargs), got {metric!r}")
        return create(metric[0], *args, **dict(metric[1], **kwargs))
    if isinstance(metric, str):
        text = metric.strip()
        if text.startswith(("[", "{")):
            if args or kwargs:
                raise MetricError("create: arguments cannot be combined with a JSON metric config")
            try:
                config = json.loads(text)
            except ValueError as e:
                raise MetricError(f"create: cannot parse metric config {metric!r}: {e}") from None
            if isinstance(config, list):
                if len(config) != 2 or not isinstance(config[1], dict):
                    raise MetricError(f"create: a JSON list config must be [name, kwargs], got {metric!r}")
                return create(config[0], **config[1])
            return create(config)
        klass = _REGISTRY.get(text.lower())
        if klass is None:
            raise MetricError(f"cannot find metric '{metric}'; registered: {sorted(_REGISTRY)}")
        return klass(*args, **kwargs)
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    raise TypeError(f"create: cannot make a metric from {type(metric).__name__}")
