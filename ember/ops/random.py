"""Random sampling ops: _random_uniform/normal/randint/exponential/gamma/poisson, *_like, _shuffle.

Every op lists the 'rng' resource and draws from `ctx.rng`, a numpy Generator owned by the
device (the caller serialises its use through the engine), so streams are reproducible after
`mx.random.seed`.  On GPU the draws are made on the host and copied (reproducible across devices).
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from ._common import generator, no_gradient, same_shape, store
from ._common import np_shape as _np_shape
from .registry import Attr, OpDef, as_dtype, register

_FLOATS = ("None", "float16", "float32", "float64")


def _dtype(attrs, default="float32"):
    d = attrs["dtype"]
    return np.dtype(default) if d in ("None", "") else as_dtype(d)


def _shape_infer(op):
    def infer(attrs, in_shapes):
        shape = attrs["shape"]
        if any(d is None or d < 0 for d in shape):
            raise ShapeError(f"{op}: shape {tuple(shape)} must hold non-negative integers")
        if not shape and not _np_shape():
            # MXNet 1.x: no shape is an unknown one, which a symbolic graph fills in from where the
            # samples go (random.normal(...) + x takes x's shape); an imperative call cannot
            return [], [None]
        return [], [tuple(shape)]
    return infer


def _creation(name, params, sample, dtypes=_FLOATS, default="float32", aliases=(), doc=""):
    attrs = dict(params)
    attrs.update({"shape": Attr("shape", ()), "ctx": Attr("str", ""),
                  "dtype": Attr("str", "None", choices=dtypes)})

    def kernel_of(op):  # the samples fill the output; errors name `op`
        def kernel(ctx, a, inputs, outputs, aux):
            out = outputs[0]
            store(ctx, out, sample(generator(op, ctx), a, out.shape, out.dtype))
        return kernel

    register(OpDef(name=name, attrs=attrs, inputs=[], outputs=["output"], infer_shape=_shape_infer(name),
                   infer_type=lambda a, d: ([], [_dtype(a, default)]), kernels={"any": kernel_of(name)},
                   resources=("rng",), aliases=list(aliases), doc=doc))
    like = f"{name}_like"
    like_attrs = {k: v for k, v in attrs.items() if k not in ("shape", "ctx", "dtype")}
    register(OpDef(name=like, attrs=like_attrs, inputs=["data"], outputs=["output"],
                   infer_shape=same_shape(like), kernels={"any": kernel_of(like)}, resources=("rng",),
                   gradient=no_gradient(1), doc=f"{doc} Shape and dtype of data."))


def _uniform(gen, a, shape, dtype):
    if a["low"] > a["high"]:
        raise OperatorError(f"_random_uniform: low ({a['low']}) must be <= high ({a['high']})")
    draw = gen.random(shape, dtype=np.float32 if dtype == np.float32 else np.float64)
    return (a["low"] + (a["high"] - a["low"]) * draw).astype(dtype, copy=False)


def _normal(gen, a, shape, dtype):
    if a["scale"] < 0:
        raise OperatorError(f"_random_normal: scale must be >= 0, got {a['scale']}")
    draw = gen.standard_normal(shape, dtype=np.float32 if dtype == np.float32 else np.float64)
    return (a["loc"] + a["scale"] * draw).astype(dtype, copy=False)


def _randint(gen, a, shape, dtype):
    if a["low"] >= a["high"]:
        raise OperatorError(f"_random_randint: low ({a['low']}) must be < high ({a['high']})")
    return gen.integers(a["low"], a["high"], size=shape, dtype=dtype)


def _exponential(gen, a, shape, dtype):
    if a["lam"] <= 0:
        raise OperatorError(f"_random_exponential: lam must be > 0, got {a['lam']}")
    return gen.exponential(1.0 / a["lam"], size=shape).astype(dtype, copy=False)


def _gamma(gen, a, shape, dtype):
    if a["alpha"] <= 0 or a["beta"] <= 0:
        raise OperatorError(f"_random_gamma: alpha and beta must be > 0, got {a['alpha']}, {a['beta']}")
    return gen.gamma(a["alpha"], a["beta"], size=shape).astype(dtype, copy=False)


def _poisson(gen, a, shape, dtype):
    if a["lam"] < 0:
        raise OperatorError(f"_random_poisson: lam must be >= 0, got {a['lam']}")
    return gen.poisson(a["lam"], size=shape).astype(dtype, copy=False)


_creation("_random_uniform", {"low": Attr("float", 0.0), "high": Attr("float", 1.0)}, _uniform,
          aliases=["uniform", "random_uniform"], doc="Uniform samples in [low, high).")
_creation("_random_normal", {"loc": Attr("float", 0.0), "scale": Attr("float", 1.0)}, _normal,
          aliases=["normal", "random_normal"], doc="Normal samples N(loc, scale^2).")
_creation("_random_randint", {"low": Attr("int"), "high": Attr("int")}, _randint,
          dtypes=("None", "int32", "int64"), default="int32", aliases=["random_randint"],
          doc="Integers uniform in [low, high).")
_creation("_random_exponential", {"lam": Attr("float", 1.0)}, _exponential,
          aliases=["random_exponential"], doc="Exponential samples with rate lam.")
_creation("_random_gamma", {"alpha": Attr("float", 1.0), "beta": Attr("float", 1.0)}, _gamma,
          aliases=["random_gamma"], doc="Gamma samples with shape alpha and scale beta.")
_creation("_random_poisson", {"lam": Attr("float", 1.0)}, _poisson,
          aliases=["random_poisson"], doc="Poisson samples with rate lam.")


def _shuffle(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    perm = generator("_shuffle", ctx).permutation(x.shape[0]) if x.ndim else None
    out = outputs[0]
    if perm is None:
        out[...] = x
    else:
        out[...] = x[ctx.xp.asarray(perm)]


register(OpDef(name="_shuffle", aliases=["shuffle"], inputs=["data"], outputs=["output"],
               infer_shape=same_shape("_shuffle"), kernels={"any": _shuffle}, resources=("rng",),
               doc="data with its first axis randomly permuted."))


# -- sample_*: one draw block per element of the parameter arrays ---------------------------------------
def _sample_infer(op, n_params):
    def infer(attrs, in_shapes):
        ref = next((s for s in in_shapes if s is not None), None)
        for s in in_shapes:
            if s is not None and ref is not None and tuple(s) != tuple(ref):
                raise ShapeError(f"{op}: parameter arrays must have one shape, got {tuple(ref)} and {tuple(s)}")
        if ref is None:
            return in_shapes, [None]
        return [tuple(ref)] * n_params, [tuple(ref) + tuple(attrs["shape"])]
    return infer


def _sample_op(name, params, draw, dtypes=_FLOATS, default="float32"):
    attrs = {"shape": Attr("shape", ()), "dtype": Attr("str", "None", choices=dtypes)}

    def kernel(ctx, a, inputs, outputs, aux):
        xp = ctx.xp
        out = outputs[0]
        extra = tuple(a["shape"])
        host = [p if xp is np else xp.asnumpy(p) for p in inputs]
        # parameters broadcast against the trailing sample axes
        expanded = [p.astype(np.float64).reshape(p.shape + (1,) * len(extra)) for p in host]
        store(ctx, out, draw(generator(name, ctx), expanded, out.shape).astype(out.dtype, copy=False))

    register(OpDef(name=name, aliases=[name[1:]], attrs=attrs, inputs=params, outputs=["output"],
                   infer_shape=_sample_infer(name, len(params)),
                   infer_type=lambda a, d: (list(d), [_dtype(a, default) if a["dtype"] not in ("None", "")
                                                      else (d[0] if d[0] is not None else np.dtype(default))]),
                   kernels={"any": kernel}, resources=("rng",),
                   doc=f"Samples with per-element parameters {', '.join(params)}; output shape params.shape + shape."))


_sample_op("_sample_uniform", ["low", "high"], lambda g, p, s: g.uniform(p[0], p[1], size=s))
_sample_op("_sample_normal", ["mu", "sigma"], lambda g, p, s: g.normal(p[0], p[1], size=s))
_sample_op("_sample_gamma", ["alpha", "beta"], lambda g, p, s: g.gamma(p[0], p[1], size=s))
_sample_op("_sample_exponential", ["lam"], lambda g, p, s: g.exponential(1.0 / p[0], size=s))
_sample_op("_sample_poisson", ["lam"], lambda g, p, s: g.poisson(p[0], size=s))


# -- multinomial --------------------------------------------------------------------------------------
_MULTI_ATTRS = {"shape": Attr("shape", ()), "get_prob": Attr("bool", False),
                "dtype": Attr("str", "int32", choices=("uint8", "int32", "float16", "float32", "float64"))}


def _multi_outputs(attrs):
    return ["output", "prob"] if attrs["get_prob"] else ["output"]


def _multi_infer(attrs, in_shapes):
    d = in_shapes[0]
    n = 2 if attrs["get_prob"] else 1
    if d is None:
        return in_shapes, [None] * n
    if len(d) < 1:
        raise ShapeError("_sample_multinomial: data must hold probabilities on its last axis")
    out = tuple(d[:-1]) + tuple(attrs["shape"])
    return in_shapes, [out or (1,)] * n


def _multi_type(attrs, in_dtypes):
    outs = [np.dtype(attrs["dtype"])]
    if attrs["get_prob"]:
        outs.append(in_dtypes[0])
    return list(in_dtypes), outs


def _multinomial(ctx, attrs, inputs, outputs, aux):
    xp = ctx.xp
    p = inputs[0] if xp is np else xp.asnumpy(inputs[0])
    k = p.shape[-1]
    rows = p.reshape(-1, k).astype(np.float64)
    if (rows < 0).any():
        raise OperatorError("_sample_multinomial: probabilities must be non-negative")
    n_draw = int(np.prod(attrs["shape"])) if attrs["shape"] else 1
    cdf = np.cumsum(rows, axis=1)
    cdf /= cdf[:, -1:]
    u = generator("_sample_multinomial", ctx).random((rows.shape[0], n_draw))
    idx = np.minimum((u[:, :, None] > cdf[:, None, :]).sum(axis=2), k - 1)
    store(ctx, outputs[0], idx.reshape(outputs[0].shape))
    if attrs["get_prob"]:
        with np.errstate(divide="ignore"):
            logp = np.log(np.take_along_axis(rows, idx, axis=1))
        store(ctx, outputs[1], logp.reshape(outputs[1].shape))


def _multinomial_backward(ctx, attrs, inputs, outputs, aux):
    # d log p[idx] / d p = 1 / p[idx] at the sampled category (what REINFORCE needs)
    g, p, idx = inputs
    xp = ctx.xp
    k = p.shape[-1]
    rows = p.reshape(-1, k)
    n_draw = int(np.prod(attrs["shape"])) if attrs["shape"] else 1
    i = idx.reshape(rows.shape[0], n_draw).astype(np.int64)
    gv = g.reshape(rows.shape[0], n_draw) / xp.take_along_axis(rows, i, axis=1)
    res = xp.zeros(rows.shape, dtype=p.dtype)
    add_at = np.add.at if xp is np else xp.add.at
    add_at(res, (xp.arange(rows.shape[0])[:, None], i), gv)
    outputs[0][...] = res.reshape(p.shape)


register(OpDef(name="_backward_sample_multinomial", attrs=_MULTI_ATTRS, inputs=["ograd_prob", "data", "output"],
               outputs=["data_grad"], infer_shape=lambda a, s: (s, [s[1]]),
               infer_type=lambda a, d: (list(d), [d[1]]), kernels={"any": _multinomial_backward},
               doc="Gradient of the log-probabilities returned by sample_multinomial(get_prob=True)."))
register(OpDef(name="_sample_multinomial", aliases=["sample_multinomial"], attrs=_MULTI_ATTRS,
               outputs=_multi_outputs, infer_shape=_multi_infer, infer_type=_multi_type,
               kernels={"any": _multinomial}, resources=("rng",),
               gradient=lambda F, a, i, o, g: [F._backward_sample_multinomial(g[1], i[0], o[0], **a)
                                               if a["get_prob"] and g[1] is not None else F.zeros_like(i[0])],
               doc="Category indices drawn from the distributions on data's last axis (and their log-probs)."))
