"""Adam, as the registry op adam_update with the bias correction folded into lr."""
from __future__ import annotations

import math

from .. import ndarray as nd
from .optimizer import Optimizer, register


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba).  g = clip(rescale_grad*grad + wd*w); m, v moving moments;
    w -= lr_t * m / (sqrt(v) + epsilon) with lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t).
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        for name, beta in (("beta1", beta1), ("beta2", beta2)):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {beta}")
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        return (nd.zeros(weight.shape, weight.context, dtype=weight.dtype),
                nd.zeros(weight.shape, weight.context, dtype=weight.dtype))

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        mean, var = state
        nd.adam_update(weight, grad, mean, var, out=weight, lr=lr, wd=wd, beta1=self.beta1,
                       beta2=self.beta2, epsilon=self.epsilon, **self._common_kwargs())
