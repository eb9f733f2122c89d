"""`mx.numpy_op_signature`: find the Python function of a registered NumPy-interface operator.

MXNet names its NumPy operators `_np_<name>` (mx.np), `_np_random_<name>` / `_np_linalg_<name>`
(mx.np.random / mx.np.linalg) and `_npx_<name>` (mx.npx, with `_npx_image_` / `_npx_random_`
submodules); `_get_builtin_op` maps such a name to the function those modules expose.
"""
from __future__ import annotations

from typing import Callable, Optional

# submodule prefixes MXNet 1.9.1 recognises after `_np_` and `_npx_`
_NP_SUBMODULES = ("_random_", "_linalg_")
_NPX_SUBMODULES = ("_image_", "_random_")


def _get_builtin_op(op_name: str) -> Optional[Callable]:
    """The mx.np / mx.npx function of operator `op_name`; None for a name outside those
    namespaces, ValueError when the namespace has no such submodule or function."""
    from . import numpy as mx_np
    from . import numpy_extension as mx_npx

    if op_name.startswith("_npx_"):
        module, prefix, submodules = mx_npx, "_npx_", _NPX_SUBMODULES
    elif op_name.startswith("_np_"):
        module, prefix, submodules = mx_np, "_np_", _NP_SUBMODULES
    else:
        return None
    rest = op_name[len(prefix):]
    for sub in submodules:
        if rest.startswith(sub):
            found = getattr(module, sub[1:-1], None)
            if found is None:
                raise ValueError(f"Cannot find submodule {sub[1:-1]} in module {module.__name__}")
            module, rest = found, rest[len(sub):]
            break
    op = getattr(module, rest, None)
    if op is None:
        raise ValueError(f"Cannot find operator {rest} in module {module.__name__}")
    return op


def _register_op_signatures() -> None:
    """Give each documented operator's function the signature `_numpy_op_doc` states for it."""
    import inspect

    from . import _numpy_op_doc

    for name in dir(_numpy_op_doc):
        op = _get_builtin_op(name)
        if op is not None:
            op.__signature__ = inspect.signature(getattr(_numpy_op_doc, name))


_register_op_signatures()
