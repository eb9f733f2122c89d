"""Delay-compensated asynchronous SGD (Zheng et al. 2017), as MXNet 1.9.1's DCASGD."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register


@register
class DCASGD(Optimizer):
    """DCASGD.  grad = clip(rescale_grad * grad);
    step = -lr * (grad + wd*w + lamda * grad^2 * (w - w_prev));
    with momentum: mom = momentum*mom + step, w += mom; without: w += step; w_prev = w before the step.
    State: (momentum or None, previous weight).

    MXNet 1.9.1 tests `if mom:` on the momentum NDArray, which fails for a momentum state (truth
    value of an array); ember applies the momentum as the formula and the docs describe.
    """

    def __init__(self, momentum: float = 0.0, lamda: float = 0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.weight_previous = {}
        self.lamda = lamda

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return (None, weight.copy())  # previous weight
        return (nd.zeros(weight.shape, weight.context, dtype=weight.dtype), weight.copy())

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._count_and_rates(index)
        grad = self._rescaled_grad(grad)
        mom, previous_weight = state
        step = -lr * (grad + wd * weight + self.lamda * grad * grad * (weight - previous_weight))
        if mom is not None:
            mom[:] *= self.momentum
            mom[:] += step
        else:
            mom = step
        previous_weight[:] = weight
        weight[:] += mom
