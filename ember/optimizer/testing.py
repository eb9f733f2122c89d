"""MXNet's `Test` optimizer: w += rescale_grad * grad, and the state mirrors the weight."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register


@register
class Test(Optimizer):
    """The test optimizer of MXNet (mx.optimizer.Test): adds the rescaled gradient to the weight
    and copies the new weight into its state (a float32 array of the weight's shape)."""

    def create_state(self, index, weight):
        return nd.zeros(weight.shape, weight.context)

    def update(self, index, weight, grad, state) -> None:
        weight[:] += grad * self.rescale_grad
        state[:] = weight
