"""Unary maths: exp/log family, powers, rounding, trigonometry, sigmoid/relu/softsign, erf, gamma.

Each differentiable op gets `_backward_<name>(ograd, data, output)`; the derivative is
written from the input x and/or the output y (e.g. exp' = y, tanh' = 1 - y^2).
Rounding and sign ops are piecewise constant: their gradient is zero, as in MXNet.
"""
from __future__ import annotations

import math

import numpy as np

from ..base import OperatorError
from ._common import no_gradient
from ._unary import expr_kernel, register_unary, ufunc_kernel
from .registry import Attr

try:  # scipy gives exact erf/gamma; without it, the math module (per element) is the fallback
    from scipy import special as _special  # type: ignore
except Exception:  # pragma: no cover - depends on the environment
    _special = None


def _quiet(fn):
    def wrapped(xp, x, y, a):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return fn(xp, x, y, a)
    return wrapped


def _quiet_kernel(kernel):
    def quiet(ctx, attrs, inputs, outputs, aux):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            kernel(ctx, attrs, inputs, outputs, aux)
    return quiet


def _special_fn(xp, name, x):
    """scipy/cupyx special function `name` (erf, gamma, gammaln, erfinv) on x."""
    if xp is np:
        if _special is not None:
            return getattr(_special, name)(x)
        if name == "erfinv":
            raise OperatorError("erfinv needs scipy (pip install scipy)")
        scalar = {"erf": math.erf, "gamma": math.gamma, "gammaln": math.lgamma}[name]
        return np.vectorize(scalar, otypes=[np.float64])(x)
    from cupyx.scipy import special  # type: ignore  # pragma: no cover - GPU only
    return getattr(special, name)(x)  # pragma: no cover


def _digamma(xp, x):
    if xp is np and _special is not None:
        return _special.digamma(x)
    if xp is not np:  # pragma: no cover - GPU only
        from cupyx.scipy import special  # type: ignore
        return special.digamma(x)
    # asymptotic series after shifting x above 6 (enough for float32/float64 tests)
    x = np.asarray(x, dtype=np.float64)
    acc = np.zeros_like(x)
    while np.any(x < 6):
        small = x < 6
        acc = acc - np.where(small, 1.0 / x, 0.0)
        x = np.where(small, x + 1, x)
    inv = 1.0 / x
    inv2 = inv * inv
    return acc + np.log(x) - 0.5 * inv - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 / 252))


def _relu_kernel(ctx, attrs, inputs, outputs, aux):
    ctx.xp.maximum(inputs[0], 0, out=outputs[0])


def _sigmoid(xp, x, a):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + xp.exp(-x))


def _mxnet_rint(xp, x, a):
    if x.dtype.kind != "f":
        return x
    fl = xp.floor(x)
    return xp.where(x - fl <= 0.5, fl, fl + 1)


# name: (kernel, derivative(xp, x, y, attrs) or None for zero gradient, aliases)
_OPS = {
    "exp": (ufunc_kernel("exp"), lambda xp, x, y, a: y),
    "expm1": (ufunc_kernel("expm1"), lambda xp, x, y, a: y + 1),
    "log": (ufunc_kernel("log"), _quiet(lambda xp, x, y, a: 1.0 / x)),
    "log2": (ufunc_kernel("log2"), _quiet(lambda xp, x, y, a: 1.0 / (x * math.log(2.0)))),
    "log10": (ufunc_kernel("log10"), _quiet(lambda xp, x, y, a: 1.0 / (x * math.log(10.0)))),
    "log1p": (ufunc_kernel("log1p"), _quiet(lambda xp, x, y, a: 1.0 / (1.0 + x))),
    "sqrt": (ufunc_kernel("sqrt"), _quiet(lambda xp, x, y, a: 0.5 / y)),
    "rsqrt": (expr_kernel(lambda xp, x, a: 1.0 / xp.sqrt(x)), _quiet(lambda xp, x, y, a: -0.5 * y / x)),
    "cbrt": (ufunc_kernel("cbrt"), _quiet(lambda xp, x, y, a: 1.0 / (3.0 * y * y))),
    "rcbrt": (expr_kernel(lambda xp, x, a: 1.0 / xp.cbrt(x)), _quiet(lambda xp, x, y, a: -y / (3.0 * x))),
    "square": (ufunc_kernel("square"), lambda xp, x, y, a: 2 * x),
    "reciprocal": (ufunc_kernel("reciprocal"), _quiet(lambda xp, x, y, a: -y * y)),
    "abs": (ufunc_kernel("absolute"), lambda xp, x, y, a: xp.sign(x)),
    "sin": (ufunc_kernel("sin"), lambda xp, x, y, a: xp.cos(x)),
    "cos": (ufunc_kernel("cos"), lambda xp, x, y, a: -xp.sin(x)),
    "tan": (ufunc_kernel("tan"), lambda xp, x, y, a: 1 + y * y),
    "arcsin": (ufunc_kernel("arcsin"), _quiet(lambda xp, x, y, a: 1.0 / xp.sqrt(1 - x * x))),
    "arccos": (ufunc_kernel("arccos"), _quiet(lambda xp, x, y, a: -1.0 / xp.sqrt(1 - x * x))),
    "arctan": (ufunc_kernel("arctan"), lambda xp, x, y, a: 1.0 / (1 + x * x)),
    "sinh": (ufunc_kernel("sinh"), lambda xp, x, y, a: xp.cosh(x)),
    "cosh": (ufunc_kernel("cosh"), lambda xp, x, y, a: xp.sinh(x)),
    "tanh": (ufunc_kernel("tanh"), lambda xp, x, y, a: 1 - y * y),
    "arcsinh": (ufunc_kernel("arcsinh"), lambda xp, x, y, a: 1.0 / xp.sqrt(x * x + 1)),
    "arccosh": (ufunc_kernel("arccosh"), _quiet(lambda xp, x, y, a: 1.0 / xp.sqrt(x * x - 1))),
    "arctanh": (ufunc_kernel("arctanh"), _quiet(lambda xp, x, y, a: 1.0 / (1 - x * x))),
    "degrees": (ufunc_kernel("degrees"), lambda xp, x, y, a: xp.full_like(x, 180.0 / math.pi)),
    "radians": (ufunc_kernel("radians"), lambda xp, x, y, a: xp.full_like(x, math.pi / 180.0)),
    "sigmoid": (expr_kernel(_sigmoid), lambda xp, x, y, a: y * (1 - y)),
    "relu": (_relu_kernel, lambda xp, x, y, a: x > 0),
    "softsign": (expr_kernel(lambda xp, x, a: x / (1 + xp.abs(x))),
                 lambda xp, x, y, a: 1.0 / ((1 + xp.abs(x)) ** 2)),
    "erf": (expr_kernel(lambda xp, x, a: _special_fn(xp, "erf", x)),
            lambda xp, x, y, a: (2.0 / math.sqrt(math.pi)) * xp.exp(-x * x)),
    "gamma": (expr_kernel(lambda xp, x, a: _special_fn(xp, "gamma", x)),
              lambda xp, x, y, a: y * _digamma(xp, x)),
    "gammaln": (expr_kernel(lambda xp, x, a: _special_fn(xp, "gammaln", x)),
                lambda xp, x, y, a: _digamma(xp, x)),
    # piecewise constant: zero gradient
    "sign": (ufunc_kernel("sign"), None),
    "floor": (ufunc_kernel("floor"), None),
    "ceil": (ufunc_kernel("ceil"), None),
    # MXNet's rint rounds halves down (floor(x) when x - floor(x) <= 0.5): rint(-2.5) = -3, rint(2.5) = 2
    "rint": (expr_kernel(_mxnet_rint), None),
    "fix": (ufunc_kernel("trunc"), None),
    "trunc": (ufunc_kernel("trunc"), None),
    # MXNet's round rounds half away from zero (C round), unlike numpy's half-to-even
    "round": (expr_kernel(lambda xp, x, a: xp.sign(x) * xp.floor(xp.abs(x) + 0.5) if x.dtype.kind == "f" else x),
              None),
}

_FLOAT_ONLY_DOC = {"sign": "sign of x (-1, 0, 1)", "fix": "round towards zero",
                   "rint": "nearest integer, halves rounded down (MXNet's rint)"}

for _name, (_kernel, _deriv) in _OPS.items():
    _kernel = _quiet_kernel(_kernel) if _name in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
                                                   "arcsin", "arccos", "arccosh", "arctanh", "rcbrt", "gamma",
                                                   "gammaln") else _kernel
    if _deriv is None:
        register_unary(_name, _kernel, None, gradient=no_gradient(1), doc=_FLOAT_ONLY_DOC.get(_name, f"{_name}(x)"))
    else:
        register_unary(_name, _kernel, _deriv, doc=f"{_name}(x), elementwise")


# -- clip ------------------------------------------------------------------------------------
def _clip_kernel(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    lo, hi = attrs["a_min"], attrs["a_max"]
    if lo > hi:
        raise OperatorError(f"clip: a_min ({lo}) must be <= a_max ({hi})")
    if x.dtype.kind != "f":
        lo, hi = x.dtype.type(lo), x.dtype.type(hi)
    ctx.xp.clip(x, lo, hi, out=outputs[0])


register_unary("clip", _clip_kernel,
               lambda xp, x, y, a: (x >= a["a_min"]) & (x <= a["a_max"]),
               attrs={"a_min": Attr("float"), "a_max": Attr("float")},
               doc="x limited to [a_min, a_max]; the gradient passes where a_min <= x <= a_max.")


# -- more elementwise functions ------------------------------------------------------------------
def _hard_sigmoid(xp, x, a):
    return xp.clip(a["alpha"] * x + a["beta"], 0, 1)


def _smooth_l1(xp, x, a):
    s2 = a["scalar"] ** 2
    ax = xp.abs(x)
    return xp.where(ax < 1.0 / s2, 0.5 * s2 * x * x, ax - 0.5 / s2)


def _smooth_l1_deriv(xp, x, y, a):
    s2 = a["scalar"] ** 2
    return xp.where(xp.abs(x) < 1.0 / s2, s2 * x, xp.sign(x))


register_unary("logical_not", expr_kernel(lambda xp, x, a: x == 0), None, gradient=no_gradient(1),
               doc="1 where x is 0, else 0 (in x's dtype).")
register_unary("hard_sigmoid", expr_kernel(_hard_sigmoid),
               lambda xp, x, y, a: a["alpha"] * ((y > 0) & (y < 1)),
               attrs={"alpha": Attr("float", 0.2), "beta": Attr("float", 0.5)},
               doc="clip(alpha * x + beta, 0, 1).")
register_unary("erfinv", _quiet_kernel(expr_kernel(lambda xp, x, a: _special_fn(xp, "erfinv", x))),
               lambda xp, x, y, a: (math.sqrt(math.pi) / 2) * xp.exp(y * y),
               doc="Inverse error function.")
register_unary("smooth_l1", expr_kernel(_smooth_l1), _smooth_l1_deriv, attrs={"scalar": Attr("float", 1.0)},
               doc="Huber-like loss: 0.5 (sigma x)^2 where |x| < 1/sigma^2, else |x| - 0.5/sigma^2 (sigma = scalar).")
