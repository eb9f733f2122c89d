"""numpy reference updates (MXNet 1.x semantics) for the optimizer tests."""
from __future__ import annotations

import math

import numpy as np


def _clip(g, c):
    return np.clip(g, -c, c) if c else g


def sgd(w, g, state, t, lr, wd=0.0, momentum=0.0, rescale_grad=1.0, clip_gradient=None):
    g = _clip(rescale_grad * g, clip_gradient)
    if momentum == 0.0:
        return (1 - lr * wd) * w - lr * g, state
    mom = state if state is not None else np.zeros_like(w)
    mom = momentum * mom - lr * wd * w - lr * g
    return w + mom, mom


def adam(w, g, state, t, lr, wd=0.0, beta1=0.9, beta2=0.999, epsilon=1e-8, rescale_grad=1.0,
         clip_gradient=None):
    m, v = state if state is not None else (np.zeros_like(w), np.zeros_like(w))
    g = _clip(rescale_grad * g + wd * w, clip_gradient)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    lr_t = lr * math.sqrt(1 - beta2 ** t) / (1 - beta1 ** t)
    return w - lr_t * m / (np.sqrt(v) + epsilon), (m, v)


def rmsprop(w, g, state, t, lr, wd=0.0, gamma1=0.9, gamma2=0.9, epsilon=1e-8, centered=False,
            clip_weights=None, rescale_grad=1.0, clip_gradient=None):
    g = _clip(rescale_grad * g + wd * w, clip_gradient)
    if state is None:
        state = tuple(np.zeros_like(w) for _ in range(3 if centered else 1))
    if centered:
        n, gbar, delta = state
        n = (1 - gamma1) * g * g + gamma1 * n
        gbar = (1 - gamma1) * g + gamma1 * gbar
        delta = gamma2 * delta - lr * g / np.sqrt(n - gbar * gbar + epsilon)
        w, state = w + delta, (n, gbar, delta)
    else:
        (n,) = state
        n = (1 - gamma1) * g * g + gamma1 * n
        w, state = w - lr * g / np.sqrt(n + epsilon), (n,)
    return _clip(w, clip_weights), state


def adagrad(w, g, state, t, lr, wd=0.0, eps=1e-7, rescale_grad=1.0, clip_gradient=None):
    h = state if state is not None else np.zeros_like(w)
    g = _clip(rescale_grad * g, clip_gradient)
    h = h + g * g
    return w - lr * (g / np.sqrt(h + eps) + wd * w), h


REFERENCES = {"sgd": sgd, "adam": adam, "rmsprop": rmsprop, "adagrad": adagrad}


def run_reference(kind, w0, grads, lr_at=None, **kwargs):
    """The weight after each step; lr_at(t) overrides kwargs['lr'] per step (1-based t)."""
    fn = REFERENCES[kind]
    w, state, out = w0.astype(np.float64), None, []
    for t, g in enumerate(grads, start=1):
        if lr_at is not None:
            kwargs["lr"] = lr_at(t)
        w, state = fn(w, g.astype(np.float64), state, t, **kwargs)
        out.append(w.copy())
    return np.stack(out)
