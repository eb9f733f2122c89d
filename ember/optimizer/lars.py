"""Layer-wise adaptive rate scaling: LARS (You et al. 2017) with multi_sum_sq / multi_lars /
preloaded_multi_[mp_]sgd[_mom]_update, and MXNet's large-batch SGD (LBSGD) with warm-up."""
from __future__ import annotations

import logging
import math

import numpy as np

from .. import ndarray as nd
from .optimizer import Optimizer, _ImplOptimizer, register
from .sgd import SGD, aggregation_size, all_dense, as_lists, flatten, sgd_step

_NO_LARS_SUFFIXES = ("gamma", "beta", "bias")


@register
class LARS(_ImplOptimizer):
    """SGD (with momentum) whose learning rate is scaled per layer:
    lr_layer = lr * eta * |w| / (|g| + wd*|w| + eps) when both norms are positive (|g| of
    rescale_grad * grad), except for parameters named ...gamma, ...beta or ...bias.
    momentum_correction scales momentum by lr_now / lr_before when a scheduler changes lr.
    Only names ending in '_weight' get weight decay by default.  State as SGD's.
    """

    def __init__(self, momentum: float = 0.0, lazy_update: bool = True, eta: float = 0.001, eps: float = 0,
                 momentum_correction: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.aggregate_num = aggregation_size()
        self.eta = eta
        self.eps = eps
        self.skip = 0
        self.last_lr = None
        self.cur_lr = None

    def _get_lrs(self, indices):
        if self.cur_lr is not None:
            self.last_lr = self.cur_lr
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        if self.cur_lr is None:
            self.last_lr = lr
        self.cur_lr = lr
        return [lr * self._mult(i, self.lr_mult, "lr_mult") for i in indices]

    _decayed_suffixes = ("_weight",)   # MXNet's LARS: only weights keep weight decay (set_wd_mult)

    # SGD's states: a momentum buffer (none without momentum), float32 master copies for float16
    create_state_multi_precision = SGD.create_state_multi_precision
    create_state = SGD.create_state

    def _l2norm(self, v, rescale: bool = False) -> float:
        v = v.astype("float32")
        if rescale:
            v *= self.rescale_grad
        return float(nd.norm(v).asnumpy()[0])

    def _name(self, i) -> str:
        return self.idx2name[i] if i in self.idx2name else str(i)

    def _get_lars(self, i, weight, g, lr: float, wd: float) -> float:
        """This layer's learning rate (lr itself for gamma/beta/bias parameters)."""
        if self._name(i).endswith(_NO_LARS_SUFFIXES):
            return lr
        w_norm = self._l2norm(weight)
        g_norm = self._l2norm(g, rescale=True)
        if w_norm > 0.0 and g_norm > 0.0:
            return lr * self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return lr

    def _update_impl(self, index, weight, grad, state, multi_precision: bool = False) -> None:
        indices, weights, grads, states = as_lists(index, weight, grad, state)
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.momentum > 0:
            kwargs["momentum"] = (self.momentum * (self.cur_lr / self.last_lr)
                                  if self.momentum_correction and self.last_lr != 0 else self.momentum)
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        if all_dense(weights, grads):
            self._update_many(indices, weights, grads, states, lrs, wds, kwargs, multi_precision)
            return
        lrs = [self._get_lars(i, w, g, lr, wd) for i, w, g, lr, wd in zip(indices, weights, grads, lrs, wds)]
        for w, g, s, lr, wd in zip(weights, grads, states, lrs, wds):
            sgd_step(w, g, s, lr, wd, kwargs, multi_precision, lazy_update=self.lazy_update)

    def _update_many(self, indices, weights, grads, states, lrs, wds, kwargs, multi_precision) -> None:
        """The layer rates on the device (multi_sum_sq, multi_lars), then preloaded SGD updates."""
        scaled = [k for k, i in enumerate(indices) if not self._name(i).endswith(_NO_LARS_SUFFIXES)]
        order = scaled + [k for k in range(len(indices)) if k not in scaled]
        ctx = weights[0].context
        new_lrs = nd.array([lrs[k] for k in order], ctx=ctx, dtype="float32")
        new_wds = nd.array([wds[k] for k in order], ctx=ctx, dtype="float32")
        ws, gs, ss = ([seq[k] for k in order] for seq in (weights, grads, states))
        n_lars = len(scaled)
        if n_lars > 0:
            w_sq = nd.multi_sum_sq(*ws[:n_lars], num_arrays=n_lars)
            g_sq = nd.multi_sum_sq(*gs[:n_lars], num_arrays=n_lars)
            nd.multi_lars(new_lrs[:n_lars], w_sq, g_sq, new_wds[:n_lars], eta=self.eta, eps=self.eps,
                          rescale_grad=self.rescale_grad, out=new_lrs[:n_lars])
        for start in range(0, len(ws), self.aggregate_num):
            end = min(start + self.aggregate_num, len(ws))
            lr_wd = [new_lrs[start:end], new_wds[start:end]]
            common = dict(kwargs, out=ws[start:end], num_weights=end - start)
            if not multi_precision:
                if self.momentum > 0:
                    nd.preloaded_multi_sgd_mom_update(*flatten(zip(ws[start:end], gs[start:end], ss[start:end])),
                                                      *lr_wd, **common)
                else:
                    nd.preloaded_multi_sgd_update(*flatten(zip(ws[start:end], gs[start:end])), *lr_wd, **common)
            elif self.momentum > 0:
                nd.preloaded_multi_mp_sgd_mom_update(
                    *flatten((w, g, s[0], s[1]) for w, g, s in zip(ws[start:end], gs[start:end], ss[start:end])),
                    *lr_wd, **common)
            else:
                nd.preloaded_multi_mp_sgd_update(
                    *flatten((w, g, s[1]) for w, g, s in zip(ws[start:end], gs[start:end], ss[start:end])),
                    *lr_wd, **common)


@register
class LBSGD(Optimizer):
    """Large-batch SGD (MXNet's LBSGD): gradients are accumulated over batch_scale calls and
    applied as one SGD step whose lr is multiplied by a warm-up factor (warmup_strategy 'linear',
    'power2', 'sqrt' over warmup_epochs * updates_per_epoch updates, up to batch_scale) or, for
    'lars', by the clamped ratio sqrt(|w|^2 / (|g|^2 + wd*|w|^2)); calls in between leave the
    weight as it is (an sgd_update with lr 0).  State: momentum or None; (momentum, weight32)
    when create_state itself is given a float16 weight with multi_precision (the Updater's path,
    create_state_multi_precision, gives (weight32, momentum or None) as every optimizer).
    """

    def __init__(self, momentum: float = 0.0, multi_precision: bool = False, warmup_strategy: str = "linear",
                 warmup_epochs: int = 5, batch_scale: int = 1, updates_per_epoch: int = 32, begin_epoch: int = 0,
                 num_epochs: int = 60, **kwargs):
        super().__init__(**kwargs)
        logging.info("Running Large-Batch SGD Algorithm")
        logging.info("(Batch_scale=%f, warmup_epochs=%d, warmup_strategy=%s, updates_per_epoch=%d)",
                     batch_scale, warmup_epochs, warmup_strategy, updates_per_epoch)
        self.momentum = momentum
        self.multi_precision = multi_precision
        self.warmup_strategy = warmup_strategy
        self.warmup_epochs = warmup_epochs
        self.batch_scale = batch_scale
        self.updates_per_epoch = updates_per_epoch
        self.init_updates = begin_epoch * updates_per_epoch
        self.num_epochs = num_epochs
        self.lbmult = 1
        self.cumgrads = {}
        self.adaptive = False
        self.admult = 1

    def create_state(self, index, weight):
        if self.multi_precision and weight.dtype == np.float16:
            master = nd.array(weight, ctx=weight.context, dtype=np.float32)
            momentum = None
            if self.momentum != 0.0:
                momentum = nd.zeros(weight.shape, weight.context, dtype=np.float32, stype=weight.stype)
            return (momentum, master)
        if weight.dtype == np.float16:
            from .optimizer import _warn_fp16
            _warn_fp16(weight, "SGD")
        if self.momentum != 0.0:
            return nd.zeros(weight.shape, weight.context, dtype=weight.dtype, stype=weight.stype)
        return None

    def _get_lbmult(self, nup: int) -> float:
        """The warm-up multiplier after nup accumulated updates."""
        nwup = self.warmup_epochs * self.updates_per_epoch
        maxmult = float(self.batch_scale)
        if nup >= nwup:
            return maxmult
        if nwup <= 1:
            return 1.0
        if self.warmup_strategy == "linear":
            return 1.0 + (maxmult - 1) * nup / nwup
        if self.warmup_strategy == "power2":
            return 1.0 + (maxmult - 1) * (nup * nup) / (nwup * nwup)
        if self.warmup_strategy == "sqrt":
            return 1.0 + (maxmult - 1) * math.sqrt(float(nup) / nwup)
        return 1.0

    def _get_lars(self, weight, g, wd: float) -> float:
        weight2 = self._l2norm(weight)
        grad2 = self._l2norm(g)
        lars = math.sqrt(weight2 / (grad2 + wd * weight2 + 1e-18))
        return min(max(lars, 0.01), 100)

    def _l2norm(self, v) -> float:
        """The sum of squares (MXNet's name for it)."""
        return float(nd.multiply(v, v).asnumpy().sum())

    def _reset_cum_gradient(self, index) -> None:
        self.cumgrads[index]["cum_grad"] = 0

    def _cumulate_gradient(self, grad, index) -> dict:
        cgrad = self.cumgrads.get(index, {})
        if cgrad and cgrad["num_cums"] > 0:
            cgrad = {"cum_grad": cgrad["cum_grad"] + grad, "num_cums": cgrad["num_cums"] + 1}
        else:
            cgrad = {"cum_grad": grad, "num_cums": self.init_updates + 1}
        self.cumgrads[index] = cgrad
        return cgrad

    def update(self, index, weight, grad, state) -> None:
        lr, wd = self._get_lr(index), self._get_wd(index)
        self._update_count(index)
        cgrad = self._cumulate_gradient(grad, index)
        if cgrad["num_cums"] % self.batch_scale == 0:
            grad = cgrad["cum_grad"] / self.batch_scale
            if self.warmup_strategy == "lars":
                lbmult = self._get_lars(weight, grad, wd)
            else:
                lbmult = self._get_lbmult(cgrad["num_cums"])
            kwargs = self._common_kwargs()
            if self.momentum > 0:
                kwargs["momentum"] = self.momentum
            sgd_step(weight, grad, state, lr * lbmult, wd, kwargs, isinstance(state, (list, tuple)))
            self._reset_cum_gradient(index)
        else:
            nd.sgd_update(weight, grad, out=weight, lr=0.0, wd=wd)
