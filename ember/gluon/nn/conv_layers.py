"""Convolution and pooling layers (MXNet 1.9.1's `gluon.nn.conv_layers`): Conv1D/2D/3D, their
transposes, max/avg/global pooling in 1-3 dimensions and ReflectionPad2D, on the registry's
Convolution, Deconvolution, Pooling and Pad operators."""
from __future__ import annotations

import numbers
from typing import Tuple

from ..block import HybridBlock
from .activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D",
           "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose",
           "MaxPool1D", "MaxPool2D", "MaxPool3D",
           "AvgPool1D", "AvgPool2D", "AvgPool3D",
           "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D",
           "ReflectionPad2D"]

_numeric = (numbers.Number,)


def _per_axis(value, n: int):
    """A number repeated once per spatial axis; sequences are kept as given."""
    return (value,) * n if isinstance(value, _numeric) else value


def _n_ints(value, n: int, what: str):
    """`value` for n axes (a number repeated), asserted to have n entries."""
    value = _per_axis(value, n)
    assert len(value) == n, f"{what} must be a number or a list of {n} ints"
    return value


def _weight_shape(op_name: str, channels: int, in_channels: int, groups: int, kernel, layout: str) -> Tuple[int, ...]:
    """The weight shape the operator infers (0 = unknown until the first call), in the layout's order."""
    kernel = tuple(kernel)
    if op_name == "Convolution":
        outer, inner = channels, (in_channels // groups if in_channels else 0)
    else:  # Deconvolution: (C_in, num_filter / groups, *kernel)
        outer, inner = in_channels, channels // groups
    if layout.find("C") == 1:
        return (outer, inner) + kernel
    return (outer,) + kernel + (inner,)  # channel-last layouts keep channels last in the weight too


class _Conv(HybridBlock):
    """Shared by every convolution layer: parameters `weight` (and `bias`), optional activation.

    in_channels=0 leaves the input-channel dimension of the weight unknown (0) until the first
    call fills it from the data's shape.
    """

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout, in_channels=0,
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 op_name="Convolution", adj=None, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            n = len(kernel_size)
            strides, padding, dilation = (_per_axis(v, n) for v in (strides, padding, dilation))
            self._op_name = op_name
            self._kwargs = {"kernel": kernel_size, "stride": strides, "dilate": dilation, "pad": padding,
                            "num_filter": channels, "num_group": groups, "no_bias": not use_bias,
                            "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = adj
            self.weight = self.params.get("weight", init=weight_initializer, allow_deferred_init=True,
                                          shape=_weight_shape(op_name, channels, in_channels, groups, kernel_size,
                                                              layout))
            self.bias = (self.params.get("bias", shape=(channels,), init=bias_initializer, allow_deferred_init=True)
                         if use_bias else None)
            self.act = Activation(activation, prefix=activation + "_") if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        args = (x, weight) if bias is None else (x, weight, bias)
        out = getattr(F, self._op_name)(*args, name="fwd", **self._kwargs)
        return self.act(out) if self.act is not None else out

    def _alias(self) -> str:
        return "conv"

    def __repr__(self) -> str:
        return conv_repr(self, self._kwargs, self.weight, self.bias)


def conv_repr(block, kwargs: dict, weight, bias) -> str:
    """MXNet's repr of a convolution layer: `Name(in -> out, kernel_size=..., stride=...)` plus the
    options that differ from their defaults, the missing bias and the activation."""
    n = len(kwargs["kernel"])
    parts = [f"kernel_size={kwargs['kernel']}", f"stride={kwargs['stride']}"]
    if kwargs["pad"] != (0,) * n:
        parts.append(f"padding={kwargs['pad']}")
    if kwargs["dilate"] != (1,) * n:
        parts.append(f"dilation={kwargs['dilate']}")
    # MXNet 1.9.1 reads `out_pad` here while the transposed layers store `outpad`, so
    # output_padding never shows; kept for identical reprs
    if hasattr(block, "out_pad") and block.out_pad != (0,) * n:
        parts.append(f"output_padding={block.out_pad}")
    if kwargs["num_group"] != 1:
        parts.append(f"groups={kwargs['num_group']}")
    if bias is None:
        parts.append("bias=False")
    if block.act:
        parts.append(f"{block.act}")
    shape = weight.shape
    mapping = f"{shape[1] if shape[1] else None} -> {shape[0]}"
    return f"{type(block).__name__}({mapping}, {', '.join(parts)})"


class Conv1D(_Conv):
    """1-D convolution over (N, C, W) data; weight (channels, in_channels / groups, k)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, dilation=1, groups=1, layout="NCW",
                 activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        assert layout == "NCW", "Only supports 'NCW' layout for now"
        kernel_size = _n_ints(kernel_size, 1, "kernel_size")
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
                         activation, use_bias, weight_initializer, bias_initializer, op_name, **kwargs)


class Conv2D(_Conv):
    """2-D convolution over (N, C, H, W) data; weight (channels, in_channels / groups, kh, kw)."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 layout="NCHW", activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        assert layout in ("NCHW", "NHWC"), "Only supports 'NCHW' and 'NHWC' layout for now"
        kernel_size = _n_ints(kernel_size, 2, "kernel_size")
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
                         activation, use_bias, weight_initializer, bias_initializer, op_name, **kwargs)


class Conv3D(_Conv):
    """3-D convolution over (N, C, D, H, W) data; weight (channels, in_channels / groups, kd, kh, kw)."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0), dilation=(1, 1, 1), groups=1,
                 layout="NCDHW", activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        assert layout in ("NCDHW", "NDHWC"), "Only supports 'NCDHW' and 'NDHWC' layout for now"
        kernel_size = _n_ints(kernel_size, 3, "kernel_size")
        op_name = kwargs.pop("op_name", "Convolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
                         activation, use_bias, weight_initializer, bias_initializer, op_name, **kwargs)


class Conv1DTranspose(_Conv):
    """Transposed 1-D convolution (Deconvolution); weight (in_channels, channels / groups, k)."""

    def __init__(self, channels, kernel_size, strides=1, padding=0, output_padding=0, dilation=1, groups=1,
                 layout="NCW", activation=None, use_bias=True, weight_initializer=None, bias_initializer="zeros",
                 in_channels=0, **kwargs):
        assert layout == "NCW", "Only supports 'NCW' layout for now"
        kernel_size = _n_ints(kernel_size, 1, "kernel_size")
        output_padding = _n_ints(output_padding, 1, "output_padding")
        op_name = kwargs.pop("op_name", "Deconvolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
                         activation, use_bias, weight_initializer, bias_initializer, op_name=op_name,
                         adj=output_padding, **kwargs)
        self.outpad = output_padding


class Conv2DTranspose(_Conv):
    """Transposed 2-D convolution (Deconvolution); weight (in_channels, channels / groups, kh, kw)."""

    def __init__(self, channels, kernel_size, strides=(1, 1), padding=(0, 0), output_padding=(0, 0),
                 dilation=(1, 1), groups=1, layout="NCHW", activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", in_channels=0, **kwargs):
        assert layout in ("NCHW", "NHWC"), "Only supports 'NCHW' and 'NHWC' layout for now"
        kernel_size = _n_ints(kernel_size, 2, "kernel_size")
        output_padding = _n_ints(output_padding, 2, "output_padding")
        op_name = kwargs.pop("op_name", "Deconvolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
                         activation, use_bias, weight_initializer, bias_initializer, op_name=op_name,
                         adj=output_padding, **kwargs)
        self.outpad = output_padding


class Conv3DTranspose(_Conv):
    """Transposed 3-D convolution (Deconvolution); weight (in_channels, channels / groups, kd, kh, kw)."""

    def __init__(self, channels, kernel_size, strides=(1, 1, 1), padding=(0, 0, 0), output_padding=(0, 0, 0),
                 dilation=(1, 1, 1), groups=1, layout="NCDHW", activation=None, use_bias=True,
                 weight_initializer=None, bias_initializer="zeros", in_channels=0, **kwargs):
        assert layout in ("NCDHW", "NDHWC"), "Only supports 'NCDHW' and 'NDHWC' layout for now"
        kernel_size = _n_ints(kernel_size, 3, "kernel_size")
        output_padding = _n_ints(output_padding, 3, "output_padding")
        op_name = kwargs.pop("op_name", "Deconvolution")
        super().__init__(channels, kernel_size, strides, padding, dilation, groups, layout, in_channels,
                         activation, use_bias, weight_initializer, bias_initializer, op_name=op_name,
                         adj=output_padding, **kwargs)
        self.outpad = output_padding


# -- pooling ------------------------------------------------------------------------------------------
class _Pooling(HybridBlock):
    """Shared by the pooling layers: one Pooling operator call (ceil_mode=True is the 'full' convention)."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        n = len(pool_size)
        strides = pool_size if strides is None else _per_axis(strides, n)
        self._kwargs = {"kernel": pool_size, "stride": strides, "pad": _per_axis(padding, n),
                        "global_pool": global_pool, "pool_type": pool_type, "layout": layout,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self) -> str:
        return "pool"

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return (f"{type(self).__name__}(size={k['kernel']}, stride={k['stride']}, padding={k['pad']}, "
                f"ceil_mode={k['pooling_convention'] == 'full'}, global_pool={k['global_pool']}, "
                f"pool_type={k['pool_type']}, layout={k['layout']})")


_LAYOUTS = {1: ("NCW", "NWC"), 2: ("NCHW", "NHWC"), 3: ("NCDHW", "NDHWC")}


def _pool_size(pool_size, layout, n: int):
    assert layout in _LAYOUTS[n], f"Only {' and '.join(_LAYOUTS[n])} layouts are valid for {n}D Pooling"
    return _n_ints(pool_size, n, "pool_size")


class MaxPool1D(_Pooling):
    """Max pooling over (N, C, W) windows; strides default to pool_size."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False, **kwargs):
        super().__init__(_pool_size(pool_size, layout, 1), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class MaxPool2D(_Pooling):
    """Max pooling over (N, C, H, W) windows; strides default to pool_size."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, layout="NCHW", ceil_mode=False, **kwargs):
        super().__init__(_pool_size(pool_size, layout, 2), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class MaxPool3D(_Pooling):
    """Max pooling over (N, C, D, H, W) windows; strides default to pool_size."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False, layout="NCDHW", **kwargs):
        super().__init__(_pool_size(pool_size, layout, 3), strides, padding, ceil_mode, False, "max", layout,
                         **kwargs)


class AvgPool1D(_Pooling):
    """Average pooling over (N, C, W) windows (count_include_pad: padded zeros count in the mean)."""

    def __init__(self, pool_size=2, strides=None, padding=0, layout="NCW", ceil_mode=False,
                 count_include_pad=True, **kwargs):
        super().__init__(_pool_size(pool_size, layout, 1), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class AvgPool2D(_Pooling):
    """Average pooling over (N, C, H, W) windows (count_include_pad: padded zeros count in the mean)."""

    def __init__(self, pool_size=(2, 2), strides=None, padding=0, ceil_mode=False, layout="NCHW",
                 count_include_pad=True, **kwargs):
        super().__init__(_pool_size(pool_size, layout, 2), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


class AvgPool3D(_Pooling):
    """Average pooling over (N, C, D, H, W) windows (count_include_pad: padded zeros count in the mean)."""

    def __init__(self, pool_size=(2, 2, 2), strides=None, padding=0, ceil_mode=False, layout="NCDHW",
                 count_include_pad=True, **kwargs):
        super().__init__(_pool_size(pool_size, layout, 3), strides, padding, ceil_mode, False, "avg", layout,
                         count_include_pad, **kwargs)


def _global(pool_type: str, layout: str, n: int, kwargs):
    assert layout in _LAYOUTS[n], f"Only {' and '.join(_LAYOUTS[n])} layouts are valid for {n}D Pooling"
    return ((1,) * n, None, 0, True, True, pool_type, layout), kwargs


class GlobalMaxPool1D(_Pooling):
    """Max over the whole W axis: (N, C, W) -> (N, C, 1)."""

    def __init__(self, layout="NCW", **kwargs):
        args, kwargs = _global("max", layout, 1, kwargs)
        super().__init__(*args, **kwargs)


class GlobalMaxPool2D(_Pooling):
    """Max over the whole H, W axes: (N, C, H, W) -> (N, C, 1, 1)."""

    def __init__(self, layout="NCHW", **kwargs):
        args, kwargs = _global("max", layout, 2, kwargs)
        super().__init__(*args, **kwargs)


class GlobalMaxPool3D(_Pooling):
    """Max over the whole D, H, W axes: (N, C, D, H, W) -> (N, C, 1, 1, 1)."""

    def __init__(self, layout="NCDHW", **kwargs):
        args, kwargs = _global("max", layout, 3, kwargs)
        super().__init__(*args, **kwargs)


class GlobalAvgPool1D(_Pooling):
    """Mean over the whole W axis: (N, C, W) -> (N, C, 1)."""

    def __init__(self, layout="NCW", **kwargs):
        args, kwargs = _global("avg", layout, 1, kwargs)
        super().__init__(*args, **kwargs)


class GlobalAvgPool2D(_Pooling):
    """Mean over the whole H, W axes: (N, C, H, W) -> (N, C, 1, 1)."""

    def __init__(self, layout="NCHW", **kwargs):
        args, kwargs = _global("avg", layout, 2, kwargs)
        super().__init__(*args, **kwargs)


class GlobalAvgPool3D(_Pooling):
    """Mean over the whole D, H, W axes: (N, C, D, H, W) -> (N, C, 1, 1, 1)."""

    def __init__(self, layout="NCDHW", **kwargs):
        args, kwargs = _global("avg", layout, 3, kwargs)
        super().__init__(*args, **kwargs)


class ReflectionPad2D(HybridBlock):
    """Pads the H and W axes of (N, C, H, W) data by reflection; `padding` is a number or the
    8-entry pad_width of the Pad operator."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, _numeric):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        assert len(padding) == 8
        self._padding = padding

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
