"""The operator coverage table of docs/ops_coverage.md, generated from the registry.

(A private module name, so that `ember.ops` does not import it with the operator definitions.)

    python3 -m ember.ops._coverage > docs/ops_coverage.md

One row per registered operator: its MXNet aliases, the devices it has kernels for, whether it
has a gradient, its sparse support and its in-place options.  Everything is read from the OpDefs
(and from the imperative sparse-kernel table), so the table says what the registry holds;
tests/ops/test_ops_coverage_table.py fails when the committed file differs from a fresh run.
"""
from __future__ import annotations

import sys
from typing import List

HEADER = """# Operator coverage (generated)

Generated from the operator registry by `python3 -m ember.ops._coverage > docs/ops_coverage.md`;
do not edit by hand (`tests/ops/test_ops_coverage_table.py` fails when this file is out of date).

Columns: **kernels** — devices with a kernel (`any`: one kernel written on `ctx.xp`, numpy on the
CPU and CuPy on a GPU); **gradient** — the op defines a gradient (`no`: no gradient flows through
it); **sparse** — `kernel`: a sparse kernel keeps sparse storage (`docs/sparse.md`), `rule`: the op's
storage-type rule (`OpDef.infer_stype`, MXNet's FInferStorageType) gives sparse results for some sparse
inputs (computed on the stored values, or densely and converted), `fallback`: sparse inputs are
computed on dense copies and the result is dense (MXNet's storage fallback); **in-place** — the
(input, output) pairs that may share storage, `per attrs` when they depend on the attributes;
**mutates** — inputs the op writes in place (optimizer states, BatchNorm statistics).
"""


def _cell(values) -> str:
    values = list(values)
    return ", ".join(values) if values else "-"


def _inplace(op) -> str:
    if callable(op.inplace):
        return "per attrs"
    return _cell(f"{i}->{o}" for i, o in op.inplace)


def _mutates(op) -> str:
    if callable(op.mutates):
        return "per attrs"
    return _cell(str(i) for i in op.mutates)


def rows() -> List[List[str]]:
    """[name, aliases, kernels, gradient, sparse, in-place, mutates] for every registered op, by name."""
    import ember  # noqa: F401  (every module that registers operators or sparse kernels)
    from ..imperative.sparse_ops import SPARSE_KERNELS
    from . import registry
    out = []
    for name in registry.list_ops():
        op = registry.get(name)
        out.append([name, _cell(sorted(op.aliases)), _cell(sorted(op.kernels)),
                    "yes" if op.gradient is not None else "no",
                    "kernel" if name in SPARSE_KERNELS else "rule" if op.infer_stype is not None else "fallback",
                    _inplace(op), _mutates(op)])
    return out


def table() -> str:
    """The whole markdown file."""
    body = rows()
    lines = [HEADER,
             f"{len(body)} operators, {sum(r[3] == 'yes' for r in body)} with a gradient, "
             f"{sum(r[4] == 'kernel' for r in body)} with a sparse kernel, "
             f"{sum(r[4] == 'rule' for r in body)} more with a storage-type rule.\n",
             "| op | aliases | kernels | gradient | sparse | in-place | mutates |",
             "|---|---|---|---|---|---|---|"]
    for r in body:
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    sys.stdout.write(table())


if __name__ == "__main__":
    main()
