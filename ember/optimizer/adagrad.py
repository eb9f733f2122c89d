"""AdaGrad (Duchi et al.), as the registry op adagrad_update."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register


@register
class AdaGrad(Optimizer):
    """AdaGrad.  g = clip(rescale_grad*grad); h += g^2; w -= lr * (g / sqrt(h + eps) + wd*w)."""

    def __init__(self, eps: float = 1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._count_and_rates(index)
        nd.adagrad_update(weight, grad, state, out=weight, lr=lr, wd=wd, epsilon=self.float_stable_eps,
                          **self._common_kwargs())
