"""Stochastic Gradient Langevin Dynamics (Welling & Teh 2011), as MXNet 1.9.1's SGLD."""
from __future__ import annotations

import math

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
        lr, wd = self._count_and_rates(index)
        grad = self._rescaled_grad(grad)
        weight[:] += - lr / 2 * (grad + wd * weight)
        weight[:] += _random.normal(0, math.sqrt(lr), shape=weight.shape, dtype=weight.dtype, ctx=weight.context)
