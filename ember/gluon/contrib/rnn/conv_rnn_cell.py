"""Convolutional recurrent cells (Shi et al. 2015), MXNet 1.9.1's `gluon.contrib.rnn` Conv{1,2,3}D{RNN,LSTM,GRU}Cell.

The i2h and h2h transforms are Convolutions instead of FullyConnected layers.  The h2h
convolution keeps the spatial size (odd kernel, 'same' padding: dilate * (kernel - 1) / 2), so a
state has the shape of the i2h output, which `input_shape` (one step of one sample, in
`conv_layout` without N) determines.  Gates are split along the channel axis.
"""
from __future__ import annotations

from numbers import Number
from typing import List, Sequence, Tuple, Union

from ...rnn.rnn_cell import HybridRecurrentCell

__all__ = ["Conv1DRNNCell", "Conv2DRNNCell", "Conv3DRNNCell", "Conv1DLSTMCell", "Conv2DLSTMCell",
           "Conv3DLSTMCell", "Conv1DGRUCell", "Conv2DGRUCell", "Conv3DGRUCell"]

IntOrTuple = Union[int, Sequence[int]]


def _conv_out_size(dims, kernels, pads, dilates) -> Tuple[int, ...]:
    """Spatial output size of a stride-1 convolution (0 stays unknown)."""
    return tuple(x + 2 * p - d * (k - 1) if x else 0 for x, k, p, d in zip(dims, kernels, pads, dilates))


class _BaseConvRNNCell(HybridRecurrentCell):
    """Weights, state shape and the two convolutions every convolutional cell shares."""

    _gates = 1

    def __init__(self, input_shape, hidden_channels: int, i2h_kernel: IntOrTuple, h2h_kernel: IntOrTuple,
                 i2h_pad: IntOrTuple, i2h_dilate: IntOrTuple, h2h_dilate: IntOrTuple, i2h_weight_initializer,
                 h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer, dims: int, conv_layout: str,
                 activation, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        specs = (i2h_kernel, i2h_pad, i2h_dilate, h2h_kernel, h2h_dilate)
        if not all(isinstance(s, Number) or len(s) == dims for s in specs):
            raise AssertionError(f"For {dims}D convolution, the convolution settings can only be either int or "
                                 f"list/tuple of length {dims}")

        def full(v):
            return (v,) * dims if isinstance(v, Number) else tuple(v)

        self._hidden_channels = hidden_channels
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        self._i2h_kernel, self._i2h_pad, self._i2h_dilate = full(i2h_kernel), full(i2h_pad), full(i2h_dilate)
        self._h2h_kernel, self._h2h_dilate = full(h2h_kernel), full(h2h_dilate)
        self._stride = (1,) * dims
        if not all(k % 2 == 1 for k in self._h2h_kernel):
            raise AssertionError(f"Only support odd number, get h2h_kernel= {h2h_kernel}")
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate, self._h2h_kernel))
        self._channel_axis = conv_layout.find("C")
        channels_first = self._channel_axis == 1
        self._in_channels = self._input_shape[0] if channels_first else self._input_shape[-1]
        spatial = self._input_shape[1:] if channels_first else self._input_shape[:-1]
        out_size = _conv_out_size(spatial, self._i2h_kernel, self._i2h_pad, self._i2h_dilate)
        rows = hidden_channels * self._gates
        if channels_first:
            i2h_shape = (rows, self._in_channels) + self._i2h_kernel
            h2h_shape = (rows, hidden_channels) + self._h2h_kernel
            self._state_shape = (hidden_channels,) + out_size
        else:
            i2h_shape = (rows,) + self._i2h_kernel + (self._in_channels,)
            h2h_shape = (rows,) + self._h2h_kernel + (hidden_channels,)
            self._state_shape = out_size + (hidden_channels,)
        self.i2h_weight = self.params.get("i2h_weight", shape=i2h_shape, init=i2h_weight_initializer,
                                          allow_deferred_init=True)
        self.h2h_weight = self.params.get("h2h_weight", shape=h2h_shape, init=h2h_weight_initializer,
                                          allow_deferred_init=True)
        self.i2h_bias = self.params.get("i2h_bias", shape=(rows,), init=i2h_bias_initializer,
                                        allow_deferred_init=True)
        self.h2h_bias = self.params.get("h2h_bias", shape=(rows,), init=h2h_bias_initializer,
                                        allow_deferred_init=True)

    def __repr__(self) -> str:
        shape = self.i2h_weight.shape
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        return (f"{type(self).__name__}({in_channels if in_channels else None} -> {shape[0]}, {self._activation}, "
                f"{self._conv_layout})")

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return [{"shape": (batch_size,) + self._state_shape, "__layout__": self._conv_layout}]

    def _conv_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        """The step's name prefix and its i2h and h2h convolutions."""
        prefix = f"t{self._counter}_"
        filters = self._hidden_channels * self._gates
        i2h = F.Convolution(data=inputs, num_filter=filters, kernel=self._i2h_kernel, stride=self._stride,
                            pad=self._i2h_pad, dilate=self._i2h_dilate, weight=i2h_weight, bias=i2h_bias,
                            layout=self._conv_layout, name=prefix + "i2h")
        h2h = F.Convolution(data=states[0], num_filter=filters, kernel=self._h2h_kernel, dilate=self._h2h_dilate,
                            pad=self._h2h_pad, stride=self._stride, weight=h2h_weight, bias=h2h_bias,
                            layout=self._conv_layout, name=prefix + "h2h")
        return prefix, i2h, h2h


class _ConvRNNCell(_BaseConvRNNCell):
    """h' = activation(W_i * x + R_i * h + b)."""

    def _alias(self) -> str:
        return "conv_rnn"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        output = self._get_activation(F, i2h + h2h, self._activation, name=prefix + "out")
        return output, [output]


class _ConvLSTMCell(_BaseConvRNNCell):
    """Gates i, f, c (activation), o along the channel axis; states [h, c]."""

    _gates = 4

    def _alias(self) -> str:
        return "conv_lstm"

    def state_info(self, batch_size: int = 0) -> List[dict]:
        return super().state_info(batch_size) * 2

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        gates = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + "slice", axis=self._channel_axis)
        in_gate = F.Activation(gates[0], act_type="sigmoid", name=prefix + "i")
        forget_gate = F.Activation(gates[1], act_type="sigmoid", name=prefix + "f")
        candidate = self._get_activation(F, gates[2], self._activation, name=prefix + "c")
        out_gate = F.Activation(gates[3], act_type="sigmoid", name=prefix + "o")
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * candidate, name=prefix + "state")
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation), name=prefix + "out")
        return next_h, [next_h, next_c]


class _ConvGRUCell(_BaseConvRNNCell):
    """Gates r, z and the candidate along the channel axis (reset applied after the h2h convolution)."""

    _gates = 3

    def _alias(self) -> str:
        return "conv_gru"

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix, i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias)
        i2h_r, i2h_z, i2h_n = F.SliceChannel(i2h, num_outputs=3, name=prefix + "i2h_slice", axis=self._channel_axis)
        h2h_r, h2h_z, h2h_n = F.SliceChannel(h2h, num_outputs=3, name=prefix + "h2h_slice", axis=self._channel_axis)
        reset = F.Activation(i2h_r + h2h_r, act_type="sigmoid", name=prefix + "r_act")
        update = F.Activation(i2h_z + h2h_z, act_type="sigmoid", name=prefix + "z_act")
        candidate = self._get_activation(F, i2h_n + reset * h2h_n, self._activation, name=prefix + "h_act")
        next_h = F.elemwise_add((1. - update) * candidate, update * states[0], name=prefix + "out")
        return next_h, [next_h]


def _make(base, dims: int, layout: str, doc: str):
    """The public class for `dims` spatial dimensions: MXNet's signature and per-dimension defaults."""

    def __init__(self, input_shape, hidden_channels: int, i2h_kernel: IntOrTuple, h2h_kernel: IntOrTuple,
                 i2h_pad: IntOrTuple = (0,) * dims, i2h_dilate: IntOrTuple = (1,) * dims,
                 h2h_dilate: IntOrTuple = (1,) * dims, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer="zeros", h2h_bias_initializer="zeros", conv_layout: str = layout,
                 activation="tanh", prefix=None, params=None):
        base.__init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad, i2h_dilate, h2h_dilate,
                      i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer, h2h_bias_initializer,
                      dims, conv_layout, activation, prefix, params)

    name = f"Conv{dims}D{ {_ConvRNNCell: 'RNN', _ConvLSTMCell: 'LSTM', _ConvGRUCell: 'GRU'}[base] }Cell"
    return type(name, (base,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


_DOC = ("{dims}-D convolutional {kind} cell. input_shape: one step of one sample in conv_layout without N "
        "(default '{layout}': ({shape})); hidden_channels: output channels; h2h_kernel must be odd.")
_LAYOUTS = {1: ("NCW", "C, W"), 2: ("NCHW", "C, H, W"), 3: ("NCDHW", "C, D, H, W")}
Conv1DRNNCell, Conv2DRNNCell, Conv3DRNNCell, Conv1DLSTMCell, Conv2DLSTMCell, Conv3DLSTMCell, \
    Conv1DGRUCell, Conv2DGRUCell, Conv3DGRUCell = [
        _make(base, dims, _LAYOUTS[dims][0], _DOC.format(dims=dims, kind=kind, layout=_LAYOUTS[dims][0],
                                                          shape=_LAYOUTS[dims][1]))
        for base, kind in ((_ConvRNNCell, "RNN"), (_ConvLSTMCell, "LSTM"), (_ConvGRUCell, "GRU"))
        for dims in (1, 2, 3)]
