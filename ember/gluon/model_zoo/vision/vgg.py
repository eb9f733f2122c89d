"""VGG ("Very Deep Convolutional Networks for Large-Scale Image Recognition",
https://arxiv.org/abs/1409.1556), with and without BatchNorm, as MXNet 1.9.1 builds it."""
from __future__ import annotations

import os

from ....base import data_dir
from ....context import cpu
from ....initializer import Xavier
from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained, named_constructor

__all__ = ["VGG",
           "vgg11", "vgg13", "vgg16", "vgg19",
           "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn",
           "get_vgg"]


class VGG(HybridBlock):
    """VGG: groups of 3x3 convolutions (each with ReLU, and BatchNorm when `batch_norm`), a 2x2
    max-pool after each group, then two 4096-wide Dense+ReLU layers with dropout 0.5 and the
    `output` classifier.

    layers: convolutions per group; filters: the width of each group (as long as `layers`);
    classes: outputs of the classifier.
    """

    def __init__(self, layers, filters, classes: int = 1000, batch_norm: bool = False, **kwargs):
        super().__init__(**kwargs)
        assert len(layers) == len(filters)
        with self.name_scope():
            self.features = self._make_features(layers, filters, batch_norm)
            for _ in range(2):
                self.features.add(nn.Dense(4096, activation="relu", weight_initializer="normal",
                                           bias_initializer="zeros"))
                self.features.add(nn.Dropout(rate=0.5))
            self.output = nn.Dense(classes, weight_initializer="normal", bias_initializer="zeros")

    @staticmethod
    def _make_features(layers, filters, batch_norm: bool) -> nn.HybridSequential:
        features = nn.HybridSequential(prefix="")
        for count, width in zip(layers, filters):
            for _ in range(count):
                features.add(nn.Conv2D(width, kernel_size=3, padding=1,
                                       weight_initializer=Xavier(rnd_type="gaussian", factor_type="out",
                                                                 magnitude=2),
                                       bias_initializer="zeros"))
                if batch_norm:
                    features.add(nn.BatchNorm())
                features.add(nn.Activation("relu"))
            features.add(nn.MaxPool2D(strides=2))
        return features

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


# depth -> (convolutions per group, group widths)
vgg_spec = {11: ([1, 1, 2, 2, 2], [64, 128, 256, 512, 512]),
            13: ([2, 2, 2, 2, 2], [64, 128, 256, 512, 512]),
            16: ([2, 2, 3, 3, 3], [64, 128, 256, 512, 512]),
            19: ([2, 2, 4, 4, 4], [64, 128, 256, 512, 512])}


def get_vgg(num_layers: int, pretrained: bool = False, ctx=cpu(),
            root: str = os.path.join(data_dir(), "models"), **kwargs) -> VGG:
    """VGG of depth `num_layers` (11, 13, 16, 19); `batch_norm=True` adds BatchNorm.

    pretrained: load `vgg{depth}[_bn]-*.params` from `root` onto `ctx`; other keywords go to VGG.
    """
    layers, filters = vgg_spec[num_layers]
    net = VGG(layers, filters, **kwargs)
    if pretrained:
        load_pretrained(net, f"vgg{num_layers}{'_bn' if kwargs.get('batch_norm') else ''}", ctx, root)
    return net


def _constructor(depth: int, batch_norm: bool):
    return named_constructor(f"vgg{depth}{'_bn' if batch_norm else ''}",
                             f"VGG-{depth} model{' with batch normalization' if batch_norm else ''} from "
                             '"Very Deep Convolutional Networks for Large-Scale Image Recognition".',
                             get_vgg, depth, net="VGG", **({"batch_norm": True} if batch_norm else {}))


vgg11 = _constructor(11, False)
vgg13 = _constructor(13, False)
vgg16 = _constructor(16, False)
vgg19 = _constructor(19, False)
vgg11_bn = _constructor(11, True)
vgg13_bn = _constructor(13, True)
vgg16_bn = _constructor(16, True)
vgg19_bn = _constructor(19, True)
