"""Operator sub-namespaces of mx.nd: `mx.nd.contrib.X` is the registry op `_contrib_X`, and so on."""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence

from ..ops import registry as _registry


def resolver(label: str, prefixes: Sequence[str], namespace: Optional[dict] = None):
    """(module __getattr__, module __dir__) looking `name` up as `<prefix><name>` in the registry;
    a function found is kept in `namespace` (the module's globals), so later lookups are plain."""
    def getattr_(name: str) -> Callable:
        if not name.startswith("__"):
            for prefix in prefixes:
                if _registry.exists(prefix + name):
                    from .. import ndarray  # mx.nd.<op>, made once and cached by the package
                    fn = getattr(ndarray, prefix + name)
                    if namespace is not None:
                        namespace[name] = fn
                    return fn
        raise AttributeError(f"mx.nd.{label} has no operator '{name}' (looked up as "
                             + " or ".join(f"'{p}{name}'" for p in prefixes) + ")")

    def dir_() -> List[str]:
        names = set()
        for full in _registry.list_ops(include_aliases=True):
            for prefix in prefixes:
                if full.startswith(prefix) and len(full) > len(prefix):
                    names.add(full[len(prefix):])
        return sorted(names)
    return getattr_, dir_
