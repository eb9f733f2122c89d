"""Finite differences for the mx.np tests' gradient checks."""
import numpy as onp


def central_difference(f, x, w, eps=1e-5):
    """The gradient of sum(f(x) * w) w.r.t. x (a float64 numpy array) by central differences."""
    g = onp.zeros_like(x)
    for i in onp.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = ((f(xp) * w).sum() - (f(xm) * w).sum()) / (2 * eps)
    return g
