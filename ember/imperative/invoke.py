"""The imperative invoke path: one registry op on NDArrays, pushed to the engine.

`invoke` does everything that can fail at the call (attribute parsing, arity,
device, shape and dtype inference, `out=` checks) before anything is pushed,
then allocates the outputs, pushes one closure that looks the kernel up at run
time (so `ember.ops.override` applies) and returns the outputs at once.  All of
it lives in this module so the tiny-op path can be profiled in one place.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from .. import engine
from ..base import ContextError, DTypeError, EmberError, OperatorError, ShapeError
from ..context import Context, current_context
from ..ops import registry
from ..ops.registry import OpContext, OpDef
from . import autograd_state, resources, storage
from .ndarray import NDArray

_F32 = np.dtype(np.float32)
INLINE_MAX_ELEMENTS = 1 << 14  # outputs up to this many elements may run inline in the caller
_get_op = registry.get
_push = engine.push
_run_if_idle = engine.run_if_idle


def invoke(op, inputs: Sequence[NDArray], attrs: Optional[Dict[str, Any]] = None, out=None,
           ctx: Optional[Context] = None):
    """Run registry op `op` (name or OpDef) on `inputs` (inputs then aux states).

    Returns the visible outputs (one NDArray, or a list when the op has several);
    with `out=` the results are written into the given array(s), which are returned.
    """
    opdef = op if isinstance(op, OpDef) else _get_op(op)
    return run(opdef, list(inputs), opdef.parse_attrs(attrs or {}), out, ctx)


def _sparse_ops():
    from . import sparse_ops  # imported on first use: it needs this module
    return sparse_ops


def _error_context(name, inputs):
    devs = ", ".join(str(x._chunk.ctx) for x in inputs)
    return ContextError(f"{name}: all inputs must be on one device, got {devs}")


def run(opdef: OpDef, inputs, attrs: dict, out=None, ctx: Optional[Context] = None):
    """invoke() after attribute parsing (the symbolic executors' imperative fallback uses it too)."""
    name = opdef.name
    in_names = opdef.input_names(attrs)
    n_in = len(in_names)
    aux_names = opdef.aux_names(attrs) if opdef.aux else ()
    n_aux = len(aux_names)
    if len(inputs) != n_in + n_aux:
        expected = ", ".join(list(in_names) + list(aux_names)) or "none"
        raise OperatorError(f"{name}: expected {n_in + n_aux} input arrays ({expected}), got {len(inputs)}")

    # -- inputs: type, liveness, device ------------------------------------------------
    for i, x in enumerate(inputs):
        if type(x) is not NDArray:
            if not isinstance(x, NDArray):
                label = (list(in_names) + list(aux_names))[i]
                raise TypeError(f"{name}: input '{label}' must be an NDArray, got {type(x).__name__}")
            if x.stype != "default":  # sparse kernels or MXNet's dense storage fallback
                return _sparse_ops().run(opdef, inputs, attrs, out, ctx)
        if x._chunk.freed:
            x._chunk.check()
    if inputs:
        ctx = inputs[0]._chunk.ctx
        for x in inputs:
            c = x._chunk.ctx
            if c is not ctx and c != ctx:
                raise _error_context(name, inputs)
    elif ctx is None:
        ctx = current_context()

    # -- shape and dtype inference (nothing pushed yet) ------------------------------------------
    in_shapes = [x._data.shape for x in inputs]
    if n_aux:
        ins, out_shapes, aux_inf = opdef.shapes(attrs, in_shapes[:n_in], in_shapes[n_in:])
        ins = list(ins) + list(aux_inf)
    elif opdef.infer_shape is not None:
        ins, out_shapes = opdef.infer_shape(attrs, in_shapes)[:2]
    else:
        ins, out_shapes, _ = opdef.shapes(attrs, in_shapes)  # raises the registry's clear error
    for i in range(len(in_shapes)):
        got = ins[i]
        if got is not None and tuple(got) != in_shapes[i]:
            label = (list(in_names) + list(aux_names))[i]
            raise ShapeError(f"{name}: input '{label}' has shape {in_shapes[i]} but the operator "
                             f"expects {tuple(got)}")
    in_dtypes = [x._data.dtype for x in inputs[:n_in]]
    dres = opdef.dtypes(attrs, in_dtypes)
    in_inf, out_dtypes = dres[0], dres[1]
    for i in range(n_in):
        want = in_inf[i]
        if want is not None and want is not in_dtypes[i] and np.dtype(want) != in_dtypes[i]:
            raise DTypeError(f"{name}: input '{in_names[i]}' has dtype {in_dtypes[i]} but the operator "
                             f"expects {np.dtype(want)}")
    n_out = len(out_shapes)
    for i, s in enumerate(out_shapes):
        if s is None or any(d is None or d < 0 for d in s):
            raise ShapeError(f"{name}: cannot infer the shape of output {i} from input shapes {in_shapes}")

    # -- outputs: given (out=) or fresh ------------------------------------------------------
    n_vis = opdef.visible_outputs(attrs) if opdef.num_visible_outputs is not None else n_out
    outputs: List[Optional[NDArray]] = [None] * n_out
    if out is not None:
        if type(out) is not NDArray and any(getattr(t, "stype", "default") != "default"
                                            for t in (out if isinstance(out, (list, tuple)) else [out])):
            return _sparse_ops().run(opdef, inputs, attrs, out, ctx)  # a sparse out= gets the result converted
        if isinstance(out, NDArray):
            targets = [out]
        elif isinstance(out, (list, tuple)):
            targets = list(out)
        else:
            raise TypeError(f"{name}: out= must be an NDArray or a list of NDArrays, got {type(out).__name__}")
        if len(targets) != n_vis:
            raise OperatorError(f"{name}: out= needs {n_vis} array(s), got {len(targets)}")
        for i, t in enumerate(targets):
            _check_out(name, i, t, tuple(out_shapes[i]), np.dtype(out_dtypes[i] or _F32), ctx)
            outputs[i] = t
    for i in range(n_out):
        if outputs[i] is None:
            data, chunk = storage.alloc(tuple(out_shapes[i]), out_dtypes[i] or _F32, ctx)
            outputs[i] = NDArray(data, chunk)

    recording = autograd_state.is_recording()
    if recording:
        for t in outputs[:n_vis] if out is not None else ():
            if t._ag is not None:
                raise EmberError(f"{name}: writing into an array that is already in an autograd graph "
                                 "(in-place update while recording); compute into a new array instead")

    # -- engine dependencies (made only when the op goes through the engine's queues) ----------
    def dependencies():
        write = [o._chunk.var for o in outputs]
        if n_out > 1 or opdef.mutates or n_aux:
            extra = [inputs[i]._chunk.var for i in opdef.mutated_inputs(attrs)] + [x._chunk.var for x in inputs[n_in:]]
            vs, write = write + extra, []
            for v in vs:  # each var once, even when outputs/mutated inputs share storage
                if v not in write:
                    write.append(v)
        read = []
        for x in inputs[:n_in]:
            v = x._chunk.var
            if v not in write and v not in read:
                read.append(v)
        if rng_var is not None:
            write.append(rng_var)
        return read, write

    rng_var = gen = None
    if opdef.resources and "rng" in opdef.resources:
        rng_var, gen = resources.rng(ctx)

    # -- the op -------------------------------------------------------------------------
    in_data = [x._data for x in inputs[:n_in]]
    aux_data = [x._data for x in inputs[n_in:]]
    out_data = [o._data for o in outputs]
    copy_back = _aliased_outputs(opdef, attrs, inputs, outputs) if out is not None else None
    if copy_back:
        for i in copy_back:  # compute into scratch, then copy: the kernel must not see its input change
            scratch, chunk = storage.alloc(out_data[i].shape, out_data[i].dtype, ctx)
            # the closure holds the scratch chunk: its storage is released only after the op ran
            copy_back[i] = (scratch, out_data[i], chunk)
            out_data[i] = scratch
    is_train = autograd_state.is_training()
    devtype = ctx.device_type
    xp = np if devtype == "cpu" else storage.array_module(ctx)

    def op_fn():
        opdef.kernel(devtype)(OpContext(xp, is_train, ctx, gen), attrs, in_data, out_data, aux_data)
        if copy_back:
            for scratch, target, _ in copy_back.values():
                target[...] = scratch

    if devtype != "cpu":
        op_fn = storage.on_device(op_fn, ctx)
    # Small ops whose inputs are ready run in this thread (no hand-off to a worker); big ones go async.
    small = devtype == "cpu" and (out_data[0].size if n_out == 1 else sum(d.size for d in out_data)) \
        <= INLINE_MAX_ELEMENTS
    if not (small and _run_if_idle(op_fn, name, lambda: dependencies()[1])):
        read, write = dependencies()
        _push(op_fn, read=read, write=write, device=ctx, name=name, inline=small)

    if recording:
        _record(opdef, attrs, inputs[:n_in], outputs, is_train)
    if out is not None:
        return out
    return outputs[0] if n_vis == 1 else outputs[:n_vis]


def _check_out(name: str, i: int, t, shape, dtype, ctx) -> None:
    if not isinstance(t, NDArray):
        raise TypeError(f"{name}: out= must be an NDArray, got {type(t).__name__}")
    t._chunk.check()
    if t._data.shape != shape:
        raise ShapeError(f"{name}: out= array {i} has shape {t._data.shape} but the result has shape {shape}")
    if t._data.dtype != dtype:
        raise DTypeError(f"{name}: out= array {i} has dtype {t._data.dtype} but the result has dtype {dtype}")
    if t._chunk.ctx != ctx:
        raise ContextError(f"{name}: out= array is on {t._chunk.ctx} but the inputs are on {ctx}")


def _aliased_outputs(opdef: OpDef, attrs: dict, inputs, outputs) -> Optional[dict]:
    """Outputs sharing storage with an input, other than declared in-place pairs (need scratch)."""
    found = None
    inplace = opdef.inplace_pairs(attrs) if callable(opdef.inplace) else opdef.inplace
    for o_i, o in enumerate(outputs):
        chunk = o._chunk
        for i_i, x in enumerate(inputs):
            if x._chunk is chunk and (i_i, o_i) not in inplace:
                if x._data.__array_interface__["data"][0] == o._data.__array_interface__["data"][0] \
                        and x._data.shape == o._data.shape and x._data.strides == o._data.strides \
                        and opdef.elementwise:
                    continue  # same elements, element-wise op: safe in place
                found = found or {}
                found[o_i] = None
                break
    return found


def _record(opdef: OpDef, attrs: dict, inputs, outputs, is_train: bool) -> None:
    for x in inputs:
        if x._ag is not None:
            break
    else:
        return  # no input needs a gradient: nothing to record
    node = autograd_state.Node(opdef, attrs, list(inputs),
                               [(o._data, o._chunk) for o in outputs], is_train)
    for i, o in enumerate(outputs):
        o._ag = autograd_state.Entry(node, i)


# -- generated-function argument handling ------------------------------------------------

def call(op, args: Sequence[Any], kwargs: Dict[str, Any]):
    """`mx.nd.<op>(*args, **kwargs)` as MXNet's generated functions take it.

    Leading positional NDArrays are the inputs (all of them for variadic ops such
    as Concat); further positional values are attributes in declaration order;
    keyword NDArrays are inputs by name; `out=` writes into given arrays, `ctx=`
    places ops without inputs, `name=` is ignored.
    """
    if type(op) is str and args and not ("out" in kwargs or "ctx" in kwargs or "name" in kwargs):
        result = _fastpath.kernel_call(op, args, kwargs)  # a small CPU call with a cached plan
        if result is not None:
            return result
    opdef = op if isinstance(op, OpDef) else _get_op(op)
    kwargs = dict(kwargs)
    out = kwargs.pop("out", None)
    kwargs.pop("name", None)
    ctx = None
    if "ctx" in kwargs:
        ctx = _as_context(kwargs["ctx"])
        if "ctx" not in opdef.attrs:
            del kwargs["ctx"]
    named = {k: v for k, v in kwargs.items() if isinstance(v, NDArray)}
    for k in named:
        del kwargs[k]
    n_pos = 0
    while n_pos < len(args) and isinstance(args[n_pos], NDArray):
        n_pos += 1
    pos_inputs, pos_attrs = list(args[:n_pos]), args[n_pos:]
    varargs = opdef.key_var_num_args
    if varargs and varargs not in kwargs and varargs in opdef.attrs:
        kwargs[varargs] = len(pos_inputs) + len(named)
    if pos_attrs:
        free = [a for a in opdef.attrs if a not in kwargs and a != varargs]
        if len(pos_attrs) > len(free):
            bad = pos_attrs[len(free)] if len(free) < len(pos_attrs) else pos_attrs[0]
            raise TypeError(f"{opdef.name}: unexpected positional argument {bad!r} of type "
                            f"{type(bad).__name__} (inputs must be NDArrays)")
        for key, value in zip(free, pos_attrs):
            kwargs[key] = value
    attrs = opdef.parse_attrs(kwargs)
    names = opdef.input_names(attrs) + (opdef.aux_names(attrs) if opdef.aux else [])
    if len(pos_inputs) > len(names):
        raise OperatorError(f"{opdef.name}: takes {len(names)} input arrays, got {len(pos_inputs)}")
    inputs = pos_inputs
    for nm in names[len(pos_inputs):]:
        if nm not in named:
            raise OperatorError(f"{opdef.name}: missing input '{nm}'")
        inputs.append(named.pop(nm))
    if named:
        raise OperatorError(f"{opdef.name}: unknown input(s) {sorted(named)} (inputs: {names})")
    return run(opdef, inputs, attrs, out, ctx)


def _as_context(value) -> Context:
    if isinstance(value, Context):
        return value
    if isinstance(value, str):
        text = value.strip()
        if "(" in text and text.endswith(")"):
            kind, _, idx = text[:-1].partition("(")
            return Context(kind, int(idx or 0))
        return Context(text, 0)
    raise ContextError(f"ctx must be a Context such as mx.cpu(0), got {value!r}")


from . import fastpath as _fastpath  # noqa: E402  (fastpath builds on this module)
