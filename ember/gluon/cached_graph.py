"""A hybridized block's graph run on ember's executor (what MXNet calls a CachedOp).

The traced symbol is bound once per input signature (context, input shapes and dtypes, and
which inputs need gradients): `Executor` runs the graph passes and the memory planner at
bind time, and every later call with that signature only copies the inputs in and pushes the
planned nodes to the engine.  Parameters are bound by reference, so optimizer updates made
between calls are ordered with the next forward by the engine, without waits.

Under `autograd.record()` a call is taped as ONE node whose gradient runs the executor's
planned backward graph.  An executor whose forward state is still needed by such a node
(until its backward ran, or the node died) is not reused: a call made meanwhile (a block
applied twice in one step, validation between forward and backward) takes another one.
"""
from __future__ import annotations

import weakref
from typing import Dict, List, Optional, Sequence, Tuple

from .. import ndarray as nd
from ..imperative import autograd_state as _ag
from ..imperative.ndarray import NDArray
from ..ops.registry import OpDef


class _Slot:
    """One bound executor and the recorded node (if any) that still needs its forward state."""

    __slots__ = ("executor", "param_arrays", "node_ref", "hook")

    def __init__(self, executor, param_arrays: List[NDArray]):
        self.executor = executor
        self.param_arrays = param_arrays
        self.node_ref = None
        self.hook = None

    def is_free(self) -> bool:
        if self.node_ref is None:
            return True
        node = self.node_ref()
        return node is None or node.freed


def _take_grad(ex, name: str) -> NDArray:
    """The gradient of `name` from the executor's last backward, which the caller may keep.

    A gradient array the executor fills by a final copy is handed out as is and replaced by a
    fresh one for the next backward (no copy); one that a node writes directly (the planner's
    'external' outputs, fixed at bind time) is copied."""
    i = ex._arg_names.index(name)
    grad = ex.grad_arrays[i]
    if name in ex._graph.external.values():
        return grad.copy()
    ex.grad_arrays[i] = nd.empty(grad.shape, ctx=grad.context, dtype=grad.dtype)
    return grad


class CachedGraph:
    """Runs `symbol` on NDArrays: inputs named `data_names` (in call order), the other arguments
    and auxiliary states taken from `params` (name -> gluon Parameter)."""

    def __init__(self, symbol, data_names: Sequence[str], params: Dict[str, object], block_name: str = ""):
        self.symbol = symbol
        self._arg_names = symbol.list_arguments()
        self._aux_names = symbol.list_auxiliary_states()
        graph_inputs = set(self._arg_names) | set(self._aux_names)
        self._data_names = list(data_names)
        self._used_data = [n in graph_inputs for n in self._data_names]
        self._param_names = [n for n in self._arg_names + self._aux_names if n not in set(self._data_names)]
        missing = [n for n in self._param_names if n not in params]
        if missing:
            raise ValueError(f"HybridBlock '{block_name}': unknown inputs {missing} in the traced graph "
                             "(neither block inputs nor parameters)")
        self._params = [params[n] for n in self._param_names]
        self._block_name = block_name
        self._slots: Dict[Tuple, List[_Slot]] = {}
        self._hook = None  # (callback, monitor_all) of register_op_hook

    def set_op_hook(self, callback, monitor_all: bool = False) -> None:
        """Call `callback(node_name, op_name, array)` for each operator output (and input with
        monitor_all) as the graph runs: MXNet's `HybridBlock.register_op_hook`."""
        self._hook = None if callback is None else (callback, bool(monitor_all))

    def _monitor(self):
        callback, _ = self._hook
        ops = {n.name: n.op.name for n in self.symbol._nodes() if n.op is not None}
        variables = set(self.symbol.list_inputs())

        def report(name, arr):
            if name in variables:  # the executor also reports graph inputs by their own name
                return
            owner = max((n for n in ops if name.startswith(n + "_")), key=len, default=None)
            op_name = type(name)(ops[owner]) if owner is not None else type(name)("")
            callback(name, op_name, arr)
        return report

    # -- one call ---------------------------------------------------------------------------
    def __call__(self, inputs: Sequence[NDArray]) -> List[NDArray]:
        ctx = inputs[0].context
        param_arrays = [p.data(ctx) for p in self._params]
        grad_names: Tuple[str, ...] = ()
        if _ag.is_recording():
            grad_names = tuple(n for n, x, used in zip(self._data_names, inputs, self._used_data)
                               if used and x._ag is not None)
            grad_names += tuple(n for n, a in zip(self._param_names, param_arrays)
                                if a._ag is not None and n in self._arg_names)
        key = (ctx, tuple((tuple(x.shape), x.dtype) for x in inputs), grad_names)
        slot = self._take_slot(key, ctx, inputs, param_arrays, grad_names)
        ex = slot.executor
        hook = self._hook
        if slot.hook is not hook:
            ex.set_monitor_callback(None if hook is None else self._monitor(), False if hook is None else hook[1])
            slot.hook = hook
        args = ex.arg_dict
        # the copies in and out are plumbing, not user ops: the call is taped once, below
        prev = _ag.set_recording(False)
        try:
            for name, x, used in zip(self._data_names, inputs, self._used_data):
                if used:  # the executor computes on dense arrays: a sparse input is given densely
                    args[name][:] = x if x.stype == "default" else x.tostype("default")
            outs = [o.copy() for o in ex.forward(is_train=_ag.is_training())]
        finally:
            _ag.set_recording(prev)
        if grad_names:
            self._record(slot, inputs, param_arrays, outs, grad_names)
        return outs

    def _take_slot(self, key, ctx, inputs, param_arrays, grad_names) -> _Slot:
        slots = self._slots.setdefault(key, [])
        for slot in slots:
            if slot.is_free():
                if all(a is b for a, b in zip(slot.param_arrays, param_arrays)):
                    return slot
                # a parameter got new arrays (initialize(force_reinit), cast, reset_ctx): rebind
                slots.remove(slot)
                break
        slot = _Slot(self._bind(ctx, inputs, param_arrays, grad_names), param_arrays)
        slots.append(slot)
        return slot

    def _bind(self, ctx, inputs, param_arrays, grad_names):
        args, aux = {}, {}
        for name, x, used in zip(self._data_names, inputs, self._used_data):
            if used:
                args[name] = nd.empty(x.shape, ctx=ctx, dtype=x.dtype)
        aux_names = set(self._aux_names)
        for name, arr in zip(self._param_names, param_arrays):
            (aux if name in aux_names else args)[name] = arr
        grads = {n: nd.zeros(args[n].shape, ctx=ctx, dtype=args[n].dtype) for n in grad_names}
        reqs = {n: ("write" if n in grads else "null") for n in self._arg_names}
        return self.symbol.bind(ctx, args, args_grad=grads or None, grad_req=reqs, aux_states=aux)

    def _record(self, slot: _Slot, inputs, param_arrays, outs: List[NDArray], grad_names) -> None:
        ex = slot.executor
        names = self._data_names + self._param_names
        wanted = set(grad_names)

        def gradient(F, attrs, ins, outputs, out_grads):
            ex.backward(out_grads=list(out_grads), is_train=True)
            return [_take_grad(ex, n) if n in wanted else None for n in names]

        opdef = OpDef(name=f"_CachedOp:{self._block_name}", inputs=names,
                      outputs=[f"out{i}" for i in range(len(outs))], gradient=gradient)
        node = _ag.Node(opdef, {}, list(inputs) + list(param_arrays), [(o._data, o._chunk) for o in outs],
                        _ag.is_training())
        for i, o in enumerate(outs):
            o._ag = _ag.Entry(node, i)
        slot.node_ref = weakref.ref(node)

    def memory_plan(self, training: Optional[bool] = None) -> Optional[str]:
        """The memory plan (`debug_str`) of the most recently bound executor, if any; `training`
        True/False picks the latest one with/without gradient graph."""
        for key, slots in reversed(list(self._slots.items())):
            if slots and (training is None or bool(key[2]) == training):
                return slots[-1].executor.debug_str()
        return None
