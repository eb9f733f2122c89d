"""AlexNet ("One weird trick for parallelizing convolutional neural networks",
https://arxiv.org/abs/1404.5997), as MXNet 1.9.1 builds it."""
from __future__ import annotations

import os

from ....base import data_dir
from ....context import cpu
from ... import nn
from ...block import HybridBlock
from ..model_store import load_pretrained

__all__ = ["AlexNet", "alexnet"]

# (channels, kernel, stride, padding, max-pool 3/2 after it)
_CONVS = [(64, 11, 4, 2, True), (192, 5, 1, 2, True), (384, 3, 1, 1, False), (256, 3, 1, 1, False),
          (256, 3, 1, 1, True)]


class AlexNet(HybridBlock):
    """AlexNet: five ReLU convolutions with three max-pools, two 4096-wide Dense+ReLU layers with
    dropout 0.5, then the `output` classifier of `classes` outputs."""

    def __init__(self, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            with self.features.name_scope():
                for channels, kernel, stride, pad, pool in _CONVS:
                    self.features.add(nn.Conv2D(channels, kernel_size=kernel, strides=stride, padding=pad,
                                                activation="relu"))
                    if pool:
                        self.features.add(nn.MaxPool2D(pool_size=3, strides=2))
                self.features.add(nn.Flatten())
                for _ in range(2):
                    self.features.add(nn.Dense(4096, activation="relu"), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def alexnet(pretrained: bool = False, ctx=cpu(), root: str = os.path.join(data_dir(), "models"),
            **kwargs) -> AlexNet:
    """AlexNet; pretrained: load `alexnet-*.params` from `root` onto `ctx`; other keywords go to AlexNet."""
    net = AlexNet(**kwargs)
    if pretrained:
        load_pretrained(net, "alexnet", ctx, root)
    return net
