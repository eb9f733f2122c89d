"""MobileNet ("MobileNets: Efficient Convolutional Neural Networks for Mobile Vision Applications",
https://arxiv.org/abs/1704.04861) and MobileNetV2 ("Inverted Residuals and Linear Bottlenecks",
https://arxiv.org/abs/1801.04381), with MXNet 1.9.1's block structure and parameter names."""
from __future__ import annotations

import os

from ....base import data_dir
from ....context import cpu
from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained, named_constructor

__all__ = ["MobileNet", "MobileNetV2", "mobilenet1_0", "mobilenet_v2_1_0", "mobilenet0_75",
           "mobilenet_v2_0_75", "mobilenet0_5", "mobilenet_v2_0_5", "mobilenet0_25",
           "mobilenet_v2_0_25", "get_mobilenet", "get_mobilenet_v2"]


class RELU6(HybridBlock):
    """min(max(x, 0), 6), the activation of MobileNetV2."""

    def hybrid_forward(self, F, x):
        return F.clip(x, 0, 6, name="relu6")


def _add_conv(out, channels: int = 1, kernel: int = 1, stride: int = 1, pad: int = 0, num_group: int = 1,
              active: bool = True, relu6: bool = False) -> None:
    """Append a bias-free convolution, BatchNorm and (when `active`) ReLU or ReLU6 to `out`."""
    out.add(nn.Conv2D(channels, kernel, stride, pad, groups=num_group, use_bias=False), nn.BatchNorm(scale=True))
    if active:
        out.add(RELU6() if relu6 else nn.Activation("relu"))


def _add_conv_dw(out, dw_channels: int, channels: int, stride: int, relu6: bool = False) -> None:
    """Append a depthwise-separable convolution: 3x3 depthwise, then 1x1 to `channels`."""
    _add_conv(out, channels=dw_channels, kernel=3, stride=stride, pad=1, num_group=dw_channels, relu6=relu6)
    _add_conv(out, channels=channels, relu6=relu6)


class LinearBottleneck(HybridBlock):
    """MobileNetV2's inverted residual: 1x1 expansion by `t`, 3x3 depthwise with `stride`, linear 1x1
    projection to `channels`; the input is added back when the shape is kept (stride 1,
    in_channels == channels)."""

    def __init__(self, in_channels: int, channels: int, t: int, stride: int, **kwargs):
        super().__init__(**kwargs)
        self.use_shortcut = stride == 1 and in_channels == channels
        expanded = in_channels * t
        with self.name_scope():
            self.out = nn.HybridSequential()
            _add_conv(self.out, expanded, relu6=True)
            _add_conv(self.out, expanded, kernel=3, stride=stride, pad=1, num_group=expanded, relu6=True)
            _add_conv(self.out, channels, active=False, relu6=True)

    def hybrid_forward(self, F, x):
        out = self.out(x)
        return F.elemwise_add(out, x) if self.use_shortcut else out


def _scaled(widths, multiplier: float):
    return [int(w * multiplier) for w in widths]


class MobileNet(HybridBlock):
    """MobileNet: a 3x3/2 convolution, 13 depthwise-separable convolutions, global average pool,
    then the `output` classifier.  multiplier: width factor (>= 0.25) applied to every layer;
    classes: outputs of the classifier."""

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        dw_channels = _scaled([32, 64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024], multiplier)
        channels = _scaled([64] + [128] * 2 + [256] * 2 + [512] * 6 + [1024] * 2, multiplier)
        strides = [1, 2] * 3 + [1] * 5 + [2, 1]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                _add_conv(self.features, channels=int(32 * multiplier), kernel=3, pad=1, stride=2)
                for dwc, c, s in zip(dw_channels, channels, strides):
                    _add_conv_dw(self.features, dw_channels=dwc, channels=c, stride=s)
                self.features.add(nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class MobileNetV2(HybridBlock):
    """MobileNetV2: a 3x3/2 convolution, 17 linear bottlenecks, a 1x1 convolution to 1280 channels
    (more when multiplier > 1), global average pool, and an `output` 1x1 convolution to `classes`
    then Flatten.  multiplier: width factor; classes: outputs."""

    def __init__(self, multiplier: float = 1.0, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        in_channels_group = _scaled([32] + [16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3,
                                    multiplier)
        channels_group = _scaled([16] + [24] * 2 + [32] * 3 + [64] * 4 + [96] * 3 + [160] * 3 + [320], multiplier)
        ts = [1] + [6] * 16
        strides = [1, 2] * 2 + [1, 1, 2] + [1] * 6 + [2] + [1] * 3
        last_channels = int(1280 * multiplier) if multiplier > 1.0 else 1280
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="features_")
            with self.features.name_scope():
                _add_conv(self.features, int(32 * multiplier), kernel=3, stride=2, pad=1, relu6=True)
                for in_c, c, t, s in zip(in_channels_group, channels_group, ts, strides):
                    self.features.add(LinearBottleneck(in_channels=in_c, channels=c, t=t, stride=s))
                _add_conv(self.features, last_channels, relu6=True)
                self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.HybridSequential(prefix="output_")
            with self.output.name_scope():
                self.output.add(nn.Conv2D(classes, 1, use_bias=False, prefix="pred_"), nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def _version_suffix(multiplier: float) -> str:
    """'1.0', '0.75', '0.5', '0.25': how MXNet's weight files name a multiplier."""
    suffix = f"{multiplier:.2f}"
    return suffix[:-1] if suffix in ("1.00", "0.50") else suffix


def get_mobilenet(multiplier: float, pretrained: bool = False, ctx=cpu(),
                  root: str = os.path.join(data_dir(), "models"), **kwargs) -> MobileNet:
    """MobileNet with width `multiplier`; pretrained: load `mobilenet{multiplier}-*.params` from
    `root` onto `ctx`; other keywords go to MobileNet."""
    net = MobileNet(multiplier, **kwargs)
    if pretrained:
        load_pretrained(net, f"mobilenet{_version_suffix(multiplier)}", ctx, root)
    return net


def get_mobilenet_v2(multiplier: float, pretrained: bool = False, ctx=cpu(),
                     root: str = os.path.join(data_dir(), "models"), **kwargs) -> MobileNetV2:
    """MobileNetV2 with width `multiplier`; pretrained: load `mobilenetv2_{multiplier}-*.params`
    from `root` onto `ctx`; other keywords go to MobileNetV2."""
    net = MobileNetV2(multiplier, **kwargs)
    if pretrained:
        load_pretrained(net, f"mobilenetv2_{_version_suffix(multiplier)}", ctx, root)
    return net


def _constructor(multiplier: float, v2: bool):
    tag = _version_suffix(multiplier).replace(".", "_")
    return named_constructor(f"mobilenet_v2_{tag}" if v2 else f"mobilenet{tag}",
                             f"{'MobileNetV2' if v2 else 'MobileNet'} with width multiplier {multiplier}.",
                             get_mobilenet_v2 if v2 else get_mobilenet, multiplier)


mobilenet1_0 = _constructor(1.0, False)
mobilenet0_75 = _constructor(0.75, False)
mobilenet0_5 = _constructor(0.5, False)
mobilenet0_25 = _constructor(0.25, False)
mobilenet_v2_1_0 = _constructor(1.0, True)
mobilenet_v2_0_75 = _constructor(0.75, True)
mobilenet_v2_0_5 = _constructor(0.5, True)
mobilenet_v2_0_25 = _constructor(0.25, True)
