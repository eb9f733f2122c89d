"""`mx.autograd`: record operations on NDArrays and compute gradients (MXNet 1.x API)."""
from __future__ import annotations

from typing import Optional

from .imperative import autograd_state as _state
from .imperative.autograd_tape import AutogradError, backward, grad  # noqa: F401
from .imperative.ndarray import NDArray

is_recording = _state.is_recording
is_training = _state.is_training
set_recording = _state.set_recording
set_training = _state.set_training


class _Scope:
    """Sets the recording/training flags on entry and restores them on exit."""

    def __init__(self, recording: Optional[bool], training: Optional[bool]):
        self._rec, self._train = recording, training
        self._prev = None

    def __enter__(self):
        self._prev = (_state.is_recording(), _state.is_training())
        if self._rec is not None:
            _state.set_recording(self._rec)
        if self._train is not None:
            _state.set_training(self._train)
        return self

    def __exit__(self, *exc):
        _state.set_recording(self._prev[0])
        _state.set_training(self._prev[1])


def record(train_mode: bool = True) -> _Scope:
    """Record ops for backward inside this block (training mode unless train_mode=False)."""
    return _Scope(True, train_mode)


def pause(train_mode: bool = False) -> _Scope:
    """Stop recording inside this block."""
    return _Scope(False, train_mode)


def train_mode() -> _Scope:
    """Training behaviour (dropout active, batch statistics) without changing recording."""
    return _Scope(None, True)


def predict_mode() -> _Scope:
    """Inference behaviour without changing recording."""
    return _Scope(None, False)


def mark_variables(variables, gradients, grad_reqs="write") -> None:
    """Make arrays variables whose gradients go into the given buffers."""
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    variables, gradients = list(variables), list(gradients)
    if len(variables) != len(gradients):
        raise ValueError(f"mark_variables: {len(variables)} variables but {len(gradients)} gradients")
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if len(reqs) != len(variables):
        raise ValueError(f"mark_variables: {len(variables)} variables but {len(reqs)} grad_reqs")
    for v, g, r in zip(variables, gradients, reqs):
        _state.mark_variable(v, g, r)


def get_symbol(x: NDArray):
    """The recorded computation that produced `x`, as a Symbol (MXNet's `autograd.get_symbol`).

    Every array the computation read that was not itself computed while recording (variables
    from attach_grad and constants alike) becomes a variable named var0, var1, ... in the order
    met; bind the symbol to re-run the computation. Raises when `x` was not computed while
    recording, or when the graph holds a step no Symbol can express (an autograd.Function).  A
    hybridized block's call is one `_CachedOp` node running the block's graph (MXNet's form).
    """
    from . import ops as _ops
    from .symbolic import control_flow
    from .symbolic.symbol import Symbol, make_op_function, var

    if not isinstance(x, NDArray):
        raise TypeError(f"get_symbol: expected an NDArray, got {type(x).__name__}")
    if not isinstance(x._ag, _state.Entry):
        raise AutogradError("get_symbol: the NDArray is not part of a computation graph; did you forget to "
                            "turn on recording (autograd.record())?")
    variables = {}   # id of a leaf (or of a constant array) -> variable Symbol
    built = {}       # id(recorded node) -> Symbol of its outputs

    def variable_for(arr) -> Symbol:
        key = id(arr._ag) if isinstance(arr._ag, _state.Leaf) else id(arr)
        if key not in variables:
            variables[key] = var(f"var{len(variables)}")
        return variables[key]

    def build(node) -> Symbol:
        opdef = node.opdef
        if opdef.subgraph is not None:  # a hybridized block's call: one _CachedOp node, as MXNet shows it
            graph, names = opdef.subgraph
            return control_flow.call(graph, names, [input_symbol(arr) for arr in node.inputs])
        if not _ops.exists(opdef.name) or _ops.get(opdef.name) is not opdef:
            raise AutogradError(f"get_symbol: the recorded step '{opdef.name}' is not a registered operator "
                                "and cannot be expressed as a Symbol")
        return make_op_function(opdef.name)(*[input_symbol(arr) for arr in node.inputs], **node.attrs)

    def input_symbol(arr) -> Symbol:
        if isinstance(arr._ag, _state.Entry):
            return built[id(arr._ag.node)][arr._ag.index]
        return variable_for(arr)

    # post-order without recursion (recorded graphs can be thousands of ops deep)
    stack = [(x._ag.node, False)]
    while stack:
        node, inputs_done = stack.pop()
        if id(node) in built:
            continue
        if inputs_done:
            built[id(node)] = build(node)
            continue
        stack.append((node, True))
        for arr in reversed(node.inputs):
            if isinstance(arr._ag, _state.Entry) and id(arr._ag.node) not in built:
                stack.append((arr._ag.node, False))
    out = built[id(x._ag.node)]
    if x._ag.index >= len(out):
        raise AutogradError(f"get_symbol: the array is hidden output {x._ag.index} of '{x._ag.node.opdef.name}', "
                            "which a Symbol does not expose")
    return out[x._ag.index]


class Function:
    """A user-defined differentiable function (MXNet's `autograd.Function`).

    Subclass it with `forward(*inputs)` and `backward(*output_grads)` on NDArrays; call
    `save_for_backward(*arrays)` in forward to keep values for backward (`self.saved_tensors`).
    Forward runs with recording paused; when recording, the call is taped as one node whose
    gradient is `backward`.
    """

    def __init__(self):
        self._used = False
        self.saved_tensors = ()

    def save_for_backward(self, *args) -> None:
        self.saved_tensors = args

    def forward(self, *inputs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def backward(self, *output_grads):
        raise NotImplementedError(f"{type(self).__name__} must define backward()")

    def __call__(self, *inputs):
        if self._used:
            raise AutogradError(f"{type(self).__name__}: each Function instance can be called only once; "
                                "create a new instance per call")
        self._used = True
        for x in inputs:
            if not isinstance(x, NDArray):
                raise TypeError(f"{type(self).__name__}: inputs must be NDArrays, got {type(x).__name__}")
        with pause(train_mode=is_training()):
            outputs = self.forward(*inputs)
        outs = [outputs] if isinstance(outputs, NDArray) else list(outputs)
        if is_recording() and any(x._ag is not None for x in inputs):
            _record_function(self, list(inputs), outs)
        return outputs


def _record_function(fn: Function, inputs, outputs) -> None:
    from .ops.registry import OpDef

    def gradient(F, attrs, ins, outs, out_grads):
        grads = fn.backward(*out_grads)
        grads = [grads] if isinstance(grads, NDArray) else list(grads)
        if len(grads) != len(ins):
            raise AutogradError(f"{type(fn).__name__}.backward returned {len(grads)} gradients for "
                                f"{len(ins)} inputs")
        return grads

    # an unregistered OpDef: it only carries the gradient for this one taped call
    opdef = OpDef(name=f"Function:{type(fn).__name__}", inputs=[f"in{i}" for i in range(len(inputs))],
                  outputs=[f"out{i}" for i in range(len(outputs))], gradient=gradient)
    node = _state.Node(opdef, {}, inputs, [(o._data, o._chunk) for o in outputs], is_training())
    for i, o in enumerate(outputs):
        o._ag = _state.Entry(node, i)
