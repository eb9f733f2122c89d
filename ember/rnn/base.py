"""The machinery every legacy `mx.rnn` cell shares: parameter containers, begin states, unrolling.

A cell builds symbols for one time step (`cell(inputs, states)`); `unroll` repeats it over a
sequence.  Begin states have MXNet's shapes with 0 for the unknown batch dimension, which
shape inference completes from the data when the graph is bound.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .. import symbol
from ..symbolic.symbol import Symbol

SymbolOrList = Union[Symbol, List[Symbol]]


class RNNParams:
    """Variables shared between cells: `get(name)` returns the same Variable for the same name.

    Every name is prefixed with `prefix`.
    """

    def __init__(self, prefix: str = ""):
        self._prefix = prefix
        self._params: Dict[str, Symbol] = {}

    def get(self, name: str, **kwargs) -> Symbol:
        """The variable `prefix + name`, created (with `kwargs` for `mx.sym.Variable`) on first use."""
        full = self._prefix + name
        found = self._params.get(full)
        if found is None:
            found = self._params[full] = symbol.Variable(full, **kwargs)
        return found


def normalize_sequence(length: Optional[int], inputs, layout: str, merge: Optional[bool],
                       in_layout: Optional[str] = None) -> Tuple[SymbolOrList, int]:
    """Inputs as one merged symbol (merge=True), a list of per-step symbols (merge=False), or as
    given (merge=None); returns them with the time axis of `layout`."""
    if inputs is None:
        raise AssertionError("unroll(inputs=None) is not supported: create the input variables outside "
                         "unroll and pass them in")
    if layout not in ("NTC", "TNC"):
        raise ValueError(f"unroll: layout must be 'NTC' or 'TNC', got {layout!r}")
    axis = layout.find("T")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    if isinstance(inputs, Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise AssertionError("unroll: a grouped symbol is not a sequence; pass list(inputs) to give "
                                 "one symbol per step")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise AssertionError(f"unroll: {len(inputs)} input symbols for length {length}")
        if merge is True:
            steps = [symbol.expand_dims(x, axis=axis) for x in inputs]
            inputs = symbol.Concat(*steps, dim=axis)
            in_axis = axis
    if isinstance(inputs, Symbol) and axis != in_axis:
        inputs = symbol.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis


class BaseRNNCell:
    """Abstract RNN cell: subclasses define `state_info` and `__call__(inputs, states)`.

    prefix: names of the cell's layers (and of its weights when `params` is None).
    params: an `RNNParams` to share weights with other cells (a new one when None).
    """

    def __init__(self, prefix: str = "", params: Optional[RNNParams] = None):
        if params is None:
            params = RNNParams(prefix)
            self._own_params = True
        else:
            self._own_params = False
        self._prefix = prefix
        self._params = params
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Restart the step and begin-state counters (before building another graph)."""
        self._init_counter = -1
        self._counter = -1
        for cell in getattr(self, "_cells", ()):
            cell.reset()

    def __call__(self, inputs: Symbol, states: List[Symbol]) -> Tuple[Symbol, List[Symbol]]:
        """One time step: (output, next states)."""
        raise NotImplementedError(f"{type(self).__name__} must define __call__(inputs, states)")

    @property
    def params(self) -> RNNParams:
        """The cell's parameter container (handing it out makes it shared)."""
        self._own_params = False
        return self._params

    @property
    def state_info(self) -> List[dict]:
        """One dict per state: 'shape' (0 = batch, unknown until bound) and '__layout__'."""
        raise NotImplementedError(f"{type(self).__name__} must define state_info")

    @property
    def state_shape(self) -> List[tuple]:
        return [info["shape"] for info in self.state_info]

    @property
    def _gate_names(self) -> Sequence[str]:
        return ()

    def _next_step(self) -> str:
        """Count one more step; the name prefix of its layers, '<prefix>t<step>_'."""
        self._counter += 1
        return f"{self._prefix}t{self._counter}_"

    def _check_unmodified(self) -> None:
        if self._modified:
            raise AssertionError("after applying a modifier cell (DropoutCell, ZoneoutCell, ResidualCell) "
                               "the base cell cannot be used directly; use the modifier cell instead")

    def begin_state(self, func: Callable = symbol.zeros, **kwargs) -> List[Symbol]:
        """The states of the first step, made by `func` (mx.sym.zeros, mx.sym.Variable, ...)
        named '<prefix>begin_state_<i>', with each state's info (shape, layout) as keywords."""
        self._check_unmodified()
        states = []
        for info in self.state_info:
            self._init_counter += 1
            if info is not None:
                kwargs.update(info)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **kwargs))
        return states

    def unpack_weights(self, args: Dict[str, Any]) -> Dict[str, Any]:
        """Split each fused i2h/h2h weight and bias into one array per gate (a new dict)."""
        args = dict(args)
        gates = self._gate_names
        if not gates:
            return args
        h = self._num_hidden
        for group in ("i2h", "h2h"):
            weight = args.pop(f"{self._prefix}{group}_weight")
            bias = args.pop(f"{self._prefix}{group}_bias")
            for j, gate in enumerate(gates):
                args[f"{self._prefix}{group}{gate}_weight"] = weight[j * h:(j + 1) * h].copy()
                args[f"{self._prefix}{group}{gate}_bias"] = bias[j * h:(j + 1) * h].copy()
        return args

    def pack_weights(self, args: Dict[str, Any]) -> Dict[str, Any]:
        """The inverse of `unpack_weights`: per-gate arrays concatenated into i2h/h2h arrays."""
        from .. import ndarray
        args = dict(args)
        gates = self._gate_names
        if not gates:
            return args
        for group in ("i2h", "h2h"):
            weights = [args.pop(f"{self._prefix}{group}{gate}_weight") for gate in gates]
            biases = [args.pop(f"{self._prefix}{group}{gate}_bias") for gate in gates]
            args[f"{self._prefix}{group}_weight"] = ndarray.concatenate(weights)
            args[f"{self._prefix}{group}_bias"] = ndarray.concatenate(biases)
        return args

    def unroll(self, length: int, inputs, begin_state: Optional[List[Symbol]] = None,
               layout: str = "NTC", merge_outputs: Optional[bool] = None) -> Tuple[SymbolOrList, List[Symbol]]:
        """Apply the cell `length` times.

        inputs: one symbol (N, T, ...) for 'NTC' or (T, N, ...) for 'TNC', or a list of per-step
        (N, ...) symbols.  merge_outputs: True gives one symbol in `layout`, False a list of
        per-step symbols, None whichever is natural.  Returns (outputs, final states).
        """
        self.reset()
        inputs, _ = normalize_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for t in range(length):
            out, states = self(inputs[t], states)
            outputs.append(out)
        outputs, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, inputs: Symbol, activation, **kwargs) -> Symbol:
        """`activation` as an Activation op when it is a name, else called as a function."""
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)
