"""Adam (adam_update, bias correction folded into lr) and its variants Adamax and Nadam
(NDArray arithmetic, as MXNet 1.9.1 writes them in Python)."""
from __future__ import annotations

import math

from .. import ndarray as nd
from .optimizer import Optimizer, register


@register
class Adam(Optimizer):
    """Adam (Kingma & Ba).  g = clip(rescale_grad*grad + wd*w); m, v moving moments;
    w -= lr_t * m / (sqrt(v) + epsilon) with lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t).
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, lazy_update: bool = True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        for name, beta in (("beta1", beta1), ("beta2", beta2)):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"{name} must be in [0, 1), got {beta}")
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lazy_update = lazy_update

    def create_state(self, index, weight):
        stype = weight.stype if self.lazy_update else "default"
        return (nd.zeros(weight.shape, weight.context, dtype=weight.dtype, stype=stype),  # mean
                nd.zeros(weight.shape, weight.context, dtype=weight.dtype, stype=stype))  # variance

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._count_and_rates(index)
        t = self._index_update_count[index]
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        mean, var = state
        nd.adam_update(weight, grad, mean, var, out=weight, lazy_update=self.lazy_update, lr=lr, wd=wd,
                       beta1=self.beta1,
                       beta2=self.beta2, epsilon=self.epsilon, **self._common_kwargs())


@register
class Adamax(Optimizer):
    """AdaMax (Kingma & Ba, section 7): Adam with the infinity norm.
    grad = clip(rescale_grad*grad + wd*w);  m = beta1*m + (1-beta1)*grad;
    u = max(beta2*u, |grad|);  w -= lr / (1 - beta1^t) * m / u.  State: (m, u).
    """

    def __init__(self, learning_rate: float = 0.002, beta1: float = 0.9, beta2: float = 0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2

    def create_state(self, index, weight):
        return (nd.zeros(weight.shape, weight.context, dtype=weight.dtype),  # mean
                nd.zeros(weight.shape, weight.context, dtype=weight.dtype))  # infinity norm

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._count_and_rates(index)
        lr /= 1. - self.beta1 ** self._index_update_count[index]
        grad = self._rescaled_grad(grad, weight, wd)
        m_t, u_t = state
        m_t[:] *= self.beta1
        m_t[:] += (1. - self.beta1) * grad
        u_t[:] = nd.maximum(self.beta2 * u_t, nd.abs(grad))
        weight[:] -= lr * m_t / u_t


@register
class Nadam(Optimizer):
    """Adam with Nesterov momentum (Dozat 2016).  grad = clip(rescale_grad*grad + wd*w);
    mu_t = beta1 * (1 - 0.5 * 0.96^(t*schedule_decay)); the momentum schedule (the product of the
    mu_t, kept by the optimizer across all weights, as in MXNet) corrects m and grad;
    w -= lr * m_bar / (sqrt(v / (1 - beta2^t)) + epsilon).  State: (m, v).
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-8, schedule_decay: float = 0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.

    def create_state(self, index, weight):
        return (nd.zeros(weight.shape, weight.context, dtype=weight.dtype),  # mean
                nd.zeros(weight.shape, weight.context, dtype=weight.dtype))  # variance

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._count_and_rates(index)
        t = self._index_update_count[index]
        grad = self._rescaled_grad(grad, weight, wd)
        momentum_t = self.beta1 * (1. - 0.5 * pow(0.96, t * self.schedule_decay))
        momentum_t_1 = self.beta1 * (1. - 0.5 * pow(0.96, (t + 1) * self.schedule_decay))
        self.m_schedule = self.m_schedule * momentum_t
        m_schedule_next = self.m_schedule * momentum_t_1
        m_t, v_t = state
        m_t[:] *= self.beta1
        m_t[:] += (1. - self.beta1) * grad
        v_t[:] *= self.beta2
        v_t[:] += (1. - self.beta2) * grad * grad
        grad_prime = grad / (1. - self.m_schedule)
        m_t_prime = m_t / (1. - m_schedule_next)
        v_t_prime = v_t / (1. - pow(self.beta2, t))
        m_t_bar = (1. - momentum_t) * grad_prime + momentum_t_1 * m_t_prime
        weight[:] -= lr * m_t_bar / (nd.sqrt(v_t_prime) + self.epsilon)
