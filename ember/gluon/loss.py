"""`mx.gluon.loss`: the losses of MXNet 1.9.1's Gluon, as HybridBlocks.

Each loss is a `HybridBlock` whose `hybrid_forward(F, pred, label, ...)` is written with registry
operators only, so the same code runs imperatively (`F = mx.nd`, recorded by autograd), traced
into a graph when the block is hybridized or called on Symbols (`F = mx.sym`), and gives MXNet's
numbers: the same formulas in the same order of operations.

Common conventions (MXNet's): `weight` is a global scalar multiplier (None: 1), `sample_weight` is
an array broadcast-multiplied into the elementwise loss, and the result is averaged over every
axis except `batch_axis`, giving one value per sample (KLDivLoss and TripletLoss sum instead,
PoissonNLLLoss averages everything, CosineEmbeddingLoss returns (batch, 1), as in MXNet).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .. import ndarray
from ..base import ShapeError
from ..imperative.ndarray import NDArray
from .block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss",
           "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss",
           "KLDivLoss", "CTCLoss", "HuberLoss", "HingeLoss",
           "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss", "CosineEmbeddingLoss",
           "SDMLLoss"]

_NUMERIC = (float, int, np.generic)


def _apply_weighting(F, loss, weight: Optional[float] = None, sample_weight=None):
    """loss * sample_weight (broadcast) * weight; MXNet's AssertionError when weight is not a number."""
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if not isinstance(weight, _NUMERIC):
            raise AssertionError("weight must be a number")
        loss = loss * weight
    return loss


def _reshape_like(F, x, y, block: str = "Loss", what: str = "label", like: str = "pred"):
    """x reshaped to y's shape; imperatively a size mismatch names the loss and both shapes."""
    if F is ndarray:
        if x.size != y.size:
            raise ShapeError(f"{block}: {what} has shape {tuple(x.shape)} ({x.size} elements) but {like} has "
                             f"shape {tuple(y.shape)} ({y.size} elements); they must have the same size")
        return x.reshape(y.shape)
    return F.reshape_like(x, y)


class Loss(HybridBlock):
    """Base class of the losses: a global scalar `weight` and the `batch_axis` kept in the output.

    Subclasses implement `hybrid_forward(F, pred, label, sample_weight=None)`.
    """

    def __init__(self, weight: Optional[float], batch_axis: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._weight = weight
        self._batch_axis = batch_axis

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def hybrid_forward(self, F, x, *args, **kwargs):
        """The loss of `x` against the further inputs; every subclass defines it."""
        raise NotImplementedError

    def _weighted_mean(self, F, loss, sample_weight, weight: Optional[float] = None):
        """`loss` weighted (by `weight`, default the loss's own, and `sample_weight`), then averaged
        over every axis except the batch axis: one value per sample."""
        loss = _apply_weighting(F, loss, self._weight if weight is None else weight, sample_weight)
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class L2Loss(Loss):
    """Half the squared error: L = weight/2 * (label - pred)^2, averaged per sample.

    `label` may have any shape with pred's number of elements; `sample_weight` must broadcast
    to pred's shape (e.g. (batch, 1) weighs each sample).
    """

    def __init__(self, weight: Optional[float] = 1., batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred, "L2Loss")
        loss = F.square(label - pred)
        return self._weighted_mean(F, loss, sample_weight, self._weight / 2)


class L1Loss(Loss):
    """Absolute error: L = |label - pred|, averaged per sample."""

    def __init__(self, weight: Optional[float] = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred, "L1Loss")
        loss = F.abs(label - pred)
        return self._weighted_mean(F, loss, sample_weight)


class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of sigmoid(pred) (or of pred itself with from_sigmoid=True) against label.

    Without from_sigmoid the stable form max(x, 0) - x*z + log(1 + exp(-|x|)) is used;
    `pos_weight` (broadcast to label, e.g. (1, classes)) scales the positive term.
    """

    def __init__(self, from_sigmoid: bool = False, weight: Optional[float] = None, batch_axis: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = _reshape_like(F, label, pred, "SigmoidBinaryCrossEntropyLoss")
        if not self._from_sigmoid:
            softplus_neg_abs = F.Activation(-F.abs(pred), act_type="softrelu")  # log(1 + exp(-|x|))
            if pos_weight is None:
                loss = F.relu(pred) - pred * label + softplus_neg_abs
            else:
                # x - x*z + (1 + (pos_weight - 1)*z) * (log(1 + exp(-|x|)) + max(-x, 0))
                log_weight = 1 + F.broadcast_mul(pos_weight - 1, label)
                loss = pred - pred * label + log_weight * (softplus_neg_abs + F.relu(-pred))
        else:
            eps = 1e-12
            if pos_weight is None:
                loss = -(F.log(pred + eps) * label + F.log(1. - pred + eps) * (1. - label))
            else:
                loss = -(F.broadcast_mul(F.log(pred + eps) * label, pos_weight)
                         + F.log(1. - pred + eps) * (1. - label))
        return self._weighted_mean(F, loss, sample_weight)


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of softmax(pred) along `axis` against class indices (sparse_label=True, label
    shaped like pred without `axis`) or probability rows (sparse_label=False, label shaped like pred).

    With from_logits=True pred already holds log probabilities.
    """

    def __init__(self, axis: int = -1, sparse_label: bool = True, from_logits: bool = False,
                 weight: Optional[float] = None, batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if self._fused(F, pred, label, sample_weight):
            return F._softmax_ce_per_sample(pred, label)
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = _reshape_like(F, label, pred, "SoftmaxCrossEntropyLoss")
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        return self._weighted_mean(F, loss, sample_weight)

    def _fused(self, F, pred, label, sample_weight) -> bool:
        """Whether this call is the common imperative form one node computes with the same numbers
        (ember/ops/nn_softmax_ce.py): class indices against (batch, classes) scores, no weights.
        Anything else, misuse included, takes the four ops (and their errors)."""
        return (F is ndarray and self._sparse_label and not self._from_logits and sample_weight is None
                and self._weight is None and self._batch_axis == 0 and self._axis in (-1, 1)
                and isinstance(pred, NDArray) and isinstance(label, NDArray) and pred.ndim == 2
                and label.shape in ((pred.shape[0],), (pred.shape[0], 1))
                and pred.stype == "default" and label.stype == "default" and pred.context == label.context)


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """Kullback-Leibler divergence: L = sum label * (log(label) - pred), summed per sample.

    pred holds log probabilities (from_logits=True) or unnormalised scores turned into them by a
    log_softmax along `axis` (from_logits=False).
    """

    def __init__(self, from_logits: bool = True, axis: int = -1, weight: Optional[float] = None,
                 batch_axis: int = 0, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        loss = label * (F.log(label + 1e-12) - pred)
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.sum(loss, axis=self._batch_axis, exclude=True)


class CTCLoss(Loss):
    """Connectionist Temporal Classification loss (the CTCLoss operator, blank = the last class).

    pred: unnormalised scores, (batch, time, alphabet) for layout 'NTC' or (time, batch, alphabet)
    for 'TNC'; the last class (alphabet - 1) is the blank.  label: 0-based classes, (batch, len) for
    label_layout 'NT' or (len, batch) for 'TN', padded with -1 unless `label_lengths` is given.
    Optional `pred_lengths` / `label_lengths` (batch,) give each sequence's frames / labels.
    Output: (batch,) negative log-likelihoods.
    """

    def __init__(self, layout: str = "NTC", label_layout: str = "NT", weight: Optional[float] = None,
                 **kwargs: Any) -> None:
        if layout not in ("NTC", "TNC"):
            raise AssertionError(f"Only 'NTC' and 'TNC' layouts for pred are supported. Got: {layout}")
        if label_layout not in ("NT", "TN"):
            raise AssertionError(f"Only 'NT' and 'TN' layouts for label are supported. Got: {label_layout}")
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None, sample_weight=None):
        if self._layout == "NTC":
            pred = F.swapaxes(pred, dim1=0, dim2=1)
        if self._batch_axis == 1:
            label = F.swapaxes(label, dim1=0, dim2=1)
        inputs = [pred, label] + [x for x in (pred_lengths, label_lengths) if x is not None]
        loss = F.CTCLoss(*inputs, use_data_lengths=pred_lengths is not None,
                         use_label_lengths=label_lengths is not None, blank_label="last")
        return _apply_weighting(F, loss, self._weight, sample_weight)


class HuberLoss(Loss):
    """Smoothed L1: (0.5/rho) * err^2 where |err| <= rho, |err| - rho/2 elsewhere; averaged per sample."""

    def __init__(self, rho: float = 1, weight: Optional[float] = None, batch_axis: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred, "HuberLoss")
        loss = F.abs(label - pred)
        loss = F.where(loss > self._rho, loss - 0.5 * self._rho, (0.5 / self._rho) * F.square(loss))
        return self._weighted_mean(F, loss, sample_weight)


class HingeLoss(Loss):
    """SVM hinge loss max(0, margin - pred * label) with labels -1/1, averaged per sample."""

    def __init__(self, margin: float = 1, weight: Optional[float] = None, batch_axis: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred, "HingeLoss")
        loss = F.relu(self._margin - pred * label)
        return self._weighted_mean(F, loss, sample_weight)


class SquaredHingeLoss(Loss):
    """Soft-margin SVM loss max(0, margin - pred * label)^2 with labels -1/1, averaged per sample."""

    def __init__(self, margin: float = 1, weight: Optional[float] = None, batch_axis: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred, "SquaredHingeLoss")
        loss = F.square(F.relu(self._margin - pred * label))
        return self._weighted_mean(F, loss, sample_weight)


class LogisticLoss(Loss):
    """Logistic loss log(1 + exp(-pred * label)) for labels -1/1 ('signed') or 0/1 ('binary')."""

    def __init__(self, weight: Optional[float] = None, batch_axis: int = 0, label_format: str = "signed",
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._label_format = label_format
        if self._label_format not in ("signed", "binary"):
            raise ValueError(f"label_format can only be signed or binary, received {label_format}.")

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = _reshape_like(F, label, pred, "LogisticLoss")
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0  # -1/1 -> 0/1
        # the stable form of the binary cross-entropy of sigmoid(pred)
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type="softrelu")
        return self._weighted_mean(F, loss, sample_weight)


class TripletLoss(Loss):
    """max(|positive - pred|^2 - |negative - pred|^2 + margin, 0), the squares summed per sample."""

    def __init__(self, margin: float = 1, weight: Optional[float] = None, batch_axis: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative):
        positive = _reshape_like(F, positive, pred, "TripletLoss", "positive")
        negative = _reshape_like(F, negative, pred, "TripletLoss", "negative")
        loss = F.sum(F.square(positive - pred) - F.square(negative - pred), axis=self._batch_axis, exclude=True)
        loss = F.relu(loss + self._margin)
        return _apply_weighting(F, loss, self._weight, None)


class PoissonNLLLoss(Loss):
    """Poisson negative log-likelihood, averaged over every element (output shape (1,)).

    from_logits=True: exp(pred) - target * pred; otherwise pred - target * log(pred + epsilon).
    compute_full adds Stirling's approximation of log(target!) where target > 1.
    """

    def __init__(self, weight: Optional[float] = None, from_logits: bool = True, batch_axis: int = 0,
                 compute_full: bool = False, **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = _reshape_like(F, target, pred, "PoissonNLLLoss", "target")
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            # Stirling's term only where target > 1; evaluated on targets <= 1 replaced by 1 so that a zero
            # target gives 0, not NaN (MXNet multiplies by the mask: 0 * log(0) = NaN there)
            above = target > 1
            t = F.where(above, target, F.ones_like(target))
            stirling = t * F.log(t) - t + 0.5 * F.log(2 * t * np.pi)
            loss = loss + F.where(above, stirling, F.zeros_like(stirling))
        loss = _apply_weighting(F, loss, self._weight, sample_weight)
        return F.mean(loss)


class CosineEmbeddingLoss(Loss):
    """1 - cos(input1, input2) for label 1, max(0, cos(input1, input2) - margin) for label -1.

    Output: (batch, 1), as MXNet's.
    """

    def __init__(self, weight: Optional[float] = None, batch_axis: int = 0, margin: float = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = _reshape_like(F, input1, input2, "CosineEmbeddingLoss", "input1", "input2")
        label = label.reshape((-1, 1))
        cos_sim = self._cosine_similarity(F, input1, input2)
        y_1 = label == 1
        y_minus_1 = label == -1
        cos_sim_a = (1 - cos_sim) * y_1
        cos_sim_b = F.relu(y_minus_1 * (cos_sim - self._margin))  # max(0, .), MXNet's broadcast_maximum
        loss = cos_sim_a + cos_sim_b
        return _apply_weighting(F, loss, self._weight, sample_weight)

    def _cosine_similarity(self, F, x, y, axis: int = -1):
        """Cosine similarity along `axis` as a column, with the norms' product kept >= 1e-12."""
        x_norm = F.norm(x, axis=axis).reshape((-1, 1))
        y_norm = F.norm(y, axis=axis).reshape((-1, 1))
        x_dot_y = F.sum(x * y, axis=axis).reshape((-1, 1))
        return x_dot_y / F._maximum_scalar(x_norm * y_norm, scalar=1e-12)


class SDMLLoss(Loss):
    """Batchwise Smoothed Deep Metric Learning loss (Bonadiman et al., 2019).

    x1[i] and x2[i] (each (batch, dim)) form positive pairs, every other row of x2 is a negative:
    the KL divergence between softmax(-squared distances) along each row and the identity
    smoothed by `smoothing_parameter`.  Output: (batch,).
    """

    def __init__(self, smoothing_parameter: float = 0.3, weight: Optional[float] = 1., batch_axis: int = 0,
                 **kwargs: Any) -> None:
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter  # probability mass spread over the negatives

    def _compute_distances(self, F, x1, x2):
        """Squared euclidean distance between every row of x1 and every row of x2: (batch, batch)."""
        diffs = F.broadcast_sub(x1.expand_dims(1), x2.expand_dims(0))
        return F.sum(F.square(diffs), axis=2)

    def _compute_labels(self, F, distances):
        """The identity smoothed: 1 - s on the diagonal, s / (batch - 1) elsewhere (shape-free for tracing)."""
        rows = F._contrib_arange_like(distances, axis=0).reshape((-1, 1))
        cols = F._contrib_arange_like(distances, axis=1).reshape((1, -1))
        gold = F.broadcast_equal(rows, cols)
        others = F.sum(F.ones_like(distances), axis=1, keepdims=True) - 1  # batch - 1, per row
        s = self.smoothing_parameter
        return gold * (1 - s) + F.broadcast_div((1 - gold) * s, others)

    def hybrid_forward(self, F, x1, x2):
        if F is ndarray and x1.shape != x2.shape:
            raise ShapeError(f"SDMLLoss: x1 has shape {tuple(x1.shape)} but x2 has shape {tuple(x2.shape)}; "
                             "both must be (batch, dim)")
        distances = self._compute_distances(F, x1, x2)
        log_probabilities = F.log_softmax(-distances, axis=1)
        return self.kl_loss(log_probabilities, self._compute_labels(F, distances))
