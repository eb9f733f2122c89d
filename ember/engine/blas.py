"""One thread budget for the engine and the BLAS library under numpy.

With several CPU workers, each running numpy kernels, a multi-threaded BLAS
(OpenBLAS or MKL spinning up its own pool per call) oversubscribes the cores:
measured here, a ResNet-18 training step ran 3-5x slower with 2 workers x 2
BLAS threads than with 2 workers x 1 BLAS thread (MXNet users hit the same
problem: OMP threads x engine workers).  So when the engine has more than one
CPU worker, ember pins BLAS to one thread per call unless the user chose a
number (EMBER_BLAS_THREADS, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS or
MKL_NUM_THREADS), and the parallelism comes from the engine's workers.
"""
from __future__ import annotations

import os
from typing import Optional

_USER_KNOBS = ("EMBER_BLAS_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_limiter = None


def set_blas_threads(n: Optional[int]) -> bool:
    """Limit BLAS to `n` threads per call (None: restore the library default). False if threadpoolctl is absent."""
    global _limiter
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    if _limiter is not None:
        _limiter.restore_original_limits()
        _limiter = None
    if n is not None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"BLAS thread count must be a positive int, got {n!r}")
        _limiter = threadpool_limits(limits=n, user_api="blas")
    return True


def configure(cpu_workers: int) -> Optional[int]:
    """Apply the default budget at import; returns the BLAS thread count set (None if left alone)."""
    explicit = os.environ.get("EMBER_BLAS_THREADS")
    if explicit:
        try:
            n = int(explicit)
        except ValueError:
            raise ValueError(f"EMBER_BLAS_THREADS={explicit!r} is not an integer") from None
        set_blas_threads(n)
        return n
    if cpu_workers > 1 and not any(os.environ.get(k) for k in _USER_KNOBS):
        return 1 if set_blas_threads(1) else None
    return None
