"""SGD with optional momentum, as the registry ops sgd_update / sgd_mom_update."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register


@register
class SGD(Optimizer):
    """Stochastic gradient descent.

    Without momentum: w = (1 - lr*wd) * w - lr * clip(rescale_grad * g).
    With momentum m:  v = m*v - lr*wd*w - lr*clip(rescale_grad * g); w += v.
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs):
        super().__init__(**kwargs)
        if momentum < 0:
            raise ValueError(f"momentum must be >= 0, got {momentum}")
        self.momentum = momentum
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        kwargs = self._common_kwargs()
        if state is not None:
            nd.sgd_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, momentum=self.momentum, **kwargs)
        else:
            nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
