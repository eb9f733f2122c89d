"""mx.nd.sparse.dot(csr, dense) against scipy's `csr @ dense` on the same matrices.

    python bench/sparse_dot.py [--rows 10000] [--density 0.01] [--cols 64] [--reps 15]

A rows x rows float32 CSR matrix with `density` of its entries set, times a dense rows x cols
matrix.  The two are timed interleaved (ember, scipy, ember, ...) so that load from other
processes on a shared machine hits both alike; each ember call is waited for (`wait_to_read`).
Prints one JSON line: the median seconds of each and ember / scipy (the goal is <= 1.5).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import scipy.sparse as spsp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import ember as mx  # noqa: E402
from _util import emit  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=10000)
    p.add_argument("--density", type=float, default=0.01)
    p.add_argument("--cols", type=int, default=64)
    p.add_argument("--reps", type=int, default=15)
    a = p.parse_args()

    rng = np.random.default_rng(0)
    csr = spsp.random(a.rows, a.rows, density=a.density, format="csr", dtype=np.float32, random_state=rng)
    dense = rng.standard_normal((a.rows, a.cols)).astype(np.float32)
    lhs = mx.nd.sparse.csr_matrix(csr)
    rhs = mx.nd.array(dense)
    mx.nd.waitall()

    got = mx.nd.sparse.dot(lhs, rhs).asnumpy()  # warm-up, and the answers must agree
    np.testing.assert_allclose(got, csr @ dense, rtol=1e-4, atol=1e-4)

    t_ember, t_scipy = [], []
    for _ in range(a.reps):
        t0 = time.perf_counter()
        mx.nd.sparse.dot(lhs, rhs).wait_to_read()
        t_ember.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        csr @ dense
        t_scipy.append(time.perf_counter() - t0)
    e, s = statistics.median(t_ember), statistics.median(t_scipy)
    emit("sparse_dot", rows=a.rows, density=a.density, cols=a.cols, nnz=int(csr.nnz), reps=a.reps,
         ember_s=round(e, 6), scipy_s=round(s, 6), ratio=round(e / s, 3))


if __name__ == "__main__":
    main()
