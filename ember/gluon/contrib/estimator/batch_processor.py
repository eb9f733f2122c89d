"""`BatchProcessor`: how the Estimator trains and evaluates on one batch (override to customize)."""
from __future__ import annotations

from typing import List, Sequence, Tuple

from .... import autograd
from .utils import _split_batch

__all__ = ["BatchProcessor"]

_BatchResult = Tuple[List, List, List, List]


class BatchProcessor:
    """The per-batch step of `Estimator.fit` and `Estimator.evaluate`.

    Subclass it and override `fit_batch` / `evaluate_batch` to change what one batch does (e.g. several
    inputs or outputs); both return `(data, label, pred, loss)`, each a list with one entry per context.
    """

    def _get_data_and_label(self, batch: Sequence, ctx, batch_axis: int = 0) -> Tuple[list, list]:
        return _split_batch(batch, ctx, batch_axis)

    def evaluate_batch(self, estimator, val_batch: Sequence, batch_axis: int = 0) -> _BatchResult:
        """Run `estimator.val_net` and `estimator.val_loss` on one validation batch (no gradients)."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch: Sequence, batch_axis: int = 0) -> _BatchResult:
        """Forward `estimator.net` and `estimator.loss` under autograd and backpropagate on one training batch.

        The optimizer step is not taken here: `GradientUpdateHandler` takes it at batch end, so handlers can
        see (or change) the gradients first.
        """
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for shard_loss in loss:
            shard_loss.backward()
        return data, label, pred, loss
