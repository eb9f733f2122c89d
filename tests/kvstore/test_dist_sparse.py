"""row_sparse pushes and row_sparse_pull on the distributed stores (real MPI jobs through the launcher)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mpi4py")
from ember.kvstore import launch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "_dist_sparse_worker.py")
MARKER = "EMBER_KV_TEST_RUN"  # conftest.py finds leftover processes by this variable

try:
    launch.find_mpiexec()
    HAVE_MPIEXEC = True
except SystemExit:
    HAVE_MPIEXEC = False


def _run(tmp_path, kind: str, workers: int, servers: int, limit: int = 120) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, HERE]), **{MARKER: str(os.getpid())})
    cmd = [sys.executable, "-m", "ember.kvstore.launch", "-n", str(workers), "-s", str(servers),
           "--job-timeout", str(limit), sys.executable, WORKER, kind, str(tmp_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=limit + 30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"MPI job hung:\n{out[-3000:]}")
    assert proc.returncode == 0, out[-3000:]
    return out


@pytest.mark.skipif(not HAVE_MPIEXEC, reason="no mpiexec (pip install mpich)")
@pytest.mark.parametrize("kind,servers", [("dist_sync", 0), ("dist_async", 1)])
def test_row_sparse_pushes_are_summed_over_workers_and_row_sparse_pull_reads_them(tmp_path, kind, servers):
    sys.path.insert(0, HERE)
    try:
        import _dist_sparse_worker as ref
    finally:
        sys.path.remove(HERE)
    workers = 2
    _run(tmp_path, kind, workers, servers)
    total = sum(ref.gradient(r) for r in range(workers))
    if kind == "dist_sync":  # no updater: the store holds the last push's sum over the workers
        expected = total
    else:  # SGD (lr 0.5) on the servers, one update per push
        expected = np.ones(ref.SHAPE, np.float32) - 0.5 * 2 * total
    for r in range(workers):
        got = np.load(tmp_path / f"rank{r}.npz")
        np.testing.assert_allclose(got["dense"], expected, rtol=1e-6)
        np.testing.assert_array_equal(got["rows_index"], [0, 4])  # unique, sorted ids
        np.testing.assert_allclose(got["rows_data"], expected[[0, 4]], rtol=1e-6)
