"""`mx.operator`: operator introspection (and, in its own section, custom operators in Python)."""
from __future__ import annotations

from collections import namedtuple
from typing import List

from . import ops as _ops
from .base import OperatorError

# -- introspection of the registry (MXNet's get_all_registered_operators / get_operator_arguments) --

OperatorArguments = namedtuple("OperatorArguments", ["narg", "names", "types"])

_KIND_NAMES = {"int": "int", "float": "float", "bool": "boolean", "str": "string", "shape": "Shape(tuple)",
               "dtype": "dtype", "any": "any"}


def get_all_registered_operators() -> List[str]:
    """Names of every registered operator, aliases included (MXNet lists those too)."""
    return _ops.list_ops(include_aliases=True)


def _attr_type(spec) -> str:
    """An attribute's type in MXNet's words: 'int, required', 'float, optional, default=0.5'."""
    kind = spec.kind
    optional_none = kind.endswith("_or_none")
    base = kind[: -len("_or_none")] if optional_none else kind
    if spec.choices:
        text = "{" + ", ".join(repr(c) for c in spec.choices) + "}"
    else:
        text = _KIND_NAMES.get(base, base) + (" or None" if optional_none else "")
    if spec.default is _ops.registry.REQUIRED:
        return f"{text}, required"
    return f"{text}, optional, default={spec.format(spec.default)}"


def _input_names(opdef) -> List[str]:
    # Inputs may depend on attributes (no_bias, num_args): use the defaults, as MXNet's docs do.
    attrs = {k: (None if v.default is _ops.registry.REQUIRED else v.default) for k, v in opdef.attrs.items()}
    try:
        return opdef.input_names(attrs) + opdef.aux_names(attrs)
    except Exception:  # an input list that needs a required attribute: name the first input only
        return ["data"]


def get_operator_arguments(op_name: str) -> OperatorArguments:
    """(narg, names, types) of an operator: its inputs ('NDArray-or-Symbol', '[]' for variadic
    inputs) then its attributes, as MXNet's get_operator_arguments returns them."""
    if not isinstance(op_name, str):
        raise TypeError(f"get_operator_arguments: op_name must be a string, got {type(op_name).__name__}")
    if not _ops.exists(op_name):
        raise OperatorError(f"Operator {op_name} is not registered")
    opdef = _ops.get(op_name)
    names, types = [], []
    if opdef.key_var_num_args:
        names.append("data")
        types.append("NDArray-or-Symbol[]")
    else:
        for n in _input_names(opdef):
            names.append(n)
            types.append("NDArray-or-Symbol")
    for key, spec in opdef.attrs.items():
        names.append(key)
        types.append(_attr_type(spec))
    return OperatorArguments(len(names), names, types)
