"""Normalising MXNet-style (key, value) arguments: a key or a list of keys, each with one
value or a list of values (one per device)."""
from __future__ import annotations

import numbers
from typing import Any, Dict, List, Sequence, Tuple, Union

from .errors import KVStoreError, KVStoreKeyTypeError

Key = Union[int, str]


def check_key(key: Any) -> Key:
    """Return `key` as an int or str key, or raise KVStoreError naming the bad key."""
    if isinstance(key, str):
        return key
    if isinstance(key, numbers.Integral) and not isinstance(key, bool):
        return int(key)
    raise KVStoreError(f"kvstore keys must be int or str, got {type(key).__name__} {key!r}")


def _is_array(x: Any) -> bool:
    return hasattr(x, "_data") and hasattr(x, "var")


def _as_value_list(key: Key, value: Any, what: str) -> List[Any]:
    if _is_array(value):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(_is_array(v) for v in value):
        return list(value)
    if isinstance(value, (list, tuple)) and not value:
        raise KVStoreError(f"empty list of {what} for key {key!r}")
    raise KVStoreError(f"{what} for key {key!r} must be an NDArray or a list of NDArrays, "
                       f"got {type(value).__name__}")


def group(keys: Any, values: Any, what: str = "values") -> List[Tuple[Key, List[Any]]]:
    """Pair keys with their arrays, MXNet style, merging repeated keys in first-seen order.

    `group(3, a)`, `group(3, [a, b])`, `group([3, 4], [a, b])`, `group([3, 4], [[a, b], [c, d]])`.
    """
    if values is None:
        raise KVStoreError(f"no {what} given")
    if isinstance(keys, (list, tuple)):
        if not keys:
            raise KVStoreError("empty list of keys")
        if not isinstance(values, (list, tuple)) or len(values) != len(keys):
            got = len(values) if isinstance(values, (list, tuple)) else 1
            raise KVStoreError(f"{len(keys)} keys but {got} {what}: give one entry per key")
        pairs = [(check_key(k), _as_value_list(k, v, what)) for k, v in zip(keys, values)]
    else:
        key = check_key(keys)
        pairs = [(key, _as_value_list(key, values, what))]
    merged: Dict[Key, List[Any]] = {}
    for key, vals in pairs:
        merged.setdefault(key, []).extend(vals)
    return list(merged.items())


def check_one_kind(keys: Sequence[Key], existing: Any = None) -> None:
    """MXNet's rule: a store's keys are all int or all str; `existing` is a key the store already has."""
    every = list(keys) if existing is None else [*keys, existing]
    if len({type(k) for k in every}) > 1:
        ints = [k for k in every if isinstance(k, int)]
        strs = [k for k in every if isinstance(k, str)]
        raise KVStoreKeyTypeError(f"Mixed key types are not allowed: int keys {describe(ints)} and str keys "
                                  f"{describe(strs)} in one kvstore")


def stable_hash(key: Key) -> int:
    """A hash that is the same in every process (Python's str hash is salted per process)."""
    if isinstance(key, int):
        return key & 0x7FFFFFFF
    import zlib
    return zlib.crc32(key.encode("utf-8")) & 0x7FFFFFFF


def describe(keys: Sequence[Key], limit: int = 6) -> str:
    """A short text naming keys for error messages."""
    shown = ", ".join(repr(k) for k in list(keys)[:limit])
    return f"[{shown}{', ...' if len(keys) > limit else ''}]"
