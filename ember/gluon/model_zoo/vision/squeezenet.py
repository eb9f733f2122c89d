"""SqueezeNet 1.0 ("SqueezeNet: AlexNet-level accuracy with 50x fewer parameters and <0.5MB model
size", https://arxiv.org/abs/1602.07360) and 1.1 (the SqueezeNet repository's v1.1: 2.4x less
computation), as MXNet 1.9.1 builds them."""
from __future__ import annotations

import os

from ....base import data_dir
from ....context import cpu
from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ..model_store import load_pretrained

__all__ = ["SqueezeNet", "squeezenet1_0", "squeezenet1_1"]


def _fire_conv(channels: int, kernel_size: int, padding: int = 0) -> nn.HybridSequential:
    conv = nn.HybridSequential(prefix="")
    conv.add(nn.Conv2D(channels, kernel_size, padding=padding), nn.Activation("relu"))
    return conv


def _fire(squeeze: int, expand1x1: int, expand3x3: int) -> nn.HybridSequential:
    """A fire module: a 1x1 squeeze, then 1x1 and 3x3 expansions concatenated on channels."""
    fire = nn.HybridSequential(prefix="")
    fire.add(_fire_conv(squeeze, 1))
    expand = HybridConcurrent(axis=1, prefix="")
    expand.add(_fire_conv(expand1x1, 1), _fire_conv(expand3x3, 3, 1))
    fire.add(expand)
    return fire


# The feature layers after the stem: 'pool' is a 3x3/2 ceil-mode max-pool, a tuple a fire module.
_LAYOUTS = {
    "1.0": ((96, 7), ((16, 64, 64), (16, 64, 64), (32, 128, 128), "pool", (32, 128, 128), (48, 192, 192),
                      (48, 192, 192), (64, 256, 256), "pool", (64, 256, 256))),
    "1.1": ((64, 3), ((16, 64, 64), (16, 64, 64), "pool", (32, 128, 128), (32, 128, 128), "pool",
                      (48, 192, 192), (48, 192, 192), (64, 256, 256), (64, 256, 256))),
}


def _ceil_pool() -> nn.MaxPool2D:
    return nn.MaxPool2D(pool_size=3, strides=2, ceil_mode=True)


class SqueezeNet(HybridBlock):
    """SqueezeNet `version` ('1.0' or '1.1'): a strided stem convolution, fire modules and
    max-pools, dropout 0.5, and an `output` of a 1x1 convolution to `classes` channels, ReLU,
    a 13x13 average pool and Flatten (so inputs of about 224x224 give one value per class)."""

    def __init__(self, version: str, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        assert version in ["1.0", "1.1"], \
            f"Unsupported SqueezeNet version {version}:1.0 or 1.1 expected"
        (stem_width, stem_kernel), body = _LAYOUTS[version]
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(stem_width, kernel_size=stem_kernel, strides=2), nn.Activation("relu"),
                              _ceil_pool())
            for item in body:
                self.features.add(_ceil_pool() if item == "pool" else _fire(*item))
            self.features.add(nn.Dropout(0.5))
            self.output = nn.HybridSequential(prefix="")
            self.output.add(nn.Conv2D(classes, kernel_size=1), nn.Activation("relu"), nn.AvgPool2D(13), nn.Flatten())

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def get_squeezenet(version: str, pretrained: bool = False, ctx=cpu(),
                   root: str = os.path.join(data_dir(), "models"), **kwargs) -> SqueezeNet:
    """SqueezeNet `version` ('1.0' or '1.1'); pretrained: load `squeezenet{version}-*.params` from
    `root` onto `ctx`; other keywords go to SqueezeNet."""
    net = SqueezeNet(version, **kwargs)
    if pretrained:
        load_pretrained(net, f"squeezenet{version}", ctx, root)
    return net


def squeezenet1_0(**kwargs) -> SqueezeNet:
    """SqueezeNet 1.0 (keywords as get_squeezenet's)."""
    return get_squeezenet("1.0", **kwargs)


def squeezenet1_1(**kwargs) -> SqueezeNet:
    """SqueezeNet 1.1 (keywords as get_squeezenet's)."""
    return get_squeezenet("1.1", **kwargs)
