"""Deformable convolutions as Gluon layers (MXNet 1.9.1's `gluon.contrib.cnn`): a Convolution computes
the per-tap offsets (and, for v2, the taps' masks) from the input, and `contrib.DeformableConvolution` /
`contrib.ModulatedDeformableConvolution` sample the input at the shifted taps.  Parameter names and
their order, shapes, defaults and reprs are MXNet's."""
from __future__ import annotations

from ...block import HybridBlock
from ...nn.activations import Activation
from ...nn.conv_layers import _per_axis, _weight_shape, conv_repr

__all__ = ["DeformableConvolution", "ModulatedDeformableConvolution"]


class _Deformable(HybridBlock):
    """What both layers share: the offset convolution's and the deformable convolution's attributes and
    parameters (`offset_per_tap` channels per tap and deformable group; `offset_first`: MXNet's parameter
    order), the optional activation."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, num_deformable_group, layout,
                 use_bias, in_channels, activation, weight_initializer, bias_initializer, offset_weight_initializer,
                 offset_bias_initializer, offset_use_bias, op_name, adj, prefix, params, offset_per_tap: int,
                 offset_first: bool):
        super().__init__(prefix=prefix, params=params)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            assert layout in ("NCHW", "NHWC"), "Only supports 'NCHW' and 'NHWC' layout for now"
            kernel_size = _per_axis(kernel_size, 2)
            strides, padding, dilation = (_per_axis(v, len(kernel_size)) for v in (strides, padding, dilation))
            self._op_name = op_name
            self._taps = num_deformable_group * kernel_size[0] * kernel_size[1]
            offset_channels = offset_per_tap * self._taps
            common = {"kernel": kernel_size, "stride": strides, "dilate": dilation, "pad": padding,
                      "num_group": groups, "layout": layout}
            self._kwargs_offset = dict(common, num_filter=offset_channels, no_bias=not offset_use_bias)
            self._kwargs_deformable_conv = dict(common, num_filter=channels, no_bias=not use_bias,
                                                num_deformable_group=num_deformable_group)
            if adj:
                self._kwargs_offset["adj"] = adj
                self._kwargs_deformable_conv["adj"] = adj

            def offset_params():
                self.offset_weight = self.params.get(
                    "offset_weight", init=offset_weight_initializer, allow_deferred_init=True,
                    shape=_weight_shape("Convolution", offset_channels, in_channels, groups, kernel_size, layout))
                self.offset_bias = (self.params.get("offset_bias", shape=(offset_channels,),
                                                    init=offset_bias_initializer, allow_deferred_init=True)
                                    if offset_use_bias else None)

            def conv_params():
                # as MXNet: the input-channel dimension is always learnt from the first call
                self.deformable_conv_weight = self.params.get(
                    "deformable_conv_weight", shape=(channels, 0) + tuple(kernel_size), init=weight_initializer,
                    allow_deferred_init=True)
                self.deformable_conv_bias = (self.params.get("deformable_conv_bias", shape=(channels,),
                                                             init=bias_initializer, allow_deferred_init=True)
                                             if use_bias else None)
            for make in ((offset_params, conv_params) if offset_first else (conv_params, offset_params)):
                make()
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _offsets(self, F, x, offset_weight, offset_bias):
        conv_in = (x, offset_weight) if offset_bias is None else (x, offset_weight, offset_bias)
        return F.Convolution(*conv_in, cudnn_off=True, **self._kwargs_offset)

    def _finish(self, out):
        return self.act(out) if self.act else out


class DeformableConvolution(_Deformable):
    """2-D deformable convolution (Dai et al., 2017) over NCHW data, with its offset convolution.

    Parameters `offset_weight` / `offset_bias` (the offsets' convolution: 2 * kh * kw *
    num_deformable_group output channels, zero-initialised, so it starts as a plain convolution)
    and `deformable_conv_weight` / `deformable_conv_bias`; the input channels are learnt at the first
    call (the offset convolution's from `in_channels` when given).
    """

    def __init__(self, channels: int, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0), dilation=(1, 1),
                 groups: int = 1, num_deformable_group: int = 1, layout: str = "NCHW", use_bias: bool = True,
                 in_channels: int = 0, activation=None, weight_initializer=None, bias_initializer="zeros",
                 offset_weight_initializer="zeros", offset_bias_initializer="zeros", offset_use_bias: bool = True,
                 op_name: str = "DeformableConvolution", adj=None, prefix=None, params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, num_deformable_group, layout,
                         use_bias, in_channels, activation, weight_initializer, bias_initializer,
                         offset_weight_initializer, offset_bias_initializer, offset_use_bias, op_name, adj, prefix,
                         params, offset_per_tap=2, offset_first=True)

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        out = F.contrib.DeformableConvolution(data=x, offset=self._offsets(F, x, offset_weight, offset_bias),
                                              weight=deformable_conv_weight, name="fwd", **extra,
                                              **self._kwargs_deformable_conv)
        return self._finish(out)

    def _alias(self) -> str:
        return "deformable_conv"

    def __repr__(self) -> str:
        return conv_repr(self, self._kwargs_deformable_conv, self.deformable_conv_weight, self.deformable_conv_bias)


class ModulatedDeformableConvolution(_Deformable):
    """2-D deformable convolution v2 (Zhu et al., 2019) over NCHW data: one offset convolution gives
    each tap's offsets (2 * kh * kw * num_deformable_group channels) and its mask (the next kh * kw *
    num_deformable_group channels, as 2 * sigmoid: 1 at the zero initialisation).

    Parameters `deformable_conv_weight` / `deformable_conv_bias`, then `offset_weight` /
    `offset_bias` (MXNet's order); the input channels are learnt at the first call.
    """

    def __init__(self, channels: int, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0), dilation=(1, 1),
                 groups: int = 1, num_deformable_group: int = 1, layout: str = "NCHW", use_bias: bool = True,
                 in_channels: int = 0, activation=None, weight_initializer=None, bias_initializer="zeros",
                 offset_weight_initializer="zeros", offset_bias_initializer="zeros", offset_use_bias: bool = True,
                 op_name: str = "ModulatedDeformableConvolution", adj=None, prefix=None, params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, num_deformable_group, layout,
                         use_bias, in_channels, activation, weight_initializer, bias_initializer,
                         offset_weight_initializer, offset_bias_initializer, offset_use_bias, op_name, adj, prefix,
                         params, offset_per_tap=3, offset_first=False)
        self.offset_split_index = 2 * self._taps  # MXNet's attribute

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        both = self._offsets(F, x, offset_weight, offset_bias)
        offset = F.slice_axis(both, axis=1, begin=0, end=self.offset_split_index)
        mask = F.sigmoid(F.slice_axis(both, axis=1, begin=self.offset_split_index, end=None)) * 2
        extra = {} if deformable_conv_bias is None else {"bias": deformable_conv_bias}
        out = F.contrib.ModulatedDeformableConvolution(data=x, offset=offset, mask=mask, weight=deformable_conv_weight,
                                                       name="fwd", **extra, **self._kwargs_deformable_conv)
        return self._finish(out)

    def _alias(self) -> str:
        return "modulated_deformable_conv"
