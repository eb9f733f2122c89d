"""FusedRNNCell: a whole (multi-layer, optionally bidirectional) RNN as one `RNN` operator.

Its weights are one packed vector in the RNN op's layout (docs/nn_ops.md): for each layer and
direction the i2h then h2h weight of every gate, then the biases in the same order.
`unpack_weights` names the pieces as the equivalent unfused cells do
('<prefix><l|r><layer>_<i2h|h2h><gate>_<weight|bias>'), and `unfuse()` builds those cells.
"""
from __future__ import annotations

import warnings
from typing import Dict, Optional

from .. import ndarray, symbol
from .base import BaseRNNCell, RNNParams, normalize_sequence
from .initializers import FusedRNN

_GATES = {"rnn_relu": [""], "rnn_tanh": [""], "lstm": ["_i", "_f", "_c", "_o"], "gru": ["_r", "_z", "_o"]}


class FusedRNNCell(BaseRNNCell):
    """`num_layers` layers of `mode` ('rnn_relu', 'rnn_tanh', 'lstm', 'gru') unrolled by the fused
    RNN operator.  dropout: between layers, while training.  get_next_state: also return the
    final states.  prefix defaults to '<mode>_'."""

    def __init__(self, num_hidden: int, num_layers: int = 1, mode: str = "lstm", bidirectional: bool = False,
                 dropout: float = 0.0, get_next_state: bool = False, forget_bias: float = 1.0,
                 prefix: Optional[str] = None, params: Optional[RNNParams] = None):
        if mode not in _GATES:
            raise ValueError(f"FusedRNNCell: mode must be one of {sorted(_GATES)}, got {mode!r}")
        if prefix is None:
            prefix = f"{mode}_"
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ["l", "r"] if bidirectional else ["l"]
        init = FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self.params.get("parameters", init=init)

    @property
    def state_info(self):
        b = 2 if self._bidirectional else 1
        n = 2 if self._mode == "lstm" else 1
        return [{"shape": (b * self._num_layers, 0, self._num_hidden), "__layout__": "LNC"} for _ in range(n)]

    @property
    def _gate_names(self):
        return _GATES[self._mode]

    @property
    def _num_gates(self) -> int:
        return len(self._gate_names)

    def _slice_weights(self, arr, num_input: int, h: int) -> Dict[str, object]:
        """Views of `arr` (the packed vector) named per layer, direction, group and gate."""
        out: Dict[str, object] = {}
        b = len(self._directions)
        p = 0

        def take(name, size, shape=None):
            nonlocal p
            piece = arr[p:p + size]
            out[name] = piece.reshape(shape) if shape is not None else piece
            p += size

        for layer in range(self._num_layers):
            width = num_input if layer == 0 else b * h
            for d in self._directions:
                for gate in self._gate_names:
                    take(f"{self._prefix}{d}{layer}_i2h{gate}_weight", h * width, (h, width))
                for gate in self._gate_names:
                    take(f"{self._prefix}{d}{layer}_h2h{gate}_weight", h * h, (h, h))
        for layer in range(self._num_layers):
            for d in self._directions:
                for group in ("i2h", "h2h"):
                    for gate in self._gate_names:
                        take(f"{self._prefix}{d}{layer}_{group}{gate}_bias", h)
        if p != arr.size:
            raise ValueError(f"FusedRNNCell: parameter vector of size {arr.size} does not fit {self._num_layers} "
                             f"layer(s) of {self._mode} with {h} hidden units and input size {num_input} "
                             f"(needs {p})")
        return out

    def _packed_size(self, num_input: int) -> int:
        b, m, h = len(self._directions), self._num_gates, self._num_hidden
        return (num_input + h + 2) * h * m * b + (self._num_layers - 1) * m * h * (h + b * h + 2) * b

    def _input_size(self, total: int) -> int:
        """The input size a packed vector of `total` elements implies (ValueError if none fits)."""
        b, m, h = len(self._directions), self._num_gates, self._num_hidden
        num_input = total // (b * h * m) - (self._num_layers - 1) * (h + b * h + 2) - h - 2
        if num_input <= 0 or self._packed_size(num_input) != total:
            raise ValueError(f"FusedRNNCell: a parameter vector of size {total} does not fit {self._num_layers} "
                             f"layer(s) of {self._mode} with {h} hidden units"
                             + (" in both directions" if b == 2 else "") + " for any input size")
        return num_input

    def unpack_weights(self, args):
        args = dict(args)
        arr = args.pop(self._parameter.name)
        pieces = self._slice_weights(arr, self._input_size(arr.size), self._num_hidden)
        args.update({name: piece.copy() for name, piece in pieces.items()})
        return args

    def pack_weights(self, args):
        args = dict(args)
        h = self._num_hidden
        first = args[f"{self._prefix}l0_i2h{self._gate_names[0]}_weight"]
        num_input = first.shape[1]
        total = self._packed_size(num_input)
        arr = ndarray.zeros((total,), ctx=first.context, dtype=first.dtype)
        for name, piece in self._slice_weights(arr, num_input, h).items():
            piece[:] = args.pop(name)
        args[self._parameter.name] = arr
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError("FusedRNNCell cannot be stepped. Please use unroll")

    def unroll(self, length: int, inputs, begin_state=None, layout: str = "NTC",
               merge_outputs: Optional[bool] = None):
        """One RNN operator over the sequence (given TNC; NTC inputs are swapped to TNC and back)."""
        self.reset()
        inputs, axis = normalize_sequence(length, inputs, layout, True)
        if axis == 1:
            warnings.warn("NTC layout detected. Consider using TNC for FusedRNNCell for faster speed")
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        if begin_state is None:
            begin_state = self.begin_state()
        states = {"state": begin_state[0]}
        if self._mode == "lstm":
            states["state_cell"] = begin_state[1]
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional, p=self._dropout,
                         state_outputs=self._get_next_state, mode=self._mode, name=f"{self._prefix}rnn",
                         **states)
        if not self._get_next_state:
            outputs, states_out = rnn, []
        else:
            n = 3 if self._mode == "lstm" else 2
            for i in range(1, n):
                rnn[i]._set_attr(__layout__="LNC")
            outputs, states_out = rnn[0], [rnn[i] for i in range(1, n)]
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = normalize_sequence(length, outputs, layout, merge_outputs)
        return outputs, states_out

    def unfuse(self):
        """The same network as a SequentialRNNCell of step cells, with the names `unpack_weights`
        gives, so `unpack_weights` output binds to the unfused graph unchanged."""
        from .cells import GRUCell, LSTMCell, RNNCell
        from .modifiers import DropoutCell
        from .stacks import BidirectionalCell, SequentialRNNCell
        makers = {
            "rnn_relu": lambda p: RNNCell(self._num_hidden, activation="relu", prefix=p),
            "rnn_tanh": lambda p: RNNCell(self._num_hidden, activation="tanh", prefix=p),
            "lstm": lambda p: LSTMCell(self._num_hidden, prefix=p),
            "gru": lambda p: GRUCell(self._num_hidden, prefix=p),
        }
        make = makers[self._mode]
        stack = SequentialRNNCell()
        for i in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(make(f"{self._prefix}l{i}_"), make(f"{self._prefix}r{i}_"),
                                            output_prefix=f"{self._prefix}bi_l{i}_"))
            else:
                stack.add(make(f"{self._prefix}l{i}_"))
            if self._dropout > 0 and i != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout, prefix=f"{self._prefix}_dropout{i}_"))
        return stack
