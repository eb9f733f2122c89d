"""The shared operator registry and every operator ember ships.

`ember.ops.list()` names the operators, `ember.ops.get(name)` returns one
definition and `ember.ops.override(name, device, fn)` swaps a kernel for every
caller (imperative, symbolic, autograd).  Operator definitions live in the
modules of this package; each registers itself on import.
"""
from __future__ import annotations

import importlib
import pkgutil

from .registry import (REQUIRED, Attr, OpContext, OpDef, as_dtype, exists, get,  # noqa: F401
                       list_ops, override, register)

list = list_ops  # noqa: A001  (MXNet-style name: ember.ops.list())


def _load_definitions() -> None:
    # Every module of this package except the registry defines operators; importing registers them.
    for info in pkgutil.iter_modules(__path__):
        if info.name != "registry" and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_load_definitions()
