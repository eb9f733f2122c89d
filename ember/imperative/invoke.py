"""The imperative invoke path: one registry op on NDArrays, run now or pushed to the engine.

`run` is four steps, each a function of its own so that the tiny-op path (fastpath.py) builds
its cached plans from the very same rules instead of repeating them:

    check(opdef, attrs, inputs, ctx)      arity, input types and liveness, one device
    infer(opdef, attrs, inputs)           output shapes and dtypes (the registry's rules + checks)
    allocate(opdef, attrs, ...)           the outputs: given (`out=`, checked) or fresh
    dispatch(opdef, attrs, inputs, ...)   the kernel call, handed to `execute`

Everything that can fail at the call fails in the first three, before anything runs.
`execute` is the one place that decides whether an op runs now, in the calling thread
(a CPU op the engine lets start at once, `engine.core.run_in_caller`: a small one always, a
larger one while BLAS uses every core), or is pushed.
"""
from __future__ import annotations

import os
from functools import partial
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .. import backend, engine
from ..base import ContextError, DTypeError, EmberError, OperatorError, ShapeError
from ..context import Context, current_context
from ..engine import blas as _blas
from ..engine import core as _engine
from ..ops import registry
from ..ops.registry import OpContext, OpDef
from . import autograd_state, resources, storage
from .ndarray import NDArray

_F32 = np.dtype(np.float32)
_DTYPES = frozenset(type(np.dtype(t)) for t in np.sctypeDict.values())  # classes of numpy.dtype objects
INLINE_MAX_ELEMENTS = 1 << 14  # ops with outputs up to this many elements may run in the caller


def _large_ops_in_caller_from_env() -> Optional[bool]:
    value = os.environ.get("EMBER_LARGE_OPS_IN_CALLER", "").strip()
    if value in ("", "auto"):
        return None
    if value not in ("0", "1"):
        raise EmberError(f"EMBER_LARGE_OPS_IN_CALLER={value!r}: expected 0, 1 or auto")
    return value == "1"


# Whether a larger CPU op also runs in its caller when it can start at once: None (auto) = while a
# BLAS call uses every core (engine.blas.uses_every_core).  A worker running it would then buy no
# parallelism and cost this thread's Python a core shared with a BLAS thread: a plain Gluon MLP
# loop, 53 of 54 ops a step queued behind the previous one, ran 28.0k samples/s pushed against
# 32.4k in the caller (bench/RESULTS.md).  EMBER_LARGE_OPS_IN_CALLER=0/1 forces it.
LARGE_OPS_IN_CALLER: Optional[bool] = _large_ops_in_caller_from_env()

_get_op = registry.get
_push = engine.push
_run_in_caller = _engine.run_in_caller
# the idle claim through the binding's own functions: they keep the GIL (cffi's calls hand it over twice)
_claim_idle, _release_idle_ok = _engine.idle_claim, _engine.idle_release_ok


def invoke(op, inputs: Sequence[NDArray], attrs: Optional[Dict[str, Any]] = None, out=None,
           ctx: Optional[Context] = None):
    """Run registry op `op` (name or OpDef) on `inputs` (inputs then aux states).

    Returns the visible outputs (one NDArray, or a list when the op has several);
    with `out=` the results are written into the given array(s), which are returned.
    """
    opdef = op if isinstance(op, OpDef) else _get_op(op)
    return run(opdef, list(inputs), opdef.parse_attrs(attrs or {}), out, ctx)


def run(opdef: OpDef, inputs, attrs: dict, out=None, ctx: Optional[Context] = None):
    """invoke() after attribute parsing (the symbolic executors' imperative fallback uses it too)."""
    dev = check(opdef, attrs, inputs, ctx)
    if dev is None:  # a sparse input: sparse kernels or MXNet's dense storage fallback
        return _sparse_ops().run(opdef, inputs, attrs, out, ctx)
    out_shapes, out_dtypes = infer(opdef, attrs, inputs)
    if out is not None and type(out) is not NDArray and any(
            getattr(t, "stype", "default") != "default" for t in (out if isinstance(out, (list, tuple)) else [out])):
        return _sparse_ops().run(opdef, inputs, attrs, out, ctx)  # a sparse out= gets the result converted
    outputs = allocate(opdef, attrs, out_shapes, out_dtypes, dev, out)
    n_vis = opdef.visible_outputs(attrs) if opdef.num_visible_outputs is not None else len(outputs)
    recording = autograd_state.is_recording()
    if recording and out is not None:
        for t in outputs[:n_vis]:
            if t._ag is not None:
                raise EmberError(f"{opdef.name}: writing into an array that is already in an autograd graph "
                                 "(in-place update while recording); compute into a new array instead")
    dispatch(opdef, attrs, inputs, outputs, dev, given=out is not None)
    if recording:
        n_in = len(inputs) - _n_aux(opdef, attrs)
        _record(opdef, attrs, inputs[:n_in], outputs, autograd_state.is_training(),
                inputs[n_in:] if opdef.gradient_takes_aux else ())
    if out is not None:
        return out
    return outputs[0] if n_vis == 1 else outputs[:n_vis]


def run_value_sized(opdef: OpDef, attrs: dict, inputs, out_shapes, out_dtypes) -> List[NDArray]:
    """Run an op whose output shapes depend on its inputs' values (`OpDef.value_dependent_shape`:
    unique, bincount, nonzero) with the shapes its caller worked out from those values: the
    ordinary check, allocate and dispatch (engine dependencies) and autograd taping; every output."""
    dev = check(opdef, attrs, inputs)
    if dev is None:
        raise OperatorError(f"{opdef.name}: only default storage is supported")
    outputs = allocate(opdef, attrs, out_shapes, out_dtypes, dev)
    dispatch(opdef, attrs, inputs, outputs, dev)
    if autograd_state.is_recording():
        _record(opdef, attrs, inputs, outputs, autograd_state.is_training())
    return outputs


# -- 1. check ------------------------------------------------------------------------------
def check(opdef: OpDef, attrs: dict, inputs, ctx: Optional[Context] = None) -> Optional[Context]:
    """The device the op runs on, after checking the number of inputs, their types and liveness
    and that they share one device (`ctx`, or the current one, for an op without inputs);
    None when an input is sparse (sparse_ops runs the op then)."""
    name = opdef.name
    n_in, n_aux = len(opdef.input_names(attrs)), _n_aux(opdef, attrs)
    if len(inputs) != n_in + n_aux:
        expected = ", ".join(_labels(opdef, attrs)) or "none"
        raise OperatorError(f"{name}: expected {n_in + n_aux} input arrays ({expected}), got {len(inputs)}")
    for i, x in enumerate(inputs):
        if type(x) is not NDArray:
            if not isinstance(x, NDArray):
                raise TypeError(f"{name}: input '{_labels(opdef, attrs)[i]}' must be an NDArray, "
                                f"got {type(x).__name__}")
            if x.stype != "default":
                return None
        chunk = x._chunk
        if chunk.freed:
            chunk.check()
    if not inputs:
        return ctx if ctx is not None else current_context()
    dev = inputs[0]._chunk.ctx
    for x in inputs:
        c = x._chunk.ctx
        if c is not dev and c != dev:
            devs = ", ".join(str(x._chunk.ctx) for x in inputs)
            raise ContextError(f"{name}: all inputs must be on one device, got {devs}")
    return dev


def _n_aux(opdef: OpDef, attrs: dict) -> int:
    return len(opdef.aux_names(attrs)) if opdef.aux else 0


def _labels(opdef: OpDef, attrs: dict) -> List[str]:
    """The names of the op's input arrays, inputs then aux states (for error messages)."""
    return list(opdef.input_names(attrs)) + (list(opdef.aux_names(attrs)) if opdef.aux else [])


# -- 2. infer ------------------------------------------------------------------------------
def infer(opdef: OpDef, attrs: dict, inputs) -> Tuple[List[tuple], List[np.dtype]]:
    """(output shapes, output dtypes) of the op on `inputs`, from the registry's rules.

    Raises ShapeError / DTypeError (naming the input) when an input disagrees with what the
    op expects, or when an output's shape cannot be inferred; nothing is run.
    """
    name = opdef.name
    n_aux = _n_aux(opdef, attrs)
    n_in = len(inputs) - n_aux
    in_shapes = [x._data.shape for x in inputs]
    if n_aux:
        ins, out_shapes, aux_inf = opdef.shapes(attrs, in_shapes[:n_in], in_shapes[n_in:])
        ins = list(ins) + list(aux_inf)
    elif opdef.infer_shape is not None:
        ins, out_shapes = opdef.infer_shape(attrs, in_shapes)[:2]
    else:
        ins, out_shapes, _ = opdef.shapes(attrs, in_shapes)  # raises the registry's clear error
    for i, got in enumerate(ins):
        if got is not None and got != in_shapes[i] and tuple(got) != in_shapes[i]:
            raise ShapeError(f"{name}: input '{_labels(opdef, attrs)[i]}' has shape {in_shapes[i]} but the "
                             f"operator expects {tuple(got)}")
    in_dtypes = [x._data.dtype for x in inputs[:n_in]]
    in_inf, out_dtypes = opdef.dtypes(attrs, in_dtypes)[:2]
    for i, want in enumerate(in_inf):
        if want is not None and want is not in_dtypes[i] and np.dtype(want) != in_dtypes[i]:
            raise DTypeError(f"{name}: input '{_labels(opdef, attrs)[i]}' has dtype {in_dtypes[i]} but the "
                             f"operator expects {np.dtype(want)}")
    shapes = [s if type(s) is tuple or s is None else tuple(s) for s in out_shapes]
    for i, s in enumerate(shapes):
        if s is None or None in s or (s and min(s) < 0):
            raise ShapeError(f"{name}: cannot infer the shape of output {i} from input shapes {in_shapes}")
    return shapes, [d if type(d) in _DTYPES else _F32 if d is None else np.dtype(d) for d in out_dtypes]


# -- 3. allocate ---------------------------------------------------------------------------
def allocate(opdef: OpDef, attrs: dict, out_shapes, out_dtypes, ctx: Context, out=None) -> List[NDArray]:
    """Every output of the op: the `out=` array(s) for the visible ones (checked against the
    inferred shape, dtype and device), fresh arrays from the memory manager for the rest."""
    name = opdef.name
    n_out = len(out_shapes)
    outputs: List[Optional[NDArray]] = [None] * n_out
    if out is not None:
        n_vis = opdef.visible_outputs(attrs) if opdef.num_visible_outputs is not None else n_out
        if isinstance(out, NDArray):
            targets = [out]
        elif isinstance(out, (list, tuple)):
            targets = list(out)
        else:
            raise TypeError(f"{name}: out= must be an NDArray or a list of NDArrays, got {type(out).__name__}")
        if len(targets) != n_vis:
            raise OperatorError(f"{name}: out= needs {n_vis} array(s), got {len(targets)}")
        for i, t in enumerate(targets):
            _check_out(name, i, t, out_shapes[i], out_dtypes[i], ctx)
            outputs[i] = t
    for i in range(n_out):
        if outputs[i] is None:
            outputs[i] = NDArray(*storage.alloc(out_shapes[i], out_dtypes[i], ctx))
    return outputs


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


# -- 4. dispatch ---------------------------------------------------------------------------
def dispatch(opdef: OpDef, attrs: dict, inputs, outputs, ctx: Context, given: bool = False) -> None:
    """Run the op's kernel on `inputs` into `outputs`, through `execute` (now or pushed).

    `given`: some outputs are the caller's arrays (`out=`), which may share storage with an input.
    """
    name = opdef.name
    n_aux = _n_aux(opdef, attrs)
    n_in = len(inputs) - n_aux
    rng_var = gen = None
    if opdef.resources and "rng" in opdef.resources:
        rng_var, gen = resources.rng(ctx)
    in_data = [x._data for x in inputs[:n_in]]
    aux_data = [x._data for x in inputs[n_in:]]
    out_data = [o._data for o in outputs]
    copy_back = _aliased_outputs(opdef, attrs, inputs, outputs) if given else None
    if copy_back:
        for i in copy_back:  # compute into scratch, then copy: the kernel must not see its input change
            scratch, chunk = storage.alloc(out_data[i].shape, out_data[i].dtype, ctx)
            # the closure holds the scratch chunk: its storage is released only after the op ran
            copy_back[i] = (scratch, out_data[i], chunk)
            out_data[i] = scratch
    is_train = autograd_state.is_training()
    devtype = ctx.device_type
    xp = np if devtype == "cpu" else backend.of(ctx).xp

    def op_fn():
        opdef.kernel(devtype)(OpContext(xp, is_train, ctx, gen), attrs, in_data, out_data, aux_data)
        if copy_back:
            for scratch, target, _ in copy_back.values():
                target[...] = scratch

    if devtype != "cpu":
        op_fn = backend.of(ctx).run_on(op_fn, ctx.device_id)
    size = out_data[0].size if len(out_data) == 1 else sum(d.size for d in out_data)
    execute(op_fn, (), name, size, partial(dependencies, opdef, attrs, inputs, outputs, n_in, given, rng_var), ctx)


def dependencies(opdef: OpDef, attrs: dict, inputs, outputs, n_in: int, given: bool, rng_var=None) -> tuple:
    """(reads, writes, fresh) engine vars of one op call (`execute`'s `deps`): the given outputs
    (`out=`), mutated inputs and aux states are written, each var once; the other inputs read;
    outputs made for the call (not `given`) are `fresh`, their vars made only if the engine needs them."""
    write = [o._chunk.var for o in outputs] if given else []
    if len(write) > 1 or opdef.mutates or n_in < len(inputs):
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
    if rng_var is not None:  # a draw reads and advances the generator (see resources.rng)
        read.append(rng_var)
        write.append(rng_var)
    return read, write, () if given else FreshVars([o._chunk for o in outputs])


def execute(fn: Callable, args: tuple, name: str, size: int, deps: Callable, ctx: Context) -> None:
    """Run `fn(*args)`, an op on `ctx` whose outputs have `size` elements in all: the one place
    that decides whether an op runs now.

    A small CPU op runs at once in this thread when the engine lets it start now (idle, or
    nothing pending on its own variables: `engine.core.run_in_caller`; no hand-off to a worker),
    and so does a larger one while `LARGE_OPS_IN_CALLER` says so; otherwise, and for every device
    op, it is pushed after the ops it depends on.
    `deps()` -> (reads, writes, fresh) (engine Vars; `fresh`: the vars of outputs made for this
    op) is called only when the engine needs the variables.
    """
    if ctx.device_type == "cpu" and (size <= INLINE_MAX_ELEMENTS or _large_ops_in_caller()):
        if not _engine.bulk_threads and _claim_idle():  # run_in_caller's first way, inline (no frames)
            try:
                fn(*args)
            except BaseException as exc:  # noqa: BLE001 - recorded on what it writes, raised at their wait
                _engine._run_idle(_raise, (exc,), name, deps)
                return
            _release_idle_ok()
            return
        if _run_in_caller(fn, args, name, deps):
            return
    reads, writes, fresh = deps()
    if fresh:
        writes = list(writes) + list(fresh)
    _push(partial(fn, *args) if args else fn, read=reads, write=writes, device=ctx, name=name)


def _raise(exc: BaseException) -> None:
    raise exc


class FreshVars:
    """The engine vars of an op's new outputs, made only when iterated: `run_in_caller` needs them
    only if the op fails, and an array whose ops all ran in the caller never needs a var (nor an
    engine op to release its storage)."""

    __slots__ = ("chunks",)

    def __init__(self, chunks: Sequence[storage.Chunk]):
        self.chunks = chunks

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self):
        return (c.var for c in self.chunks)


def runs_in_caller(size: int, ctx: Context) -> bool:
    """Whether an op on `ctx` whose outputs have `size` elements is a tiny op, run in the calling
    thread whenever the engine lets it start at once (a hand-off to a worker costs more than it
    does): the fast path's plans are for these.  Larger CPU ops run there too while
    `LARGE_OPS_IN_CALLER` says so (`execute`); device ops are always pushed."""
    return size <= INLINE_MAX_ELEMENTS and ctx.device_type == "cpu"


def _large_ops_in_caller() -> bool:
    forced = LARGE_OPS_IN_CALLER
    return _blas.uses_every_core() if forced is None else forced


def _aliased_outputs(opdef: OpDef, attrs: dict, inputs, outputs) -> Optional[dict]:
    """Outputs sharing storage with an input, other than declared in-place pairs (need scratch)."""
    found = None
    inplace = opdef.inplace_pairs(attrs)
    for o_i, o in enumerate(outputs):
        chunk = o._chunk
        for i_i, x in enumerate(inputs):
            if x._chunk is chunk and (i_i, o_i) not in inplace:
                if opdef.elementwise and x._data.shape == o._data.shape and x._data.strides == o._data.strides \
                        and x._data.__array_interface__["data"][0] == o._data.__array_interface__["data"][0]:
                    continue  # the very same elements, element-wise op: safe in place
                found = found or {}
                found[o_i] = None
                break
    return found


def _record(opdef: OpDef, attrs: dict, inputs, outputs, is_train: bool, aux=()) -> None:
    for x in inputs:
        if x._ag is not None:
            break
    else:
        return  # no input needs a gradient: nothing to record
    node = autograd_state.Node(opdef, attrs, list(inputs),
                               [(o._data, o._chunk) for o in outputs], is_train, aux)
    for i, o in enumerate(outputs):
        o._ag = autograd_state.Entry(node, i)


def _sparse_ops():
    from . import sparse_ops  # imported on first use: it needs this module
    return sparse_ops


# -- generated-function argument handling ------------------------------------------------
def _no_plan(op: str, args: tuple, kwargs: dict):
    return None


# `mx.nd.<op>(...)` tries these first: ember/imperative/__init__.py sets them to fastpath.kernel_call
# and kernel_call_out (calls with `out=`; fastpath builds on this module, so this module does not
# import it), which run CPU calls from a cached plan and return None for every call the general
# path must take.
try_plan: Callable = _no_plan
try_plan_out: Callable = _no_plan


def call(op, args: Sequence[Any], kwargs: Dict[str, Any]):
    """`mx.nd.<op>(*args, **kwargs)` as MXNet's generated functions take it.

    Leading positional NDArrays are the inputs (all of them for variadic ops such
    as Concat); further positional values are attributes in declaration order;
    keyword NDArrays are inputs by name; `out=` writes into given arrays, `ctx=`
    places ops without inputs, `name=` is ignored.
    """
    if type(op) is str and args and "ctx" not in kwargs:
        if "out" in kwargs:
            result = try_plan_out(op, args, kwargs)
        else:
            plain = {k: v for k, v in kwargs.items() if k != "name"} if "name" in kwargs else kwargs
            result = try_plan(op, args, plain)
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
            bad = pos_attrs[len(free)]
            raise TypeError(f"{opdef.name}: unexpected positional argument {bad!r} of type "
                            f"{type(bad).__name__} (inputs must be NDArrays)")
        for key, value in zip(free, pos_attrs):
            kwargs[key] = value
    attrs = opdef.parse_attrs(kwargs)
    names = _labels(opdef, attrs)
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
