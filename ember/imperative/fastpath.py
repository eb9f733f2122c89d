"""The tiny-op path: NDArray operators (`a + b`, `x * 2.0`, `a += b`) on small CPU arrays.

The general path (`invoke.run`) parses attributes, infers shapes and dtypes, checks `out=`,
allocates, builds a closure and pushes it: several microseconds of Python per call, about half
of what MXNet spends.  An operator call on CPU arrays instead looks up a plan cached per
(op, input shapes, input dtypes).  The plan is made once from the registry: its shape and dtype
rules give the output, and the op's current CPU kernel must declare a ufunc form
(`registry.ufunc_form`): the one numpy ufunc call it is equivalent to.  When the engine is idle
the ufunc then runs at once in the calling thread under the engine's inline claim -- the
semantics of a pushed op, with no engine variable made for the new array -- and when it is not,
the same call is pushed like any other op, after the ops it depends on.

Everything else goes to the general path, which raises the proper errors: inputs or outputs in
an autograd graph, a bulk group open, other devices, kernels without a ufunc form (overridden
ones included), outputs above `INLINE_MAX_ELEMENTS`, freed arrays, shapes that do not broadcast.
`ember.ops.override` and `register` empty the plan cache, so a replaced kernel applies at once.
"""
from __future__ import annotations

from functools import partial
from typing import Optional

import numpy as np

from .. import memory
from ..engine import core as _engine
from ..ops import registry
from . import invoke as _invoke, storage
from .invoke import INLINE_MAX_ELEMENTS
from .ndarray import NDArray, _is_scalar

_PLAN_LIMIT = 4096

# plan key -> (ufunc, scalar first, casting, out shape, out dtype, out nbytes, out size, scalar cast) or False
_PLANS: dict = {}
_claim = _engine.claim_idle
_release = _engine.release_claim
_claim_vars = _engine.claim_vars
_Chunk = storage.Chunk


def _forget_plans() -> None:
    _PLANS.clear()


registry.on_change(_forget_plans)


def binary_operator(lhs: NDArray, rhs, array_op: Optional[str], scalar_op: str, out=None):
    """`lhs <op> rhs` for an NDArray or scalar `rhs` (`out=lhs` for the augmented forms)."""
    # One function, no helpers on the way: every Python call here costs a measurable share.
    xd = lhs._data
    t = type(rhs)
    if t is NDArray:
        if array_op is None:  # reflected form reached with two NDArrays cannot happen in Python
            raise TypeError("unsupported reflected operation between NDArrays")
        name, operand, inputs = array_op, rhs._data, (lhs, rhs)
        key = (name, xd.shape, operand.shape, xd.dtype, operand.dtype)
    elif t is float or t is int or _is_scalar(rhs):
        name, operand, inputs, rhs = scalar_op, float(rhs), (lhs,), None
        key = (name, xd.shape, xd.dtype)
    else:
        raise TypeError(f"type {t.__name__} is not supported with NDArray; use an NDArray or a scalar")
    plan = _PLANS.get(key)
    if plan is None:
        plan = _make_plan(key, name, inputs)
    chunk = lhs._chunk
    ctx = chunk.ctx
    if not plan or lhs._ag is not None or chunk.freed or ctx.device_type != "cpu" or _engine.bulk_threads:
        return _general(name, inputs, operand, out)
    if rhs is not None:
        other = rhs._chunk
        if rhs._ag is not None or other.freed or (other.ctx is not ctx and other.ctx != ctx):
            return _general(name, inputs, operand, out)
    ufunc, scalar_first, casting, shape, dtype, nbytes, size, cast = plan
    if rhs is None and cast is not None:
        operand = cast(operand)  # the scalar in the array's integer type, as MXNet's DType(scalar)
    first, second = (operand, xd) if scalar_first else (xd, operand)
    if out is None:
        manager = memory._cpu_manager
        if manager is None:  # no CPU array made yet: memory.alloc sets the manager up
            block = memory.alloc(nbytes, ctx)
        else:
            block = manager.alloc(nbytes, ctx)
            if block.manager is None:
                block.manager = manager
        view = block.view
        if view is not None and view[0] is dtype and view[1] == shape:
            data = view[2]  # a recycled block: its typed view from last time fits
        else:
            data = block.data[:nbytes].view(dtype).reshape(shape)
            block.view = (dtype, shape, data)
        result = NDArray(data, _Chunk(None, block, ctx))
    elif out is lhs and xd.shape == shape and xd.dtype == dtype:
        result, data = out, xd  # a += b: element-wise, in place on the very same elements
    else:
        return _general(name, inputs, operand, out)
    claimed = None  # True: the engine-wide idle claim; an op handle: a claim on this op's variables
    if size <= INLINE_MAX_ELEMENTS:
        if _claim():
            claimed = True
        else:  # busy elsewhere: run now anyway if this op's own variables are free
            claimed = _claim_vars(_reads(lhs, rhs, out), (lhs._chunk.var,) if out is not None else (), name)
    if claimed is None:
        _push(partial(ufunc, first, second, out=data, casting=casting), result, lhs, rhs, name, size)
        return result
    try:
        ufunc(first, second, out=data, casting=casting)
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


def _reads(lhs: NDArray, rhs: Optional[NDArray], out) -> tuple:
    """The variables an op reads (the array written in place is claimed as a write instead)."""
    if rhs is None:
        return () if out is not None else (lhs._chunk.var,)
    rv = rhs._chunk.var
    if out is not None:
        return () if rv is lhs._chunk.var else (rv,)
    lv = lhs._chunk.var
    return (lv,) if rv is lv else (lv, rv)


def _reraise(exc: BaseException) -> None:
    raise exc


def _general(name: str, inputs, operand, out):
    """The call through invoke.invoke (which raises the proper error for anything wrong)."""
    if len(inputs) == 2:
        return _invoke.invoke(name, inputs, None, out)
    return _invoke.invoke(name, inputs, {"scalar": operand}, out)


def _push(op, result, lhs, rhs, name, size) -> None:
    """The plan's ufunc as an engine op: after the ops writing its inputs, before later ones."""
    write = result._chunk.var
    read = [v for v in {lhs._chunk.var: None, **({rhs._chunk.var: None} if rhs is not None else {})}
            if v is not write]
    _engine.push(op, read=read, write=[write],
                 device=result._chunk.ctx, name=name, inline=size <= INLINE_MAX_ELEMENTS)


def _make_plan(key: tuple, name: str, inputs):
    """The plan for `key`, or False (cached too) when this op/shape/dtype needs the general path."""
    plan = False
    opdef = registry.get(name)
    kernel = opdef.kernels.get("cpu") or opdef.kernels.get("any")
    form = getattr(kernel, "ufunc_form", None)
    chunk = inputs[0]._chunk
    if form is not None and chunk.ctx.device_type == "cpu" and not chunk.freed:
        shapes = [x._data.shape for x in inputs]
        dtypes = [x._data.dtype for x in inputs]
        attrs = opdef.parse_attrs({})
        try:
            out_shapes = opdef.infer_shape(attrs, list(shapes))[1]
            out_dtypes = opdef.dtypes(attrs, list(dtypes))[1]
            ok = len(out_shapes) == 1 and out_shapes[0] is not None and out_dtypes[0] is not None
        except Exception:  # noqa: BLE001 - the general path raises the proper error for this call
            ok = False
        kind, ufunc, kinds = form
        if ok and np.dtype(out_dtypes[0]).kind in kinds and (kind == "binary") == (len(inputs) == 2):
            shape, dtype = tuple(out_shapes[0]), np.dtype(out_dtypes[0])
            size = 1
            for d in shape:
                size *= d
            cast = None if dtypes[0].kind == "f" else dtypes[0].type
            # binary: ufunc(lhs, rhs, out=o) with numpy's default casting; scalar forms cast unsafely
            plan = (ufunc, kind == "rscalar", "same_kind" if kind == "binary" else "unsafe", shape, dtype,
                    size * dtype.itemsize, size, cast)
    if len(_PLANS) >= _PLAN_LIMIT:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


