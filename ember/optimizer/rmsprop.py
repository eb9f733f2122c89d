"""RMSProp (Tieleman & Hinton) and its centered form (Graves), as rmsprop_update / rmspropalex_update."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register


@register
class RMSProp(Optimizer):
    """RMSProp.  g = clip(rescale_grad*grad + wd*w).

    Plain:    n = (1-gamma1)*g^2 + gamma1*n;  w -= lr * g / sqrt(n + epsilon).
    Centered: also gbar = (1-gamma1)*g + gamma1*gbar and
              delta = gamma2*delta - lr * g / sqrt(n - gbar^2 + epsilon);  w += delta.
    clip_weights, when set, clips the updated weight to [-clip_weights, clip_weights].
    """

    def __init__(self, learning_rate: float = 0.001, gamma1: float = 0.9, gamma2: float = 0.9,
                 epsilon: float = 1e-8, centered: bool = False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = gamma1
        self.gamma2 = gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights

    def create_state(self, index, weight):
        count = 3 if self.centered else 1
        return tuple(nd.zeros(weight.shape, weight.context, dtype=weight.dtype) for _ in range(count))

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._count_and_rates(index)
        kwargs = dict(self._common_kwargs(), gamma1=self.gamma1, epsilon=self.epsilon)
        if self.clip_weights:
            kwargs["clip_weights"] = self.clip_weights
        if self.centered:
            n, g, delta = state
            nd.rmspropalex_update(weight, grad, n, g, delta, out=weight, lr=lr, wd=wd,
                                  gamma2=self.gamma2, **kwargs)
        else:
            (n,) = state
            nd.rmsprop_update(weight, grad, n, out=weight, lr=lr, wd=wd, **kwargs)
