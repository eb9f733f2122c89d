"""FTML (Zheng & Kwok 2017) and FTRL-proximal (McMahan et al. 2013), as ftml_update and ftrl_update."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register


@register
class FTML(Optimizer):
    """Follow the Moving Leader.  At step t, with g = clip(rescale_grad*grad + wd*w):
    v = beta2*v + (1-beta2)*g^2;  d_t = (1-beta1^t)/lr * (sqrt(v/(1-beta2^t)) + epsilon);
    z = beta1*z + (1-beta1)*g - (d_t - beta1*d_{t-1})*w;  w = -z/d_t.  State: (d, v, z).
    """

    def __init__(self, beta1: float = 0.6, beta2: float = 0.999, epsilon: float = 1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon

    def create_state(self, index, weight):
        return tuple(nd.zeros(weight.shape, weight.context, dtype=weight.dtype) for _ in range(3))  # d, v, z

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._count_and_rates(index)
        kwargs = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
                  "rescale_grad": self.rescale_grad, "t": self._index_update_count[index]}
        if self.clip_gradient:
            kwargs["clip_grad"] = self.clip_gradient
        d, v, z = state
        nd.ftml_update(weight, grad, d, v, z, out=weight, lr=lr, wd=wd, **kwargs)


@register
class Ftrl(Optimizer):
    """FTRL-proximal.  g = clip(rescale_grad*grad);
    z += g - (sqrt(n + g^2) - sqrt(n)) * w / lr;  n += g^2;
    w = (sign(z)*lamda1 - z) / ((beta + sqrt(n))/lr + wd) * (|z| > lamda1).  State: (z, n).
    The learning rate defaults to 0.1 (and is set after the base class, as in MXNet).
    """

    def __init__(self, lamda1: float = 0.01, learning_rate: float = 0.1, beta: float = 1, **kwargs):
        super().__init__(**kwargs)
        self.lamda1 = lamda1
        self.beta = beta
        self.lr = learning_rate

    def create_state(self, index, weight):
        return (nd.zeros(weight.shape, weight.context, stype=weight.stype),  # z
                nd.zeros(weight.shape, weight.context, stype=weight.stype))  # n

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._count_and_rates(index)
        kwargs = dict(self._common_kwargs(), lamda1=self.lamda1, beta=self.beta)
        z, n = state
        nd.ftrl_update(weight, grad, z, n, out=weight, lr=lr, wd=wd, **kwargs)
