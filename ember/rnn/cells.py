"""The step cells of the legacy `mx.rnn` API: RNNCell, LSTMCell, GRUCell.

Each step is two FullyConnected layers (input to hidden, hidden to hidden) whose outputs are
split into gates.  Layer and output names follow MXNet ('<prefix>t<step>_out', ...), so the
unrolled graphs have MXNet's argument and output names.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from .. import symbol
from ..symbolic.symbol import Symbol
from .base import BaseRNNCell, RNNParams
from .initializers import LSTMBias


def _step_params(cell) -> None:
    """The input-to-hidden and hidden-to-hidden weights and biases of a plain step cell."""
    cell._iW = cell.params.get("i2h_weight")
    cell._iB = cell.params.get("i2h_bias")
    cell._hW = cell.params.get("h2h_weight")
    cell._hB = cell.params.get("h2h_bias")


class RNNCell(BaseRNNCell):
    """Elman RNN step: out = activation(W_i x + b_i + W_h h + b_h).

    activation: 'tanh', 'relu', ... (an Activation act_type) or a function of (symbol, name=).
    """

    def __init__(self, num_hidden: int, activation="tanh", prefix: str = "rnn_",
                 params: Optional[RNNParams] = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._activation = activation
        _step_params(self)

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs: Symbol, states: List[Symbol]) -> Tuple[Symbol, List[Symbol]]:
        name = self._next_step()
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB,
                                    num_hidden=self._num_hidden, name=f"{name}i2h")
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB,
                                    num_hidden=self._num_hidden, name=f"{name}h2h")
        out = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return out, [out]


class LSTMCell(BaseRNNCell):
    """LSTM step with gates in MXNet's order i, f, c (candidate), o; states [h, c].

    forget_bias: initial value of the forget gate's i2h bias (through `LSTMBias`).
    """

    def __init__(self, num_hidden: int, prefix: str = "lstm_", params: Optional[RNNParams] = None,
                 forget_bias: float = 1.0):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._iW = self.params.get("i2h_weight")
        self._hW = self.params.get("h2h_weight")
        self._iB = self.params.get("i2h_bias", init=LSTMBias(forget_bias=forget_bias))
        self._hB = self.params.get("h2h_bias")

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"},
                {"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs: Symbol, states: List[Symbol]) -> Tuple[Symbol, List[Symbol]]:
        name = self._next_step()
        h4 = self._num_hidden * 4
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=h4,
                                    name=f"{name}i2h")
        h2h = symbol.FullyConnected(data=states[0], weight=self._hW, bias=self._hB, num_hidden=h4,
                                    name=f"{name}h2h")
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        candidate = symbol.Activation(gates[2], act_type="tanh", name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * candidate, name=f"{name}state")
        next_h = symbol._internal._mul(out_gate, symbol.Activation(next_c, act_type="tanh"),
                                       name=f"{name}out")
        return next_h, [next_h, next_c]


class GRUCell(BaseRNNCell):
    """GRU step as cuDNN computes it: gates r, z, then n = tanh(x_n + r * (W_hn h + b_hn)),
    h' = (1 - z) * n + z * h."""

    def __init__(self, num_hidden: int, prefix: str = "gru_", params: Optional[RNNParams] = None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        _step_params(self)

    @property
    def state_info(self):
        return [{"shape": (0, self._num_hidden), "__layout__": "NC"}]

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    def __call__(self, inputs: Symbol, states: List[Symbol]) -> Tuple[Symbol, List[Symbol]]:
        name = self._next_step()
        prev_h = states[0]
        h3 = self._num_hidden * 3
        i2h = symbol.FullyConnected(data=inputs, weight=self._iW, bias=self._iB, num_hidden=h3,
                                    name=f"{name}_i2h")
        h2h = symbol.FullyConnected(data=prev_h, weight=self._hW, bias=self._hB, num_hidden=h3,
                                    name=f"{name}_h2h")
        i_r, i_z, i_n = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h_r, h_z, h_n = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset = symbol.Activation(i_r + h_r, act_type="sigmoid", name=f"{name}_r_act")
        update = symbol.Activation(i_z + h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = symbol.Activation(i_n + reset * h_n, act_type="tanh", name=f"{name}_h_act")
        next_h = symbol._internal._plus((1.0 - update) * candidate, update * prev_h, name=f"{name}out")
        return next_h, [next_h]
