"""`mx.gluon.contrib.data` (MXNet 1.9.1): `IntervalSampler`, the same class as `gluon.data.IntervalSampler`.

MXNet's `contrib.data.text` (WikiText datasets, downloaded on first use) is not provided.
"""
from ...data.sampler import IntervalSampler  # noqa: F401

__all__ = ["IntervalSampler"]
