"""Nesterov accelerated gradient, as nag_mom_update (mp_nag_mom_update for float32 master copies)."""
from __future__ import annotations

from .. import ndarray as nd
from .optimizer import _ImplOptimizer, register


@register
class NAG(_ImplOptimizer):
    """Nesterov accelerated gradient (MXNet's NAG).

    g = clip(rescale_grad * grad) + wd * w;  mom = momentum * mom - lr * g;
    w += momentum * mom - lr * g.  Without momentum it is sgd_update.  multi_precision: the
    state of a float16 weight is (momentum or None, weight32).
    """

    def __init__(self, momentum: float = 0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum

    def create_state_multi_precision(self, index, weight):
        return self._master_copy_state(index, weight)

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)

    def _update_impl(self, index, weight, grad, state, multi_precision: bool = False) -> None:
        lr, wd = self._count_and_rates(index)
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        if not multi_precision:
            if state is not None:
                nd.nag_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **kwargs)
            else:
                nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **kwargs)
        elif state[0] is not None:
            nd.mp_nag_mom_update(weight, grad, state[0], state[1], out=weight, lr=lr, wd=wd, **kwargs)
        else:
            nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)

    def update_multi_precision(self, index, weight, grad, state) -> None:
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self.update_multi_precision(i, w, g, s)
            return
        use_mp = self._uses_master_copy(weight) and isinstance(state, (tuple, list))
        self._update_impl(index, weight, grad, state, multi_precision=use_mp)
