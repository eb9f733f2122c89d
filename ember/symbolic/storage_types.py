"""Storage-type inference over a graph (MXNet's InferStorageType pass).

Each operator's rule is its OpDef's `infer_stype` (ember/ops/stype.py); a variable's storage type is
that of the array bound to it (or declared, for `simple_bind`), a head gradient's 'default'.
Executors compute every node densely; the inferred storage types say which outputs and gradients
they hand out as sparse arrays (converted from the dense values at the edge, as MXNet's storage
fallback converts an op's dense result).
"""
from __future__ import annotations

from typing import Dict, Mapping, Sequence, Tuple

STYPE_IDS = {"default": 0, "row_sparse": 1, "csr": 2}
_BY_ID = {str(v): k for k, v in STYPE_IDS.items()}


def declared_stype(code) -> str:
    """A variable's `__storage_type__` attribute (MXNet's id, or the name) as a storage-type name."""
    if code is None:
        return "default"
    code = str(code)
    return _BY_ID.get(code, code if code in STYPE_IDS else "default")


def infer_entry_stypes(nodes: Sequence, var_stypes: Mapping[str, str]) -> Dict[Tuple[int, int], str]:
    """(id(node), output index) -> storage type for every entry of `nodes` (in topological order);
    variables not in `var_stypes` are 'default'.  An operator's rule may raise (a combination the
    operator refuses): the error names the node."""
    out: Dict[Tuple[int, int], str] = {}
    for node in nodes:
        if node.op is None:
            out[(id(node), 0)] = var_stypes.get(node.name, "default")
            continue
        ins = [out.get((id(c), j), "default") for c, j in node.inputs]
        if node.op.infer_stype is None:
            stypes = ["default"] * node.num_outputs()
        else:
            stypes = node.op.stypes(node.parsed_attrs, ins)
        for i, s in enumerate(stypes):
            out[(id(node), i)] = s
    return out
