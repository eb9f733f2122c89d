"""Nested lists of leaves (arrays or symbols) as one flat list and a format that rebuilds the nesting
(MXNet's `_flatten` / `_regroup` in its control-flow functions)."""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple


def flatten(value, leaf: Callable[[Any], Optional[Tuple[list, Any]]], what: str, kind: str) -> Tuple[list, Any]:
    """(flat list, format) of `value`; `leaf(x)` gives (items, format) for a leaf and None otherwise.
    Anything else than leaves and (nested) lists or tuples raises TypeError naming `what` and `kind`."""
    got = leaf(value)
    if got is not None:
        return got
    if isinstance(value, (list, tuple)):
        flat, fmt = [], []
        for v in value:
            f, sub = flatten(v, leaf, what, kind)
            flat.extend(f)
            fmt.append(sub)
        return flat, fmt
    raise TypeError(f"{what} must be {kind} or (nested) lists of {kind}, got {type(value).__name__}")


def regroup(flat: list, fmt, group: Optional[Callable[[list], Any]] = None) -> Tuple[Any, list]:
    """(the nesting `fmt` rebuilt from the front of `flat`, what is left of `flat`).  Formats: None (no
    value), 0 (one leaf), n > 0 (n items made into one leaf by `group`), a list of formats."""
    if fmt is None:
        return None, flat
    if isinstance(fmt, int):
        return (flat[0], flat[1:]) if fmt == 0 else (group(flat[:fmt]), flat[fmt:])
    out = []
    for sub in fmt:
        item, flat = regroup(flat, sub, group)
        out.append(item)
    return out, flat
