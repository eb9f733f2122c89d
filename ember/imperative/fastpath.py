"""The tiny-op path: operator calls on small CPU arrays (`a + b`, `x * 2.0`, `a += b`, `mx.nd.exp(x)`).

The general path (`invoke.run`) parses attributes, infers shapes and dtypes, checks `out=`,
allocates, builds a closure and pushes it: about ten microseconds of Python per call, most of
what MXNet spends.  Calls on CPU arrays instead look up a plan cached per (op, attributes,
input shapes, input dtypes), made once from the registry: its shape and dtype rules give the
output, and the op's current CPU kernel is what runs.  Two kinds of plans:

- operator plans (`binary_operator`: NDArray `+ - * / ** == ...` and their in-place forms) hold
  the numpy ufunc the op declares as its CPU kernel's exact equivalent (`OpDef.ufunc_form`) and call it
  directly;
- kernel plans (`kernel_call`: `mx.nd.<op>(x[, y], **attrs)` and the NDArray methods built on it,
  for ops with one output and no aux states, mutated inputs or resources) call the kernel.

Either way the op then runs at once in the calling thread when the engine is idle (under its
engine-wide inline claim: no engine variable is made for the new array), or when it is busy
elsewhere but nothing is pending on this op's own arrays (a claim of just their variables); else
it is pushed like any other op, after the ops it depends on.  Those are exactly the semantics of
a pushed op.

Everything else goes to the general path, which raises the proper errors: arrays in an autograd
graph, a bulk group open, other devices, outputs above `INLINE_MAX_ELEMENTS`, freed arrays, bad
attributes or shapes.  `ember.ops.override` and `register` empty the plan cache, so a replaced
kernel applies at once.
"""
from __future__ import annotations

from functools import partial
from typing import Optional

import numpy as np

from ..context import cpu
from ..engine import core as _engine
from ..ops import registry
from ..ops.registry import OpContext
from . import autograd_state, invoke as _invoke, storage
from .invoke import INLINE_MAX_ELEMENTS
from .ndarray import NDArray, _is_scalar

_PLAN_LIMIT = 4096

# key -> (call, scalar first, out shape, out dtype, out nbytes, out size, scalar cast), or False
# when this key takes the general path
_OPERATOR_PLANS: dict = {}
# key -> (kernel, attrs, out shape, out dtype, out nbytes, out size), or False
_KERNEL_PLANS: dict = {}
_claim = _engine.claim_idle
_release = _engine.release_claim
_claim_vars = _engine.claim_vars
_is_training = autograd_state.is_training
_alloc = storage.alloc
_CPU0 = cpu(0)
_CPU0_OPCTX = {False: OpContext(np, False, _CPU0), True: OpContext(np, True, _CPU0)}
_NO_AUX: list = []


def _forget_plans() -> None:
    _OPERATOR_PLANS.clear()
    _KERNEL_PLANS.clear()


registry.on_change(_forget_plans)


# -- NDArray operators ----------------------------------------------------------------------
def binary_operator(lhs: NDArray, rhs, array_op: Optional[str], scalar_op: str, out=None):
    """`lhs <op> rhs` for an NDArray or scalar `rhs` (`out=lhs` for the augmented forms)."""
    xd = lhs._data
    t = type(rhs)
    if t is NDArray:
        if array_op is None:  # reflected form reached with two NDArrays cannot happen in Python
            raise TypeError("unsupported reflected operation between NDArrays")
        name, operand, inputs = array_op, rhs._data, (lhs, rhs)
        key = (name, xd.shape, operand.shape, xd.dtype, operand.dtype)
    elif t is float or t is int or _is_scalar(rhs):
        name, operand, inputs = scalar_op, float(rhs), (lhs,)
        key = (name, xd.shape, xd.dtype)
    elif isinstance(rhs, NDArray) and array_op is not None:  # a sparse rhs: the general path handles storage
        return _invoke.invoke(array_op, (lhs, rhs), None, out)
    else:
        raise TypeError(f"type {t.__name__} is not supported with NDArray; use an NDArray or a scalar")
    ctx = _usable(inputs)
    plan = _OPERATOR_PLANS.get(key) if ctx is not None else False
    if plan is None:
        plan = _make_operator_plan(key, name, inputs)
    if not plan:
        return _invoke.invoke(name, inputs, None if len(inputs) == 2 else {"scalar": operand}, out)
    call, scalar_first, shape, dtype, nbytes, size, cast = plan
    if cast is not None and len(inputs) == 1:
        operand = cast(operand)  # the scalar in the array's integer type, as MXNet's DType(scalar)
    if out is None:
        result, data = _new_array(shape, dtype, nbytes, ctx)
    elif out is lhs and xd.shape == shape and xd.dtype == dtype:
        result, data = out, xd  # a += b: element-wise, in place on the very same elements
    else:
        return _invoke.invoke(name, inputs, None if len(inputs) == 2 else {"scalar": operand}, out)
    return _run(call, (operand, xd) if scalar_first else (xd, operand), data, result, inputs, out, name, size)


def _make_operator_plan(key: tuple, name: str, inputs):
    plan = False
    opdef = registry.get(name)
    form = opdef.cpu_ufunc()
    if form is not None and (form[0] == "binary") == (len(inputs) == 2):
        kind, ufunc, kinds = form
        out = _infer(opdef, opdef.parse_attrs({}), inputs)
        if out is not None and out[1].kind in kinds:
            shape, dtype, nbytes, size = out
            in_dtype = inputs[0]._data.dtype
            # The kernel passes casting="unsafe" for scalar forms; it only matters for integer
            # arrays (true division), so float plans call the bare ufunc.
            call = partial(ufunc, casting="unsafe") if kind != "binary" and in_dtype.kind != "f" else ufunc
            plan = (call, kind == "rscalar", shape, dtype, nbytes, size,
                    None if in_dtype.kind == "f" else in_dtype.type)
    return _remember(_OPERATOR_PLANS, key, plan)


# -- mx.nd.<op>(...) ------------------------------------------------------------------------
def kernel_call(name: str, args: tuple, kwargs: dict):
    """`mx.nd.<name>(*args, **kwargs)` with one or two NDArray inputs; None if the general path must run it."""
    if len(args) == 1:
        x = args[0]
        if type(x) is not NDArray:
            return None
        xd = x._data
        key = (name, xd.shape, xd.dtype)
    elif len(args) == 2:
        x, y = args
        if type(x) is not NDArray or type(y) is not NDArray:
            return None
        xd, yd = x._data, y._data
        key = (name, xd.shape, yd.shape, xd.dtype, yd.dtype)
    else:
        return None
    ctx = _usable(args)
    if ctx is None:
        return None
    if kwargs:
        for v in kwargs.values():
            if isinstance(v, NDArray):  # an input passed by name
                return None
        key += tuple(kwargs.items())
        try:
            plan = _KERNEL_PLANS.get(key)
        except TypeError:  # an unhashable attribute value (a list): not cached
            return None
    else:
        plan = _KERNEL_PLANS.get(key)
    if plan is None:
        plan = _make_kernel_plan(key, name, args, kwargs)
    if not plan:
        return None
    kernel, attrs, shape, dtype, nbytes, size = plan
    result, data = _new_array(shape, dtype, nbytes, ctx)
    is_train = _is_training()
    opctx = _CPU0_OPCTX[is_train] if ctx is _CPU0 else OpContext(np, is_train, ctx)
    in_data = [xd] if len(args) == 1 else [xd, yd]
    return _run(kernel, (opctx, attrs, in_data, [data], _NO_AUX), None, result, args, None, name, size)


def _make_kernel_plan(key: tuple, name: str, inputs, kwargs: dict):
    plan = False
    try:
        opdef = registry.get(name)
        attrs = opdef.parse_attrs(dict(kwargs))
        plain = not (opdef.aux or opdef.mutates or opdef.resources or opdef.key_var_num_args
                     or opdef.num_visible_outputs is not None) \
            and len(opdef.output_names(attrs)) == 1 and len(opdef.input_names(attrs)) == len(inputs)
    except Exception:  # noqa: BLE001 - the general path raises the proper error for this call
        plain = False
    kernel = (opdef.kernels.get("cpu") or opdef.kernels.get("any")) if plain else None
    if kernel is not None:
        out = _infer(opdef, attrs, inputs)
        if out is not None:
            plan = (kernel, attrs) + out
    return _remember(_KERNEL_PLANS, key, plan)


# -- shared ---------------------------------------------------------------------------------
def _usable(inputs) -> Optional[object]:
    """The inputs' common CPU context if this call may take a plan now, else None."""
    ctx = inputs[0]._chunk.ctx
    if ctx.device_type != "cpu" or _engine.bulk_threads:
        return None
    for x in inputs:
        c = x._chunk
        if x._ag is not None or c.freed or (c.ctx is not ctx and c.ctx != ctx):
            return None
    return ctx


def _infer(opdef, attrs: dict, inputs):
    """(shape, dtype, nbytes, size) of the op's single output from the registry, or None."""
    try:
        out_shapes = opdef.infer_shape(attrs, [x._data.shape for x in inputs])[1]
        out_dtypes = opdef.dtypes(attrs, [x._data.dtype for x in inputs])[1]
    except Exception:  # noqa: BLE001 - the general path raises the proper error for this call
        return None
    if len(out_shapes) != 1 or out_shapes[0] is None or out_dtypes[0] is None or None in out_shapes[0]:
        return None
    shape, dtype = tuple(out_shapes[0]), np.dtype(out_dtypes[0])
    size = 1
    for d in shape:
        size *= d
    return shape, dtype, size * dtype.itemsize, size


def _remember(plans: dict, key: tuple, plan):
    if len(plans) >= _PLAN_LIMIT:
        plans.clear()
    plans[key] = plan
    return plan


def _new_array(shape: tuple, dtype: np.dtype, nbytes: int, ctx):
    """(NDArray, its data) from the memory manager; no engine var until one is needed."""
    data, chunk = _alloc(shape, dtype, ctx, None, nbytes)
    return NDArray(data, chunk), data


def _run(call, args: tuple, out_kw, result: NDArray, inputs, out, name: str, size: int) -> NDArray:
    """Run call(*args[, out=out_kw]), the op writing `result` (`out` when in place), now if it may, else push it."""
    claimed = None  # True: the engine-wide idle claim; an op handle: a claim on this op's variables
    if size <= INLINE_MAX_ELEMENTS:
        if _claim():
            claimed = True
        else:  # busy elsewhere: run now anyway if this op's own variables are free
            claimed = _claim_vars(_reads(inputs, out), (out._chunk.var,) if out is not None else (), name)
    if claimed is None:
        op = partial(call, *args) if out_kw is None else partial(call, *args, out=out_kw)
        _engine.push(op, read=list(_reads(inputs, out)), write=[result._chunk.var], device=result._chunk.ctx,
                     name=name, inline=size <= INLINE_MAX_ELEMENTS)
        return result
    try:
        if out_kw is None:
            call(*args)
        else:
            call(*args, out=out_kw)
    except BaseException as exc:  # noqa: BLE001 - recorded on the output, raised at its next read
        if claimed is True:
            _engine.release_claim_failed(exc, name, (result._chunk.var,))
        else:
            _engine.finish_claimed(claimed, exc, name)
            if out is None:  # the new array was not among the claimed variables
                _engine.push(partial(_reraise, exc), write=[result._chunk.var], name=name)
    else:
        if claimed is True:
            _release()
        else:
            _engine.finish_claimed(claimed)
    return result


def _reads(inputs, out) -> tuple:
    """The distinct variables of `inputs`, less `out`'s (claimed as a write when the op runs in place)."""
    skip = out._chunk.var if out is not None else None
    seen = []
    for x in inputs:
        v = x._chunk.var
        if v is not skip and v not in seen:
            seen.append(v)
    return tuple(seen)


def _reraise(exc: BaseException) -> None:
    raise exc
