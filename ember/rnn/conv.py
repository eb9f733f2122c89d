"""Convolutional step cells: ConvRNNCell, ConvLSTMCell, ConvGRUCell (Shi et al. 2015).

The i2h and h2h transforms are convolutions; the h2h one keeps the spatial size (odd kernel,
'same' padding), so the state has the shape of the i2h output, inferred from `input_shape`.
"""
from __future__ import annotations

import functools
from typing import Optional, Tuple

from .. import symbol
from .base import BaseRNNCell, RNNParams


def _default_activation():
    return functools.partial(symbol.LeakyReLU, act_type="leaky", slope=0.2)


class BaseConvRNNCell(BaseRNNCell):
    """Shared set-up of the convolutional cells: kernels, padding, state shape and weights."""

    def __init__(self, input_shape, num_hidden: int, h2h_kernel, h2h_dilate, i2h_kernel, i2h_stride,
                 i2h_pad, i2h_dilate, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, activation, prefix: str = "",
                 params: Optional[RNNParams] = None, conv_layout: str = "NCHW"):
        super().__init__(prefix=prefix, params=params)
        if h2h_kernel[0] % 2 != 1 or h2h_kernel[1] % 2 != 1:
            raise AssertionError(f"Only support odd number, get h2h_kernel= {h2h_kernel}")
        self._h2h_kernel = h2h_kernel
        self._h2h_pad = (h2h_dilate[0] * (h2h_kernel[0] - 1) // 2, h2h_dilate[1] * (h2h_kernel[1] - 1) // 2)
        self._h2h_dilate = h2h_dilate
        self._i2h_kernel = i2h_kernel
        self._i2h_stride = i2h_stride
        self._i2h_pad = i2h_pad
        self._i2h_dilate = i2h_dilate
        self._num_hidden = num_hidden
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        probe = symbol.Convolution(data=symbol.Variable("data"), num_filter=num_hidden, kernel=i2h_kernel,
                                   stride=i2h_stride, pad=i2h_pad, dilate=i2h_dilate, layout=conv_layout)
        out_shape = probe.infer_shape(data=input_shape)[1][0]
        self._state_shape: Tuple[int, ...] = (0,) + tuple(out_shape[1:])
        self._iW = self.params.get("i2h_weight", init=i2h_weight_initializer)
        self._hW = self.params.get("h2h_weight", init=h2h_weight_initializer)
        self._iB = self.params.get("i2h_bias", init=i2h_bias_initializer)
        self._hB = self.params.get("h2h_bias", init=h2h_bias_initializer)

    @property
    def _num_gates(self) -> int:
        return len(self._gate_names)

    @property
    def state_info(self):
        return [{"shape": self._state_shape, "__layout__": self._conv_layout} for _ in range(self._num_states)]

    _num_states = 2

    def _conv_step(self, inputs, states):
        """Count a step: its name prefix and its i2h and h2h convolutions."""
        name = self._next_step()
        filters = self._num_hidden * self._num_gates
        i2h = symbol.Convolution(name=f"{name}i2h", data=inputs, num_filter=filters, kernel=self._i2h_kernel,
                                 stride=self._i2h_stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                                 weight=self._iW, bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name=f"{name}h2h", data=states[0], num_filter=filters, kernel=self._h2h_kernel,
                                 dilate=self._h2h_dilate, pad=self._h2h_pad, stride=(1, 1),
                                 weight=self._hW, bias=self._hB, layout=self._conv_layout)
        return name, i2h, h2h

    def __call__(self, inputs, states):
        raise NotImplementedError("BaseConvRNNCell is abstract class for convolutional RNN")


def _conv_kwargs(kwargs: dict) -> dict:
    defaults = dict(h2h_kernel=(3, 3), h2h_dilate=(1, 1), i2h_kernel=(3, 3), i2h_stride=(1, 1),
                    i2h_pad=(1, 1), i2h_dilate=(1, 1), i2h_weight_initializer=None,
                    h2h_weight_initializer=None, i2h_bias_initializer="zeros",
                    h2h_bias_initializer="zeros", activation=None, params=None, conv_layout="NCHW")
    unknown = set(kwargs) - set(defaults)
    if unknown:
        raise TypeError(f"unexpected keyword argument(s) {sorted(unknown)}")
    defaults.update(kwargs)
    if defaults["activation"] is None:
        defaults["activation"] = _default_activation()
    return defaults


class ConvRNNCell(BaseConvRNNCell):
    """Convolutional Elman RNN step: out = activation(conv_i(x) + conv_h(h))."""

    _num_states = 1

    def __init__(self, input_shape, num_hidden: int, prefix: str = "ConvRNN_", **kwargs):
        super().__init__(input_shape, num_hidden, prefix=prefix, **_conv_kwargs(kwargs))

    @property
    def _gate_names(self):
        return ("",)

    def __call__(self, inputs, states):
        name, i2h, h2h = self._conv_step(inputs, states)
        out = self._get_activation(i2h + h2h, self._activation, name=f"{name}out")
        return out, [out]


class ConvLSTMCell(BaseConvRNNCell):
    """Convolutional LSTM step (gates i, f, c, o along the channel axis)."""

    def __init__(self, input_shape, num_hidden: int, prefix: str = "ConvLSTM_", **kwargs):
        super().__init__(input_shape, num_hidden, prefix=prefix, **_conv_kwargs(kwargs))

    @property
    def _gate_names(self):
        return ["_i", "_f", "_c", "_o"]

    def __call__(self, inputs, states):
        name, i2h, h2h = self._conv_step(inputs, states)
        gates = symbol.SliceChannel(i2h + h2h, num_outputs=4, axis=self._conv_layout.find("C"),
                                    name=f"{name}slice")
        in_gate = symbol.Activation(gates[0], act_type="sigmoid", name=f"{name}i")
        forget_gate = symbol.Activation(gates[1], act_type="sigmoid", name=f"{name}f")
        candidate = self._get_activation(gates[2], self._activation, name=f"{name}c")
        out_gate = symbol.Activation(gates[3], act_type="sigmoid", name=f"{name}o")
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * candidate, name=f"{name}state")
        next_h = symbol._internal._mul(out_gate, self._get_activation(next_c, self._activation),
                                       name=f"{name}out")
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """Convolutional GRU step (gates r, z, then the candidate)."""

    _num_states = 1

    def __init__(self, input_shape, num_hidden: int, prefix: str = "ConvGRU_", **kwargs):
        super().__init__(input_shape, num_hidden, prefix=prefix, **_conv_kwargs(kwargs))

    @property
    def _gate_names(self):
        return ["_r", "_z", "_o"]

    def __call__(self, inputs, states):
        name, i2h, h2h = self._conv_step(inputs, states)
        i_r, i_z, i_n = symbol.SliceChannel(i2h, num_outputs=3, name=f"{name}_i2h_slice")
        h_r, h_z, h_n = symbol.SliceChannel(h2h, num_outputs=3, name=f"{name}_h2h_slice")
        reset = symbol.Activation(i_r + h_r, act_type="sigmoid", name=f"{name}_r_act")
        update = symbol.Activation(i_z + h_z, act_type="sigmoid", name=f"{name}_z_act")
        candidate = self._get_activation(i_n + reset * h_n, self._activation, name=f"{name}_h_act")
        next_h = symbol._internal._plus((1.0 - update) * candidate, update * states[0], name=f"{name}out")
        return next_h, [next_h]
