"""Inception v3 ("Rethinking the Inception Architecture for Computer Vision",
https://arxiv.org/abs/1512.00567), as MXNet 1.9.1 builds it."""
from __future__ import annotations

import os

from ....base import data_dir
from ....context import cpu
from ... import nn
from ...block import HybridBlock
from ...contrib.nn import HybridConcurrent
from ..model_store import load_pretrained

__all__ = ["Inception3", "inception_v3"]

_CONV_KEYS = ("channels", "kernel_size", "strides", "padding")


def _basic_conv(**conv_args) -> nn.HybridSequential:
    """Bias-free convolution, BatchNorm (epsilon 1e-3), ReLU."""
    unit = nn.HybridSequential(prefix="")
    unit.add(nn.Conv2D(use_bias=False, **conv_args), nn.BatchNorm(epsilon=0.001), nn.Activation("relu"))
    return unit


def _branch(pool, *convs) -> nn.HybridSequential:
    """An optional pool ('avg': 3x3/1 pad 1, 'max': 3x3/2) then basic convolutions, each given as
    (channels, kernel_size, strides, padding) with None for the layer's default."""
    branch = nn.HybridSequential(prefix="")
    if pool == "avg":
        branch.add(nn.AvgPool2D(pool_size=3, strides=1, padding=1))
    elif pool == "max":
        branch.add(nn.MaxPool2D(pool_size=3, strides=2))
    for setting in convs:
        branch.add(_basic_conv(**{k: v for k, v in zip(_CONV_KEYS, setting) if v is not None}))
    return branch


def _split_branch(stem, split) -> nn.HybridSequential:
    """Basic convolutions `stem`, then the convolutions `split` side by side, concatenated."""
    branch = nn.HybridSequential(prefix="")
    branch.add(_branch(None, *stem))
    halves = HybridConcurrent(axis=1, prefix="")
    for conv in split:
        halves.add(_branch(None, conv))
    branch.add(halves)
    return branch


def _mixed(prefix: str, branches) -> HybridConcurrent:
    """A mixed module named `prefix`: `branches` (callables making each branch) concatenated."""
    block = HybridConcurrent(axis=1, prefix=prefix)
    with block.name_scope():
        for make in branches:
            block.add(make())
    return block


def _mixed_a(pool_features: int, prefix: str) -> HybridConcurrent:
    return _mixed(prefix, [
        lambda: _branch(None, (64, 1, None, None)),
        lambda: _branch(None, (48, 1, None, None), (64, 5, None, 2)),
        lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, None, 1)),
        lambda: _branch("avg", (pool_features, 1, None, None))])


def _mixed_b(prefix: str) -> HybridConcurrent:
    return _mixed(prefix, [
        lambda: _branch(None, (384, 3, 2, None)),
        lambda: _branch(None, (64, 1, None, None), (96, 3, None, 1), (96, 3, 2, None)),
        lambda: _branch("max")])


def _mixed_c(c7: int, prefix: str) -> HybridConcurrent:
    return _mixed(prefix, [
        lambda: _branch(None, (192, 1, None, None)),
        lambda: _branch(None, (c7, 1, None, None), (c7, (1, 7), None, (0, 3)), (192, (7, 1), None, (3, 0))),
        lambda: _branch(None, (c7, 1, None, None), (c7, (7, 1), None, (3, 0)), (c7, (1, 7), None, (0, 3)),
                        (c7, (7, 1), None, (3, 0)), (192, (1, 7), None, (0, 3))),
        lambda: _branch("avg", (192, 1, None, None))])


def _mixed_d(prefix: str) -> HybridConcurrent:
    return _mixed(prefix, [
        lambda: _branch(None, (192, 1, None, None), (320, 3, 2, None)),
        lambda: _branch(None, (192, 1, None, None), (192, (1, 7), None, (0, 3)), (192, (7, 1), None, (3, 0)),
                        (192, 3, 2, None)),
        lambda: _branch("max")])


def _mixed_e(prefix: str) -> HybridConcurrent:
    split = [(384, (1, 3), None, (0, 1)), (384, (3, 1), None, (1, 0))]
    return _mixed(prefix, [
        lambda: _branch(None, (320, 1, None, None)),
        lambda: _split_branch([(384, 1, None, None)], split),
        lambda: _split_branch([(448, 1, None, None), (384, 3, None, 1)], split),
        lambda: _branch("avg", (192, 1, None, None))])


def make_aux(classes: int) -> nn.HybridSequential:
    """The auxiliary classifier head of the paper (5x5/3 average pool, 1x1 and 5x5 basic
    convolutions, Dense to `classes`); Inception3 does not use it, as in MXNet."""
    aux = nn.HybridSequential(prefix="")
    aux.add(nn.AvgPool2D(pool_size=5, strides=3), _basic_conv(channels=128, kernel_size=1),
            _basic_conv(channels=768, kernel_size=5), nn.Flatten(), nn.Dense(classes))
    return aux


class Inception3(HybridBlock):
    """Inception v3 with `classes` outputs.  The features end with an 8x8 average pool, so the
    network needs inputs of 299x299 (smaller ones shrink below the pool before it)."""

    def __init__(self, classes: int = 1000, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.features = nn.HybridSequential(prefix="")
            self.features.add(_basic_conv(channels=32, kernel_size=3, strides=2),
                              _basic_conv(channels=32, kernel_size=3),
                              _basic_conv(channels=64, kernel_size=3, padding=1),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              _basic_conv(channels=80, kernel_size=1),
                              _basic_conv(channels=192, kernel_size=3),
                              nn.MaxPool2D(pool_size=3, strides=2),
                              _mixed_a(32, "A1_"), _mixed_a(64, "A2_"), _mixed_a(64, "A3_"),
                              _mixed_b("B_"),
                              _mixed_c(128, "C1_"), _mixed_c(160, "C2_"), _mixed_c(160, "C3_"), _mixed_c(192, "C4_"),
                              _mixed_d("D_"),
                              _mixed_e("E1_"), _mixed_e("E2_"),
                              nn.AvgPool2D(pool_size=8), nn.Dropout(0.5))
            self.output = nn.Dense(classes)

    def hybrid_forward(self, F, x):
        return self.output(self.features(x))


def inception_v3(pretrained: bool = False, ctx=cpu(), root: str = os.path.join(data_dir(), "models"),
                 **kwargs) -> Inception3:
    """Inception v3; pretrained: load `inceptionv3-*.params` from `root` onto `ctx`; other keywords
    go to Inception3."""
    net = Inception3(**kwargs)
    if pretrained:
        load_pretrained(net, "inceptionv3", ctx, root)
    return net
