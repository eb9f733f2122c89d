"""Scheduling policies: how a device queue orders its ready ops.

Built-in policies live in C (one `case` each in `policy_key` of
native/engine.c); a policy written in Python is any object with a
`key(name, priority, seq, dependants, queue) -> int` method (or a plain
callable with that signature): larger keys run first, ties in push order.
The simulator (ember.engine.lab.simulate) computes the same keys; the rules are
written out in memory_key / comm_key and docs/policy_lab.md.
"""
from __future__ import annotations

from typing import Callable, Union

BUILTIN = {"priority": 0, "fifo": 1, "lifo": 2, "critical_path": 3, "memory_aware": 5, "comm_first": 6}
CUSTOM = 4

# The C engine's constants (native/engine.c): keep in step.
MEM_KEY_MAX = 1 << 52    # the memory-aware byte term is clamped to +-this before * 1024
COMM_BOOST = 1 << 40     # added to a communication op's priority under comm_first
COMM_PREFIXES = ("kvstore", "allreduce")
NO_THRESHOLD = -(1 << 63)  # INT64_MIN: the memory term always applies


def is_comm(name: str) -> bool:
    """Whether comm_first treats an op as communication (its name starts 'kvstore' or 'allreduce')."""
    return bool(name) and name.startswith(COMM_PREFIXES)


def memory_key(mem_bytes: int, priority: int) -> int:
    """The memory-aware key of an op above the threshold: net bytes freed * 1024 + priority."""
    m = max(-MEM_KEY_MAX, min(MEM_KEY_MAX, int(mem_bytes)))
    return m * 1024 + int(priority)


def comm_key(name: str, priority: int) -> int:
    """The comm_first key: communication ops get COMM_BOOST on top of their priority."""
    return COMM_BOOST + int(priority) if is_comm(name) else int(priority)


class MemoryAware:
    """The built-in memory-aware policy with a threshold: while the engine's live-bytes estimate
    (minus the `mem_bytes` hints of every op ended so far) is >= `high_bytes`, a ready op's key is
    its net bytes freed * 1024 + priority; below it, its priority.  `set_policy("memory_aware")`
    is this with no threshold (the memory term always applies)."""

    name = "memory_aware"

    def __init__(self, high_bytes: int = NO_THRESHOLD):
        if not isinstance(high_bytes, int):
            raise TypeError(f"MemoryAware: high_bytes must be an int, got {type(high_bytes).__name__}")
        self.high_bytes = high_bytes

    def __repr__(self):
        return f"MemoryAware(high_bytes={self.high_bytes})"


def memory_high(policy) -> int:
    """The memory-aware threshold a policy spec sets (NO_THRESHOLD unless a MemoryAware object)."""
    return policy.high_bytes if isinstance(policy, MemoryAware) else NO_THRESHOLD


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
    if isinstance(policy, MemoryAware):
        return BUILTIN["memory_aware"], None, "memory_aware"
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
