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
from . import stype
from .nn_activation import relu_into
from .registry import Attr, UfuncForm

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
    relu_into(ctx.xp, inputs[0], outputs[0])


# the one ufunc call a kernel above is (registered as the op's `ufunc_form`)
_KERNEL_FORMS = {"relu": UfuncForm("scalar", np.maximum, "iuf", constant=0.0, kernel_from=4096)}


def _sigmoid(xp, x, a):
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + xp.exp(-x))


def _mxnet_rint(xp, x, a):
    if x.dtype.kind != "f":
        return x
    fl = xp.floor(x)
    return xp.where(x - fl <= 0.5, fl, fl + 1)


# Second derivatives (of f' w.r.t. what the backward op reads), written with registry ops through F.
def _zero(F, v, a):
    return None  # f' is piecewise constant: no second-order gradient flows


def _const(c):
    return lambda F, v, a: F._mul_scalar(F.ones_like(v), scalar=c)


def _scaled(fn, c):
    return lambda F, v, a: F._mul_scalar(fn(F, v), scalar=c)


def _x_times_pow(sign: float, shift: float, pw: float, minus_one: bool = False):
    """sign * x * (x^2 + shift)^pw, or sign * x * (-shift - x^2)^pw for a negative shift (inverse trig);
    `minus_one`: sign * x * (x^2 - 1)^pw (arccosh)."""
    def second(F, v, a):
        if minus_one:
            base = F._plus_scalar(F.square(v), scalar=-1.0)
        elif shift >= 0:
            base = F._plus_scalar(F.square(v), scalar=shift)
        else:
            base = F._rminus_scalar(F.square(v), scalar=-shift)
        return F._mul_scalar(F.elemwise_mul(v, F._power_scalar(base, scalar=pw)), scalar=sign)
    return second


def _exp_kernel(ctx, attrs, inputs, outputs, aux):
    """exp, for float16/32 evaluated in float64 and rounded once: correctly rounded as MXNet's expf
    (numpy's vectorised float32 exp is up to 1 ulp off: exp(1) = 2.7182820 instead of 2.7182817)."""
    x = inputs[0]
    if x.dtype == np.float32 or x.dtype == np.float16:
        ctx.xp.exp(x, out=outputs[0], dtype=np.float64, casting="same_kind")
    else:
        ctx.xp.exp(x, out=outputs[0], casting="unsafe")


# name: (kernel, or the name of the numpy ufunc it is, derivative(xp, x, y, attrs) or None for zero gradient,
#        what it reads, second derivative)
# The derivative reads the output where the maths allows (exp' = y, tanh' = 1 - y^2), so the
# forward op can run in place and its input need not stay alive for backward.
_OPS = {
    "exp": (_exp_kernel, lambda xp, x, y, a: y, "out", _const(1.0)),
    "expm1": ("expm1", lambda xp, x, y, a: y + 1, "out", _const(1.0)),
    "log": ("log", _quiet(lambda xp, x, y, a: 1.0 / x), "in",
            _scaled(lambda F, v: F.reciprocal(F.square(v)), -1.0)),
    "log2": ("log2", _quiet(lambda xp, x, y, a: 1.0 / (x * math.log(2.0))), "in",
             _scaled(lambda F, v: F.reciprocal(F.square(v)), -1.0 / math.log(2.0))),
    "log10": ("log10", _quiet(lambda xp, x, y, a: 1.0 / (x * math.log(10.0))), "in",
              _scaled(lambda F, v: F.reciprocal(F.square(v)), -1.0 / math.log(10.0))),
    "log1p": ("log1p", _quiet(lambda xp, x, y, a: 1.0 / (1.0 + x)), "in",
              _scaled(lambda F, v: F.reciprocal(F.square(F._plus_scalar(v, scalar=1.0))), -1.0)),
    "sqrt": ("sqrt", _quiet(lambda xp, x, y, a: 0.5 / y), "out",
             _scaled(lambda F, v: F.reciprocal(F.square(v)), -0.5)),
    # rsqrt' = -x^-3/2 / 2 = -y^3 / 2
    "rsqrt": (expr_kernel(lambda xp, x, a: 1.0 / xp.sqrt(x)), _quiet(lambda xp, x, y, a: -0.5 * y * y * y), "out",
              _scaled(lambda F, v: F.square(v), -1.5)),
    "cbrt": ("cbrt", _quiet(lambda xp, x, y, a: 1.0 / (3.0 * y * y)), "out",
             _scaled(lambda F, v: F._power_scalar(v, scalar=-3.0), -2.0 / 3.0)),
    # rcbrt' = -x^-4/3 / 3 = -y^4 / 3
    "rcbrt": (expr_kernel(lambda xp, x, a: 1.0 / xp.cbrt(x)), _quiet(lambda xp, x, y, a: -(y ** 4) / 3.0), "out",
              _scaled(lambda F, v: F._power_scalar(v, scalar=3.0), -4.0 / 3.0)),
    "square": ("square", lambda xp, x, y, a: 2 * x, "in", _const(2.0)),
    "reciprocal": ("reciprocal", _quiet(lambda xp, x, y, a: -y * y), "out",
                   _scaled(lambda F, v: v, -2.0)),
    "abs": ("absolute", lambda xp, x, y, a: xp.sign(x), "in", _zero),
    "sin": ("sin", lambda xp, x, y, a: xp.cos(x), "in", lambda F, v, a: F.negative(F.sin(v))),
    "cos": ("cos", lambda xp, x, y, a: -xp.sin(x), "in", lambda F, v, a: F.negative(F.cos(v))),
    "tan": ("tan", lambda xp, x, y, a: 1 + y * y, "out", _scaled(lambda F, v: v, 2.0)),
    "arcsin": ("arcsin", _quiet(lambda xp, x, y, a: 1.0 / xp.sqrt(1 - x * x)), "in",
               _x_times_pow(1.0, -1.0, -1.5)),
    "arccos": ("arccos", _quiet(lambda xp, x, y, a: -1.0 / xp.sqrt(1 - x * x)), "in",
               _x_times_pow(-1.0, -1.0, -1.5)),
    "arctan": ("arctan", lambda xp, x, y, a: 1.0 / (1 + x * x), "in", _x_times_pow(-2.0, 1.0, -2.0)),
    "sinh": ("sinh", lambda xp, x, y, a: xp.cosh(x), "in", lambda F, v, a: F.sinh(v)),
    "cosh": ("cosh", lambda xp, x, y, a: xp.sinh(x), "in", lambda F, v, a: F.cosh(v)),
    "tanh": ("tanh", lambda xp, x, y, a: 1 - y * y, "out", _scaled(lambda F, v: v, -2.0)),
    "arcsinh": ("arcsinh", lambda xp, x, y, a: 1.0 / xp.sqrt(x * x + 1), "in",
                _x_times_pow(-1.0, 1.0, -1.5)),
    "arccosh": ("arccosh", _quiet(lambda xp, x, y, a: 1.0 / xp.sqrt(x * x - 1)), "in",
                _x_times_pow(-1.0, -1.0, -1.5, minus_one=True)),
    "arctanh": ("arctanh", _quiet(lambda xp, x, y, a: 1.0 / (1 - x * x)), "in",
                _x_times_pow(2.0, -1.0, -2.0)),
    "degrees": ("degrees", lambda xp, x, y, a: xp.full_like(x, 180.0 / math.pi), "in", _zero),
    "radians": ("radians", lambda xp, x, y, a: xp.full_like(x, math.pi / 180.0), "in", _zero),
    "sigmoid": (expr_kernel(_sigmoid), lambda xp, x, y, a: y * (1 - y), "out",
                lambda F, v, a: F._rminus_scalar(F._mul_scalar(v, scalar=2.0), scalar=1.0)),
    # relu' is 1 above 0, else 0, and NaN at NaN (MXNet's relu_grad passes NaN through)
    "relu": (_relu_kernel, lambda xp, x, y, a: xp.where(xp.isnan(y), y, y > 0), "out", _zero),
    # softsign' = 1 / (1 + |x|)^2 = (1 - |y|)^2
    "softsign": (expr_kernel(lambda xp, x, a: x / (1 + xp.abs(x))),
                 lambda xp, x, y, a: (1 - xp.abs(y)) ** 2, "out",
                 lambda F, v, a: F.elemwise_mul(F._mul_scalar(F._rminus_scalar(F.abs(v), scalar=1.0), scalar=-2.0),
                                                F.sign(v))),
    "erf": (expr_kernel(lambda xp, x, a: _special_fn(xp, "erf", x)),
            lambda xp, x, y, a: (2.0 / math.sqrt(math.pi)) * xp.exp(-x * x), "in",
            lambda F, v, a: F.elemwise_mul(F._mul_scalar(v, scalar=-4.0 / math.sqrt(math.pi)),
                                           F.exp(F.negative(F.square(v))))),
    "gamma": (expr_kernel(lambda xp, x, a: _special_fn(xp, "gamma", x)),
              lambda xp, x, y, a: y * _digamma(xp, x), "both", None),
    "gammaln": (expr_kernel(lambda xp, x, a: _special_fn(xp, "gammaln", x)),
                lambda xp, x, y, a: _digamma(xp, x), "in", None),
    # piecewise constant: zero gradient
    "sign": ("sign", None, None, None),
    "floor": ("floor", None, None, None),
    "ceil": ("ceil", None, None, None),
    # MXNet's rint rounds halves down (floor(x) when x - floor(x) <= 0.5): rint(-2.5) = -3, rint(2.5) = 2
    "rint": (expr_kernel(_mxnet_rint), None, None, None),
    "fix": ("trunc", None, None, None),
    "trunc": ("trunc", None, None, None),
    # MXNet's round rounds half away from zero (C round), unlike numpy's half-to-even
    "round": (expr_kernel(lambda xp, x, a: xp.sign(x) * xp.floor(xp.abs(x) + 0.5) if x.dtype.kind == "f" else x),
              None, None, None),
}

_FLOAT_ONLY_DOC = {"sign": "sign of x (-1, 0, 1)", "fix": "round towards zero",
                   "rint": "nearest integer, halves rounded down (MXNet's rint)"}

# zero-preserving ops MXNet registers with sparse kernels (MXNET_OPERATOR_REGISTER_UNARY_WITH_RSP_CSR):
# a row_sparse or csr input gives a result of its storage type
_KEEPS_SPARSE = ("abs", "sign", "round", "rint", "ceil", "floor", "trunc", "fix", "square", "sqrt", "cbrt",
                 "sin", "tan", "arcsin", "arctan", "sinh", "tanh", "arcsinh", "arctanh", "degrees", "radians",
                 "expm1", "log1p", "relu")

for _name, (_kernel, _deriv, _uses, _second) in _OPS.items():
    _fields = {"ufunc_form": _KERNEL_FORMS[_name]} if _name in _KERNEL_FORMS else {}
    if _name in _KEEPS_SPARSE:
        _fields["infer_stype"] = stype.elemwise()
    if isinstance(_kernel, str):  # numpy's ufunc of that name, called straight into the output
        _fields["ufunc_form"] = UfuncForm("unary", getattr(np, _kernel))
        _kernel = ufunc_kernel(_kernel)
    _kernel = _quiet_kernel(_kernel) if _name in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal",
                                                   "arcsin", "arccos", "arccosh", "arctanh", "rcbrt", "gamma",
                                                   "gammaln") else _kernel
    if _deriv is None:
        register_unary(_name, _kernel, None, gradient=no_gradient(1), doc=_FLOAT_ONLY_DOC.get(_name, f"{_name}(x)"),
                       **_fields)
    else:
        register_unary(_name, _kernel, _deriv, doc=f"{_name}(x), elementwise", uses=_uses, second=_second, **_fields)


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
               attrs={"a_min": Attr("float"), "a_max": Attr("float")}, uses="in", second=_zero,
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
               attrs={"alpha": Attr("float", 0.2), "beta": Attr("float", 0.5)}, uses="out", second=_zero,
               doc="clip(alpha * x + beta, 0, 1).")
register_unary("erfinv", _quiet_kernel(expr_kernel(lambda xp, x, a: _special_fn(xp, "erfinv", x))),
               lambda xp, x, y, a: (math.sqrt(math.pi) / 2) * xp.exp(y * y), uses="out",
               second=lambda F, v, a: F._mul_scalar(F.elemwise_mul(v, F.exp(F.square(v))), scalar=math.sqrt(math.pi)),
               doc="Inverse error function.")
register_unary("smooth_l1", expr_kernel(_smooth_l1), _smooth_l1_deriv, attrs={"scalar": Attr("float", 1.0)}, uses="in",
               doc="Huber-like loss: 0.5 (sigma x)^2 where |x| < 1/sigma^2, else |x| - 0.5/sigma^2 (sigma = scalar).")
