"""AdaDelta (Zeiler 2012), written with NDArray arithmetic as MXNet 1.9.1's Python optimizer."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register


@register
class AdaDelta(Optimizer):
    """AdaDelta.  grad = clip(rescale_grad * grad);  acc_g = rho*acc_g + (1-rho)*grad^2;
    delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * grad;
    acc_delta = rho*acc_delta + (1-rho)*delta^2;  w -= delta + wd*w.  State: (acc_g, acc_delta),
    float32 as in MXNet.  As MXNet does, the gradient array is rescaled in place.
    """

    def __init__(self, rho: float = 0.90, epsilon: float = 1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return (nd.zeros(weight.shape, weight.context),  # accumulated g
                nd.zeros(weight.shape, weight.context))  # accumulated delta

    def update(self, index, weight, grad, state) -> None:
        wd = self._get_wd(index)
        self._update_count(index)
        grad *= self.rescale_grad
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        acc_g, acc_delta = state
        acc_g[:] *= self.rho
        acc_g[:] += (1. - self.rho) * grad * grad
        delta = nd.sqrt(acc_delta + self.epsilon) / nd.sqrt(acc_g + self.epsilon) * grad
        acc_delta[:] *= self.rho
        acc_delta[:] += (1. - self.rho) * delta * delta
        weight[:] -= delta + wd * weight
