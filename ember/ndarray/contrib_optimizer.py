"""MXNet 1.9.1's Python wrappers of the fused AdamW and LAMB updates in `mx.nd.contrib`.

`adamw_update` / `mp_adamw_update` / `multi_adamw_update` / `multi_mp_adamw_update` take
`rescale_grad` as an NDArray or a number (made a one-element array, as MXNet does) and call the
registry ops `_adamw_update`, ...; the multi_ forms and `multi_lamb_update` /
`multi_mp_lamb_update` take lists of weights, gradients and states and interleave them as the
multi-tensor ops expect (ember/ops/optimizer_multi.py).
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from ..imperative.ndarray import NDArray
from ..imperative.invoke import call as _call


def _rescale_array(rescale_grad, ctx) -> NDArray:
    if isinstance(rescale_grad, NDArray):
        return rescale_grad
    from ..imperative.creation import array
    return array([float(rescale_grad)], ctx=ctx)


def _interleave(*lists: Sequence[NDArray]) -> List[NDArray]:
    return [x for group in zip(*lists) for x in group]


def _op(name: str, inputs, out, kwargs: dict):
    kwargs.pop("name", None)
    return _call(name, list(inputs), dict(kwargs, **({} if out is None else {"out": out})))


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0,
                 clip_gradient=-1, out: Optional[NDArray] = None, name=None, **kwargs):
    """AdamW: w -= eta * (lr * m / (sqrt(v) + epsilon) + wd * w); skipped when rescale_grad is 0/NaN/inf."""
    return _op("_adamw_update", [weight, grad, mean, var, _rescale_array(rescale_grad, weight.context)], out,
               dict(kwargs, lr=lr, eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                    clip_gradient=clip_gradient))


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                    epsilon=1e-8, wd=0, clip_gradient=-1, out: Optional[NDArray] = None, name=None, **kwargs):
    """adamw_update on the float32 master copy weight32 (updated in place); returns its cast."""
    return _op("_mp_adamw_update", [weight, grad, mean, var, weight32,
                                    _rescale_array(rescale_grad, weight.context)], out,
               dict(kwargs, lr=lr, eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                    clip_gradient=clip_gradient))


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None, name=None, size=0,
                       **kwargs):
    """adamw_update on lists of weights with per-weight lrs, wds and etas."""
    size = size or len(weights)
    inputs = _interleave(weights, grads, mean, var) + [_rescale_array(rescale_grad, weights[0].context)]
    return _op("_multi_adamw_update", inputs, out, dict(kwargs, num_weights=size, lrs=lrs, wds=wds, etas=etas))


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas, out=None,
                          name=None, size=0, **kwargs):
    """multi_adamw_update on float32 master copies."""
    size = size or len(weights)
    inputs = _interleave(weights, grads, mean, var, weights32) + [_rescale_array(rescale_grad, weights[0].context)]
    return _op("_multi_mp_adamw_update", inputs, out,
               dict(kwargs, num_weights=size, lrs=lrs, wds=wds, etas=etas))


def multi_lamb_update(weights, grads, mean, var, step_count, lrs, wds, out=None, num_tensors=0, **kwargs):
    """Both LAMB phases on lists of tensors (per-tensor step_count, lrs, wds)."""
    num_tensors = num_tensors or len(weights)
    return _op("_multi_lamb_update", _interleave(weights, grads, mean, var), out,
               dict(kwargs, num_tensors=num_tensors, step_count=step_count, learning_rates=lrs, wds=wds))


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count, lrs, wds, out=None, num_tensors=0,
                         **kwargs):
    """multi_lamb_update on float32 master copies."""
    num_tensors = num_tensors or len(weights)
    return _op("_multi_mp_lamb_update", _interleave(weights, grads, mean, var, weights32), out,
               dict(kwargs, num_tensors=num_tensors, step_count=step_count, learning_rates=lrs, wds=wds))
