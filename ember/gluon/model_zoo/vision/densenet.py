"""DenseNet-BC ("Densely Connected Convolutional Networks", https://arxiv.org/abs/1608.06993),
as MXNet 1.9.1 builds it."""
from __future__ import annotations

import os

from ....base import data_dir
from ....context import cpu
from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent, Identity
from ..model_store import load_pretrained, named_constructor

__all__ = ["DenseNet", "densenet121", "densenet161", "densenet169", "densenet201"]


def _dense_layer(growth_rate: int, bn_size: int, dropout: float) -> HybridConcurrent:
    """Input concatenated with `growth_rate` new channels (BN-ReLU-1x1 conv to bn_size*growth_rate,
    BN-ReLU-3x3 conv to growth_rate, optional dropout)."""
    new_features = nn.HybridSequential(prefix="")
    new_features.add(nn.BatchNorm(), nn.Activation("relu"),
                     nn.Conv2D(bn_size * growth_rate, kernel_size=1, use_bias=False),
                     nn.BatchNorm(), nn.Activation("relu"),
                     nn.Conv2D(growth_rate, kernel_size=3, padding=1, use_bias=False))
    if dropout:
        new_features.add(nn.Dropout(dropout))
    layer = HybridConcurrent(axis=1, prefix="")
    layer.add(Identity(), new_features)
    return layer


def _dense_block(num_layers: int, bn_size: int, growth_rate: int, dropout: float,
                 stage_index: int) -> nn.HybridSequential:
    block = nn.HybridSequential(prefix=f"stage{stage_index}_")
    with block.name_scope():
        for _ in range(num_layers):
            block.add(_dense_layer(growth_rate, bn_size, dropout))
    return block


def _transition(channels: int) -> nn.HybridSequential:
    """BN-ReLU-1x1 convolution to `channels`, then a 2x2/2 average pool."""
    transition = nn.HybridSequential(prefix="")
    transition.add(nn.BatchNorm(), nn.Activation("relu"), nn.Conv2D(channels, kernel_size=1, use_bias=False),
                   nn.AvgPool2D(pool_size=2, strides=2))
    return transition


class DenseNet(HybridBlock):
    """DenseNet-BC.

    num_init_features: width of the stem convolution; growth_rate: channels each dense layer adds
    (k); block_config: dense layers per block; bn_size: bottleneck width factor (bn_size * k);
    dropout: rate after each dense layer (0: none); classes: outputs of the classifier.  The
    features end with a 7x7 average pool, so inputs of about 224x224 pool to one value.
    """

    def __init__(self, num_init_features: int, growth_rate: int, block_config, bn_size: int = 4,
                 dropout: float = 0, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(nn.Conv2D(num_init_features, kernel_size=7, strides=2, padding=3, use_bias=False),
                              nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(pool_size=3, strides=2, padding=1))
            width = num_init_features
            for i, num_layers in enumerate(block_config):
                self.features.add(_dense_block(num_layers, bn_size, growth_rate, dropout, i + 1))
                width += num_layers * growth_rate
                if i != len(block_config) - 1:
                    width //= 2
                    self.features.add(_transition(width))
            self.features.add(nn.BatchNorm(), nn.Activation("relu"), nn.AvgPool2D(pool_size=7), nn.Flatten())
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (stem width, growth rate, dense layers per block)
densenet_spec = {121: (64, 32, [6, 12, 24, 16]),
                 161: (96, 48, [6, 12, 36, 24]),
                 169: (64, 32, [6, 12, 32, 32]),
                 201: (64, 32, [6, 12, 48, 32])}


def get_densenet(num_layers: int, pretrained: bool = False, ctx=cpu(),
                 root: str = os.path.join(data_dir(), "models"), **kwargs) -> DenseNet:
    """DenseNet-BC of depth `num_layers` (121, 161, 169, 201); pretrained: load
    `densenet{depth}-*.params` from `root` onto `ctx`; other keywords go to DenseNet."""
    num_init_features, growth_rate, block_config = densenet_spec[num_layers]
    net = DenseNet(num_init_features, growth_rate, block_config, **kwargs)
    if pretrained:
        load_pretrained(net, f"densenet{num_layers}", ctx, root)
    return net


def _constructor(depth: int):
    return named_constructor(f"densenet{depth}",
                             f"DenseNet-BC {depth}-layer model from \"Densely Connected Convolutional Networks\".",
                             get_densenet, depth, net="DenseNet")


densenet121 = _constructor(121)
densenet161 = _constructor(161)
densenet169 = _constructor(169)
densenet201 = _constructor(201)
