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

A parameter's gradient output is bound to the parameter's own `.grad` buffer (with its
grad_req, 'write' or 'add'), as MXNet's CachedOp writes into the gradient buffers autograd
hands it: the planned backward's last node writes the gradient there, and the taped node tells
`backward()` it is written (`autograd_tape.WRITTEN`) instead of handing out a copy.  When the
gradient must be handed out instead (`autograd.grad`, a parameter also used outside this block),
the buffer's old value is saved around the backward and restored after the gradient is copied out.
"""
from __future__ import annotations

import weakref
from operator import is_
from typing import Dict, List, Optional, Sequence, Tuple

from .. import ndarray as nd
from ..engine.native import pool_prewake
from ..imperative import autograd_state as _ag
from ..imperative.autograd_tape import WRITTEN
from ..imperative.ndarray import NDArray
from ..ops.registry import OpDef


def _leaf_grad_binding(arr: NDArray) -> Optional[Tuple[NDArray, str]]:
    """(the `.grad` buffer, grad_req) a parameter array's gradient output can be bound to, or None
    (no autograd variable, grad_req 'null', a sparse buffer or one of another shape or dtype)."""
    leaf = arr._ag
    if not isinstance(leaf, _ag.Leaf) or leaf.grad_req not in ("write", "add"):
        return None
    grad = leaf.grad
    if grad.stype != "default" or grad.shape != arr.shape or grad.dtype != arr.dtype or grad.context != arr.context:
        return None
    return grad, leaf.grad_req


def _all_dense(inputs: Sequence[NDArray]) -> bool:
    for x in inputs:
        if x.stype != "default":
            return False
    return True


class _Slot:
    """One bound executor and the recorded node (if any) that still needs its forward state.

    `bound_grads`: name -> (`.grad` buffer, grad_req) of the parameters whose gradient output is
    bound to their own buffer; the slot serves only while those are still the parameters' ones."""

    __slots__ = ("executor", "input_targets", "used_targets", "param_arrays", "bound_grads", "node_ref", "hook",
                 "opdef")

    def __init__(self, executor, input_targets: List[Optional[NDArray]], param_arrays: List[NDArray],
                 bound_grads: Dict[str, Tuple[NDArray, str]]):
        self.executor = executor
        self.input_targets = input_targets  # per block input: the executor's argument it is copied into
        # of the inputs the graph reads; a tuple: forward_copied knows its plan by this very object
        self.used_targets = tuple(t for t in input_targets if t is not None)
        self.param_arrays = param_arrays
        self.bound_grads = bound_grads
        self.node_ref = None
        self.hook = None
        self.opdef = None  # the taped node's OpDef, made at the first recorded call

    def is_free(self) -> bool:
        if self.node_ref is None:
            return True
        node = self.node_ref()
        return node is None or node.freed

    def fits(self, param_arrays: List[NDArray], names: List[str]) -> bool:
        """Whether the bound parameter arrays and gradient buffers are still the parameters' own."""
        if not all(map(is_, self.param_arrays, param_arrays)):
            return False
        if self.bound_grads:
            for name, arr in zip(names, param_arrays):
                bound = self.bound_grads.get(name)
                if bound is not None:
                    leaf = arr._ag
                    if not isinstance(leaf, _ag.Leaf) or leaf.grad is not bound[0] or leaf.grad_req != bound[1]:
                        return False
        return True


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
        # products ahead (see OpDef.expensive): a call first wakes the CPU team
        self._expensive = any(n.op is not None and n.op.expensive for n in symbol._nodes())
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
        if self._expensive and ctx.device_type == "cpu":
            pool_prewake()
        param_arrays = [p.data(ctx) for p in self._params]
        recording = _ag.is_recording()
        grad_names: Tuple[str, ...] = ()
        if recording:
            grad_names = tuple(n for n, x, used in zip(self._data_names, inputs, self._used_data)
                               if used and x._ag is not None)
            grad_names += tuple(n for n, a in zip(self._param_names, param_arrays)
                                if a._ag is not None and n in self._arg_names)
        key = (ctx, tuple([(x.shape, x.dtype) for x in inputs]), grad_names)
        slot = self._take_slot(key, ctx, inputs, param_arrays, grad_names)
        ex = slot.executor
        hook = self._hook
        if slot.hook is not hook:
            ex.set_monitor_callback(None if hook is None else self._monitor(), False if hook is None else hook[1])
            slot.hook = hook
        if not recording:
            return self._run(slot, inputs)
        # the copies in and out are plumbing, not user ops: the call is taped once, below
        _ag.set_recording(False)
        try:
            outs = self._run(slot, inputs)
        finally:
            _ag.set_recording(True)
        if grad_names:
            self._record(slot, inputs, param_arrays, outs, grad_names)
        return outs

    @staticmethod
    def _run(slot: "_Slot", inputs: Sequence[NDArray]) -> List[NDArray]:
        """Copy the inputs into the slot's executor, run its forward; copies of the outputs (the
        executor's own arrays are overwritten by the next call).  One engine op for all of it
        where the executor can (dense inputs on a CPU executor: `Executor.forward_copied`)."""
        is_train = _ag.is_training()
        if _all_dense(inputs):
            used = inputs if len(slot.used_targets) == len(inputs) else \
                [x for x, t in zip(inputs, slot.input_targets) if t is not None]
            outs = slot.executor.forward_copied(used, slot.used_targets, is_train)
            if outs is not None:
                return outs
        for x, target in zip(inputs, slot.input_targets):
            if target is not None:  # the executor computes on dense arrays: a sparse input is given densely
                (x if x.stype == "default" else x.tostype("default")).copyto(target)
        return [o.copy() for o in slot.executor.forward(is_train=is_train)]

    def _take_slot(self, key, ctx, inputs, param_arrays, grad_names) -> _Slot:
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = []
        for slot in slots:
            if slot.is_free():
                if slot.fits(param_arrays, self._param_names):
                    return slot
                # a parameter got new arrays (initialize(force_reinit), cast, reset_ctx) or a new
                # gradient buffer (grad_req changed): rebind
                slots.remove(slot)
                break
        bound_grads: Dict[str, Tuple[NDArray, str]] = {}
        if grad_names:
            # a buffer is bound to one free slot at a time: a second slot (a block applied twice
            # in one step) writing it too would overwrite the first one's gradient
            taken = {id(b[0]) for s in slots for b in s.bound_grads.values()}
            wanted = set(grad_names)
            for name, arr in zip(self._param_names, param_arrays):
                if name in wanted:
                    binding = _leaf_grad_binding(arr)
                    if binding is not None and id(binding[0]) not in taken:
                        bound_grads[name] = binding
        ex = self._bind(ctx, inputs, param_arrays, grad_names, bound_grads)
        args = ex.arg_dict
        targets = [args[name] if used else None for name, used in zip(self._data_names, self._used_data)]
        slot = _Slot(ex, targets, param_arrays, bound_grads)
        slots.append(slot)
        return slot

    def _bind(self, ctx, inputs, param_arrays, grad_names, bound_grads):
        args, aux = {}, {}
        for name, x, used in zip(self._data_names, inputs, self._used_data):
            if used:
                args[name] = nd.empty(x.shape, ctx=ctx, dtype=x.dtype)
        aux_names = set(self._aux_names)
        for name, arr in zip(self._param_names, param_arrays):
            (aux if name in aux_names else args)[name] = arr
        grads = {n: (bound_grads[n][0] if n in bound_grads else nd.zeros(args[n].shape, ctx=ctx, dtype=args[n].dtype))
                 for n in grad_names}
        reqs = {n: (bound_grads[n][1] if n in bound_grads else "write" if n in grads else "null")
                for n in self._arg_names}
        return self.symbol.bind(ctx, args, args_grad=grads or None, grad_req=reqs, aux_states=aux)

    def _record(self, slot: _Slot, inputs, param_arrays, outs: List[NDArray], grad_names) -> None:
        if slot.opdef is None:
            slot.opdef = self._make_opdef(slot, grad_names, len(outs))
        node = _ag.Node(slot.opdef, {}, list(inputs) + list(param_arrays), [(o._data, o._chunk) for o in outs],
                        _ag.is_training())
        for i, o in enumerate(outs):
            o._ag = _ag.Entry(node, i)
        slot.node_ref = weakref.ref(node)

    def _make_opdef(self, slot: _Slot, grad_names, num_outputs: int) -> OpDef:
        """The taped node's OpDef: `gradient` hands every gradient out, `gradient_into` (used by
        autograd's backward) leaves those bound to a parameter's `.grad` there."""
        ex = slot.executor
        names = self._data_names + self._param_names
        wanted = set(grad_names)
        bound = slot.bound_grads

        def run(out_grads, dests):
            # dests[i]: the autograd variable input i's gradient may be written into (or None)
            handed_out = [n for n, d in zip(names, dests) if n in bound and (d is None or d.grad is not bound[n][0])]
            saved = {}
            for n in handed_out:  # keep the buffer's value; the gradient is copied out below
                buf, req = bound[n]
                saved[n] = buf.copy()
                if req == "add":
                    buf[...] = 0
            ex.backward(out_grads=list(out_grads), is_train=True)
            result = []
            for n in names:
                if n not in wanted:
                    result.append(None)
                elif n in saved:
                    buf = bound[n][0]
                    result.append(buf.copy())
                    saved[n].copyto(buf)
                elif n in bound:
                    result.append(WRITTEN)
                else:
                    result.append(_take_grad(ex, n))
            return result

        def gradient(F, attrs, ins, outputs, out_grads):
            return run(out_grads, [None] * len(names))

        def gradient_into(F, attrs, ins, outputs, out_grads, dests):
            return run(out_grads, dests)

        opdef = OpDef(name=f"_CachedOp:{self._block_name}", inputs=names,
                      outputs=[f"out{i}" for i in range(num_outputs)], gradient=gradient,
                      gradient_into=gradient_into, subgraph=(self.symbol, names), expensive=self._expensive)
        return opdef

    def memory_plan(self, training: Optional[bool] = None) -> Optional[str]:
        """The memory plan (`debug_str`) of the most recently bound executor, if any; `training`
        True/False picks the latest one with/without gradient graph."""
        for key, slots in reversed(list(self._slots.items())):
            if slots and (training is None or bool(key[2]) == training):
                return slots[-1].executor.debug_str()
        return None
