"""SGD with optional momentum (and its deprecated alias ccSGD), as the registry's update ops:
sgd_update / sgd_mom_update per weight, multi_sgd_update / multi_sgd_mom_update for a list of
dense weights, and their mp_ forms for float16 weights with float32 master copies."""
from __future__ import annotations

import os

from .. import ndarray as nd
from .optimizer import _ImplOptimizer, register


def aggregation_size(default: str = "4") -> int:
    """MXNET_OPTIMIZER_AGGREGATION_SIZE: how many weights one multi-tensor update takes."""
    return int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", default))


def flatten(groups) -> list:
    """[(w0, g0), (w1, g1)] -> [w0, g0, w1, g1]: the interleaved inputs of the multi_* ops."""
    return [x for group in groups for x in group]


def as_lists(index, weight, grad, state):
    """Single values as one-element lists (the multi-tensor code path takes lists)."""
    if isinstance(index, (list, tuple)):
        return list(index), list(weight), list(grad), list(state)
    return [index], [weight], [grad], [state]


def all_dense(weights, grads) -> bool:
    return all(w.stype == "default" and g.stype == "default" for w, g in zip(weights, grads))


@register
class SGD(_ImplOptimizer):
    """Stochastic gradient descent (MXNet's SGD).

    Without momentum: w = (1 - lr*wd) * w - lr * clip(rescale_grad * g).
    With momentum m:  v = m*v - lr*wd*w - lr*clip(rescale_grad * g); w += v.
    lazy_update: row_sparse gradients update only their rows.  multi_precision: float16 weights
    are updated through float32 master copies; the state is then (momentum or None, weight32).
    Lists of dense weights (from the Updater, up to MXNET_OPTIMIZER_AGGREGATION_SIZE, default 4)
    are updated by one multi_[mp_]sgd[_mom]_update.
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, **kwargs):
        super().__init__(**kwargs)
        if momentum < 0:
            raise ValueError(f"momentum must be >= 0, got {momentum}")
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = aggregation_size()

    def create_state_multi_precision(self, index, weight):
        return self._master_copy_state(index, weight)

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        stype = weight.stype if self.lazy_update else "default"
        return nd.zeros(weight.shape, weight.context, dtype=weight.dtype, stype=stype)

    def _kwargs(self) -> dict:
        kwargs = self._common_kwargs()
        if self.momentum > 0:
            kwargs["momentum"] = self.momentum
        return kwargs

    def _update_impl(self, index, weight, grad, state, multi_precision: bool = False) -> None:
        indices, weights, grads, states = as_lists(index, weight, grad, state)
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        kwargs = self._kwargs()
        if all_dense(weights, grads):
            self._update_many(weights, grads, states, lrs, wds, kwargs, multi_precision)
            return
        for w, g, s, lr, wd in zip(weights, grads, states, lrs, wds):
            sgd_step(w, g, s, lr, wd, kwargs, multi_precision, lazy_update=self.lazy_update)

    def _update_many(self, weights, grads, states, lrs, wds, kwargs, multi_precision) -> None:
        n = len(weights)
        if not multi_precision:
            if self.momentum > 0:
                nd.multi_sgd_mom_update(*flatten(zip(weights, grads, states)), out=weights, num_weights=n,
                                        lrs=lrs, wds=wds, **kwargs)
            else:
                nd.multi_sgd_update(*flatten(zip(weights, grads)), out=weights, num_weights=n,
                                    lrs=lrs, wds=wds, **kwargs)
        elif self.momentum > 0:
            nd.multi_mp_sgd_mom_update(*flatten((w, g, s[0], s[1]) for w, g, s in zip(weights, grads, states)),
                                       out=weights, num_weights=n, lrs=lrs, wds=wds, **kwargs)
        else:
            nd.multi_mp_sgd_update(*flatten((w, g, s[1]) for w, g, s in zip(weights, grads, states)),
                                   out=weights, num_weights=n, lrs=lrs, wds=wds, **kwargs)


def sgd_step(weight, grad, state, lr: float, wd: float, kwargs: dict, multi_precision: bool,
             lazy_update=None) -> None:
    """One weight's (mp_)sgd(_mom)_update; `state` is the momentum (or (momentum, weight32))."""
    extra = {} if lazy_update is None else {"lazy_update": lazy_update}
    if not multi_precision:
        if state is not None:
            nd.sgd_mom_update(weight, grad, state, out=weight, lr=lr, wd=wd, **extra, **kwargs)
        else:
            nd.sgd_update(weight, grad, out=weight, lr=lr, wd=wd, **extra, **kwargs)
    elif state[0] is not None:
        nd.mp_sgd_mom_update(weight, grad, state[0], state[1], out=weight, lr=lr, wd=wd, **kwargs)
    else:
        nd.mp_sgd_update(weight, grad, state[1], out=weight, lr=lr, wd=wd, **kwargs)


@register
class ccSGD(SGD):  # noqa: N801 - MXNet's name
    """[Deprecated in MXNet] the same as SGD."""
