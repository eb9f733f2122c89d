"""`mx.optimizer.contrib`: GroupAdaGrad, AdaGrad with one learning rate per row (MXNet 1.9.1)."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import Optimizer, register

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one adaptive rate per row of a 2-D weight.
    grad = clip(rescale_grad * grad);  history += mean(grad^2, axis=1, keepdims=True);
    w -= lr * grad / sqrt(history + eps).  State: history (rows, 1).  Weight decay is not
    supported (MXNet asserts wd == 0); row_sparse gradients update only their rows.
    """

    def __init__(self, eps: float = 1e-5, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        if len(weight.shape) != 2:
            raise ValueError(f"GroupAdaGrad needs 2-D weights, got shape {weight.shape}")
        return nd.zeros((weight.shape[0], 1), weight.context, stype=weight.stype)

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._count_and_rates(index)
        if wd != 0:
            raise ValueError(f"Weight decay is not supported for GroupAdaGrad (got wd={wd})")
        if grad.stype == "row_sparse":
            kwargs = {"epsilon": self.float_stable_eps, "rescale_grad": self.rescale_grad}
            if self.clip_gradient:
                kwargs["clip_gradient"] = self.clip_gradient
            nd.contrib.group_adagrad_update(weight, grad, state, out=weight, lr=lr, **kwargs)
            return
        grad = self._rescaled_grad(grad)
        state[:] += nd.mean(nd.square(grad), axis=1, keepdims=True)
        weight[:] -= lr * grad / nd.sqrt(state + self.float_stable_eps)
