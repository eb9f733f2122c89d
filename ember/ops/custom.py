"""`Custom`: operators written in Python (`mx.operator.CustomOp` / `CustomOpProp`) as registry ops.

`Custom(*inputs, op_type=name, **kwargs)` looks up the CustomOpProp class registered under `name`
(`mx.operator.register`) and builds it from `kwargs`, as strings, as MXNet does.  The prop gives
the op's arguments, outputs and auxiliary states, its shape and dtype inference and its backward
dependencies; its `create_operator` gives the CustomOp whose `forward`/`backward` are the kernels
of `Custom` and `_backward_Custom`.  So `mx.nd.Custom`, `mx.sym.Custom`, executors and autograd
all run it through this registry, as engine ops.

Inside a kernel the user's code gets NDArrays over the op's own buffers and may call any mx.nd
op on them (even wait on them): those ops run in the kernel's thread (`engine.core.ops_in_caller`)
and the kernel returns only once they are done, so the op's outputs are complete when the engine
sees it finish.  An exception in the user's code becomes an MXNetError on the op's outputs,
raised at their next wait as for any op.

State: each imperative call, and each graph node, has one `CustomState` (carried in the parsed
attributes under `_custom_state`).  It holds the prop and the CustomOp instances it created, one
per (device, input shapes, input dtypes), so forward and backward of one call use the same
instance, as in MXNet.  Executors bound from one symbol share a node, hence its instances.
"""
from __future__ import annotations

import threading
from time import monotonic_ns
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..base import DTypeError, EmberError, OperatorError, ShapeError
from .registry import Attr, OpDef, register

STATE_KEY = "_custom_state"

# MXNet's dtype codes (mshadow type flags), which create_operator receives.
_DTYPE_CODES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1, np.dtype(np.float16): 2,
                np.dtype(np.uint8): 3, np.dtype(np.int32): 4, np.dtype(np.int8): 5,
                np.dtype(np.int64): 6, np.dtype(np.bool_): 7}

_PROPS: Dict[str, type] = {}
_PROPS_LOCK = threading.Lock()


def register_prop(op_type: str, prop_cls: type) -> None:
    """Make `prop_cls` (a CustomOpProp subclass) the prop of `Custom(op_type=op_type)`.

    Registering a name again replaces the class for ops created afterwards (MXNet does the same).
    """
    if not isinstance(op_type, str) or not op_type:
        raise TypeError(f"custom operator name must be a non-empty string, got {op_type!r}")
    if not isinstance(prop_cls, type):
        raise TypeError(f"custom operator '{op_type}': expected a CustomOpProp subclass, got {prop_cls!r}")
    with _PROPS_LOCK:
        _PROPS[op_type] = prop_cls


def _prop_class(op_type: str) -> type:
    with _PROPS_LOCK:
        cls = _PROPS.get(op_type)
    if cls is None:
        known = ", ".join(sorted(_PROPS)) or "none"
        raise OperatorError(f"Custom: no custom operator is registered as op_type '{op_type}' "
                            f"(registered: {known}); register its CustomOpProp with mx.operator.register")
    return cls


def _as_attr_string(value: Any) -> str:
    # MXNet hands every keyword of Custom to the prop's constructor as a string.
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        return np.dtype(value).name
    return str(value)


class CustomState:
    """One Custom call's or graph node's prop, its declared names, and its CustomOp instances."""

    def __init__(self, op_type: str, kwargs: Dict[str, str]):
        cls = _prop_class(op_type)
        try:
            self.prop = cls(**kwargs)
        except TypeError as e:
            raise OperatorError(f"Custom '{op_type}': cannot create {cls.__name__} from attributes "
                                f"{kwargs}: {e}") from None
        self.op_type = op_type
        self.arg_names = self._names("list_arguments")
        self.out_names = self._names("list_outputs")
        self.aux_names = self._names("list_auxiliary_states")
        n_in, n_out = len(self.arg_names), len(self.out_names)
        deps = self._call("declare_backward_dependency", list(range(n_out)),
                          list(range(n_out, n_out + n_in)), list(range(n_out + n_in, 2 * n_out + n_in)))
        try:
            self.deps = frozenset(int(d) for d in deps)
        except (TypeError, ValueError):
            raise OperatorError(f"Custom '{op_type}': declare_backward_dependency must return a list of "
                                f"ints, got {deps!r}") from None
        self._ops: Dict[tuple, Any] = {}
        self._aux: Dict[tuple, list] = {}
        self._lock = threading.Lock()

    def _call(self, method: str, *args):
        try:
            return getattr(self.prop, method)(*args)
        except EmberError:
            raise
        except Exception as e:  # noqa: BLE001 - user code: name the op and the method
            raise OperatorError(f"Custom '{self.op_type}': {type(self.prop).__name__}.{method} failed: "
                                f"{type(e).__name__}: {e}") from e

    def _names(self, method: str) -> List[str]:
        names = self._call(method)
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise OperatorError(f"Custom '{self.op_type}': {method}() must return a list of strings, got {names!r}")
        return list(names)

    def operator(self, device, shapes: Sequence[tuple], dtypes: Sequence[np.dtype]):
        """The CustomOp for these inputs, created by the prop on first use."""
        key = (str(device), tuple(map(tuple, shapes)), tuple(np.dtype(d).name for d in dtypes))
        with self._lock:
            op = self._ops.get(key)
            if op is None:
                codes = [_DTYPE_CODES.get(np.dtype(d), -1) for d in dtypes]
                op = self._call("create_operator", device, [list(s) for s in shapes], codes)
                if op is None or not hasattr(op, "forward"):
                    raise OperatorError(f"Custom '{self.op_type}': create_operator returned {op!r}, "
                                        "not a CustomOp")
                self._ops[key] = op
            return op, key

    def remember_aux(self, key: tuple, aux) -> None:
        """The aux states as the last forward left them, which backward receives (they are not its inputs)."""
        with self._lock:
            self._aux[key] = aux

    def aux_for(self, key: tuple) -> list:
        with self._lock:
            return self._aux.get(key, [])

    def __repr__(self) -> str:
        return f"<CustomState {self.op_type}>"


class _CustomOpDef(OpDef):
    """An OpDef whose attributes are free-form (the prop's keywords) and carry a CustomState."""

    def parse_attrs(self, given: Dict[str, Any]) -> Dict[str, Any]:
        given = dict(given)
        state = given.pop(STATE_KEY, None)
        if "op_type" not in given or given["op_type"] is None:
            raise OperatorError(f"{self.name}: required attribute 'op_type' is missing (the name a "
                                "CustomOpProp was registered under)")
        op_type = _as_attr_string(given.pop("op_type"))
        kwargs = {k: _as_attr_string(v) for k, v in given.items()
                  if not (k.startswith("__") and k.endswith("__"))}
        if not isinstance(state, CustomState):
            state = CustomState(op_type, kwargs)
        return {"op_type": op_type, **kwargs, STATE_KEY: state}


def _state(attrs: dict) -> CustomState:
    return attrs[STATE_KEY]


def _user_kwargs(attrs: dict) -> Dict[str, str]:
    return {k: v for k, v in attrs.items() if k not in ("op_type", STATE_KEY)}


def _as_shape(value, what: str, op_type: str) -> Optional[tuple]:
    if value is None:
        return None
    try:
        return tuple(int(d) for d in value)
    except (TypeError, ValueError):
        raise ShapeError(f"Custom '{op_type}': infer_shape returned {value!r} for {what}, "
                         "not a shape (a list of ints)") from None


def _split_result(res, n: Tuple[int, int, int], what: str, op_type: str):
    """(ins, outs, auxs) from a prop's infer_shape/infer_type answer (2 or 3 lists)."""
    err = ShapeError if what == "shape" else DTypeError
    if not isinstance(res, (list, tuple)) or len(res) not in (2, 3):
        raise err(f"Custom '{op_type}': infer_{what} must return 2 or 3 lists, got {res!r}")
    ins, outs = list(res[0]), list(res[1])
    auxs = list(res[2]) if len(res) == 3 else []
    for got, want, label in ((ins, n[0], "input"), (outs, n[1], "output"), (auxs, n[2], "aux state")):
        if len(got) != want:
            raise err(f"Custom '{op_type}': infer_{what} returned {len(got)} {label} {what}s, "
                      f"expected {want}")
    return ins, outs, auxs


def _infer_shape(attrs, in_shapes, aux_shapes=None):
    # As MXNet, the prop is asked even when some input shapes are unknown (given as []), so it may
    # fill them in (a loss infers its label's shape from the data); if it cannot yet, nothing is learned.
    st = _state(attrs)
    n = (len(st.arg_names), len(st.out_names), len(st.aux_names))
    aux_shapes = list(aux_shapes) if aux_shapes is not None else [None] * n[2]
    partial = any(s is None for s in in_shapes)
    try:
        res = st.prop.infer_shape([list(s) if s is not None else [] for s in in_shapes])
        ins, outs, auxs = _split_result(res, n, "shape", st.op_type)
        shapes = ([_as_shape(s, f"input {i}", st.op_type) for i, s in enumerate(ins)],
                  [_as_shape(s, f"output {i}", st.op_type) for i, s in enumerate(outs)],
                  [_as_shape(s, f"aux state {i}", st.op_type) for i, s in enumerate(auxs)])
    except Exception as e:  # noqa: BLE001 - user code
        if partial:
            return list(in_shapes), [None] * n[1], aux_shapes
        if isinstance(e, EmberError):
            raise
        raise ShapeError(f"Custom '{st.op_type}': infer_shape failed for input shapes "
                         f"{[tuple(s) for s in in_shapes]}: {type(e).__name__}: {e}") from e
    if partial:  # an empty shape is MXNet 1.x's "unknown"
        shapes = tuple([None if s == () else s for s in group] for group in shapes)
    return shapes


def _as_dtype(value, what: str, op_type: str):
    if value is None:
        return None
    try:
        return np.dtype(value)
    except TypeError:
        raise DTypeError(f"Custom '{op_type}': infer_type returned {value!r} for {what}, not a dtype") from None


def _infer_type(attrs, in_dtypes):
    # Unknown input dtypes reach the prop as None (MXNet's -1), so it may fill them in.
    st = _state(attrs)
    n = (len(st.arg_names), len(st.out_names), len(st.aux_names))
    partial = any(d is None for d in in_dtypes)
    try:
        res = st.prop.infer_type([np.dtype(d).type if d is not None else None for d in in_dtypes])
        ins, outs, auxs = _split_result(res, n, "type", st.op_type)
        return ([_as_dtype(d, f"input {i}", st.op_type) for i, d in enumerate(ins)],
                [_as_dtype(d, f"output {i}", st.op_type) for i, d in enumerate(outs)],
                [_as_dtype(d, f"aux state {i}", st.op_type) for i, d in enumerate(auxs)])
    except Exception as e:  # noqa: BLE001 - user code
        if partial:
            return list(in_dtypes), [None] * n[1], [None] * n[2]
        if isinstance(e, EmberError):
            raise
        raise DTypeError(f"Custom '{st.op_type}': infer_type failed for input dtypes "
                         f"{[np.dtype(d).name for d in in_dtypes]}: {type(e).__name__}: {e}") from e


# -- running the user's code -----------------------------------------------------------------

def _run_user(ctx, st: CustomState, what: str, call, written) -> None:
    """Run call() with autograd off and ctx.is_train as the training flag, letting the mx.nd ops it
    pushes run in this thread; return once they are done.  `written`: the NDArrays it may write."""
    from .. import engine, profiler
    from ..imperative import autograd_state
    prev_rec = autograd_state.set_recording(False)
    prev_train = autograd_state.set_training(ctx.is_train)
    start = monotonic_ns() if profiler.recording() else None
    try:
        with engine.core.ops_in_caller():
            scope = ctx.device if ctx.device is not None and hasattr(ctx.device, "__enter__") else None
            if scope is not None:
                with scope:
                    call()
            else:
                call()
            for arr in written:  # ops the user pushed on our buffers (and any error they raised)
                arr.wait_to_read()
    except Exception as e:  # noqa: BLE001 - reported on the op's outputs, raised at their wait
        raise EmberError(f"Custom operator '{st.op_type}': {what} failed: {type(e).__name__}: {e}") from e
    finally:
        autograd_state.set_recording(prev_rec)
        autograd_state.set_training(prev_train)
        if start is not None:  # MXNet's "<op_type>::pure_python" and its ops as "<op_type>::<op>"
            profiler.record_custom(st.op_type if what == "forward" else f"_backward_{st.op_type}", start,
                                   monotonic_ns())


def _wrap(arrays, ctx, label: str):
    """NDArrays over the kernel's buffers, each with a fresh engine var (nothing else is pending on them)."""
    from .. import engine
    from ..imperative.ndarray import NDArray
    return [NDArray._wrap(a, engine.Var(f"custom:{label}{i}"), ctx.device) for i, a in enumerate(arrays)]


def _forward_kernel(ctx, attrs, inputs, outputs, aux):
    st = _state(attrs)
    op, key = st.operator(ctx.device, [a.shape for a in inputs], [a.dtype for a in inputs])
    for o in outputs:
        o[...] = 0
    in_nd, out_nd, aux_nd = _wrap(inputs, ctx, "in"), _wrap(outputs, ctx, "out"), _wrap(aux, ctx, "aux")
    req = ["write"] * len(outputs)
    _run_user(ctx, st, "forward",
              lambda: op.forward(is_train=ctx.is_train, req=req, in_data=in_nd, out_data=out_nd, aux=aux_nd),
              out_nd + aux_nd)
    # a copy: the kernel's aux buffers may be temporaries (a sparse aux state given densified) whose
    # memory is reused once this op ends, long before the backward reads them
    st.remember_aux(key, [a.copy() for a in aux])


def _backward_kernel(ctx, attrs, inputs, outputs, aux):
    st = _state(attrs)
    n_in, n_out = len(st.arg_names), len(st.out_names)
    # what declare_backward_dependency left out is given as zeros (its bytes may be reused already)
    inputs = [a if i in st.deps else ctx.xp.zeros_like(a) for i, a in enumerate(inputs)]
    out_grad = inputs[:n_out]
    in_data = inputs[n_out:n_out + n_in]
    out_data = inputs[n_out + n_in:]
    # in_grad has the inputs' shapes and dtypes: the key of the forward's CustomOp
    op, key = st.operator(ctx.device, [g.shape for g in outputs], [g.dtype for g in outputs])
    for g in outputs:
        g[...] = 0
    aux_arrays = st.aux_for(key)
    ograd_nd, in_nd, out_nd = _wrap(out_grad, ctx, "ograd"), _wrap(in_data, ctx, "in"), _wrap(out_data, ctx, "out")
    grad_nd, aux_nd = _wrap(outputs, ctx, "igrad"), _wrap(aux_arrays, ctx, "aux")
    req = ["write"] * len(outputs)
    _run_user(ctx, st, "backward",
              lambda: op.backward(req=req, out_grad=ograd_nd, in_data=in_nd, out_data=out_nd,
                                  in_grad=grad_nd, aux=aux_nd),
              grad_nd + aux_nd)


def _gradient(F, attrs, inputs, outputs, out_grads):
    # All of out_grad, in_data and out_data go in, in MXNet's dependency numbering; those the prop
    # does not declare are read for their shapes only (a memory planner may reuse their bytes).
    # An out_grad the prop does not need is replaced by its output (same shape and dtype), so the
    # graph does not read the head gradient: backward() then needs none, as for MXNet's losses.
    st = _state(attrs)
    n_out = len(st.out_names)
    ograds = [g if i in st.deps else outputs[i] for i, g in enumerate(out_grads[:n_out])]
    res = F._backward_Custom(*ograds, *inputs, *outputs[:n_out], op_type=attrs["op_type"],
                             **_user_kwargs(attrs), **{STATE_KEY: st})
    if isinstance(res, (list, tuple)):
        return list(res)
    if len(st.arg_names) == 1:
        return [res]
    return [res[i] for i in range(len(st.arg_names))]


def _backward_infer_shape(attrs, in_shapes):
    st = _state(attrs)
    n_in, n_out = len(st.arg_names), len(st.out_names)
    ins = list(in_shapes)
    for i in range(n_out):  # out_grad i has out_data i's shape
        g, o = ins[i], ins[n_out + n_in + i]
        if g is None and o is not None:
            ins[i] = o
        elif o is None and g is not None:
            ins[n_out + n_in + i] = g
    return ins, ins[n_out:n_out + n_in]


def _backward_infer_type(attrs, in_dtypes):
    st = _state(attrs)
    n_in, n_out = len(st.arg_names), len(st.out_names)
    ins = list(in_dtypes)
    for i in range(n_out):
        g, o = ins[i], ins[n_out + n_in + i]
        if g is None:
            ins[i] = o
        elif o is None:
            ins[n_out + n_in + i] = g
    return ins, ins[n_out:n_out + n_in], []


def _backward_inputs(attrs) -> List[str]:
    st = _state(attrs)
    return ([f"out_grad_{n}" for n in st.out_names] + [f"in_data_{n}" for n in st.arg_names]
            + [f"out_data_{n}" for n in st.out_names])


def _not_needed(attrs) -> tuple:
    st = _state(attrs)
    total = 2 * len(st.out_names) + len(st.arg_names)
    return tuple(i for i in range(total) if i not in st.deps)


_OP_TYPE = {"op_type": Attr("str", doc="name the CustomOpProp was registered under (mx.operator.register)")}

register(_CustomOpDef(
    name="_backward_Custom", attrs=dict(_OP_TYPE), inputs=_backward_inputs,
    outputs=lambda attrs: [f"{n}_grad" for n in _state(attrs).arg_names],
    num_visible_outputs=lambda attrs: len(_state(attrs).arg_names),
    infer_shape=_backward_infer_shape, infer_type=_backward_infer_type,
    kernels={"any": _backward_kernel}, shape_only_inputs=_not_needed,
    doc="Gradient of Custom: runs the CustomOp's backward on (out_grad, in_data, out_data)."))

register(_CustomOpDef(
    name="Custom", attrs=dict(_OP_TYPE),
    inputs=lambda attrs: _state(attrs).arg_names,
    outputs=lambda attrs: _state(attrs).out_names,
    aux=lambda attrs: _state(attrs).aux_names,
    num_visible_outputs=lambda attrs: len(_state(attrs).out_names),
    infer_shape=_infer_shape, infer_type=_infer_type,
    kernels={"any": _forward_kernel}, gradient=_gradient,
    doc="An operator written in Python: Custom(*inputs, op_type=name, **kwargs) runs the CustomOp "
        "of the CustomOpProp registered as `name` (mx.operator.register), built from kwargs."))
