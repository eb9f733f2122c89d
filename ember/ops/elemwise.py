"""Elementwise arithmetic: broadcast_* / elemwise_* binary ops, the *_scalar forms, negative, _copy.

Binary ops share one backward op each, ``_backward_broadcast_<op>(ograd, lhs, rhs) ->
(lhs_grad, rhs_grad)``, which also undoes broadcasting (sums over expanded axes), so the
elemwise_* forms reuse them.  Comparisons return the input dtype (1 or 0), as MXNet 1.x does,
and have zero gradients.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

import numpy as np

from ..base import ShapeError
from ._common import (as_scalar, broadcast_shape, copy_kernel, known, no_gradient, ograds_or_zeros, same_shape,
                      same_type, sum_to, via)
from ._unary import register_unary
from . import stype
from .registry import Attr, OpDef, UfuncForm, register

_BIN_INPUTS = ["lhs", "rhs"]


# -- forward kernels ------------------------------------------------------------------
def _binary(ufunc: str, kernel: Optional[Callable] = None, kinds: str = "biuf") -> dict:
    """OpDef fields of a binary op that is the array-module ufunc `ufunc` on outputs of dtype kinds `kinds`
    (its kernel by default: the ufunc straight into the output)."""
    np_fn = getattr(np, ufunc)

    def ufunc_kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        (np_fn if xp is np else getattr(xp, ufunc))(inputs[0], inputs[1], out=outputs[0])
    ufunc_kernel.__name__ = f"{ufunc}_kernel"
    return {"kernels": {"any": kernel or ufunc_kernel}, "ufunc_form": UfuncForm("binary", np_fn, kinds)}


def _div_kernel(ctx, attrs, inputs, outputs, aux):
    a, b, o = inputs[0], inputs[1], outputs[0]
    if o.dtype.kind == "f":
        ctx.xp.divide(a, b, out=o)
    else:  # integer division truncates towards zero, as in C
        with np.errstate(divide="ignore", invalid="ignore"):
            ctx.xp.divide(a, b, out=o, casting="unsafe")


def _mod(xp, a, b, o):
    # MXNet's mod follows the divisor's sign (Python's %) and gives 0 for a zero divisor
    zero = b == 0  # before o is written: o may be b (elementwise ops may run in place)
    with np.errstate(divide="ignore", invalid="ignore"):
        if o.dtype.kind == "f":
            xp.mod(a, b, out=o)
        else:
            xp.mod(a, xp.where(zero, 1, b), out=o, casting="unsafe")
    xp.copyto(o, 0, where=zero)


def _mod_kernel(ctx, attrs, inputs, outputs, aux):
    _mod(ctx.xp, inputs[0], inputs[1], outputs[0])


# -- derivatives (at the broadcast shape) -------------------------------------------------
def _d_add(xp, g, a, b):
    return g, g


def _d_sub(xp, g, a, b):
    return g, -g


def _d_mul(xp, g, a, b):
    return g * b, g * a


def _d_div(xp, g, a, b):
    ga = g / b
    return ga, -ga * a / b


def _d_mod(xp, g, a, b):
    if g.dtype.kind != "f":  # MXNet's integer mod gradients are 0 (no INT_MIN from floor(a/0))
        return xp.zeros_like(g), xp.zeros_like(g)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = xp.floor(a / b)
    return g * xp.ones_like(a), -g * q


def _d_power(xp, g, a, b):
    with np.errstate(divide="ignore", invalid="ignore"):
        ga = g * b * xp.power(a, b - 1)
        gb = g * xp.power(a, b) * xp.log(a)
    return ga, gb


def _d_maximum(xp, g, a, b):
    m = a >= b
    return g * m, g * ~m


def _d_minimum(xp, g, a, b):
    m = a <= b
    return g * m, g * ~m


def _d_hypot(xp, g, a, b):
    h = xp.hypot(a, b)
    return g * a / h, g * b / h


# name: (OpDef fields giving the kernel and ufunc form, derivative)
_ARITH: Dict[str, tuple] = {
    "add": (_binary("add"), _d_add),
    "sub": (_binary("subtract"), _d_sub),
    "mul": (_binary("multiply"), _d_mul),
    "div": (_binary("divide", _div_kernel, kinds="f"), _d_div),
    "mod": ({"kernels": {"any": _mod_kernel}}, _d_mod),
    "power": (_binary("power"), _d_power),
    "maximum": (_binary("maximum"), _d_maximum),
    "minimum": (_binary("minimum"), _d_minimum),
    "hypot": (_binary("hypot"), _d_hypot),
}

_COMPARE = {"equal": "equal", "not_equal": "not_equal", "greater": "greater",
            "greater_equal": "greater_equal", "lesser": "less", "lesser_equal": "less_equal",
            "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor"}


# -- shape inference -------------------------------------------------------------------
def _broadcast_infer(op: str):
    def infer(attrs, in_shapes):
        a, b = in_shapes
        return [a, b], [broadcast_shape(op, a, b)]
    return infer


def _backward_infer(op: str):
    def infer(attrs, in_shapes):
        g, a, b = in_shapes
        if a is not None and b is not None and g is not None:
            full = broadcast_shape(op, a, b)
            if known(g) and known(full) and tuple(g) != full:
                raise ShapeError(f"{op}: ograd has shape {tuple(g)} but the inputs broadcast to {full}")
        return [g, a, b], [a, b]
    return infer


def _backward_binary_kernel(deriv: Callable) -> Callable:
    def kernel(ctx, attrs, inputs, outputs, aux):
        xp = ctx.xp
        g, a, b = inputs
        ga, gb = deriv(xp, g, a, b)
        outputs[0][...] = sum_to(xp, ga, outputs[0].shape)
        outputs[1][...] = sum_to(xp, gb, outputs[1].shape)
    return kernel


def _binary_grad(bwd: str):
    return via(bwd, lambda i, o, g: [g[0], i[0], i[1]], 2, pass_attrs=False)


def _static_shape(x):
    """x's shape when it is known now (NDArray, numpy), None for a Symbol (known only after inference)."""
    shape = getattr(x, "shape", None)
    return shape if isinstance(shape, tuple) else None


def _sum_to(F, g, shape):
    """g summed over the axes broadcasting expanded, so that it has `shape` (registry ops only)."""
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    axes = tuple(range(lead)) + tuple(i + lead for i, n in enumerate(shape) if n == 1 and g.shape[i + lead] != 1)
    r = F.sum(g, axis=axes, keepdims=True) if axes else g
    return r if r.shape == shape else F.reshape(r, shape=shape)


def _add_sub_grad(bwd: str, negate_rhs: bool):
    """Gradient of broadcast_add/sub: the out_grad, reduced to each input's shape.

    Same shapes known now (autograd, the common case): `_backward_add/sub(ograd)`, which reads
    no input and gives two fresh arrays (autograd.grad hands them to the caller, who may write
    into one).  Otherwise `bwd(ograd, lhs, rhs)`, which reads lhs/rhs for their shapes only
    (SHAPE_ONLY_INPUTS: a planner may reuse their bytes before it runs).
    """
    split = "_backward_sub" if negate_rhs else "_backward_add"

    def gradient(F, attrs, inputs, outputs, out_grads):
        g = out_grads[0]
        gs = _static_shape(g)
        if gs is not None and _static_shape(inputs[0]) == gs and _static_shape(inputs[1]) == gs:
            res = getattr(F, split)(g)
        else:
            res = getattr(F, bwd)(g, inputs[0], inputs[1])
        return [res[0], res[1]]
    gradient.__doc__ = f"out_grad reduced to the input shapes ({split} or {bwd})."
    return gradient


def _reduce_back_grad(combine: str):
    """Gradient of _backward_broadcast_add/sub w.r.t. ograd: the two gradients broadcast back and combined."""
    def gradient(F, attrs, inputs, outputs, out_grads):
        u, v = ograds_or_zeros(F, out_grads, outputs, 2)
        return [getattr(F, combine)(u, v), None, None]
    return gradient


def _split_kernel(negate_rhs: bool):
    def kernel(ctx, attrs, inputs, outputs, aux):
        g = inputs[0]
        if outputs[0] is not g:
            outputs[0][...] = g
        if negate_rhs:
            ctx.xp.negative(g, out=outputs[1])
        elif outputs[1] is not g:
            outputs[1][...] = g
    return kernel


# MXNet's _backward_add / _backward_sub: (ograd) -> (ograd, +-ograd), the autograd gradient of
# same-shape adds (two fresh arrays from one op); differentiable again for second order.
for _name, _neg in (("_backward_add", False), ("_backward_sub", True)):
    register(OpDef(name=_name, inputs=["ograd"], outputs=["lhs_grad", "rhs_grad"],
                   infer_shape=lambda a, s: (s, [s[0], s[0]]), infer_type=same_type(_name, 2),
                   kernels={"any": _split_kernel(_neg)}, inplace=[(0, 0)],
                   gradient=(lambda F, a, i, o, g: [F.elemwise_sub(*ograds_or_zeros(F, g, o, 2))]) if _neg else
                   (lambda F, a, i, o, g: [F.elemwise_add(*ograds_or_zeros(F, g, o, 2))]),
                   doc="Gradient of a same-shape " + ("subtraction: (ograd, -ograd)." if _neg else
                                                      "addition: (ograd, ograd), two copies.")))


def _known_shapes_grad(bwd: str, grads: Callable, doc: str):
    """grads(F, g, lhs, rhs, out, lhs_shape, rhs_shape) written with forward ops (differentiable again)
    when the input shapes are known now; else (symbols: shapes come at bind) `bwd(ograd, lhs, rhs)`."""
    def gradient(F, attrs, inputs, outputs, out_grads):
        g, lhs, rhs = out_grads[0], inputs[0], inputs[1]
        ls, rs = _static_shape(lhs), _static_shape(rhs)
        if ls is None or rs is None:
            res = getattr(F, bwd)(g, lhs, rhs)
            return [res[0], res[1]]
        return grads(F, g, lhs, rhs, outputs[0], ls, rs)
    gradient.__doc__ = doc
    return gradient


def _mul_grad(bwd: str):
    """d(l*r) = (g*r, g*l), reduced to the input shapes."""
    return _known_shapes_grad(bwd, lambda F, g, lhs, rhs, out, ls, rs: [
        _sum_to(F, F.broadcast_mul(g, rhs), ls), _sum_to(F, F.broadcast_mul(g, lhs), rs)],
        "(ograd * rhs, ograd * lhs), reduced to the input shapes.")


def _div_grad(bwd: str):
    """d(l/r) = (g/r, -(g/r) * out): reads the output instead of lhs."""
    def grads(F, g, lhs, rhs, out, ls, rs):
        g_over_r = F.broadcast_div(g, rhs)
        return [_sum_to(F, g_over_r, ls), _sum_to(F, F.negative(F.broadcast_mul(g_over_r, out)), rs)]
    return _known_shapes_grad(bwd, grads, "(ograd / rhs, -ograd * out / rhs), reduced to the input shapes.")


def _same_shape_grad(name: str):
    """Gradients of the elemwise_* forms, whose inputs share the output's shape (nothing to reduce).

    add/sub in a symbolic graph: the out_grad entry itself (no node, no buffer); in autograd:
    two fresh arrays from `_backward_add/sub` (the caller of autograd.grad may write into them).
    """
    if name in ("add", "sub"):
        split = f"_backward_{name}"

        def add_sub(F, attrs, inputs, outputs, out_grads):
            g = out_grads[0]
            if _static_shape(g) is not None:
                res = getattr(F, split)(g)
                return [res[0], res[1]]
            return [g, g if name == "add" else F.negative(g)]
        return add_sub
    if name == "mul":
        return lambda F, attrs, i, o, g: [F.elemwise_mul(g[0], i[1]), F.elemwise_mul(g[0], i[0])]

    def div(F, attrs, inputs, outputs, out_grads):
        g_over_r = F.elemwise_div(out_grads[0], inputs[1])
        return [g_over_r, F.negative(F.elemwise_mul(g_over_r, outputs[0]))]
    return div


_BINARY_GRADS = {"add": lambda b: _add_sub_grad(b, False), "sub": lambda b: _add_sub_grad(b, True),
                 "mul": _mul_grad, "div": _div_grad}

for _name, (_fields, _deriv) in _ARITH.items():
    _bwd = f"_backward_broadcast_{_name}"
    _linear = _name in ("add", "sub")
    register(OpDef(name=_bwd, inputs=["ograd", "lhs", "rhs"], outputs=["lhs_grad", "rhs_grad"],
                   infer_shape=_backward_infer(_bwd), infer_type=same_type(_bwd, 2),
                   kernels={"any": _backward_binary_kernel(_deriv)},
                   # linear in ograd: differentiable again (second order)
                   gradient=_reduce_back_grad(f"broadcast_{_name}") if _linear else None,
                   # add/sub read lhs and rhs for their shapes (the reduction target) only
                   shape_only_inputs=(1, 2) if _linear else (),
                   doc=f"Gradient of broadcast_{_name} w.r.t. both inputs, reduced to their shapes."))
    register(OpDef(name=f"broadcast_{_name}", inputs=_BIN_INPUTS, outputs=["output"],
                   infer_shape=_broadcast_infer(f"broadcast_{_name}"),
                   infer_type=same_type(f"broadcast_{_name}", names=_BIN_INPUTS),
                   # MXNet: csr (mul|div) dense is csr (BinaryBroadcastMulStorageType)
                   infer_stype=stype.csr_times_dense if _name in ("mul", "div") else None,
                   **_fields, elementwise=True,
                   gradient=_BINARY_GRADS[_name](_bwd) if _name in _BINARY_GRADS else _binary_grad(_bwd),
                   inplace=[(0, 0), (1, 0)],
                   aliases=["broadcast_plus"] if _name == "add" else
                   ["broadcast_minus"] if _name == "sub" else [],
                   doc=f"Elementwise {_name} with numpy-style broadcasting."))


# elemwise_* : same shapes required (no broadcasting); they compute with the broadcast_* kernels
# (mx.sym's `a + b` is elemwise_add, mx.nd's is broadcast_add) and reuse their backward ops
for _name in ("add", "sub", "mul", "div"):
    _op = f"elemwise_{_name}"
    register(OpDef(name=_op, inputs=_BIN_INPUTS, outputs=["output"],
                   infer_shape=same_shape(_op, names=_BIN_INPUTS),
                   infer_type=same_type(_op, names=_BIN_INPUTS),
                   kernel_of=f"broadcast_{_name}",
                   # MXNet: add/sub keep one sparse format (PreferDenseStorageType), mul also keeps a
                   # sparse operand's format against a dense one, div is always dense
                   infer_stype=(stype.elemwise() if _name in ("add", "sub") else
                                stype.prefer_sparse if _name == "mul" else None),
                   elementwise=True, gradient=_same_shape_grad(_name),
                   inplace=[(0, 0), (1, 0)],
                   aliases=["_add", "_plus", "_Plus", "_grad_add"] if _name == "add" else
                   ["_sub", "_minus", "_Minus"] if _name == "sub" else
                   ["_mul", "_Mul"] if _name == "mul" else ["_div", "_Div"],
                   doc=f"Elementwise {_name} of two arrays of the same shape."))

# same-shape binary ops named as mx.sym's operators produce them (`x ** y` is _power, `x == y` _equal)
for _name in ("maximum", "minimum", "mod", "power", "hypot"):
    _op = f"_{_name}"
    register(OpDef(name=_op, inputs=_BIN_INPUTS, outputs=["output"], aliases=[f"_{_name.capitalize()}"],
                   infer_shape=same_shape(_op, names=_BIN_INPUTS), infer_type=same_type(_op, names=_BIN_INPUTS),
                   kernel_of=f"broadcast_{_name}",
                   # MXNet: maximum/minimum/hypot keep one sparse format (ElemwiseStorageType), others dense
                   infer_stype=stype.elemwise() if _name in ("maximum", "minimum", "hypot") else None,
                   elementwise=True, gradient=_binary_grad(f"_backward_broadcast_{_name}"), inplace=[(0, 0), (1, 0)],
                   doc=f"Elementwise {_name} of two arrays of the same shape."))

for _name, _ufunc in _COMPARE.items():
    _op = f"_{_name}"  # MXNet's alias capitalises each word: _Not_Equal, _Logical_And
    register(OpDef(name=_op, inputs=_BIN_INPUTS, outputs=["output"],
                   aliases=["_" + "_".join(w.capitalize() for w in _name.split("_"))],
                   infer_shape=same_shape(_op, names=_BIN_INPUTS), infer_type=same_type(_op, names=_BIN_INPUTS),
                   **_binary(_ufunc), elementwise=True, gradient=no_gradient(2), inplace=[(0, 0), (1, 0)],
                   doc=f"1 where lhs {_name} rhs else 0 (same shapes), in the input dtype."))

for _name, _ufunc in _COMPARE.items():
    _op = f"broadcast_{_name}"
    register(OpDef(name=_op, inputs=_BIN_INPUTS, outputs=["output"],
                   infer_shape=_broadcast_infer(_op), infer_type=same_type(_op, names=_BIN_INPUTS),
                   **_binary(_ufunc), elementwise=True, gradient=no_gradient(2),
                   inplace=[(0, 0), (1, 0)],
                   doc=f"1 where lhs {_name} rhs else 0 (broadcasting), in the input dtype."))


# -- scalar forms ------------------------------------------------------------------------
_SCALAR = {"scalar": Attr("float", 1.0, doc="the scalar operand")}


def _scalar_kernel(ufunc: str, reverse: bool = False) -> Callable:
    np_fn = getattr(np, ufunc)

    def kernel(ctx, attrs, inputs, outputs, aux):
        x = inputs[0]
        s = as_scalar(x, attrs["scalar"])
        fn = np_fn if ctx.xp is np else getattr(ctx.xp, ufunc)
        fn(*((s, x) if reverse else (x, s)), out=outputs[0], casting="unsafe")
    return kernel


def _mod_scalar(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    _mod(ctx.xp, x, ctx.xp.asarray(as_scalar(x, attrs["scalar"]), dtype=x.dtype), outputs[0])


def _rmod_scalar(ctx, attrs, inputs, outputs, aux):
    x = inputs[0]
    _mod(ctx.xp, ctx.xp.asarray(as_scalar(x, attrs["scalar"]), dtype=x.dtype), x, outputs[0])


def _copy_grad(F, attrs, inputs, outputs, out_grads):
    return [F._copy(out_grads[0])]


def _neg_grad(F, attrs, inputs, outputs, out_grads):
    return [F.negative(out_grads[0])]


def _mul_scalar_grad(F, attrs, inputs, outputs, out_grads):
    return [F._mul_scalar(out_grads[0], scalar=attrs["scalar"])]


def _div_scalar_grad(F, attrs, inputs, outputs, out_grads):
    return [F._div_scalar(out_grads[0], scalar=attrs["scalar"])]


def _errs(fn):
    def wrapped(xp, x, y, a):
        with np.errstate(divide="ignore", invalid="ignore"):
            return fn(xp, x, y, a)
    return wrapped


def _camel_scalar(name: str) -> str:
    """MXNet's CamelCase name of a scalar op, found in old symbol JSON: _rminus_scalar -> _RMinusScalar."""
    reverse = ("rminus", "rdiv", "rmod", "rpower")
    words = name.strip("_").split("_")
    return "_" + "".join("R" + w[1:].capitalize() if w in reverse else w.capitalize() for w in words)


def _no_second(F, v, a):
    return None  # piecewise constant derivative: no second-order term


def _scalar_op(name, kernel, deriv, attrs, **kw):
    """Register a scalar op; `kernel` is a kernel or the UfuncForm the op is (the kernel made from it)."""
    if isinstance(kernel, UfuncForm):
        kw["ufunc_form"] = kernel
        kernel = _scalar_kernel(kernel.ufunc.__name__, kernel.form == "rscalar")
    return register_unary(name, kernel, deriv, attrs, aliases=[_camel_scalar(name)], **kw)


_scalar_op("_plus_scalar", UfuncForm("scalar", np.add), None, _SCALAR, gradient=_copy_grad,
               infer_stype=stype.sparse_if_scalar_zero, doc="x + scalar")
_scalar_op("_minus_scalar", UfuncForm("scalar", np.subtract), None, _SCALAR, gradient=_copy_grad,
               infer_stype=stype.sparse_if_scalar_zero, doc="x - scalar")
_scalar_op("_rminus_scalar", UfuncForm("rscalar", np.subtract), None, _SCALAR, gradient=_neg_grad,
               doc="scalar - x")
_scalar_op("_mul_scalar", UfuncForm("scalar", np.multiply), None, _SCALAR, gradient=_mul_scalar_grad,
               infer_stype=stype.keeps_sparse, doc="x * scalar")
_scalar_op("_div_scalar", UfuncForm("scalar", np.divide), None, _SCALAR, gradient=_div_scalar_grad,
               infer_stype=stype.keeps_sparse, doc="x / scalar")
# d(s/x) = -s/x^2 from x alone (-y/x would need both, and fails for s = 0)
_scalar_op("_rdiv_scalar", UfuncForm("rscalar", np.divide),
               _errs(lambda xp, x, y, a: -a["scalar"] / (x * x)), _SCALAR, uses="in",
               second=lambda F, v, a: F._mul_scalar(F._power_scalar(v, scalar=-3.0), scalar=2.0 * a["scalar"]),
               doc="scalar / x")
_scalar_op("_mod_scalar", _mod_scalar, lambda xp, x, y, a: xp.ones_like(x), _SCALAR, uses="in", second=_no_second,
               doc="x mod scalar (sign of the divisor; 0 for a zero divisor)")
_scalar_op("_rmod_scalar", _rmod_scalar,
               _errs(lambda xp, x, y, a: -xp.floor(a["scalar"] / x)), _SCALAR, uses="in", second=_no_second,
               doc="scalar mod x")
_scalar_op("_power_scalar", UfuncForm("scalar", np.power),
               _errs(lambda xp, x, y, a: a["scalar"] * xp.power(x, a["scalar"] - 1)), _SCALAR, uses="in",
               second=lambda F, v, a: F._mul_scalar(F._power_scalar(v, scalar=a["scalar"] - 2),
                                                    scalar=a["scalar"] * (a["scalar"] - 1)),
               doc="x ** scalar")
_scalar_op("_rpower_scalar", UfuncForm("rscalar", np.power),
               _errs(lambda xp, x, y, a: y * np.log(a["scalar"])), _SCALAR, uses="out",
               second=lambda F, v, a: F._mul_scalar(F.ones_like(v), scalar=float(np.log(a["scalar"]))),
               doc="scalar ** x")
_scalar_op("_maximum_scalar", UfuncForm("scalar", np.maximum),
               lambda xp, x, y, a: x >= a["scalar"], _SCALAR, uses="in", second=_no_second, doc="max(x, scalar)")
_scalar_op("_minimum_scalar", UfuncForm("scalar", np.minimum),
               lambda xp, x, y, a: x <= a["scalar"], _SCALAR, uses="in", second=_no_second, doc="min(x, scalar)")
_scalar_op("_hypot_scalar", UfuncForm("scalar", np.hypot),
               lambda xp, x, y, a: x / y, _SCALAR, doc="sqrt(x**2 + scalar**2)")

for _name, _ufunc in _COMPARE.items():
    if _name.startswith("logical"):
        continue
    _scalar_op(f"_{_name}_scalar", UfuncForm("scalar", getattr(np, _ufunc)), None, _SCALAR, gradient=no_gradient(1),
                   infer_stype=stype.sparse_if_zero_maps_to_zero(getattr(np, _ufunc)),
                   doc=f"1 where x {_name} scalar else 0, in x's dtype")
for _name in ("and", "or", "xor"):
    _scalar_op(f"_logical_{_name}_scalar", UfuncForm("scalar", getattr(np, f"logical_{_name}")), None, _SCALAR,
               gradient=no_gradient(1), doc=f"x {_name} scalar (as 1/0)")


# -- MXNet's _scatter_* ops: on a sparse input only the stored values are computed ------------------
# (the result keeps the input's sparsity pattern, `keeps_pattern_of`); on dense input the plain op
register(OpDef(name="_scatter_elemwise_div", inputs=_BIN_INPUTS, outputs=["output"],
               infer_shape=same_shape("_scatter_elemwise_div", names=_BIN_INPUTS),
               infer_type=same_type("_scatter_elemwise_div", names=_BIN_INPUTS),
               kernel_of="broadcast_div", elementwise=True, gradient=_same_shape_grad("div"),
               # MXNet's StorageTypeRspOrDenseOutput: a row_sparse lhs gives row_sparse, else dense
               infer_stype=stype.lhs_row_sparse, keeps_pattern_of=0,
               doc="lhs / rhs (same shapes); for a row_sparse lhs computed at its stored rows only, the result "
                   "storing exactly those rows."))
for _name, _ufunc in (("plus", np.add), ("minus", np.subtract)):
    register_unary(f"_scatter_{_name}_scalar", _scalar_kernel(_ufunc.__name__), None, _SCALAR,
                   gradient=_copy_grad, ufunc_form=UfuncForm("scalar", _ufunc),
                   infer_stype=stype.keeps_sparse, keeps_pattern_of=0,
                   doc=f"x {'+' if _name == 'plus' else '-'} scalar; for row_sparse or csr x computed at the stored "
                       "values only (the result keeps x's sparsity pattern).")


# -- negative, copy ---------------------------------------------------------------------
def _negative(ctx, attrs, inputs, outputs, aux):
    ctx.xp.negative(inputs[0], out=outputs[0])


register_unary("negative", _negative, None, gradient=_neg_grad, infer_stype=stype.elemwise(), doc="-x")
register_unary("_copy", copy_kernel, None, gradient=_copy_grad, aliases=["identity", "_copyto"],
               infer_stype=stype.elemwise(), doc="A copy of x.")


register(OpDef(name="_identity_with_attr_like_rhs", inputs=["lhs", "rhs"], outputs=["output"],
               infer_shape=same_shape("_identity_with_attr_like_rhs", names=("lhs", "rhs")),
               infer_type=lambda a, d: (list(d), [d[0]]), kernels={"any": copy_kernel}, inplace=[(0, 0)],
               gradient=lambda F, a, i, o, g: [F._copy(g[0]), None],
               doc="lhs unchanged (rhs only lends its attributes in MXNet's graph passes)."))
