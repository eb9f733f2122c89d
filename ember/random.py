"""`mx.random`: seeding and sampling on the per-device generators."""
from __future__ import annotations

from .imperative.resources import seed  # noqa: F401
from .ndarray.random import normal, randint, uniform  # noqa: F401
