"""The tiny-op path: operator calls on small CPU arrays (`a + b`, `x * 2.0`, `a += b`, `mx.nd.exp(x)`).

The general path (`invoke.run`: check, infer, allocate, dispatch) costs several microseconds of
Python per call.  A call on small CPU arrays instead looks up a plan cached per (op, attributes,
input shapes, input dtypes), made once by the general path's own `check` and `infer`, and holds
what the call needs: the output's shape and dtype and the function to run.  Two kinds of plans:

- operator plans (`operator`: the NDArray methods `+ - * / ** == ...` and their in-place forms)
  call the numpy ufunc the op declares as its CPU kernel's exact equivalent (`OpDef.cpu_ufunc`);
- kernel plans (`kernel_call`: `mx.nd.<op>(x[, y], **attrs)` and the NDArray methods built on it,
  for ops with one output and no aux states, mutated inputs or resources) call the kernel.

The op then runs through the engine's in-caller protocol (`engine.core.run_in_caller`: at once in
this thread when the engine lets it start now, no engine variable made for the new array), else
it is pushed after the ops it depends on (into this thread's bulk group when one is open): exactly
the semantics of a pushed op.  Plans exist only for ops `invoke.runs_in_caller` allows to run in
the caller (small CPU outputs).

Under `autograd.record()` a planned call on arrays in an autograd graph is taped as the general
path tapes it (in-place forms of such arrays take the general path, which refuses them).
Everything else goes to the general path, which raises the proper errors: other devices, large
outputs, freed arrays, bad attributes or shapes.
`ember.ops.override` and `register` empty the plan caches, so a replaced kernel applies at once.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Optional

import numpy as np

from ..context import cpu
from ..engine import core as _engine
from ..ops import registry
from ..ops.registry import OpContext
from . import autograd_state, storage
from .invoke import FreshVars, _record, check as _check, infer as _infer_general, invoke as _general, runs_in_caller
from .ndarray import NDArray, _is_scalar

_PLAN_LIMIT = 4096
_CACHES: list = []     # every plan cache (emptied when the registry changes)
# (op name, (shape, dtype) of each input[, attrs]) -> (kernel, attrs, out shape, out dtype, out nbytes,
# (out shape, out dtype)), or False when such calls take the general path
_KERNEL_PLANS: dict = {}
_CACHES.append(_KERNEL_PLANS)
_run_in_caller = _engine.run_in_caller
_push = _engine.push
_is_training = autograd_state.is_training
_is_recording = autograd_state.is_recording
_alloc = storage.alloc
_CPU0 = cpu(0)
_CPU0_OPCTX = {False: OpContext(np, False, _CPU0), True: OpContext(np, True, _CPU0)}
_NO_AUX: list = []


def _forget_plans() -> None:
    for cache in _CACHES:
        cache.clear()


registry.on_change(_forget_plans)


# -- NDArray operators ----------------------------------------------------------------------
def operator(array_op: Optional[str], scalar_op: str, in_place: bool = False) -> Callable:
    """The NDArray method of one Python operator: `lhs <op> rhs` for an NDArray or scalar `rhs`
    (registry op `array_op` or `scalar_op`), or `lhs <op>= rhs` (into lhs) with in_place.
    `array_op` is None for reflected forms (`2 - x`), which Python calls with a scalar only."""
    # ((lhs shape, dtype), (rhs shape, dtype)) or (lhs shape, dtype) -> (ufunc call, out shape,
    # out dtype, out nbytes, scalar cast, scalar first, (out shape, out dtype)), or False when such
    # calls take the general path
    array_plans: dict = {}
    scalar_plans: dict = {}
    _CACHES.extend((array_plans, scalar_plans))

    def method(lhs: NDArray, rhs):
        x = lhs._data
        sx = lhs._sig
        if sx is None:
            sx = lhs._sig = (x.shape, x.dtype)
        lc = lhs._chunk
        ctx = lc.ctx
        usable = not lc.freed and (ctx is _CPU0 or ctx.device_type == "cpu")  # plans are for live CPU arrays
        taped = lhs._ag is not None  # an input in an autograd graph
        t = type(rhs)
        if t is NDArray:
            sy = rhs._sig
            key = (sx, sy if sy is not None else _sig(rhs))
            plan = array_plans.get(key)
            if plan is None:
                plan = _operator_plan(array_plans, key, array_op, (lhs, rhs), in_place)
            rc = rhs._chunk
            taped = taped or rhs._ag is not None
            if not (plan and usable and not rc.freed and rc.ctx is ctx) or (taped and in_place):
                return _general(array_op, (lhs, rhs), None, lhs if in_place else None)
            inputs, name, y = (lhs, rhs), array_op, rhs._data
        elif t is float or t is int or _is_scalar(rhs):
            plan = scalar_plans.get(sx)
            if plan is None:
                plan = _operator_plan(scalar_plans, sx, scalar_op, (lhs,), in_place)
            y = float(rhs)
            if not (plan and usable) or (taped and in_place):
                return _general(scalar_op, (lhs,), {"scalar": y}, lhs if in_place else None)
            if taped:
                rhs = y  # the attribute the tape records
            if plan[4] is not None:
                y = plan[4](y)  # the scalar in the array's integer type, as MXNet's DType(scalar)
            inputs, name = (lhs,), scalar_op
        elif isinstance(rhs, NDArray) and array_op is not None:  # a sparse rhs: the general path handles storage
            return _general(array_op, (lhs, rhs), None, lhs if in_place else None)
        else:
            raise TypeError(f"type {t.__name__} is not supported with NDArray; use an NDArray or a scalar")
        if in_place:
            args = (y, x, x) if plan[5] else (x, y, x)
            if not _run_in_caller(plan[0], args, name, lambda: _deps(inputs, lhs, True)):
                _pushed(plan[0], args, name, inputs, lhs, True, ctx)
            return lhs
        data, chunk = _alloc(plan[1], plan[2], ctx, None, plan[3])
        result = NDArray(data, chunk)
        result._sig = plan[6]
        args = (y, x, data) if plan[5] else (x, y, data)
        if not _run_in_caller(plan[0], args, name, lambda: _deps(inputs, result, False)):
            _pushed(plan[0], args, name, inputs, result, False, ctx)
        if taped and _is_recording():
            opdef = registry.get(name)
            _record(opdef, opdef.parse_attrs({} if t is NDArray else {"scalar": rhs}), inputs, [result],
                    _is_training())
        return result
    method.plans = (array_plans, scalar_plans)
    return method


def _operator_plan(plans: dict, key: tuple, name: str, inputs, in_place: bool):
    """The plan of operator `name` on inputs like `inputs` (False: the general path runs such calls)."""
    if name is None:  # a reflected form called with an NDArray (Python itself never does)
        raise TypeError("unsupported reflected operation between NDArrays")
    plan = False
    opdef = registry.get(name)
    form = opdef.cpu_ufunc()
    if form is not None and (form.form == "binary") == (len(inputs) == 2):
        out = _infer(opdef, opdef.parse_attrs({}), inputs)
        if out is not None and out[1].kind in form.kinds and \
                (not in_place or (out[0] == inputs[0]._data.shape and out[1] == inputs[0]._data.dtype)):
            call, cast = ufunc_call(form, inputs[0]._data.dtype)
            if in_place and out[3] == 1:
                call = partial(_through_temporary, call)
            plan = (call, out[0], out[1], out[2], cast, form.form == "rscalar", (out[0], out[1]))
    return _remember(plans, key, plan)


def ufunc_call(form, in_dtype: np.dtype):
    """(call, cast) to run an op by its `OpDef.cpu_ufunc()` form on arrays of `in_dtype`:
    `call(operand, operand, out)`, a scalar operand first converted by `cast` (None: a float).

    Scalar forms are ufunc(..., casting="unsafe") with the scalar in the array's type (MXNet's
    DType(scalar)); that only matters for integer arrays, so on floats the bare ufunc runs."""
    ufunc = form.ufunc
    if ufunc in _OUT_BY_KEYWORD:
        ufunc = partial(_out_by_keyword, ufunc)
    if form.form == "binary" or in_dtype.kind == "f":
        return ufunc, None
    return partial(ufunc, casting="unsafe"), in_dtype.type


def _through_temporary(call, a, b, out) -> None:
    # numpy (2.x) runs a ufunc whose output is one of its one-element inputs on a slow path (twice the
    # time of the whole call otherwise): a fresh result copied in is faster
    out[...] = call(a, b, None)


# ufuncs that deprecate an output passed by position (numpy 2: a third argument reads like max(a, b, c))
_OUT_BY_KEYWORD = frozenset((np.maximum, np.minimum))


def _out_by_keyword(ufunc, a, b, out, **kwargs):
    return ufunc(a, b, out=out, **kwargs)


# -- mx.nd.<op>(...) ------------------------------------------------------------------------
def kernel_call(name: str, args: tuple, kwargs: dict):
    """`mx.nd.<name>(*args, **kwargs)` with one or two NDArray inputs; None if the general path must run it."""
    n = len(args)
    x = args[0] if n else None
    if type(x) is not NDArray:
        return None
    if n == 1:
        key = (name, x._sig or _sig(x))
    elif n == 2:
        y = args[1]
        if type(y) is not NDArray:
            return None
        key = (name, x._sig or _sig(x), y._sig or _sig(y))
    else:
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
        plan = _kernel_plan(key, name, args, kwargs)
    xc = x._chunk
    ctx = xc.ctx
    if not plan or xc.freed or not (ctx is _CPU0 or ctx.device_type == "cpu"):  # plans are for live CPU arrays
        return None
    taped = x._ag is not None  # an input in an autograd graph
    if n == 2:
        yc = y._chunk
        if yc.freed or yc.ctx is not ctx:
            return None
        taped = taped or y._ag is not None
        in_data = [x._data, y._data]
    else:
        in_data = [x._data]
    data, chunk = _alloc(plan[2], plan[3], ctx, None, plan[4])
    result = NDArray(data, chunk)
    result._sig = plan[5]
    is_train = _is_training()
    call_args = (_CPU0_OPCTX[is_train] if ctx is _CPU0 else OpContext(np, is_train, ctx), plan[1], in_data, [data],
                 _NO_AUX)
    if not _run_in_caller(plan[0], call_args, name, lambda: _deps(args, result, False)):
        _pushed(plan[0], call_args, name, args, result, False, ctx)
    if taped and _is_recording():
        _record(registry.get(name), dict(plan[1]), args, [result], is_train)
    return result


def _kernel_plan(key: tuple, name: str, inputs, kwargs: dict):
    plan = False
    try:
        opdef = registry.get(name)
        attrs = opdef.parse_attrs(dict(kwargs))
        plain = not (opdef.aux or opdef.mutates or opdef.resources or opdef.key_var_num_args
                     or opdef.num_visible_outputs is not None) and len(opdef.output_names(attrs)) == 1
    except Exception:  # noqa: BLE001 - the general path raises the proper error for this call
        plain = False
    kernel = (opdef.kernels.get("cpu") or opdef.kernels.get("any")) if plain else None
    if kernel is not None:
        out = _infer(opdef, attrs, inputs)
        if out is not None:
            plan = (kernel, attrs) + out[:3] + ((out[0], out[1]),)
    return _remember(_KERNEL_PLANS, key, plan)


# -- shared ---------------------------------------------------------------------------------
def _infer(opdef, attrs: dict, inputs):
    """(shape, dtype, nbytes, size) of the op's single output, by the general path's own `check`
    and `infer`; None if that raises (the general path then raises it at the call), the op has
    several outputs, or it may not run in the caller."""
    try:
        ctx = _check(opdef, attrs, inputs)
        out_shapes, out_dtypes = _infer_general(opdef, attrs, inputs)
    except Exception:  # noqa: BLE001 - the general path raises the proper error for this call
        return None
    if ctx is None or len(out_shapes) != 1:
        return None
    shape, dtype = out_shapes[0], out_dtypes[0]
    size = 1
    for d in shape:
        size *= d
    if not runs_in_caller(size, ctx):
        return None
    return shape, dtype, size * dtype.itemsize, size


def _sig(x: NDArray) -> tuple:
    """x's (shape, dtype), the plan key of an input, kept on the array (`NDArray._sig`)."""
    d = x._data
    sig = x._sig = (d.shape, d.dtype)
    return sig


def _remember(plans: dict, key: tuple, plan):
    if len(plans) >= _PLAN_LIMIT:
        plans.clear()
    plans[key] = plan
    return plan


def _deps(inputs, result: NDArray, in_place: bool):
    """(reads, writes, fresh) of a planned op: the distinct variables of `inputs` are read, but
    `result`'s is written (in place), else `result` is a fresh array (its var made only if needed)."""
    rvar = result._chunk.var if in_place else None
    reads = []
    for x in inputs:
        v = x._chunk.var
        if v is not rvar and v not in reads:
            reads.append(v)
    return (reads, (rvar,), ()) if in_place else (reads, (), FreshVars((result._chunk,)))


def _pushed(call, args: tuple, name: str, inputs, result: NDArray, in_place: bool, ctx) -> None:
    """Push a planned op that could not run in the caller now: after the ops it depends on."""
    reads, writes, fresh = _deps(inputs, result, in_place)
    _push(partial(call, *args), read=reads, write=writes or list(fresh), device=ctx, name=name)
