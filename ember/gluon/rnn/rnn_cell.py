"""Gluon's recurrent cells (MXNet 1.9.1's `gluon.rnn` cells): one time step per call, `unroll` over a sequence.

A cell is a Block whose `forward(inputs, states)` returns `(output, next_states)`.  The step
cells (RNNCell, LSTMCell, GRUCell) are HybridBlocks: `F` is mx.nd or mx.sym, so the same code
runs imperatively, hybridized (each step one cached graph) or inside a traced block.  `unroll`
works on NDArrays and Symbols alike; `valid_length` masks padded steps with SequenceMask and
takes each sequence's last valid state with SequenceLast, as MXNet does.  Parameter names
('<prefix>i2h_weight', ...) and shapes are MXNet's, so fused layers unfuse onto these cells.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from ... import ndarray, symbol
from ...base import _as_list, numeric_types, string_types
from ..block import Block, HybridBlock
from ..nn import LeakyReLU
from ..parameter import tensor_types
from ..utils import _indent

__all__ = ["RecurrentCell", "HybridRecurrentCell", "RNNCell", "LSTMCell", "GRUCell", "SequentialRNNCell",
           "HybridSequentialRNNCell", "DropoutCell", "ModifierCell", "ZoneoutCell", "ResidualCell",
           "BidirectionalCell"]


# -- sequences ------------------------------------------------------------------------------
def _get_begin_state(cell, F, begin_state, inputs, batch_size: int):
    """`begin_state` as given, else the cell's zero states (on the inputs' context for NDArrays)."""
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        ctx = inputs.context if isinstance(inputs, tensor_types) else inputs[0].context
        with ctx:
            return cell.begin_state(func=F.zeros, batch_size=batch_size)
    return cell.begin_state(func=F.zeros, batch_size=batch_size)


def _format_sequence(length: Optional[int], inputs, layout: str, merge: Optional[bool],
                     in_layout: Optional[str] = None):
    """(inputs, time axis, F, batch size): a sequence as one array in `layout` (merge=True), a list of
    per-step (N, ...) arrays (merge=False) or as given (merge=None)."""
    if inputs is None:
        raise AssertionError("unroll(inputs=None) has been deprecated. Please create input variables outside "
                             "unroll.")
    if layout not in ("NTC", "TNC"):
        raise AssertionError(f"Invalid layout {layout}; must be one of ['TNC' or 'NTC']")
    axis, batch_axis = layout.find("T"), layout.find("N")
    in_axis = in_layout.find("T") if in_layout is not None else axis
    batch_size = 0
    if isinstance(inputs, symbol.Symbol):
        F = symbol
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise AssertionError("unroll doesn't allow grouped symbol as input. Please convert to list with "
                                     "list(inputs) first or let unroll handle splitting.")
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length, squeeze_axis=1))
    elif isinstance(inputs, ndarray.NDArray):
        F = ndarray
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            if length is not None and length != inputs.shape[in_axis]:
                raise AssertionError(f"unroll: length {length} but the inputs have {inputs.shape[in_axis]} steps "
                                     f"(shape {inputs.shape}, layout {layout})")
            inputs = _as_list(ndarray.split(inputs, axis=in_axis, num_outputs=inputs.shape[in_axis],
                                            squeeze_axis=1))
    else:
        inputs = list(inputs)
        if length is not None and len(inputs) != length:
            raise AssertionError(f"unroll: {len(inputs)} inputs for length {length}")
        if isinstance(inputs[0], symbol.Symbol):
            F = symbol
        else:
            F = ndarray
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, tensor_types) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _mask_sequence_variable_length(F, data, length: int, valid_length, time_axis: int, merge: bool):
    """Zero the steps past each sequence's valid length; a list comes back as a list when not merged."""
    if not isinstance(data, tensor_types):
        data = F.stack(*data, axis=time_axis)
    outputs = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True, axis=time_axis)
    if not merge:
        outputs = _as_list(F.split(outputs, num_outputs=length, axis=time_axis, squeeze_axis=True))
    return outputs


def _reverse_sequences(sequences: list, unroll_step: int, valid_length=None) -> list:
    """The steps in reverse order; with valid_length each sequence's valid part is reversed in place."""
    F = symbol if isinstance(sequences[0], symbol.Symbol) else ndarray
    if valid_length is None:
        return list(reversed(sequences))
    rev = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length, use_sequence_length=True)
    if unroll_step > 1 or F is symbol:
        return list(F.split(rev, axis=0, num_outputs=unroll_step, squeeze_axis=True))
    return [rev[0]]


# -- base classes -----------------------------------------------------------------------------
class RecurrentCell(Block):
    """Abstract recurrent cell: subclasses define `state_info(batch_size)` and the step in `forward`.

    prefix: the cell's name prefix (also its weights' when `params` is None).
    params: a ParameterDict to share weights with another cell.
    """

    def __init__(self, prefix: Optional[str] = None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self) -> None:
        """Restart the step and begin-state counters (before reusing the cell on another sequence)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size: int = 0) -> List[dict]:
        """One dict per state: its 'shape' (batch_size first) and '__layout__'."""
        raise NotImplementedError(f"{type(self).__name__} must define state_info")

    def _check_unmodified(self) -> None:
        if self._modified:
            raise AssertionError("After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be called "
                                 "directly. Call the modifier cell instead.")

    def begin_state(self, batch_size: int = 0, func=ndarray.zeros, **kwargs) -> list:
        """The first step's states, each made by `func(name='<prefix>begin_state_<i>', shape=..., **kwargs)`
        (nd.zeros, nd.ones, sym.zeros, sym.var, ...)."""
        self._check_unmodified()
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info, **kwargs) if info is not None else dict(kwargs)
            states.append(func(name=f"{self._prefix}begin_state_{self._init_counter}", **info))
        return states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length=None) -> Tuple[Any, list]:
        """Apply the cell over `length` steps.

        inputs: one array/symbol in `layout` or a list of per-step (N, C) ones.  begin_state: the
        first states (zeros when None).  merge_outputs: True gives one array in `layout`, False a
        list, None whichever is at hand.  valid_length (N,): steps past it output zeros and the
        returned states are each sequence's last valid ones.  Returns (outputs, states).
        """
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*per_step, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True, axis=0)
                      for per_step in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        """`activation` applied: a name (tanh/relu/sigmoid/softsign or an Activation act_type), a
        LeakyReLU block, or any callable of (inputs, **kwargs)."""
        func = {"tanh": F.tanh, "relu": F.relu, "sigmoid": F.sigmoid, "softsign": F.softsign}.get(activation) \
            if isinstance(activation, string_types) else None
        if func is not None:
            return func(inputs, **kwargs)
        if isinstance(activation, string_types):
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type="leaky", slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One time step: (output, next states)."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell written as `hybrid_forward(F, inputs, states, **params)`: hybridizable."""

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward")


# -- step cells -------------------------------------------------------------------------------
class _GatedCell(HybridRecurrentCell):
    """The i2h/h2h weights and biases every step cell has: (gates * hidden, input) and (gates * hidden, hidden)."""

    _num_gates = 1

    def __init__(self, hidden_size: int, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size: int = 0,
                 prefix: Optional[str] = None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._num_gates * hidden_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(rows, input_size), init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(rows, hidden_size), init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        extra = f", {self._activation}" if hasattr(self, "_activation") and type(self) is RNNCell else ""
        return f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]}{extra})"

    def _projections(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        rows = self._num_gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows, name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias, num_hidden=rows,
                               name=prefix + "h2h")
        return prefix, i2h, h2h


class RNNCell(_GatedCell):
    """Elman RNN step: h' = activation(W_i2h x + b_i2h + W_h2h h + b_h2h); states [h].

    activation: 'tanh' (default), 'relu', 'sigmoid', 'softsign', another Activation act_type, a
    LeakyReLU block or a callable.
    """

    def __init__(self, hidden_size: int, activation="tanh", i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 input_size: int = 0, prefix: Optional[str] = None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def _alias(self) -> str:
        return "rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        output = self._get_activation(F, F.elemwise_add(i2h, h2h, name=prefix + "plus0"), self._activation,
                                      name=prefix + "out")
        return output, [output]


class LSTMCell(_GatedCell):
    """LSTM step, gates in MXNet's order i, f, c (candidate), o; states [h, c].

    activation: for the candidate and the cell output ('tanh'); recurrent_activation: for the
    gates ('sigmoid').
    """

    _num_gates = 4

    def __init__(self, hidden_size: int, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", input_size: int = 0,
                 prefix: Optional[str] = None, params=None, activation="tanh", recurrent_activation="sigmoid"):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def _alias(self) -> str:
        return "lstm"

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return [{"shape": (batch_size, self._hidden_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        gates = F.SliceChannel(F.elemwise_add(i2h, h2h, name=prefix + "plus0"), num_outputs=4,
                               name=prefix + "slice")
        act, rec = self._activation, self._recurrent_activation
        in_gate = self._get_activation(F, gates[0], rec, name=prefix + "i")
        forget_gate = self._get_activation(F, gates[1], rec, name=prefix + "f")
        candidate = self._get_activation(F, gates[2], act, name=prefix + "c")
        out_gate = self._get_activation(F, gates[3], rec, name=prefix + "o")
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + "mul0"),
                                F.elemwise_mul(in_gate, candidate, name=prefix + "mul1"), name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, F.Activation(next_c, act_type=act, name=prefix + "activation0"),
                                name=prefix + "out")
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """GRU step as cuDNN computes it (reset gate applied after the h2h product): gates r, z, then
    n = tanh(x_n + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h; states [h]."""

    _num_gates = 3

    def _alias(self) -> str:
        return "gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._projections(F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        i2h_r, i2h_z, i2h_n = F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice")
        h2h_r, h2h_z, h2h_n = F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice")
        reset = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + "plus0"), act_type="sigmoid",
                             name=prefix + "r_act")
        update = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + "plus1"), act_type="sigmoid",
                              name=prefix + "z_act")
        candidate = F.Activation(F.elemwise_add(i2h_n, F.elemwise_mul(reset, h2h_n, name=prefix + "mul0"),
                                                name=prefix + "plus2"), act_type="tanh", name=prefix + "h_act")
        ones = F.ones_like(update, name=prefix + "ones_like0")
        next_h = F.elemwise_add(F.elemwise_mul(F.elemwise_sub(ones, update, name=prefix + "minus0"), candidate,
                                               name=prefix + "mul1"),
                                F.elemwise_mul(update, states[0], name=prefix + "mul20"), name=prefix + "out")
        return next_h, [next_h]


# -- containers -------------------------------------------------------------------------------
class _CellsMixin:
    """The states of a cell made of child cells: theirs, in order."""

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return [info for c in self._children.values() for info in c.state_info(batch_size)]

    def begin_state(self, **kwargs) -> list:
        self._check_unmodified()
        return [s for c in self._children.values() for s in c.begin_state(**kwargs)]


class _StackMixin(_CellsMixin):
    """What SequentialRNNCell and HybridSequentialRNNCell share: cells applied one after another,
    each taking its slice of the states."""

    def __repr__(self) -> str:
        mods = "\n".join(f"({i}): {_indent(repr(m), 2)}" for i, m in self._children.items())
        return f"{type(self).__name__}(\n{mods}\n)"

    def add(self, cell: RecurrentCell) -> None:
        """Append `cell` to the stack."""
        self.register_child(cell)

    def __call__(self, inputs, states):
        self._counter += 1
        if any(isinstance(c, BidirectionalCell) for c in self._children.values()):
            raise AssertionError("a stack holding a BidirectionalCell cannot be stepped; use unroll")
        next_states, p = [], 0
        for cell in self._children.values():
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length=None):
        """Unroll each cell over the whole sequence in turn (so bidirectional cells may be stacked)."""
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        cells = list(self._children.values())
        p, next_states = 0, []
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            inputs, cell_states = cell.unroll(length, inputs=inputs, begin_state=states[p:p + n], layout=layout,
                                              merge_outputs=None if i < len(cells) - 1 else merge_outputs,
                                              valid_length=valid_length)
            p += n
            next_states.extend(cell_states)
        return inputs, next_states

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self) -> int:
        return len(self._children)


class SequentialRNNCell(_StackMixin, RecurrentCell):
    """Cells stacked one on another (any RecurrentCell; not hybridizable as a whole)."""

    def hybrid_forward(self, *args, **kwargs):
        raise NotImplementedError("SequentialRNNCell is not hybridizable; use HybridSequentialRNNCell")


class HybridSequentialRNNCell(_StackMixin, HybridRecurrentCell):
    """Hybridizable cells stacked one on another."""

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


class DropoutCell(HybridRecurrentCell):
    """Dropout on the inputs (rate: the fraction dropped; axes: axes sharing one mask); no states."""

    def __init__(self, rate: float, axes: Sequence[int] = (), prefix: Optional[str] = None, params=None):
        super().__init__(prefix, params)
        if not isinstance(rate, numeric_types) or isinstance(rate, bool):
            raise AssertionError("rate must be a number")
        self._rate = rate
        self._axes = axes

    def __repr__(self) -> str:
        return f"{type(self).__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return []

    def _alias(self) -> str:
        return "dropout"

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes, name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length=None):
        """A merged sequence gets one Dropout over all steps; a list, one per step."""
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, tensor_types):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """Base of cells that change `base_cell` (which must afterwards be used only through the modifier)."""

    def __init__(self, base_cell: RecurrentCell):
        if base_cell._modified:
            raise AssertionError(f"Cell {base_cell.name} is already modified. One cell cannot be modified twice")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=symbol.zeros, **kwargs) -> list:
        self._check_unmodified()
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError(f"{type(self).__name__} must define hybrid_forward")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_cell!r})"


class ZoneoutCell(ModifierCell):
    """Zoneout (Krueger et al. 2016): while training, each output (state) unit keeps its previous
    value with probability zoneout_outputs (zoneout_states)."""

    def __init__(self, base_cell: RecurrentCell, zoneout_outputs: float = 0., zoneout_states: float = 0.):
        if isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support zoneout since it doesn't support step. Please "
                                 "add ZoneoutCell to the cells underneath instead.")
        if isinstance(base_cell, SequentialRNNCell) and getattr(base_cell, "_bidirectional", False):
            raise AssertionError("Bidirectional SequentialRNNCell doesn't support zoneout. Please add ZoneoutCell "
                                 "to the cells underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states  # _prev_output is set by reset(), which the constructor calls

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(p_out={self.zoneout_outputs}, p_state={self.zoneout_states}, "
                f"{self.base_cell!r})")

    def _alias(self) -> str:
        return "zoneout"

    def reset(self) -> None:
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):  # 1 where the new value is taken: Dropout of ones is 0 with probability p
            return F.Dropout(F.ones_like(like), p=p)

        prev = self._prev_output if self._prev_output is not None else F.zeros_like(next_output)
        p_out, p_states = self.zoneout_outputs, self.zoneout_states
        output = F.where(keep_new(p_out, next_output), next_output, prev) if p_out != 0. else next_output
        if p_states != 0.:
            next_states = [F.where(keep_new(p_states, new), new, old) for new, old in zip(next_states, states)]
        self._prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """The base cell's output plus its input (Wu et al. 2016)."""

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        return F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd"), states

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs, begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs, valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, tensor_types)
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:  # padded inputs must not leak into the zeroed outputs
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis, merge_outputs)
        if merge_outputs:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, x) for o, x in zip(outputs, inputs)], states


class BidirectionalCell(_CellsMixin, HybridRecurrentCell):
    """Runs l_cell forward and r_cell backward in time and concatenates their outputs (unroll only)."""

    def __init__(self, l_cell: RecurrentCell, r_cell: RecurrentCell, output_prefix: str = "bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(forward={self._children['l_cell']!r}, "
                f"backward={self._children['r_cell']!r})")

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length=None):
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = _reverse_sequences(inputs, length, valid_length)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        l_cell, r_cell = self._children.values()
        n_l = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_l], layout=layout,
                                            merge_outputs=merge_outputs, valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs, begin_state=states[n_l:],
                                            layout=layout, merge_outputs=False, valid_length=valid_length)
        reversed_r_outputs = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, tensor_types)
            l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, merge_outputs)
            reversed_r_outputs, _, _, _ = _format_sequence(None, reversed_r_outputs, layout, merge_outputs)
        if merge_outputs:
            if not isinstance(reversed_r_outputs, tensor_types):
                # (already merged above when merge_outputs was None: MXNet 1.9.1 stacks it a second
                # time there and fails on a valid_length unroll inside a stack)
                reversed_r_outputs = F.stack(*reversed_r_outputs, axis=axis)
            outputs = F.concat(l_outputs, reversed_r_outputs, dim=2, name=f"{self._output_prefix}out")
        else:
            outputs = [F.concat(l_o, r_o, dim=1, name=f"{self._output_prefix}t{i}")
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed_r_outputs))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, l_states + r_states
