"""Errors raised by the memory managers."""
from __future__ import annotations

from ..base import EmberError


class MemoryManagerError(EmberError, ValueError):
    """A memory manager was misused: unknown manager name, bad size, foreign or double release."""


class OutOfMemoryError(EmberError, MemoryError):
    """The device could not provide the requested bytes, even after the cache was released."""
