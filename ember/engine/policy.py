"""Scheduling policies: how a device queue orders its ready ops.

Built-in policies live in C (one `case` each in `policy_key` of
native/engine.c); a policy written in Python is any object with a
`key(name, priority, seq, dependants, queue) -> int` method (or a plain
callable with that signature): larger keys run first, ties in push order.
"""
from __future__ import annotations

from typing import Callable, Union

BUILTIN = {"priority": 0, "fifo": 1, "lifo": 2, "critical_path": 3}
CUSTOM = 4


class PythonPolicy:
    """Base class for policies written in Python (slow, meant for experiments)."""

    name = "python"

    def key(self, name: str, priority: int, seq: int, dependants: int, queue: int) -> int:
        raise NotImplementedError


class ShortestNameFirst(PythonPolicy):
    """Example experiment: ops whose names sort first run first."""

    name = "shortest_name_first"

    def key(self, name, priority, seq, dependants, queue):
        return -len(name or "")


PolicySpec = Union[str, PythonPolicy, Callable[[str, int, int, int, int], int]]


def resolve(policy: PolicySpec):
    """(code, python_key_fn or None, display name) for a policy given by name or object."""
    if isinstance(policy, str):
        code = BUILTIN.get(policy.lower())
        if code is None:
            raise ValueError(f"unknown scheduling policy {policy!r}; built-in: {sorted(BUILTIN)} "
                             "or pass an object with a key(name, priority, seq, dependants, queue) method")
        return code, None, policy.lower()
    key = getattr(policy, "key", None)
    if key is None and callable(policy):
        key = policy
    if not callable(key):
        raise TypeError(f"a scheduling policy must be a name or have a key() method, got {type(policy).__name__}")
    return CUSTOM, key, getattr(policy, "name", type(policy).__name__)
