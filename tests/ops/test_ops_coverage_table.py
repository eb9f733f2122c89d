"""docs/ops_coverage.md is the registry's coverage table as `python3 -m ember.ops._coverage` prints it now."""
import os
import subprocess
import sys

from ember import ops
from ember.ops import _coverage

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "ops_coverage.md")


def test_committed_table_matches_the_registry():
    with open(DOC, encoding="utf-8") as f:
        committed = f.read()
    # a fresh interpreter: other tests in this process override kernels or register test operators
    fresh = subprocess.run([sys.executable, "-m", "ember.ops._coverage"], capture_output=True, text=True,
                           check=True, cwd=os.path.join(os.path.dirname(__file__), "..", "..")).stdout
    assert committed == fresh, (
        "docs/ops_coverage.md is out of date: regenerate it with "
        "`python3 -m ember.ops._coverage > docs/ops_coverage.md`")


def test_table_has_one_row_per_operator_with_registry_facts():
    rows = {r[0]: r for r in _coverage.rows()}
    assert sorted(rows) == ops.list()
    assert rows["dot"][4] == "kernel"            # csr . dense keeps sparse storage
    assert rows["Convolution"][4] == "fallback"
    assert rows["exp"][3] == "yes"
    assert rows["_contrib_getnnz"][4] == "kernel"
    sgd = ops.get("sgd_update")
    assert rows["sgd_update"][6] == ("per attrs" if callable(sgd.mutates) else
                                     ", ".join(str(i) for i in sgd.mutates) or "-")
    no_grad = [n for n in ops.list() if ops.get(n).gradient is None]
    assert no_grad and all(rows[n][3] == "no" for n in no_grad)
