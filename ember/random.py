"""`mx.random`: seeding and sampling on the per-device generators."""
from __future__ import annotations

from .imperative.resources import seed  # noqa: F401
from .ndarray.random import exponential, gamma, normal, poisson, randint, randn, uniform  # noqa: F401
