"""The tiny-op path: operator calls on small CPU arrays (`a + b`, `x * 2.0`, `a += b`, `mx.nd.exp(x)`).

A call looks up a plan cached per (op, attributes, input `Sig`s), made once by the general path's
own `invoke.check` and `infer` (False: the general path runs such calls and raises the proper
errors: other devices, large outputs, freed arrays, bad attributes or shapes).  Operator plans
(`operator`: `+ - * / ** == ...` and the in-place forms) call the numpy ufunc the op declares as
its CPU kernel (`OpDef.cpu_ufunc`), for tiny outputs (`invoke.runs_in_caller`); kernel plans
(`kernel_call`: `mx.nd.<op>(*inputs, **attrs)` for ops without aux states, mutated inputs or
resources; hidden outputs are made and taped, the visible ones returned) call the kernel, on outputs
of any size (large ones from the memory manager, run where `invoke.execute` puts a large op).

The op runs through the engine's in-caller protocol (`engine.core.run_in_caller`), its first way,
the engine-wide idle claim, taken inline; else it is pushed after the ops it depends on (into
this thread's bulk group when one is open): the semantics of a pushed op.  A fresh output is a
numpy array with no chunk until something needs one (`NDArray._c`).  Calls on arrays in an
autograd graph are taped as the general path tapes them (in-place ones take the general path,
which refuses them).  `ember.ops.override` and `register` empty the plan caches.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Callable, NamedTuple, Optional

import numpy as np

from ..context import cpu
from ..engine import core as _engine
from ..ops import registry
from ..ops.registry import OpContext
from . import autograd_state
from .invoke import (FreshVars, _aliased_outputs, _raise, _record, check as _check, dependencies as _dependencies,
                     execute as _execute, infer as _infer_general, invoke as _general, runs_in_caller)
from .ndarray import NDArray, _is_scalar
from .storage import Chunk, alloc as _alloc

_PLAN_LIMIT = 4096
_CACHES: list = []     # every plan cache (emptied when the registry changes)
# (op name, Sig of each input[, attrs]) -> the plan `_kernel_plan` makes, or False when such calls
# take the general path
_KERNEL_PLANS: dict = {}
_CACHES.append(_KERNEL_PLANS)
# the engine-wide idle claim (run_in_caller's first way), taken inline by the operators' common case
# the idle claim through the binding's own functions: they keep the GIL (cffi's calls hand it over twice)
_claim_idle, _release_idle_ok = _engine.idle_claim, _engine.idle_release_ok
_empty = np.empty
_is_training = autograd_state.is_training
_is_recording = autograd_state.is_recording
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
    # ((lhs sig), (rhs sig)) or (lhs sig) -> _OperatorPlan, or False when such calls take the general path
    array_plans: dict = {}
    scalar_plans: dict = {}
    _CACHES.extend((array_plans, scalar_plans))

    def method(lhs: NDArray, rhs):
        # The common case (untaped live arrays on cpu(0), an idle engine) runs inline here: this
        # is every `c = a + b` of imperative code, so it is kept to the fewest Python steps.
        sx = lhs._sig or _sig(lhs)
        t = type(rhs)
        if t is NDArray:
            sy = rhs._sig or _sig(rhs)
            plan = array_plans.get((sx, sy))
            if plan is None:
                plan = _operator_plan(array_plans, (sx, sy), array_op, (lhs, rhs), in_place)
            ctx = _CPU0
            lc, rc = lhs._c, rhs._c  # None: a fresh live cpu(0) array (see NDArray._c)
            if lc is not None:
                ctx = lc.ctx
                if lc.freed:
                    plan = False
            if rc is not None:
                if rc.freed or rc.ctx is not ctx:
                    plan = False
            elif ctx is not _CPU0:
                plan = False
            if not plan:
                return _general(array_op, (lhs, rhs), None, lhs if in_place else None)
            x, y, name = lhs._data, rhs._data, array_op
            taped = lhs._ag is not None or rhs._ag is not None
        elif t is float or t is int or _is_scalar(rhs):
            plan = scalar_plans.get(sx)
            if plan is None:
                plan = _operator_plan(scalar_plans, sx, scalar_op, (lhs,), in_place)
            lc = lhs._c
            ctx = _CPU0 if lc is None else lc.ctx
            if not plan or (lc is not None and lc.freed):
                return _general(scalar_op, (lhs,), {"scalar": float(rhs)}, lhs if in_place else None)
            x, name = lhs._data, scalar_op
            y = float(rhs) if plan.cast is None else plan.cast(float(rhs))  # MXNet's DType(scalar)
            taped = lhs._ag is not None
        elif isinstance(rhs, NDArray) and array_op is not None:  # a sparse rhs: the general path handles storage
            return _general(array_op, (lhs, rhs), None, lhs if in_place else None)
        else:
            raise TypeError(f"type {t.__name__} is not supported with NDArray; use an NDArray or a scalar")
        if taped or ctx is not _CPU0 or _engine.bulk_threads or not _claim_idle():
            return _planned(plan, lhs, rhs, x, y, name, ctx, in_place, taped)
        # the engine-wide idle claim is held: run the ufunc now (engine.core.run_in_caller's way 1)
        call = plan.call
        try:
            if in_place:
                if plan.returns:  # one element: through a temporary (see _through_temporary)
                    x[...] = call(x, y)
                else:
                    call(x, y, x)
            elif plan.returns:  # the ufunc makes its C-contiguous result itself
                data = call(x, y)
            else:
                data = _empty(plan.shape, plan.dtype)
                call(x, y, data)
        except BaseException as exc:  # noqa: BLE001 - recorded on what the op writes
            return _idle_failed(exc, name, lhs if in_place else _fresh(plan.shape, plan.dtype, plan.sig, ctx))
        _release_idle_ok()
        if in_place:
            return lhs
        result = NDArray(data, None)  # its chunk is made if ever needed
        result._sig = plan.sig
        return result
    method.plans = (array_plans, scalar_plans)
    return method


class _OperatorPlan(NamedTuple):
    """How a planned operator call runs (see `operator`)."""

    call: Callable    # call(lhs, rhs[, out]): the ufunc (operands swapped for reflected forms)
    shape: tuple      # the output's shape and dtype
    dtype: np.dtype
    cast: Optional[Callable]  # converts a scalar operand (None: a Python float serves)
    sig: tuple        # the output's plan key, (shape, dtype)
    returns: bool     # call(a, b) returns the output (numpy allocates it): no `out` needed; in place
                      # (one element only), the result is copied in


def _planned(plan: _OperatorPlan, lhs: NDArray, rhs, x, y, name: str, ctx, in_place: bool, taped: bool):
    """A planned operator call that cannot run under the idle claim at once (the engine is busy, a
    bulk group is open, an input is taped or on another CPU context): the in-caller protocol, else pushed."""
    if (taped and in_place) or ctx.device_type != "cpu":  # (plans are for CPU arrays)
        return _general(name, (lhs, rhs) if type(rhs) is NDArray else (lhs,),
                        None if type(rhs) is NDArray else {"scalar": float(rhs)}, lhs)
    inputs = (lhs, rhs) if type(rhs) is NDArray else (lhs,)
    result = lhs if in_place else _fresh(plan.shape, plan.dtype, plan.sig, ctx)
    call = partial(_through_temporary, plan.call) if in_place and plan.returns else plan.call
    _run(call, (x, y, result._data), name, inputs, result, in_place, ctx)
    if taped and _is_recording():
        opdef = registry.get(name)
        _record(opdef, opdef.parse_attrs({} if len(inputs) == 2 else {"scalar": float(rhs)}), inputs, [result],
                _is_training())
    return result


def _fresh(shape: tuple, dtype: np.dtype, sig: Sig, ctx) -> NDArray:
    """A fresh output array for a planned op on `ctx` (its values are what the op writes)."""
    data = _empty(shape, dtype)
    result = NDArray(data, None if ctx is _CPU0 else Chunk(None, None, ctx, nbytes=data.nbytes))
    result._sig = sig
    return result


def _run(call, args: tuple, name: str, inputs, result: NDArray, in_place: bool, ctx) -> None:
    """Run a planned op `call(*args)` writing `result` (fresh, or the first input in place) as
    `invoke.execute` runs ops (now in this thread when the engine lets it, else pushed)."""
    _execute(call, args, name, 0, lambda: _deps(inputs, result, in_place), ctx)


def _idle_failed(exc: BaseException, name: str, written: NDArray) -> NDArray:
    """The op run under the idle claim raised `exc`: release the claim with the error recorded on
    `written` (raised at its next wait; at once under NaiveEngine); returns `written`."""
    _engine._run_idle(_raise, (exc,), name, None, _engine.var_handles((), (written._chunk.var,))[0], 0)
    return written


def _operator_plan(plans: dict, key: tuple, name: str, inputs, in_place: bool):
    """The plan of operator `name` on inputs like `inputs` (False: the general path runs such calls)."""
    if name is None:  # a reflected form called with an NDArray (Python itself never does)
        raise TypeError("unsupported reflected operation between NDArrays")
    plan = False
    opdef = registry.get(name)
    form = opdef.cpu_ufunc()
    if form is not None and form.form in _OPERATOR_FORMS and form.constant is None and \
            (form.form == "binary") == (len(inputs) == 2):
        out = _infer(opdef, opdef.parse_attrs({}), inputs)
        if out is not None and out[1].kind in form.kinds and \
                (not in_place or (out[0] == inputs[0]._data.shape and out[1] == inputs[0]._data.dtype)):
            call, cast = ufunc_call(form, inputs[0]._data.dtype)
            if form.form == "rscalar":
                call = partial(_swapped, call)
            # in place on one element: through a temporary (see _through_temporary), if call returns one
            returns = (not in_place or out[2] == 1) and _returns(call, inputs, cast, out[0], out[1])
            plan = _OperatorPlan(call, out[0], out[1], cast, sig_of(out[0], out[1]), returns)
    return _remember(plans, key, plan)


_OPERATOR_FORMS = ("binary", "scalar", "rscalar")  # the forms an operator's operands (a + b, a * 2) are


def _swapped(call, a, b, *out):
    return call(b, a, *out)


def _returns(call, inputs, cast, shape: tuple, dtype: np.dtype) -> bool:
    """Whether `call(a, b)` without `out` makes exactly the output (shape, dtype, C order) on such
    inputs: numpy then allocates it, cheaper than an `out` made first."""
    ufunc = call
    while isinstance(ufunc, partial):  # partial(ufunc, casting=...), partial(_out_by_keyword or _swapped, ufunc)
        ufunc = ufunc.args[0] if ufunc.func in (_out_by_keyword, _swapped) else ufunc.func
    if not isinstance(ufunc, np.ufunc) or not all(x._data.flags.c_contiguous for x in inputs):
        return False
    operands = [np.ones(x._data.shape, x._data.dtype) for x in inputs]
    if len(operands) == 1:
        operands.append(1.0 if cast is None else cast(1.0))
    try:
        with np.errstate(all="ignore"):
            got = call(*operands)
    except Exception:  # noqa: BLE001 - then it is given `out`
        return False
    return isinstance(got, np.ndarray) and got.shape == shape and got.dtype == dtype and got.flags.c_contiguous


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
    out[...] = call(a, b)


# ufuncs that deprecate an output passed by position (numpy 2: a third argument reads like max(a, b, c))
_OUT_BY_KEYWORD = frozenset((np.maximum, np.minimum))


def _out_by_keyword(ufunc, a, b, out, **kwargs):
    return ufunc(a, b, out=out, **kwargs)


# -- mx.nd.<op>(...) ------------------------------------------------------------------------
_MAX_PLANNED_INPUTS = 6


def kernel_call(name: str, args: tuple, kwargs: dict):
    """`mx.nd.<name>(*args, **kwargs)` with NDArray inputs only; None if the general path must run it."""
    n = len(args)
    x = args[0] if n else None
    if type(x) is not NDArray:
        return None
    if n == 1:  # the common one- and two-input calls build their keys without a loop
        key = (name, x._sig or _sig(x))
    elif n == 2:
        y = args[1]
        if type(y) is not NDArray:
            return None
        key = (name, x._sig or _sig(x), y._sig or _sig(y))
    else:
        if n > _MAX_PLANNED_INPUTS:
            return None
        key = (name,)
        for y in args:
            if type(y) is not NDArray:
                return None
            key += (y._sig or _sig(y),)
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
    if not plan:
        return None
    ctx = _CPU0
    if x._c is not None:  # (None: a fresh live cpu(0) array, see NDArray._c)
        xc = x._c
        ctx = xc.ctx
        if xc.freed or ctx.device_type != "cpu":  # plans are for live CPU arrays
            return None
    taped = x._ag is not None  # an input in an autograd graph
    if n == 1:
        in_data = [x._data]
    elif n == 2:
        if y._c is not None or ctx is not _CPU0:
            yc = y._chunk
            if yc.freed or yc.ctx is not ctx:
                return None
        taped = taped or y._ag is not None
        in_data = [x._data, y._data]
    else:
        in_data = [x._data]
        for y in args[1:]:
            if y._c is not None or ctx is not _CPU0:
                yc = y._chunk
                if yc.freed or yc.ctx is not ctx:
                    return None
            taped = taped or y._ag is not None
            in_data.append(y._data)
    kernel, attrs, out, outs, size, n_vis = plan
    if out is not None:  # one output
        result = _fresh(out[0], out[1], out[2], ctx) if not size else _managed(out, ctx)
        results = [result]
        out_data = [result._data]
    else:
        results = [_fresh(*o, ctx) for o in outs] if not size else [_managed(o, ctx) for o in outs]
        result = results if n_vis is None else results[0] if n_vis == 1 else results[:n_vis]
        out_data = [r._data for r in results]
    is_train = _is_training()
    opctx = _CPU0_OPCTX[is_train] if ctx is _CPU0 else OpContext(np, is_train, ctx)
    _execute(kernel, (opctx, attrs, in_data, out_data, _NO_AUX), name, size, lambda: _fresh_deps(args, results), ctx)
    if taped and _is_recording():
        _record(registry.get(name), dict(attrs), args, results, is_train)
    return result


def _managed(out: tuple, ctx) -> NDArray:
    """A fresh large output (shape, dtype, Sig) from the memory manager (recycled blocks: no fresh
    pages per call)."""
    result = NDArray(*_alloc(out[0], out[1], ctx))
    result._sig = out[2]
    return result


def _kernel_plan(key: tuple, name: str, inputs, kwargs: dict):
    """(kernel, attrs, the one output's (shape, dtype, Sig) or None, ((shape, dtype, Sig) of each
    output), size: 0 for tiny outputs, else their elements, the number of visible outputs where
    some are hidden, else None) of an op without aux states, mutated inputs or resources on inputs
    like `inputs`; False where such calls take the general path."""
    plan = False
    try:
        opdef = registry.get(name)
        attrs = opdef.parse_attrs(dict(kwargs))
        plain = not (opdef.aux or opdef.mutates or opdef.resources or opdef.key_var_num_args) \
            and len(opdef.input_names(attrs)) == len(inputs)
        n_vis = None if opdef.num_visible_outputs is None else opdef.visible_outputs(attrs)
    except Exception:  # noqa: BLE001 - the general path raises the proper error for this call
        plain = False
    kernel = (opdef.kernels.get("cpu") or opdef.kernels.get("any")) if plain else None
    if kernel is not None:
        inferred = _infer_outputs(opdef, attrs, inputs)
        if inferred is not None:
            size = sum(math.prod(shape) for shape, _ in inferred)
            outs = tuple((shape, dtype, sig_of(shape, dtype)) for shape, dtype in inferred)
            plan = (kernel, attrs, outs[0] if len(outs) == 1 else None, outs,
                    0 if runs_in_caller(size, _CPU0) else size, None if n_vis == len(outs) else n_vis)
    return _remember(_KERNEL_PLANS, key, plan)


def _infer_outputs(opdef, attrs: dict, inputs):
    """[(shape, dtype)] of the op's outputs by the general path's own `check` and `infer`; None if
    that raises (the general path then raises it at the call) or the op does not run on the CPU."""
    try:
        ctx = _check(opdef, attrs, inputs)
        out_shapes, out_dtypes = _infer_general(opdef, attrs, inputs)
    except Exception:  # noqa: BLE001 - the general path raises the proper error for this call
        return None
    if ctx is None or ctx.device_type != "cpu":
        return None
    return list(zip(out_shapes, out_dtypes))


def _fresh_deps(inputs, results) -> tuple:
    """(reads, writes, fresh) of a planned kernel call: the distinct variables of `inputs` read, the
    `results` fresh (their vars made only if needed)."""
    reads = []
    for x in inputs:
        v = x._chunk.var
        if v not in reads:
            reads.append(v)
    return reads, (), FreshVars([r._chunk for r in results])


# -- mx.nd.<op>(..., out=...) ---------------------------------------------------------------
# (op name, input Sigs, input count, output Sigs, attribute items) -> (opdef, kernel, attrs, output
# elements, declared in-place pairs), or False when such calls take the general path
_OUT_PLANS: dict = {}
_CACHES.append(_OUT_PLANS)
_MAX_OUT_PLANNED_INPUTS = 64  # an optimizer's multi-weight update: up to 16 weights x 4 arrays


def kernel_call_out(name: str, args: tuple, kwargs: dict):
    """`mx.nd.<name>(*inputs, out=..., **attrs)` with NDArray inputs only, outside autograd recording
    (an optimizer's update, a backward op writing into gradient buffers); None if the general path
    must run it.  The plan holds what the general path's check, infer and allocate established for
    such inputs and outputs; each call still checks that the arrays are live on one CPU device and
    that no output shares storage with an input other than as the op declares (`_aliased_outputs`)."""
    if _is_recording():  # the general path refuses writes into taped arrays and tapes the call
        return None
    out = kwargs["out"]
    outs = (out,) if type(out) is NDArray else out
    if (type(outs) is not tuple and type(outs) is not list) or not outs or len(args) > _MAX_OUT_PLANNED_INPUTS:
        return None
    key = [name]
    for x in args:
        if type(x) is not NDArray:
            return None
        key.append(x._sig or _sig(x))
    key.append(len(args))
    for o in outs:
        if type(o) is not NDArray:
            return None
        key.append(o._sig or _sig(o))
    for k, v in kwargs.items():
        if k != "out" and k != "name":
            if isinstance(v, NDArray):  # an input passed by name
                return None
            key.append(k)
            key.append(tuple(v) if type(v) is list else v)  # per-weight lists (lrs=, wds=)
    key = tuple(key)
    try:
        plan = _OUT_PLANS.get(key)
    except TypeError:  # an unhashable attribute value: not cached
        return None
    if plan is None:
        plan = _out_plan(key, name, args, outs, kwargs)
    if not plan:
        return None
    ctx = _common_cpu_ctx(args, outs)
    if ctx is None:
        return None
    opdef, kernel, attrs, size, inplace = plan
    if _shares_storage(args, outs, inplace) and _aliased_outputs(opdef, attrs, args, outs):
        return None  # an output shares storage with an input: the general path computes it through scratch
    is_train = _is_training()
    opctx = _CPU0_OPCTX[is_train] if ctx is _CPU0 else OpContext(np, is_train, ctx)
    call = (opctx, attrs, [x._data for x in args], [o._data for o in outs], _NO_AUX)
    _execute(kernel, call, name, size, partial(_dependencies, opdef, attrs, args, outs, len(args), True), ctx)
    return out


def _out_plan(key: tuple, name: str, inputs, outs, kwargs: dict):
    """(opdef, kernel, attrs, output elements, in-place pairs) of an op without aux states, resources or hidden
    outputs whose outputs are exactly `outs`' shapes and dtypes; False where such calls take the
    general path (which raises the proper error where there is one)."""
    plan = False
    try:
        opdef = registry.get(name)
        given = {k: v for k, v in kwargs.items() if k != "out" and k != "name"}
        varargs = opdef.key_var_num_args
        if varargs and varargs not in given and varargs in opdef.attrs:  # as invoke.call fills it in
            given[varargs] = len(inputs)
        attrs = opdef.parse_attrs(given)
        plain = not (opdef.aux or opdef.resources or opdef.num_visible_outputs is not None) \
            and len(opdef.input_names(attrs)) == len(inputs)
    except Exception:  # noqa: BLE001 - the general path raises the proper error for this call
        plain = False
    kernel = (opdef.kernels.get("cpu") or opdef.kernels.get("any")) if plain else None
    if kernel is not None:
        inferred = _infer_outputs(opdef, attrs, inputs)
        if inferred is not None and len(inferred) == len(outs) and all(
                o._data.shape == shape and o._data.dtype == dtype for o, (shape, dtype) in zip(outs, inferred)):
            plan = (opdef, kernel, attrs, sum(math.prod(shape) for shape, _ in inferred),
                    frozenset(opdef.inplace_pairs(attrs)))
    return _remember(_OUT_PLANS, key, plan)


def _shares_storage(inputs, outs, inplace: frozenset) -> bool:
    """Whether an output shares its chunk with an input other than as a declared in-place pair (an
    optimizer's weight i -> output i); `_aliased_outputs` then decides whether that needs scratch."""
    where: dict = {}
    for i, x in enumerate(inputs):
        where.setdefault(id(x._chunk), []).append(i)
    for o_i, o in enumerate(outs):
        hits = where.get(id(o._chunk))
        if hits is not None:
            for i in hits:
                if (i, o_i) not in inplace:
                    return True
    return False


def _common_cpu_ctx(inputs, outs):
    """The one CPU device every array lives on; None if one is freed or they differ."""
    ctx = None
    for group in (inputs, outs):
        for a in group:
            c = a._c
            if c is None:  # a fresh live cpu(0) array (NDArray._c)
                here = _CPU0
            elif c.freed:
                return None
            else:
                here = c.ctx
            if ctx is None:
                ctx = here
            elif here is not ctx and here != ctx:
                return None
    return ctx if ctx.device_type == "cpu" else None


# -- shared ---------------------------------------------------------------------------------
def _infer(opdef, attrs: dict, inputs):
    """(shape, dtype, size) of the op's single output, by the general path's own `check`
    and `infer`; None if that raises (the general path then raises it at the call), the op has
    several outputs, or it may not run in the caller."""
    outs = _infer_outputs(opdef, attrs, inputs)
    if outs is None or len(outs) != 1:
        return None
    shape, dtype = outs[0]
    size = math.prod(shape)
    return (shape, dtype, size) if runs_in_caller(size, _CPU0) else None


class Sig(tuple):
    """(shape, dtype[, False for a strided array]): the plan key of an array, interned (`sig_of`) so
    that plan caches hash and compare it by identity (cheaper than hashing shapes and dtypes)."""

    __slots__ = ()
    __hash__ = object.__hash__
    __eq__ = object.__eq__
    __ne__ = object.__ne__


_SIGS: dict = {}


def sig_of(shape: tuple, dtype: np.dtype, contiguous: bool = True) -> Sig:
    """The one `Sig` of arrays of this shape, dtype and layout."""
    key = (shape, dtype) if contiguous else (shape, dtype, False)
    sig = _SIGS.get(key)
    if sig is None:
        sig = _remember(_SIGS, key, Sig(key))
    return sig


def _sig(x: NDArray) -> Sig:
    """x's `Sig`, kept on the array (`NDArray._sig`: its data never changes); a strided (not
    C-contiguous) array's says so, as its plans differ (see `_returns`)."""
    d = x._data
    sig = x._sig = sig_of(d.shape, d.dtype, d.flags.c_contiguous)
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

