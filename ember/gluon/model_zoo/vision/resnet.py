"""ResNet V1 ("Deep Residual Learning for Image Recognition", https://arxiv.org/abs/1512.03385) and
ResNet V2 ("Identity Mappings in Deep Residual Networks", https://arxiv.org/abs/1603.05027), with
MXNet 1.9.1's block structure and parameter names."""
from __future__ import annotations

import os

from ....base import data_dir
from ....context import cpu
from ....util import is_np_array
from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained, named_constructor

__all__ = ["ResNetV1", "ResNetV2",
           "BasicBlockV1", "BasicBlockV2",
           "BottleneckV1", "BottleneckV2",
           "resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
           "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2",
           "get_resnet"]


def _conv3x3(channels: int, stride: int, in_channels: int) -> nn.Conv2D:
    """A bias-free 3x3 convolution that keeps the spatial size at stride 1."""
    return nn.Conv2D(channels, kernel_size=3, strides=stride, padding=1, use_bias=False, in_channels=in_channels)


def _relu(F, x):
    return F.npx.activation(x, act_type="relu") if is_np_array() else F.Activation(x, act_type="relu")


def _projection_v1(channels: int, stride: int, in_channels: int) -> nn.HybridSequential:
    """The V1 shortcut for a change of shape: 1x1 convolution then BatchNorm."""
    proj = nn.HybridSequential(prefix="")
    proj.add(nn.Conv2D(channels, kernel_size=1, strides=stride, use_bias=False, in_channels=in_channels),
             nn.BatchNorm())
    return proj


# -- residual units ----------------------------------------------------------------------------
# The units make their layers in the caller's name scope (they never open their own), so layers
# are numbered across one stage: 'stage1_conv0_', 'stage1_conv1_', ... as in MXNet.
class _ResidualV1(HybridBlock):
    """V1 unit: relu(body(x) + shortcut(x)); the shortcut projects when `downsample`."""

    def _shortcut(self, channels: int, stride: int, downsample: bool, in_channels: int) -> None:
        self.downsample = _projection_v1(channels, stride, in_channels) if downsample else None

    def hybrid_forward(self, F, x):
        shortcut = self.downsample(x) if self.downsample else x
        return _relu(F, self.body(x) + shortcut)


class BasicBlockV1(_ResidualV1):
    """Two 3x3 convolutions with BatchNorm (ResNet-18/34 V1).

    channels: output channels; stride: stride of the first convolution; downsample: project the
    shortcut with a 1x1 convolution; in_channels: input channels (0: inferred at the first call).
    """

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.HybridSequential(prefix="")
        self.body.add(_conv3x3(channels, stride, in_channels), nn.BatchNorm(), nn.Activation("relu"),
                      _conv3x3(channels, 1, channels), nn.BatchNorm())
        self._shortcut(channels, stride, downsample, in_channels)


class BottleneckV1(_ResidualV1):
    """1x1 reduce, 3x3, 1x1 expand, each with BatchNorm (ResNet-50/101/152 V1); arguments as
    BasicBlockV1's, the inner width being channels // 4."""

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        inner = channels // 4
        self.body = nn.HybridSequential(prefix="")
        self.body.add(nn.Conv2D(inner, kernel_size=1, strides=stride), nn.BatchNorm(), nn.Activation("relu"),
                      _conv3x3(inner, 1, inner), nn.BatchNorm(), nn.Activation("relu"),
                      nn.Conv2D(channels, kernel_size=1, strides=1), nn.BatchNorm())
        self._shortcut(channels, stride, downsample, in_channels)


class _ResidualV2(HybridBlock):
    """V2 (pre-activation) unit: the shortcut (a 1x1 convolution when `downsample`) reads the
    first pre-activation; the body is conv1 then each (BatchNorm, relu, convolution) pair."""

    _pairs = ()  # attribute names of the (BatchNorm, convolution) pairs after conv1

    def _shortcut(self, channels: int, stride: int, downsample: bool, in_channels: int) -> None:
        self.downsample = (nn.Conv2D(channels, 1, stride, use_bias=False, in_channels=in_channels)
                           if downsample else None)

    def hybrid_forward(self, F, x):
        shortcut = x
        x = _relu(F, self.bn1(x))
        if self.downsample:
            shortcut = self.downsample(x)
        x = self.conv1(x)
        for bn, conv in self._pairs:
            x = getattr(self, conv)(_relu(F, getattr(self, bn)(x)))
        return x + shortcut


class BasicBlockV2(_ResidualV2):
    """Pre-activation unit of two 3x3 convolutions (ResNet-18/34 V2); arguments as BasicBlockV1's."""

    _pairs = (("bn2", "conv2"),)

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.bn1 = nn.BatchNorm()
        self.conv1 = _conv3x3(channels, stride, in_channels)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(channels, 1, channels)
        self._shortcut(channels, stride, downsample, in_channels)


class BottleneckV2(_ResidualV2):
    """Pre-activation bottleneck, 1x1 / 3x3 / 1x1 (ResNet-50/101/152 V2); arguments as BasicBlockV1's."""

    _pairs = (("bn2", "conv2"), ("bn3", "conv3"))

    def __init__(self, channels: int, stride: int, downsample: bool = False, in_channels: int = 0, **kwargs):
        super().__init__(**kwargs)
        inner = channels // 4
        self.bn1 = nn.BatchNorm()
        self.conv1 = nn.Conv2D(inner, kernel_size=1, strides=1, use_bias=False)
        self.bn2 = nn.BatchNorm()
        self.conv2 = _conv3x3(inner, stride, inner)
        self.bn3 = nn.BatchNorm()
        self.conv3 = nn.Conv2D(channels, kernel_size=1, strides=1, use_bias=False)
        self._shortcut(channels, stride, downsample, in_channels)


# -- networks --------------------------------------------------------------------------------
class _ResNet(HybridBlock):
    """What both versions share: `features` then the `output` classifier, and stage building."""

    @staticmethod
    def _make_layer(block, layers: int, channels: int, stride: int, stage_index: int, in_channels: int = 0):
        """Stage `stage_index` ('stage1_', ...): `layers` units, the first one striding and
        projecting its shortcut when the width changes."""
        stage = nn.HybridSequential(prefix=f"stage{stage_index}_")
        with stage.name_scope():
            stage.add(block(channels, stride, channels != in_channels, in_channels=in_channels, prefix=""))
            for _ in range(layers - 1):
                stage.add(block(channels, 1, False, in_channels=channels, prefix=""))
        return stage

    def _add_stem(self, thumbnail: bool, width: int) -> None:
        """3x3 convolution for small (thumbnail) images, else the 7x7/2 convolution and 3x3/2 max-pool."""
        if thumbnail:
            self.features.add(_conv3x3(width, 1, 0))
            return
        self.features.add(nn.Conv2D(width, 7, 2, 3, use_bias=False), nn.BatchNorm(), nn.Activation("relu"),
                          nn.MaxPool2D(3, 2, 1))

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


class ResNetV1(_ResNet):
    """ResNet V1.

    block: the unit class (BasicBlockV1 or BottleneckV1); layers: units per stage; channels: the
    stem's width then each stage's (one longer than `layers`); classes: outputs of the classifier;
    thumbnail: a 3x3 stem without pooling, for small images.
    """

    def __init__(self, block, layers, channels, classes: int = 1000, thumbnail: bool = False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(channels) - 1
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self._add_stem(thumbnail, channels[0])
            for i, num_layer in enumerate(layers):
                self.features.add(self._make_layer(block, num_layer, channels[i + 1], 1 if i == 0 else 2, i + 1,
                                                   in_channels=channels[i]))
            self.features.add(nn.GlobalAvgPool2D())
            self.output = nn.Dense(classes, in_units=channels[-1])


class ResNetV2(_ResNet):
    """ResNet V2 (pre-activation): an input BatchNorm without scale or shift, the stem, the
    stages, then BatchNorm + relu before pooling.  Arguments as ResNetV1's (block: BasicBlockV2
    or BottleneckV2)."""

    def __init__(self, block, layers, channels, classes: int = 1000, thumbnail: bool = False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(channels) - 1
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.BatchNorm(scale=False, center=False))
            self._add_stem(thumbnail, channels[0])
            in_channels = channels[0]
            for i, num_layer in enumerate(layers):
                self.features.add(self._make_layer(block, num_layer, channels[i + 1], 1 if i == 0 else 2, i + 1,
                                                   in_channels=in_channels))
                in_channels = channels[i + 1]
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.GlobalAvgPool2D(), nn.Flatten())
            self.output = nn.Dense(classes, in_units=in_channels)


# depth -> (unit kind, units per stage, stem width then stage widths)
resnet_spec = {18: ("basic_block", [2, 2, 2, 2], [64, 64, 128, 256, 512]),
               34: ("basic_block", [3, 4, 6, 3], [64, 64, 128, 256, 512]),
               50: ("bottle_neck", [3, 4, 6, 3], [64, 256, 512, 1024, 2048]),
               101: ("bottle_neck", [3, 4, 23, 3], [64, 256, 512, 1024, 2048]),
               152: ("bottle_neck", [3, 8, 36, 3], [64, 256, 512, 1024, 2048])}
resnet_net_versions = [ResNetV1, ResNetV2]
resnet_block_versions = [{"basic_block": BasicBlockV1, "bottle_neck": BottleneckV1},
                         {"basic_block": BasicBlockV2, "bottle_neck": BottleneckV2}]


def get_resnet(version: int, num_layers: int, pretrained: bool = False, ctx=cpu(),
               root: str = os.path.join(data_dir(), "models"), **kwargs) -> HybridBlock:
    """ResNet `version` (1 or 2) of depth `num_layers` (18, 34, 50, 101, 152).

    pretrained: load the weights file `resnet{depth}_v{version}-*.params` from `root` onto `ctx`;
    other keywords (classes, thumbnail, prefix, params) go to ResNetV1/ResNetV2.
    """
    assert num_layers in resnet_spec, \
        f"Invalid number of layers: {num_layers}. Options are {resnet_spec.keys()}"
    assert 1 <= version <= 2, f"Invalid resnet version: {version}. Options are 1 and 2."
    kind, layers, channels = resnet_spec[num_layers]
    net = resnet_net_versions[version - 1](resnet_block_versions[version - 1][kind], layers, channels, **kwargs)
    if pretrained:
        load_pretrained(net, f"resnet{num_layers}_v{version}", ctx, root)
    return net


def _constructor(version: int, depth: int):
    paper = ('"Deep Residual Learning for Image Recognition"' if version == 1
             else '"Identity Mappings in Deep Residual Networks"')
    return named_constructor(f"resnet{depth}_v{version}", f"ResNet-{depth} V{version} model from {paper}.",
                             get_resnet, version, depth)


resnet18_v1 = _constructor(1, 18)
resnet34_v1 = _constructor(1, 34)
resnet50_v1 = _constructor(1, 50)
resnet101_v1 = _constructor(1, 101)
resnet152_v1 = _constructor(1, 152)
resnet18_v2 = _constructor(2, 18)
resnet34_v2 = _constructor(2, 34)
resnet50_v2 = _constructor(2, 50)
resnet101_v2 = _constructor(2, 101)
resnet152_v2 = _constructor(2, 152)
