"""Random sampling ops: _random_uniform/normal/randint/exponential/gamma/poisson, *_like, _shuffle.

Every op lists the 'rng' resource and draws from `ctx.rng`, a numpy Generator owned by the
device (the caller serialises its use through the engine), so streams are reproducible after
`mx.random.seed`.  On GPU the draws are made on the host and copied (reproducible across devices).
"""
from __future__ import annotations

import numpy as np

from ..base import OperatorError, ShapeError
from ._common import no_gradient, same_shape
from .registry import Attr, OpDef, as_dtype, register

_FLOATS = ("None", "float16", "float32", "float64")


def _gen(op, ctx):
    if ctx.rng is None:
        raise OperatorError(f"{op}: no random generator given (the op needs the 'rng' resource)")
    return ctx.rng


def _dtype(attrs, default="float32"):
    d = attrs["dtype"]
    return np.dtype(default) if d in ("None", "") else as_dtype(d)


def _store(ctx, out, values) -> None:
    out[...] = values if ctx.xp is np else ctx.xp.asarray(values)


def _shape_infer(op):
    def infer(attrs, in_shapes):
        shape = attrs["shape"]
        if any(d is None or d < 0 for d in shape):
            raise ShapeError(f"{op}: shape {tuple(shape)} must hold non-negative integers")
        return [], [tuple(shape)]
    return infer


def _creation(name, params, sample, dtypes=_FLOATS, default="float32", aliases=(), doc=""):
    attrs = dict(params)
    attrs.update({"shape": Attr("shape", ()), "ctx": Attr("str", ""),
                  "dtype": Attr("str", "None", choices=dtypes)})

    def kernel(ctx, a, inputs, outputs, aux):
        out = outputs[0]
        _store(ctx, out, sample(_gen(name, ctx), a, out.shape, out.dtype))

    register(OpDef(name=name, attrs=attrs, inputs=[], outputs=["output"], infer_shape=_shape_infer(name),
                   infer_type=lambda a, d: ([], [_dtype(a, default)]), kernels={"any": kernel},
                   resources=("rng",), aliases=list(aliases), doc=doc))
    like = f"{name}_like"
    like_attrs = {k: v for k, v in attrs.items() if k not in ("shape", "ctx", "dtype")}

    def like_kernel(ctx, a, inputs, outputs, aux):
        out = outputs[0]
        _store(ctx, out, sample(_gen(like, ctx), a, out.shape, out.dtype))

    register(OpDef(name=like, attrs=like_attrs, inputs=["data"], outputs=["output"],
                   infer_shape=same_shape(like), kernels={"any": like_kernel}, resources=("rng",),
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
    perm = _gen("_shuffle", ctx).permutation(x.shape[0]) if x.ndim else None
    out = outputs[0]
    if perm is None:
        out[...] = x
    else:
        out[...] = x[perm if ctx.xp is np else ctx.xp.asarray(perm)]


register(OpDef(name="_shuffle", aliases=["shuffle"], inputs=["data"], outputs=["output"],
               infer_shape=same_shape("_shuffle"), kernels={"any": _shuffle}, resources=("rng",),
               doc="data with its first axis randomly permuted."))
