"""mx.np.random's samplers as registry operators (MXNet 1.9.1's `_npi_*` names), with numpy's shapes.

`_npi_<dist>(*arrays, <param>=scalar-or-None, size=, ctx=, dtype=)`: each distribution parameter is either
a scalar attribute or, when that attribute is None, an array input (in the parameters' order), so
`np.random.normal(loc_array, 2.0)` is `_npi_normal(loc_array, loc=None, scale=2.0)`.  The output's shape is
`size` when given (the parameters must broadcast to it, numpy's rule), else the parameters' broadcast
shape (0-d for scalars only).  Every op draws from the device's 'rng' resource (seeded by
`mx.random.seed`), so streams are reproducible.

The continuous samplers are reparameterized as in MXNet: the output is a differentiable function of
the parameters and of a noise draw that does not depend on them, kept as a hidden second output, so
gradients flow to array parameters (summed over the axes they were broadcast along):

  uniform(low, high)      low + (high - low) u                         u ~ U[0, 1)
  normal(loc, scale)      loc + scale z                                z ~ N(0, 1)
  logistic(loc, scale)    loc + scale log(u / (1 - u))
  gumbel(loc, scale)      loc - scale log(-log u)
  laplace(loc, scale)     loc + scale l                                l ~ Laplace(0, 1)
  exponential(scale)      scale e                                      e ~ Exp(1)
  rayleigh(scale)         scale sqrt(2 e)
  weibull(a)              e ** (1 / a)
  pareto(a)               exp(e / a) - 1                               (numpy's Lomax form)
  power(a)                (1 - exp(-e)) ** (1 / a)
  gamma(shape, scale)     scale g                                      g ~ Gamma(shape, 1); d g / d shape
                                                                        by implicit differentiation of
                                                                        the CDF (scipy's gammainc)

Invalid parameters (a negative scale, a non-positive gamma shape/scale or weibull/pareto/power `a`)
raise `RandomParamError`, a ValueError, as MXNet's ValueError-tagged checks; array parameters are
checked when the kernel runs.  `_npi_bernoulli(prob or logit)` draws 0/1 values (no gradient);
`_npi_uniform_n` / `_npi_normal_n` are npx's sample_n forms: `batch_shape + broadcast(param shapes)`.
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from ._common import generator, store
from ._nn_util import call_op
from .registry import Attr, OpDef, register

_DTYPES = ("None", "float16", "float32", "float64")


class RandomParamError(OperatorError, ValueError):
    """An invalid distribution parameter (MXNet raises ValueError for these)."""


def _broadcast(op: str, shapes):
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes])) if shapes else ()
    except ValueError:
        raise ShapeError(f"{op}: parameter shapes {[tuple(s) for s in shapes]} do not broadcast together") from None


def _check_to_size(op: str, shapes, size):
    for s in shapes:
        try:
            if tuple(np.broadcast_shapes(tuple(s), tuple(size))) != tuple(size):
                raise ValueError
        except ValueError:
            raise ShapeError(f"{op}: a parameter of shape {tuple(s)} does not broadcast to size {tuple(size)}") \
                from None


def _host(ctx, x):
    return x if ctx.xp is np else ctx.xp.asnumpy(x)


# -- the distributions: checks, draw (noise, output) and d output / d parameter -------------------------
def _positive(name):
    def check(v):
        return bool(np.all(v > 0)), f"{name} must be > 0"
    return check


def _non_negative(name):
    def check(v):
        return bool(np.all(v >= 0)), f"{name} must be >= 0"
    return check


def _exp1(gen, shape):
    return gen.standard_exponential(shape)


def _u_open(gen, shape):
    # (0, 1): log(u) and log(1 - u) stay finite
    return np.clip(gen.random(shape), np.finfo(np.float64).tiny, 1.0 - np.finfo(np.float64).epsneg)


def _gamma_shape_grad(alpha, g):
    """d g / d alpha for g ~ Gamma(alpha, 1) at fixed CDF value: -dP(alpha, g)/dalpha / pdf(g)."""
    from scipy.special import gammainc, gammaln
    h = 1e-4 * np.maximum(alpha, 1.0)
    dp = (gammainc(alpha + h, g) - gammainc(np.maximum(alpha - h, 1e-12), g)) / (alpha + h - np.maximum(alpha - h, 1e-12))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        logpdf = (alpha - 1) * np.log(g) - g - gammaln(alpha)
        res = -dp / np.exp(logpdf)
    return np.where(np.isfinite(res), res, 0.0)


# name -> (parameters, checks {param: check}, draw(gen, params, shape) -> (noise, out),
#          grads(params, noise, out) -> [d out / d param] or None (no gradient))
_DISTS = {
    "uniform": (("low", "high"), {},
                lambda g, p, s: (lambda u: (u, p[0] + (p[1] - p[0]) * u))(g.random(s)),
                lambda p, n, o: [1.0 - n, n]),
    "normal": (("loc", "scale"), {"scale": _non_negative("scale")},
               lambda g, p, s: (lambda z: (z, p[0] + p[1] * z))(g.standard_normal(s)),
               lambda p, n, o: [np.ones_like(n), n]),
    "logistic": (("loc", "scale"), {"scale": _non_negative("scale")},
                 lambda g, p, s: (lambda u: (np.log(u / (1 - u)), p[0] + p[1] * np.log(u / (1 - u))))(_u_open(g, s)),
                 lambda p, n, o: [np.ones_like(n), n]),
    "gumbel": (("loc", "scale"), {"scale": _non_negative("scale")},
               lambda g, p, s: (lambda u: (-np.log(-np.log(u)), p[0] - p[1] * np.log(-np.log(u))))(_u_open(g, s)),
               lambda p, n, o: [np.ones_like(n), n]),
    "laplace": (("loc", "scale"), {"scale": _non_negative("scale")},
                lambda g, p, s: (lambda l: (l, p[0] + p[1] * l))(g.laplace(0.0, 1.0, s)),
                lambda p, n, o: [np.ones_like(n), n]),
    "exponential": (("scale",), {"scale": _non_negative("scale")},
                    lambda g, p, s: (lambda e: (e, p[0] * e))(_exp1(g, s)),
                    lambda p, n, o: [n]),
    "rayleigh": (("scale",), {"scale": _non_negative("scale")},
                 lambda g, p, s: (lambda e: (np.sqrt(2 * e), p[0] * np.sqrt(2 * e)))(_exp1(g, s)),
                 lambda p, n, o: [n]),
    "weibull": (("a",), {"a": _positive("a")},
                lambda g, p, s: (lambda e: (e, e ** (1.0 / p[0])))(_exp1(g, s)),
                lambda p, n, o: [-o * np.log(np.where(o > 0, o, 1.0)) / p[0]]),
    "pareto": (("a",), {"a": _positive("a")},
               lambda g, p, s: (lambda e: (e, np.expm1(e / p[0])))(_exp1(g, s)),
               lambda p, n, o: [-(o + 1) * np.log1p(o) / p[0]]),
    "power": (("a",), {"a": _positive("a")},
              lambda g, p, s: (lambda e: (e, (-np.expm1(-e)) ** (1.0 / p[0])))(_exp1(g, s)),
              lambda p, n, o: [-o * np.log(np.where(o > 0, o, 1.0)) / p[0]]),
    "gamma": (("shape", "scale"), {"shape": _positive("shape"), "scale": _positive("scale")},
              lambda g, p, s: (lambda x: (x, p[1] * x))(g.standard_gamma(np.broadcast_to(p[0], s))),
              lambda p, n, o: [p[1] * _gamma_shape_grad(np.broadcast_to(p[0], n.shape), n), n]),
}


def _array_params(params):
    def names(attrs):
        return [p for p in params if attrs[p] is None]
    return names


def _infer_shape(op, params):
    def infer(attrs, in_shapes):
        size = attrs["size"]
        if any(s is None or None in s for s in in_shapes):
            if size is not None:
                return in_shapes, [tuple(size)] * 2
            return in_shapes, [None, None]
        if size is not None:
            if any(d is None or d < 0 for d in size):
                raise ShapeError(f"{op}: size {tuple(size)} must hold non-negative integers")
            _check_to_size(op, in_shapes, size)
            out = tuple(size)
        else:
            out = _broadcast(op, in_shapes)
        return in_shapes, [out, out]
    return infer


def _out_dtype(attrs):
    d = attrs["dtype"]
    return np.dtype(np.float32) if d in ("None", "") else np.dtype(d)


def _values(ctx, attrs, params, inputs):
    it = iter(inputs)
    return [np.asarray(_host(ctx, next(it)), dtype=np.float64) if attrs[p] is None else np.float64(attrs[p])
            for p in params]


def _check(op, params, checks, values):
    for p, v in zip(params, values):
        if p in checks:
            ok, msg = checks[p](v)
            if not ok:
                raise RandomParamError(f"{op}: {msg}")


def _forward(op, params, checks, draw):
    def kernel(ctx, attrs, inputs, outputs, aux):
        out, noise = outputs
        values = _values(ctx, attrs, params, inputs)
        _check(op, params, checks, values)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            n, o = draw(generator(op, ctx), [np.broadcast_to(v, out.shape) for v in values], out.shape)
        store(ctx, noise, np.asarray(n).astype(noise.dtype, copy=False))
        store(ctx, out, np.asarray(o).astype(out.dtype, copy=False))
    return kernel


def _reduce_to(g, shape):
    """Sum g over the axes a parameter of `shape` was broadcast along."""
    lead = g.ndim - len(shape)
    if lead:
        g = g.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, d in enumerate(shape) if d == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


def _backward(params, grads):
    def kernel(ctx, attrs, inputs, outputs, aux):
        ograd, noise, out = (np.asarray(_host(ctx, x), dtype=np.float64) for x in inputs[:3])
        values = _values(ctx, attrs, params, inputs[3:])
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            d = grads([np.broadcast_to(v, out.shape) for v in values], noise, out)
        k = 0
        for p, dp in zip(params, d):
            if attrs[p] is not None:
                continue
            res = _reduce_to(ograd * dp, outputs[k].shape).reshape(outputs[k].shape)
            store(ctx, outputs[k], res.astype(outputs[k].dtype, copy=False))
            k += 1
    return kernel


def _attrs_of(a):
    return {k: v for k, v in a.items() if k != "ctx"}  # the device is the arrays'


def _register_backward(op: str, bwd: str, attrs: dict, names, params, grads):
    """Register sampler `op`'s backward op `bwd` (the gradient w.r.t. its array parameters, reparameterized
    through the noise output) and return `op`'s gradient function, which calls it."""
    def gradient(F, a, inputs, outputs, out_grads):
        if not inputs:
            return []
        return call_op(F, bwd, [out_grads[0], outputs[1], outputs[0], *inputs], _attrs_of(a), len(inputs))

    register(OpDef(name=bwd, attrs=attrs, inputs=lambda a: ["ograd", "noise", "output"] + names(a),
                   outputs=lambda a: [f"{p}_grad" for p in names(a)],
                   infer_shape=lambda a, s: (s, [tuple(x) if x is not None else None for x in s[3:]]),
                   infer_type=lambda a, d: (list(d), list(d[3:])), kernels={"any": _backward(params, grads)},
                   doc=f"Gradient of {op} w.r.t. its array parameters (reparameterized through the noise)."))
    return gradient


def _register(dist, params, checks, draw, grads):
    op, bwd = f"_npi_{dist}", f"_backward_npi_{dist}"
    attrs = {p: Attr("float_or_none", None, doc=f"{p} (None: given as an array input)") for p in params}
    attrs.update({"size": Attr("shape_or_none", None, doc="output shape (None: the parameters' broadcast shape)"),
                  "ctx": Attr("str", ""), "dtype": Attr("str", "None", choices=_DTYPES)})
    names = _array_params(params)
    gradient = _register_backward(op, bwd, attrs, names, params, grads)
    register(OpDef(name=op, attrs=attrs, inputs=names, outputs=["output", "noise"],
                   num_visible_outputs=lambda a: 1, infer_shape=_infer_shape(op, params),
                   infer_type=lambda a, d: (list(d), [_out_dtype(a)] * 2),
                   kernels={"any": _forward(op, params, checks, draw)}, resources=("rng",),
                   gradient=gradient,
                   doc=f"numpy.random.{dist}({', '.join(params)}, size) samples; parameters scalar attributes "
                       "or array inputs (see ember/ops/np_random.py)."))


for _dist, (_params, _checks, _draw, _grads) in _DISTS.items():
    _register(_dist, _params, _checks, _draw, _grads)


# -- bernoulli ------------------------------------------------------------------------------------------
def _bern_names(attrs):
    return ["input"] if attrs["prob"] is None and attrs["logit"] is None else []


def _bern_infer(attrs, in_shapes):
    size = attrs["size"]
    if size is not None:
        if in_shapes and in_shapes[0] is not None and None not in in_shapes[0]:
            _check_to_size("_npi_bernoulli", in_shapes, size)
        return in_shapes, [tuple(size)]
    if in_shapes and (in_shapes[0] is None or None in in_shapes[0]):
        return in_shapes, [None]
    return in_shapes, [tuple(in_shapes[0]) if in_shapes else ()]


def _bernoulli(ctx, attrs, inputs, outputs, aux):
    out = outputs[0]
    scalar = attrs["logit"] if attrs["is_logit"] else attrs["prob"]
    v = np.asarray(_host(ctx, inputs[0]), dtype=np.float64) if inputs else np.float64(scalar)
    if attrs["is_logit"]:
        with np.errstate(over="ignore"):
            p = 1.0 / (1.0 + np.exp(-v))
    else:
        if not (np.all(v >= 0) and np.all(v <= 1)):
            raise RandomParamError("_npi_bernoulli: prob must be in [0, 1]")
        p = v
    u = generator("_npi_bernoulli", ctx).random(out.shape)
    store(ctx, out, (u < np.broadcast_to(p, out.shape)).astype(out.dtype))


register(OpDef(name="_npi_bernoulli",
               attrs={"prob": Attr("float_or_none", None), "logit": Attr("float_or_none", None),
                      "is_logit": Attr("bool", False), "size": Attr("shape_or_none", None), "ctx": Attr("str", ""),
                      "dtype": Attr("str", "float32", choices=("float16", "float32", "float64", "int32", "uint8",
                                                               "int8", "int64", "bool"))},
               inputs=_bern_names, outputs=["output"], infer_shape=_bern_infer,
               infer_type=lambda a, d: (list(d), [np.dtype(a["dtype"])]),
               kernels={"any": _bernoulli}, resources=("rng",),
               gradient=lambda F, a, i, o, g: [F.zeros_like(x) for x in i],
               doc="0/1 samples, 1 with probability prob (or sigmoid(logit) with is_logit); prob/logit a scalar "
                   "attribute or the array input."))


# -- npx.random.uniform_n / normal_n: batch_shape + the parameters' broadcast shape -----------------------
def _register_n(dist):
    params, checks, draw, grads = _DISTS[dist]
    op, bwd = f"_npi_{dist}_n", f"_backward_npi_{dist}_n"
    attrs = {p: Attr("float_or_none", None) for p in params}
    attrs.update({"size": Attr("shape_or_none", None, doc="batch shape"), "ctx": Attr("str", ""),
                  "dtype": Attr("str", "None", choices=_DTYPES)})
    names = _array_params(params)

    def infer(a, in_shapes):
        if any(s is None or None in s for s in in_shapes):
            return in_shapes, [None, None]
        out = tuple(a["size"] or ()) + _broadcast(op, in_shapes)
        return in_shapes, [out, out]

    gradient = _register_backward(op, bwd, attrs, names, params, grads)
    register(OpDef(name=op, attrs=attrs, inputs=names, outputs=["output", "noise"],
                   num_visible_outputs=lambda a: 1, infer_shape=infer,
                   infer_type=lambda a, d: (list(d), [_out_dtype(a)] * 2),
                   kernels={"any": _forward(op, params, checks, draw)}, resources=("rng",), gradient=gradient,
                   doc=f"npx.random.{dist}_n: samples of shape size (the batch shape) + the parameters' broadcast "
                       "shape."))


for _dist in ("uniform", "normal"):
    _register_n(_dist)
