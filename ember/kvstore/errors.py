"""Errors raised by the key-value store."""
from __future__ import annotations

from ..base import EmberError


class KVStoreError(EmberError):
    """A key-value store was used wrongly (unknown key, double init, bad value...)."""


class KVStoreShapeError(KVStoreError, ValueError):
    """Pushed/pulled arrays do not match the shape or dtype a key was initialised with."""


class KVStoreKeyTypeError(KVStoreError, TypeError):
    """A store's keys mix int and str (MXNet: 'Mixed key types are not allowed')."""


class KVStoreCommError(KVStoreError):
    """Cross-process communication failed (an MPI error, a peer that died or diverged)."""


class KVStoreTimeoutError(KVStoreCommError, TimeoutError):
    """A peer did not answer within EMBER_KVSTORE_TIMEOUT seconds (it probably died)."""
