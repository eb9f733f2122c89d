"""Contrib layers (MXNet 1.9.1's `gluon.contrib.nn.basic_layers`).

Concurrent/HybridConcurrent feed one input to every child and concatenate the outputs;
Identity passes its input through; SparseEmbedding is an Embedding whose weight and gradient
are row_sparse parameters (read through a Trainer); SyncBatchNorm is BatchNorm whose statistics
would be shared across devices (ember runs it on one device); PixelShuffle1D/2D/3D move channel
groups into the spatial axes with Reshape/transpose.
"""
from __future__ import annotations

import warnings

from .... import context
from .... import ndarray as nd
from ...block import Block, HybridBlock
from ...nn import BatchNorm, HybridSequential, Sequential

__all__ = ["Concurrent", "HybridConcurrent", "Identity", "SparseEmbedding", "SyncBatchNorm",
           "PixelShuffle1D", "PixelShuffle2D", "PixelShuffle3D"]


class Concurrent(Sequential):
    """Runs every child on the same input and concatenates their outputs along `axis`."""

    def __init__(self, axis: int = -1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return nd.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Concurrent for HybridBlocks (hybridizable: the concatenation is one Concat operator)."""

    def __init__(self, axis: int = -1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Returns its input unchanged (a residual branch in a HybridConcurrent)."""

    def hybrid_forward(self, F, x):
        return x


class SparseEmbedding(Block):
    """Embedding for very large vocabularies: the weight (input_dim, output_dim) and its gradient are
    row_sparse parameters, so a Trainer pulls and updates only the rows a batch uses.

    The weight is read with `row_sparse_data(x)`, which needs a Trainer made with the parameters.
    """

    def __init__(self, input_dim: int, output_dim: int, dtype="float32", weight_initializer=None, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype, "sparse_grad": True}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim), init=weight_initializer, dtype=dtype,
                                      grad_stype="row_sparse", stype="row_sparse")

    def forward(self, x):
        weight = self.weight.row_sparse_data(x)
        return nd.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self) -> str:
        k = self._kwargs
        return f"{type(self).__name__}({k['input_dim']} -> {k['output_dim']}, {k['dtype']})"


class SyncBatchNorm(BatchNorm):
    """Cross-device batch normalisation (Zhang et al., 2018) over axis 1.

    ember runs it on one device (`num_devices` must be 1), where it is BatchNorm; the operator
    is `_contrib_SyncBatchNorm` with MXNet's attributes (`ndev`, `key` = the block's prefix).
    """

    def __init__(self, in_channels: int = 0, num_devices=None, momentum: float = 0.9, epsilon: float = 1e-5,
                 center: bool = True, scale: bool = True, use_global_stats: bool = False, beta_initializer="zeros",
                 gamma_initializer="ones", running_mean_initializer="zeros", running_variance_initializer="ones",
                 **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
                         use_global_stats=use_global_stats, beta_initializer=beta_initializer,
                         gamma_initializer=gamma_initializer, running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer, in_channels=in_channels,
                         **kwargs)
        num_devices = self._get_num_devices() if num_devices is None else num_devices
        self._kwargs = {"eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats, "ndev": num_devices, "key": self.prefix}

    def _get_num_devices(self) -> int:
        warnings.warn("Caution using SyncBatchNorm: if not using all the GPUs, please mannually set num_devices",
                      UserWarning)
        return max(context.num_gpus(), 1)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.contrib.SyncBatchNorm(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)


def _factors(factor, n: int):
    """`factor` as an n-tuple of ints (a number is used for every axis)."""
    try:
        return (int(factor),) * n
    except TypeError:
        factors = tuple(int(f) for f in factor)
        assert len(factors) == n, f"wrong length {len(factors)}"
        return factors


class PixelShuffle1D(HybridBlock):
    """(N, f*C, W) -> (N, C, W*f): each channel group of size f becomes f neighbouring positions."""

    def __init__(self, factor):
        super().__init__()
        self._factor = int(factor)

    def hybrid_forward(self, F, x):
        f = self._factor
        x = F.reshape(x, (0, -4, -1, f, 0))      # (N, C, f, W)
        x = F.transpose(x, (0, 1, 3, 2))         # (N, C, W, f)
        return F.reshape(x, (0, 0, -3))          # (N, C, W*f)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._factor})"


class PixelShuffle2D(HybridBlock):
    """(N, f1*f2*C, H, W) -> (N, C, H*f1, W*f2) (Shi et al., 2016: sub-pixel convolution upsampling)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 2)

    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2, 0, 0))    # (N, C, f1*f2, H, W)
        x = F.reshape(x, (0, 0, -4, f1, f2, 0, 0))      # (N, C, f1, f2, H, W)
        x = F.transpose(x, (0, 1, 4, 2, 5, 3))          # (N, C, H, f1, W, f2)
        return F.reshape(x, (0, 0, -3, -3))             # (N, C, H*f1, W*f2)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._factors})"


class PixelShuffle3D(HybridBlock):
    """(N, f1*f2*f3*C, D, H, W) -> (N, C, D*f1, H*f2, W*f3)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 3)

    def hybrid_forward(self, F, x):
        f1, f2, f3 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2 * f3, 0, 0, 0))  # (N, C, f1*f2*f3, D, H, W)
        x = F.reshape(x, (0, 0, -4, f1, f2 * f3, 0, 0, 0))    # (N, C, f1, f2*f3, D, H, W)
        x = F.reshape(x, (0, 0, 0, -4, f2, f3, 0, 0, 0))      # (N, C, f1, f2, f3, D, H, W)
        x = F.transpose(x, (0, 1, 5, 2, 6, 3, 7, 4))          # (N, C, D, f1, H, f2, W, f3)
        return F.reshape(x, (0, 0, -3, -3, -3))               # (N, C, D*f1, H*f2, W*f3)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._factors})"
