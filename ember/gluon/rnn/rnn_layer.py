"""Gluon's fused recurrent layers RNN, LSTM, GRU (MXNet 1.9.1's `gluon.rnn` layers) on the RNN operator.

Each layer and direction has its own parameters, named as MXNet names them: `l0_i2h_weight`
(gates * hidden, input), `l0_h2h_weight` (gates * hidden, R), `l0_i2h_bias`, `l0_h2h_bias`, and
for a projected LSTM `l0_h2r_weight` (P, hidden); `r0_...` for the reverse direction.  A traced call
flattens them into the operator's parameter vector with `_rnn_param_concat`, in the order the
operator unpacks them (`ember/ops/nn_rnn.py`), so MXNet-saved weights give MXNet's numbers and
exported graphs are MXNet's; an imperative call hands them to `_RNN_apart` as they are.
`save_parameters` writes MXNet's file keys ('_unfused.0.l_cell.i2h_weight', ...), which
MXNet 1.9.1 keeps from its old unfused layers.
"""
from __future__ import annotations

import re
from typing import List, Optional

from ... import ndarray, symbol
from ..block import HybridBlock
from ..parameter import tensor_types
from . import rnn_cell

__all__ = ["RNN", "LSTM", "GRU"]

_GATES = {"rnn_relu": 1, "rnn_tanh": 1, "lstm": 4, "gru": 3}
_PARAM_KEY = re.compile(r"(l|r)(\d)_(i2h|h2h|h2r)_(weight|bias)\Z")


class _RNNLayer(HybridBlock):
    """What RNN, LSTM and GRU share: parameters, states, the fused call and `_unfuse`."""

    def __init__(self, hidden_size: int, num_layers: int, layout: str, dropout: float, bidirectional: bool,
                 input_size: int, i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode: str, projection_size: Optional[int], h2r_weight_initializer,
                 lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length: bool = False, **kwargs):
        super().__init__(**kwargs)
        if layout not in ("TNC", "NTC"):
            raise AssertionError(f"Invalid layout {layout}; must be one of ['TNC' or 'NTC']")
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self.skip_states = None
        self._gates = _GATES[mode]

        ng, nh, ni = self._gates, hidden_size, input_size
        nr = self._projection_size or nh   # the recurrent state's (and each direction's output's) size
        for i in range(num_layers):
            for j in ("l", "r")[:self._dir]:
                self._register_param(f"{j}{i}_i2h_weight", (ng * nh, ni), i2h_weight_initializer, dtype)
                self._register_param(f"{j}{i}_h2h_weight", (ng * nh, nr), h2h_weight_initializer, dtype)
                self._register_param(f"{j}{i}_i2h_bias", (ng * nh,), i2h_bias_initializer, dtype)
                self._register_param(f"{j}{i}_h2h_bias", (ng * nh,), h2h_bias_initializer, dtype)
                if self._projection_size:
                    self._register_param(f"{j}{i}_h2r_weight", (nr, nh), h2r_weight_initializer, dtype)
            ni = nr * self._dir

    def _register_param(self, name: str, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True, dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self) -> str:
        shape = self.l0_i2h_weight.shape
        s = f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0] // self._gates}, {self._layout}"
        if self._num_layers != 1:
            s += f", num_layers={self._num_layers}"
        if self._dropout != 0:
            s += f", dropout={self._dropout}"
        if self._dir == 2:
            s += ", bidirectional"
        return s + ")"

    def _collect_params_with_prefix(self, prefix: str = ""):
        """MXNet's file keys: '_unfused.<layer>.<l|r>_cell.<i2h|h2h>_<weight|bias>' (bidirectional) or
        '_unfused.<layer>.<i2h|h2h>_<weight|bias>', kept from its unfused layers for old files."""
        if prefix:
            prefix += "."
        bidirectional = any(_PARAM_KEY.match(k).group(1) == "r" for k in self._reg_params)

        def convert(key):
            d, layer, group, kind = _PARAM_KEY.match(key).groups()
            if bidirectional:
                return f"_unfused.{layer}.{d}_cell.{group}_{kind}"
            return f"_unfused.{layer}.{group}_{kind}"

        ret = {prefix + convert(k): v for k, v in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size: int = 0) -> List[dict]:
        raise NotImplementedError(f"{type(self).__name__} must define state_info")

    def _unfuse(self) -> "rnn_cell.HybridSequentialRNNCell":
        """The same network as a stack of step cells sharing this layer's parameters."""
        if self._projection_size:
            raise AssertionError("_unfuse does not support projection layer yet!")
        if self._lstm_state_clip_min or self._lstm_state_clip_max:
            raise AssertionError("_unfuse does not support state clipping yet!")
        make = {"rnn_relu": lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation="relu", **kw),
                "rnn_tanh": lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation="tanh", **kw),
                "lstm": lambda **kw: rnn_cell.LSTMCell(self._hidden_size, **kw),
                "gru": lambda **kw: rnn_cell.GRUCell(self._hidden_size, **kw)}[self._mode]
        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            ni = self._input_size
            for i in range(self._num_layers):
                kwargs = {"input_size": ni, "i2h_weight_initializer": self._i2h_weight_initializer,
                          "h2h_weight_initializer": self._h2h_weight_initializer,
                          "i2h_bias_initializer": self._i2h_bias_initializer,
                          "h2h_bias_initializer": self._h2h_bias_initializer}
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(make(prefix=f"l{i}_", **kwargs),
                                                         make(prefix=f"r{i}_", **kwargs)))
                else:
                    stack.add(make(prefix=f"l{i}_", **kwargs))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                ni = self._hidden_size * self._dir
        return stack

    def cast(self, dtype) -> None:
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size: int = 0, func=ndarray.zeros, **kwargs) -> list:
        """The initial states, each `func(name='<prefix>h0_<i>', shape=..., dtype=..., **kwargs)`."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info = dict(info, **kwargs) if info is not None else dict(kwargs)
            states.append(func(name=f"{self.prefix}h0_{i}", **info))
        return states

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        """out = layer(x), or (out, new_states) = layer(x, states); with use_sequence_length,
        layer(x, states, sequence_length)."""
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, ndarray.NDArray):
                batch_size = inputs.shape[self._layout.find("N")]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=symbol.zeros)
        if isinstance(states, tensor_types):
            states = [states]
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        if F is ndarray:
            batch_size = inputs.shape[self._layout.find("N")]
            for state, info in zip(states, self.state_info(batch_size)):
                if state.shape != info["shape"]:
                    raise ValueError(f"Invalid recurrent state shape. Expecting {info['shape']}, got {state.shape}.")
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        return out[0] if self.skip_states else out

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        """One RNN op over the flattened parameters, in the operator's order: every weight (per layer,
        per direction: i2h, h2h[, h2r]), then every bias (i2h, h2h)."""
        if self._layout == "NTC":
            inputs = F.swapaxes(inputs, 0, 1)
        groups = ("i2h", "h2h", "h2r") if self._projection_size else ("i2h", "h2h")
        params = [kwargs[f"{d}{layer}_{g}_{t}"]
                  for t in ("weight", "bias")
                  for layer in range(self._num_layers)
                  for d in ("l", "r")[:self._dir]
                  for g in groups if not (g == "h2r" and t == "bias")]
        rnn_args = list(states) + ([sequence_length] if self._use_sequence_length else [])
        attrs = dict(use_sequence_length=self._use_sequence_length, state_size=self._hidden_size,
                     projection_size=self._projection_size, num_layers=self._num_layers,
                     bidirectional=self._dir == 2, p=self._dropout, state_outputs=True, mode=self._mode,
                     lstm_state_clip_min=self._lstm_state_clip_min, lstm_state_clip_max=self._lstm_state_clip_max,
                     lstm_state_clip_nan=self._lstm_state_clip_nan)
        if F is ndarray:
            # imperatively the op reads each parameter where it lies (what the rnn_params_apart pass
            # makes of the graph below): no copy into a vector and none of its gradient back out
            rnn = F._internal._RNN_apart(inputs, *params, *rnn_args, num_params=len(params), **attrs)
        else:  # MXNet's graph, which `export` writes
            flat = F._internal._rnn_param_concat(*[w.reshape(-1) for w in params], dim=0)
            rnn = F.RNN(inputs, flat, *rnn_args, **attrs)
        outputs, states = (rnn[0], [rnn[1], rnn[2]]) if self._mode == "lstm" else (rnn[0], [rnn[1]])
        if self._layout == "NTC":
            outputs = F.swapaxes(outputs, 0, 1)
        return outputs, states

    def _state(self, size: int, batch_size: int) -> dict:
        return {"shape": (self._num_layers * self._dir, batch_size, size), "__layout__": "LNC", "dtype": self._dtype}


class RNN(_RNNLayer):
    """Multi-layer Elman RNN, h' = activation(W_i2h x + b_i2h + W_h2h h + b_h2h), activation 'relu'
    (default) or 'tanh'.

    Input (T, N, C) for layout 'TNC' (or (N, T, C) for 'NTC'); states [(layers * dirs, N, hidden)].
    `layer(x)` returns the output; `layer(x, states)` returns (output, new states).
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, activation: str = "relu", layout: str = "TNC",
                 dropout: float = 0, bidirectional: bool = False, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 input_size: int = 0, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "rnn_" + activation, None, None, None, None, False, dtype, **kwargs)

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return [self._state(self._hidden_size, batch_size)]


class LSTM(_RNNLayer):
    """Multi-layer LSTM (gates i, f, c, o as LSTMCell); states [h, c], each (layers * dirs, N, hidden).

    projection_size: an LSTMP layer whose h (and output) is W_h2r (o * tanh(c)) of that size.
    state_clip_min/max: clip the cell state; use_sequence_length: a third call argument gives
    each sequence's length (steps past it output 0; final states are the last valid ones).
    """

    def __init__(self, hidden_size: int, num_layers: int = 1, layout: str = "TNC", dropout: float = 0,
                 bidirectional: bool = False, input_size: int = 0, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 projection_size: Optional[int] = None, h2r_weight_initializer=None, state_clip_min=None,
                 state_clip_max=None, state_clip_nan: bool = False, dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "lstm", projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return [self._state(self._projection_size or self._hidden_size, batch_size),
                self._state(self._hidden_size, batch_size)]


class GRU(_RNNLayer):
    """Multi-layer GRU as cuDNN computes it (see GRUCell); states [(layers * dirs, N, hidden)]."""

    def __init__(self, hidden_size: int, num_layers: int = 1, layout: str = "TNC", dropout: float = 0,
                 bidirectional: bool = False, input_size: int = 0, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer="zeros", h2h_bias_initializer="zeros",
                 dtype="float32", **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, "gru", None, None, None, None, False, dtype, **kwargs)

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return [self._state(self._hidden_size, batch_size)]
