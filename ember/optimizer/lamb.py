"""LAMB (You et al. 2019): layer-wise adaptive moments, as lamb_update_phase1/2 (mp_ forms for
float32 master copies) per weight and _multi_[mp_]lamb_update for lists of weights."""
from __future__ import annotations

import os

from .. import ndarray as nd
from .optimizer import _ImplOptimizer, register
from .sgd import flatten


@register
class LAMB(_ImplOptimizer):
    """LAMB.  g = clip(rescale_grad*grad); m, v Adam moments (bias-corrected when bias_correction);
    d = m / (sqrt(v) + epsilon) + wd*w;  r1 = |w| clamped to [lower_bound, upper_bound] (when
    given), r2 = |d|;  w -= lr * (r1/r2 if both are non-zero else 1) * d.  State: (mean, var);
    with multi_precision a float16 weight's state is (weight32, (mean, var)), and the float32 master
    copy is stepped then cast into the weight (MXNet 1.9.1's one-weight path, reached only with
    MXNET_OPTIMIZER_AGGREGATION_SIZE=1 or direct calls, never updates its master copy).  Lists of weights
    (MXNET_OPTIMIZER_AGGREGATION_SIZE, default 45, at most 45) go to one _multi_lamb_update.
    """

    def __init__(self, learning_rate: float = 0.001, beta1: float = 0.9, beta2: float = 0.999,
                 epsilon: float = 1e-6, lower_bound=None, upper_bound=None, bias_correction: bool = True,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1 = beta1
        self.beta2 = beta2
        self.epsilon = epsilon
        self.lower_bound = lower_bound
        self.upper_bound = upper_bound
        self.bias_correction = bias_correction
        self.aggregate_num = max(1, min(45, int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "45"))))

    def create_state(self, index, weight):
        return (nd.zeros(weight.shape, weight.context, dtype=weight.dtype, stype=weight.stype),
                nd.zeros(weight.shape, weight.context, dtype=weight.dtype, stype=weight.stype))

    def _bounds(self) -> dict:
        kwargs = {}
        if self.lower_bound:
            kwargs["lower_bound"] = self.lower_bound
        if self.upper_bound:
            kwargs["upper_bound"] = self.upper_bound
        return kwargs

    def _update_impl(self, index, weight, grad, state, multi_precision: bool = False) -> None:
        kwargs = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
                  "bias_correction": self.bias_correction, "rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        if self.aggregate_num <= 1 or not isinstance(index, (tuple, list)):
            if isinstance(index, (tuple, list)):
                index, weight, grad, state = index[0], weight[0], grad[0], state[0]
            self._update_one(index, weight, grad, state, kwargs, multi_precision)
            return
        steps, lrs, wds = [], [], []
        for i in index:
            self._update_count(i)
            steps.append(self._index_update_count[i])
            lrs.append(self._get_lr(i))
            wds.append(self._get_wd(i))
        kwargs.update(self._bounds())
        for start in range(0, len(weight), self.aggregate_num):
            end = min(start + self.aggregate_num, len(weight))
            ws, gs, ss = weight[start:end], grad[start:end], state[start:end]
            common = dict(kwargs, num_tensors=end - start, step_count=steps[start:end],
                          learning_rates=lrs[start:end], wds=wds[start:end])
            if multi_precision:
                inputs = flatten((w, g, s[1][0], s[1][1], s[0]) for w, g, s in zip(ws, gs, ss))
                nd._multi_mp_lamb_update(*inputs, out=list(ws), **common)
            else:
                inputs = flatten((w, g, s[0], s[1]) for w, g, s in zip(ws, gs, ss))
                nd._multi_lamb_update(*inputs, out=list(ws), **common)

    def _update_one(self, index, weight, grad, state, kwargs: dict, multi_precision: bool) -> None:
        lr, wd = self._count_and_rates(index)
        kwargs = dict(kwargs, t=self._index_update_count[index])
        if multi_precision:
            weight32 = state[0]
            mean, var = state[1]
            g = nd.mp_lamb_update_phase1(weight, grad, mean, var, weight32, wd=wd, **kwargs)
            r1, r2 = weight32.norm(), g.norm()
            # MXNet 1.9.1 calls mp_lamb_update_phase2 here, which leaves weight32 unchanged, so its
            # master copy never moves on this path; ember steps the master copy and casts it back
            nd.lamb_update_phase2(weight32, g, r1, r2, lr=lr, out=weight32, **self._bounds())
            nd.cast(weight32, dtype=weight.dtype, out=weight)
        else:
            mean, var = state
            g = nd.lamb_update_phase1(weight, grad, mean, var, wd=wd, **kwargs)
            r1, r2 = weight.norm(), g.norm()
            nd.lamb_update_phase2(weight, g, r1, r2, lr=lr, out=weight, **self._bounds())
