"""Stochastic Gradient Langevin Dynamics (Welling & Teh 2011), as MXNet 1.9.1's SGLD."""
from __future__ import annotations

import math

from .. import ndarray as nd
from .. import random as _random
from .optimizer import Optimizer, register


@register
class SGLD(Optimizer):
    """SGLD.  grad = clip(rescale_grad * grad);  w += -lr/2 * (grad + wd*w);
    then w += N(0, sqrt(lr)) noise drawn from mx.random (so mx.random.seed makes it repeatable).
    No state."""

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state) -> None:
        self._update_count(index)
        lr, wd = self._get_lr(index), self._get_wd(index)
        grad = grad * self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        weight[:] += - lr / 2 * (grad + wd * weight)
        weight[:] += _random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype, ctx=weight.context)
