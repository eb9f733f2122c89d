"""Signum / signSGD (Bernstein et al. 2018), as signum_update and signsgd_update."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register


@register
class Signum(Optimizer):
    """The sign of the momentum (MXNet's Signum).

    With momentum: mom = momentum*mom - (1-momentum) * (clip(rescale_grad*grad) + wd*w);
    w = (1 - lr*wd_lh) * w + lr * sign(mom).  Without momentum (signSGD):
    w = (1 - lr*wd) * w - lr * sign(grad).  wd_lh is decoupled weight decay.
    """

    def __init__(self, learning_rate: float = 0.01, momentum: float = 0.9, wd_lh: float = 0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype, stype=weight.stype)

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._count_and_rates(index)
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        if self.wd_lh:
            kwargs["wd_lh"] = self.wd_lh
        if state is not None:
            nd.signum_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
        else:
            kwargs.pop("wd_lh", None)  # signsgd_update has no decoupled decay
            nd.signsgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
