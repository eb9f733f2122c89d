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

from typing import Optional

import numpy as np

from .. import memory
from ..engine import core as _engine
from ..ops import registry
from . import invoke as _invoke, storage
from .invoke import INLINE_MAX_ELEMENTS
from .ndarray import NDArray, _is_scalar

_PLAN_LIMIT = 4096

# plan key -> (ufunc, form, out shape, out dtype, out nbytes, out size, scalar cast) or False
_PLANS: dict = {}
_claim = _engine.claim_idle
_release = _engine.release_claim
_Chunk = storage.Chunk


def _forget_plans() -> None:
    _PLANS.clear()


registry.on_change(_forget_plans)


def binary_operator(lhs: NDArray, rhs, array_op: Optional[str], scalar_op: str, out=None):
    """`lhs <op> rhs` for an NDArray or scalar `rhs` (`out=lhs` for the augmented forms)."""
    xd = lhs._data
    if type(rhs) is NDArray:
        if array_op is None:  # reflected form reached with two NDArrays cannot happen in Python
            raise TypeError("unsupported reflected operation between NDArrays")
        yd = rhs._data
        key = (array_op, xd.shape, yd.shape, xd.dtype, yd.dtype)
        plan = _PLANS.get(key)
        if plan is None:
            plan = _make_plan(key, array_op, (lhs, rhs))
        if plan:
            result = _run(plan, lhs, rhs, yd, out, array_op)
            if result is not None:
                return result
        return _invoke.invoke(array_op, (lhs, rhs), None, out)
    if _is_scalar(rhs):
        key = (scalar_op, xd.shape, xd.dtype)
        plan = _PLANS.get(key)
        if plan is None:
            plan = _make_plan(key, scalar_op, (lhs,))
        scalar = float(rhs)
        if plan:
            cast = plan[6]
            result = _run(plan, lhs, None, scalar if cast is None else cast(scalar), out, scalar_op)
            if result is not None:
                return result
        return _invoke.invoke(scalar_op, (lhs,), {"scalar": scalar}, out)
    raise TypeError(f"type {type(rhs).__name__} is not supported with NDArray; use an NDArray or a scalar")


def _run(plan, lhs: NDArray, rhs: Optional[NDArray], operand, out, name: str):
    """Run a plan (`operand`: rhs's data or the cast scalar); None when the general path must."""
    ufunc, form, shape, dtype, nbytes, size, _ = plan
    chunk = lhs._chunk
    ctx = chunk.ctx
    if lhs._ag is not None or chunk.freed or ctx.device_type != "cpu" or _engine.bulk_threads:
        return None
    if rhs is not None:
        other = rhs._chunk
        if rhs._ag is not None or other.freed or (other.ctx is not ctx and other.ctx != ctx):
            return None
    xd = lhs._data
    if out is None:
        manager = memory._cpu_manager
        if manager is None:  # no CPU array made yet: memory.alloc sets the manager up
            block = memory.alloc(nbytes, ctx)
        else:
            block = manager.alloc(nbytes, ctx)
            if block.manager is None:
                block.manager = manager
        view = block.view
        if view is not None and view[1] == shape and view[0] == dtype:
            data = view[2]  # a recycled block: its typed view from last time fits
        else:
            data = block.data[:nbytes].view(dtype).reshape(shape)
            block.view = (dtype, shape, data)
        result = NDArray(data, _Chunk(None, block, ctx))
    elif out is lhs and xd.shape == shape and xd.dtype == dtype:
        result, data = out, xd  # a += b: element-wise, in place on the very same elements
    else:
        return None
    if size <= INLINE_MAX_ELEMENTS and _claim():
        try:
            if form == "binary":
                ufunc(xd, operand, out=data)
            elif form == "scalar":
                ufunc(xd, operand, out=data, casting="unsafe")
            else:
                ufunc(operand, xd, out=data, casting="unsafe")
        except BaseException as exc:  # noqa: BLE001 - recorded on the output, raised at its next read
            _engine.release_claim_failed(exc, name, (result._chunk.var,))
        else:
            _release()
        return result
    _push(ufunc, form, xd, operand, data, result, lhs, rhs, name, size)
    return result


def _push(ufunc, form, xd, operand, data, result, lhs, rhs, name, size) -> None:
    """The plan's ufunc as an engine op: after the ops writing its inputs, before later ones."""
    if form == "binary":
        def op():
            ufunc(xd, operand, out=data)
    elif form == "scalar":
        def op():
            ufunc(xd, operand, out=data, casting="unsafe")
    else:
        def op():
            ufunc(operand, xd, out=data, casting="unsafe")
    write = result._chunk.var
    read = [v for v in {lhs._chunk.var: None, **({rhs._chunk.var: None} if rhs is not None else {})}
            if v is not write]
    _engine.push(op, read=read, write=[write], device=result._chunk.ctx, name=name,
                 inline=size <= INLINE_MAX_ELEMENTS)


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
            plan = (ufunc, kind, shape, dtype, size * dtype.itemsize, size, cast)
    if len(_PLANS) >= _PLAN_LIMIT:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


