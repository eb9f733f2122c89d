"""More of MXNet 1.x's random operators: negative binomial samplers (_random_/_sample_/_like forms) and
the densities _random_pdf_{uniform,normal,gamma,exponential,poisson,negative_binomial,
generalized_negative_binomial} with gradients for the sample and every parameter.

Semantics follow MXNet 1.9.1: negative_binomial(k, p) counts failures before k successes of
probability p; generalized_negative_binomial(mu, alpha) is the gamma-Poisson mixture with mean mu
and dispersion alpha (alpha = 0: Poisson(mu)); pdf_gamma's beta is a rate (the sampler's is a
scale); pdf_uniform is 1 / (high - low) without a range check; a pdf's parameters have shape P and its sample P + extra axes; discrete samples get a zero
gradient.
"""
from __future__ import annotations

import math

import numpy as np

from ..base import OperatorError, ShapeError
from .random import _creation, _sample_op
from .registry import Attr, OpDef, register

try:  # scipy's special functions (a dependency of the demo); exact to float64
    from scipy.special import digamma as _digamma, gammaln as _gammaln  # type: ignore
except Exception:  # pragma: no cover - depends on the environment
    _digamma = None
    _gammaln = np.vectorize(math.lgamma)


# -- samplers ---------------------------------------------------------------------------------------
def _neg_binomial(gen, a, shape, dtype):
    k, p = a["k"], a["p"]
    if k <= 0 or not 0 < p <= 1:
        raise OperatorError(f"_random_negative_binomial: k must be > 0 and p in (0, 1], got k={k}, p={p}")
    return gen.negative_binomial(k, p, size=shape).astype(dtype, copy=False)


def _gen_neg_binomial_draw(gen, mu, alpha, shape):
    mu = np.broadcast_to(np.asarray(mu, dtype=np.float64), shape)
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), shape)
    lam = np.where(alpha > 0, gen.gamma(np.where(alpha > 0, 1.0 / np.where(alpha > 0, alpha, 1.0), 1.0),
                                        alpha * mu, size=shape), mu)
    return gen.poisson(lam)


def _gen_neg_binomial(gen, a, shape, dtype):
    if a["mu"] < 0 or a["alpha"] < 0:
        raise OperatorError(f"_random_generalized_negative_binomial: mu and alpha must be >= 0, "
                            f"got mu={a['mu']}, alpha={a['alpha']}")
    return _gen_neg_binomial_draw(gen, a["mu"], a["alpha"], shape).astype(dtype, copy=False)


_creation("_random_negative_binomial", {"k": Attr("int", 1), "p": Attr("float", 1.0)}, _neg_binomial,
          aliases=["random_negative_binomial"],
          doc="Negative binomial samples: failures before k successes of probability p.")
_creation("_random_generalized_negative_binomial", {"mu": Attr("float", 1.0), "alpha": Attr("float", 1.0)},
          _gen_neg_binomial, aliases=["random_generalized_negative_binomial"],
          doc="Generalized negative binomial samples (gamma-Poisson mixture) with mean mu and dispersion alpha.")
_sample_op("_sample_negative_binomial", ["k", "p"], lambda g, p, s: g.negative_binomial(p[0], p[1], size=s))
_sample_op("_sample_generalized_negative_binomial", ["mu", "alpha"],
           lambda g, p, s: _gen_neg_binomial_draw(g, p[0], p[1], s))


# -- densities: (log density, d/dsample or None for discrete samples, [d/dparam]) ---------------------
def _psi(xp, x):
    if _digamma is None:  # pragma: no cover
        raise OperatorError("pdf gradients of gamma-type distributions need scipy (digamma)")
    return _digamma(x) if xp is np else xp.asarray(_digamma(xp.asnumpy(x)))


def _lgam(xp, x):
    return _gammaln(x) if xp is np else xp.asarray(_gammaln(xp.asnumpy(x)))


def _uniform(xp, x, low, high):
    # as MXNet 1.9.1: 1 / (high - low) wherever the sample lies (no range check)
    width = (high - low) + 0 * x
    return -xp.log(width), xp.zeros_like(x), [1.0 / width, -1.0 / width]


def _normal(xp, x, mu, sigma):
    d = x - mu
    logp = -d * d / (2 * sigma * sigma) - xp.log(sigma) - 0.5 * math.log(2 * math.pi)
    return logp, -d / (sigma * sigma), [d / (sigma * sigma), d * d / sigma ** 3 - 1.0 / sigma]


def _gamma(xp, x, alpha, beta):
    logp = alpha * xp.log(beta) + (alpha - 1) * xp.log(x) - beta * x - _lgam(xp, alpha)
    return logp, (alpha - 1) / x - beta, [xp.log(beta) + xp.log(x) - _psi(xp, alpha), alpha / beta - x]


def _exponential(xp, x, lam):
    return xp.log(lam) - lam * x, -lam + 0 * x, [1.0 / lam - x]


def _poisson(xp, x, lam):
    return x * xp.log(lam) - lam - _lgam(xp, x + 1), None, [x / lam - 1]


def _nb_terms(xp, x, r, p):
    logp = _lgam(xp, x + r) - _lgam(xp, x + 1) - _lgam(xp, r) + r * xp.log(p) + x * xp.log1p(-p)
    d_r = _psi(xp, x + r) - _psi(xp, r) + xp.log(p)
    d_p = r / p - x / (1 - p)
    return logp, d_r, d_p


def _neg_binomial_pdf(xp, x, k, p):
    logp, d_k, d_p = _nb_terms(xp, x, k, p)
    return logp, None, [d_k, d_p]


def _gen_neg_binomial_pdf(xp, x, mu, alpha):
    pos = alpha > 0
    a = xp.where(pos, alpha, 1.0)
    r = 1.0 / a
    p = 1.0 / (1.0 + a * mu)
    logp, d_r, d_p = _nb_terms(xp, x, r, p)
    q = (1.0 + a * mu) ** 2
    d_mu = d_p * (-a / q)
    d_alpha = d_r * (-1.0 / (a * a)) + d_p * (-mu / q)
    # alpha = 0: Poisson(mu)
    pl, _, (pd_mu,) = _poisson(xp, x, mu)
    return xp.where(pos, logp, pl), None, [xp.where(pos, d_mu, pd_mu), xp.where(pos, d_alpha, 0.0)]


_PDFS = {
    "uniform": (("low", "high"), _uniform),
    "normal": (("mu", "sigma"), _normal),
    "gamma": (("alpha", "beta"), _gamma),
    "exponential": (("lam",), _exponential),
    "poisson": (("lam",), _poisson),
    "negative_binomial": (("k", "p"), _neg_binomial_pdf),
    "generalized_negative_binomial": (("mu", "alpha"), _gen_neg_binomial_pdf),
}

_PDF_ATTRS = {"is_log": Attr("bool", False, doc="return the log density")}


def _pdf_shape(op, n_params):
    def infer(attrs, in_shapes):
        sample, params = in_shapes[0], in_shapes[1:]
        ref = next((tuple(s) for s in params if s is not None), None)
        for s in params:
            if s is not None and tuple(s) != ref:
                raise ShapeError(f"{op}: parameter arrays must have one shape, got {ref} and {tuple(s)}")
        if sample is None:
            return in_shapes, [None]
        sample = tuple(sample)
        if ref is not None and sample[:len(ref)] != ref:
            raise ShapeError(f"{op}: sample shape {sample} must start with the parameters' shape {ref}")
        return [sample] + [ref] * n_params, [sample]
    return infer


def _expand(p, ndim):
    return p.astype(np.float64).reshape(p.shape + (1,) * (ndim - p.ndim))


def _pdf_eval(fn, xp, inputs):
    x = inputs[0].astype(np.float64)
    params = [_expand(p, x.ndim) for p in inputs[1:]]
    with np.errstate(divide="ignore", invalid="ignore"):
        return fn(xp, x, *params)


def _make_pdf(dist, names, fn):
    op = f"_random_pdf_{dist}"
    bwd = f"_backward_pdf_{dist}"

    def kernel(ctx, attrs, inputs, outputs, aux):
        logp = _pdf_eval(fn, ctx.xp, inputs)[0]
        outputs[0][...] = logp if attrs["is_log"] else ctx.xp.exp(logp)

    def backward(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        g, fwd = inputs[0], inputs[1:-1]
        out = inputs[-1].astype(np.float64)
        _, d_x, d_params = _pdf_eval(fn, xp, fwd)
        scale = g.astype(np.float64) * (1.0 if attrs["is_log"] else out)
        outputs[0][...] = 0 if d_x is None else scale * d_x
        for res, d in zip(outputs[1:], d_params):
            full = scale * d
            res[...] = full.reshape(res.shape + (-1,)).sum(axis=-1) if full.ndim > res.ndim else full

    register(OpDef(
        name=op, aliases=[op[1:]], attrs=_PDF_ATTRS, inputs=["sample", *names], outputs=["output"],
        infer_shape=_pdf_shape(op, len(names)),
        infer_type=lambda a, d: ([d[0]] + [x if x is not None else d[0] for x in d[1:]], [d[0]]),
        kernels={"any": kernel},
        gradient=lambda F, a, i, o, g: list(getattr(F, bwd)(g[0], *i, o[0], **a)),
        doc=f"Density of the {dist} distribution at sample (parameters "
            f"{', '.join(names)} of shape P, sample of shape P + extra); is_log gives the log density."))
    register(OpDef(
        name=bwd, attrs=_PDF_ATTRS, inputs=["out_grad", "sample", *names, "output"],
        outputs=["sample_grad"] + [f"{n}_grad" for n in names],
        infer_shape=lambda a, s: (s, list(s[1:-1])), infer_type=lambda a, d: (list(d), list(d[1:-1])),
        kernels={"any": backward}, doc=f"Gradients of {op} for the sample and each parameter."))


for _dist, (_names, _fn) in _PDFS.items():
    _make_pdf(_dist, list(_names), _fn)


# -- Dirichlet: alpha (P..., K), sample (P..., extra..., K), density over the last axis -------------------
def _dirichlet_shape(attrs, in_shapes):
    op = "_random_pdf_dirichlet"
    sample, alpha = in_shapes
    if sample is None:
        return in_shapes, [None]
    sample = tuple(sample)
    if alpha is not None:
        alpha = tuple(alpha)
        if len(alpha) < 1 or sample[:len(alpha) - 1] != alpha[:-1] or sample[-1] != alpha[-1]:
            raise ShapeError(f"{op}: sample shape {sample} must be alpha's leading shape {alpha[:-1]} + extra "
                             f"axes + ({alpha[-1]},)")
    return [sample, alpha], [sample[:-1]]


def _dirichlet_terms(xp, x, alpha):
    """(log density, d/dx, d/dalpha) with alpha broadcast to the sample's shape."""
    a = alpha.astype(np.float64).reshape(alpha.shape[:-1] + (1,) * (x.ndim - alpha.ndim) + alpha.shape[-1:])
    x = x.astype(np.float64)
    total = a.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        logp = (_lgam(xp, total)[..., 0] - _lgam(xp, a).sum(axis=-1) + ((a - 1) * xp.log(x)).sum(axis=-1))
        return logp, (a - 1) / x, _psi(xp, total) - _psi(xp, a) + xp.log(x)


def _dirichlet(ctx, attrs, inputs, outputs, aux):
    logp = _dirichlet_terms(ctx.xp, inputs[0], inputs[1])[0]
    outputs[0][...] = logp if attrs["is_log"] else ctx.xp.exp(logp)


def _dirichlet_backward(ctx, attrs, inputs, outputs, aux):
    g, x, alpha, out = inputs
    _, d_x, d_a = _dirichlet_terms(ctx.xp, x, alpha)
    scale = (g.astype(np.float64) * (1.0 if attrs["is_log"] else out.astype(np.float64)))[..., None]
    outputs[0][...] = scale * d_x
    full = scale * d_a  # (P..., extra..., K): sum the extra axes
    lead = alpha.ndim - 1
    extra = tuple(range(lead, full.ndim - 1))
    outputs[1][...] = full.sum(axis=extra) if extra else full


register(OpDef(
    name="_random_pdf_dirichlet", aliases=["random_pdf_dirichlet"], attrs=_PDF_ATTRS, inputs=["sample", "alpha"],
    outputs=["output"], infer_shape=_dirichlet_shape,
    infer_type=lambda a, d: ([d[0], d[1] if d[1] is not None else d[0]], [d[0]]), kernels={"any": _dirichlet},
    gradient=lambda F, a, i, o, g: list(F._backward_pdf_dirichlet(g[0], i[0], i[1], o[0], **a)),
    doc="Density of the Dirichlet distribution (alpha of shape P + (K,)) at samples of shape P + extra + (K,); "
        "output P + extra; is_log gives the log density."))
register(OpDef(
    name="_backward_pdf_dirichlet", attrs=_PDF_ATTRS, inputs=["out_grad", "sample", "alpha", "output"],
    outputs=["sample_grad", "alpha_grad"], infer_shape=lambda a, s: (s, [s[1], s[2]]),
    infer_type=lambda a, d: (list(d), [d[1], d[2]]), kernels={"any": _dirichlet_backward},
    doc="Gradients of _random_pdf_dirichlet."))
