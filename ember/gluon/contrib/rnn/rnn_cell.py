"""Contrib recurrent cells: VariationalDropoutCell (one dropout mask for every step), LSTMPCell, and
`dynamic_unroll` (a cell run over time by one `contrib.foreach` loop)."""
from __future__ import annotations

from typing import List, Optional

from ....base import _as_list
from ...parameter import tensor_types
from ...rnn.rnn_cell import (BidirectionalCell, HybridRecurrentCell, ModifierCell, RecurrentCell,
                             SequentialRNNCell, _format_sequence, _get_begin_state,
                             _mask_sequence_variable_length)

__all__ = ["VariationalDropoutCell", "LSTMPCell", "dynamic_unroll"]


class VariationalDropoutCell(ModifierCell):
    """Variational dropout (Gal & Ghahramani 2016) around `base_cell`: the inputs, the first state (h)
    and the outputs each get one dropout mask, drawn at the first step and reused until `reset()`.

    drop_inputs / drop_states / drop_outputs: the rates (0 = none).
    """

    def __init__(self, base_cell: RecurrentCell, drop_inputs: float = 0., drop_states: float = 0.,
                 drop_outputs: float = 0.):
        if drop_states and isinstance(base_cell, BidirectionalCell):
            raise AssertionError("BidirectionalCell doesn't support variational state dropout. Please add "
                                 "VariationalDropoutCell to the cells underneath instead.")
        if drop_states and isinstance(base_cell, SequentialRNNCell) and getattr(base_cell, "_bidirectional", False):
            raise AssertionError("Bidirectional SequentialRNNCell doesn't support variational state dropout. "
                                 "Please add VariationalDropoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs  # the masks are set by reset(), which the constructor calls

    def _alias(self) -> str:
        return "vardrop"

    def reset(self) -> None:
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)
        if self.drop_states:  # only h, always the first state
            states = list(states)
            states[0] = states[0] * self.drop_states_mask
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        next_output, next_states = self.base_cell(inputs, states)
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = F.Dropout(F.ones_like(next_output), p=self.drop_outputs)
        if self.drop_outputs:
            next_output = next_output * self.drop_outputs_mask
        return next_output, next_states

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p_out = {self.drop_outputs}, p_state = {self.drop_states})"

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None, valid_length=None):
        """Without state dropout the whole sequence is dropped at once (a mask shared along time:
        Dropout with axes=(time axis,)) around the base cell's own unroll."""
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs, valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self.base_cell.unroll(length, inputs, states, layout, merge_outputs=True,
                                                valid_length=valid_length)
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, tensor_types)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    """LSTM step with a projected recurrent state (Sak et al. 2014): the gates read r (projection_size),
    h = o * tanh(c), r' = W_h2r h; states [r, c]; the output is r'."""

    def __init__(self, hidden_size: int, projection_size: int, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None, i2h_bias_initializer="zeros",
                 h2h_bias_initializer="zeros", input_size: int = 0, prefix: Optional[str] = None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        self.i2h_weight = self.params.get("i2h_weight", shape=(4 * hidden_size, input_size),
                                          init=i2h_weight_initializer, allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=(4 * hidden_size, projection_size),
                                          init=h2h_weight_initializer, allow_deferred_init=True)
        self.h2r_weight = self.params.get("h2r_weight", shape=(projection_size, hidden_size),
                                          init=h2r_weight_initializer, allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(4 * hidden_size,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(4 * hidden_size,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return [{"shape": (batch_size, self._projection_size), "__layout__": "NC"},
                {"shape": (batch_size, self._hidden_size), "__layout__": "NC"}]

    def _alias(self) -> str:
        return "lstmp"

    def __repr__(self) -> str:
        shape, proj = self.i2h_weight.shape, self.h2r_weight.shape
        return f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]} -> {proj[0]})"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias, h2h_bias):
        prefix = f"t{self._counter}_"
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=self._hidden_size * 4,
                               name=prefix + "i2h")
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=self._hidden_size * 4, name=prefix + "h2h")
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + "slice")
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=prefix + "f")
        candidate = F.Activation(gates[2], act_type="tanh", name=prefix + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * candidate, name=prefix + "state")
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type="tanh"), name=prefix + "hidden")
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size, weight=h2r_weight, no_bias=True,
                                  name=prefix + "out")
        return next_r, [next_r, next_c]


def dynamic_unroll(cell, inputs, begin_state, drop_inputs: float = 0, drop_outputs: float = 0,
                   layout: str = "TNC", valid_length=None):
    """Run `cell` over the time axis of `inputs` with `F.contrib.foreach` (MXNet's `dynamic_unroll`):
    one loop in the graph, whatever the sequence length, instead of one copy of the cell per step.

    Returns (outputs in `layout`, final states).  `valid_length` (N,) stops each sequence's states at
    its length and zeroes its outputs past it; `drop_inputs` / `drop_outputs` apply one dropout mask
    over time to the inputs / outputs.
    """
    inputs, axis, F, _ = _format_sequence(0, inputs, layout, True)
    axes = None
    if axis != 0:  # foreach loops over axis 0
        axes = list(range(len(layout)))
        axes[0], axes[axis] = axes[axis], axes[0]
        inputs = F.transpose(inputs, axes=axes)
    states = begin_state
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(axis,))
    if valid_length is None:
        def loop_body(step_input, step_states):
            return cell(step_input, step_states)
    else:
        states = list(_as_list(states)) + [F.zeros((1,))]  # the step counter rides along as a last state

        def loop_body(step_input, step_states):
            cell_states, step = step_states[:-1], step_states[-1]
            out, new_states = cell(step_input, cell_states)
            running = F.broadcast_greater(valid_length, step)  # sequences still inside their length
            new_states = [F.where(running, new, old) for new, old in zip(new_states, cell_states)]
            return out, new_states + [step + 1]
    outputs, states = F.contrib.foreach(loop_body, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(axis,))
    if valid_length is not None:
        outputs = F.SequenceMask(outputs, sequence_length=valid_length, use_sequence_length=True, axis=0)
        states = states[:-1]
    if axes is not None:
        outputs = F.transpose(outputs, axes=axes)
    return outputs, states
