"""The thread budget of the BLAS library under numpy, next to the engine's workers.

Engine workers run numpy kernels; OpenBLAS/MKL may add a thread pool per call.  Measured here
(2 cores, `bench/train_speed.py` and the anchors' `train_step.py`), leaving BLAS at its default of
2 threads beside 2 engine workers was faster than pinning it to 1 (MLP 19.0k vs 12.6k samples/s,
LeNet 1.9k vs 1.5k, ResNet-18 5.5 vs 4.5 steps/s): these nets are chains, so one worker's GEMM
using both cores beats branch parallelism.  So ember leaves BLAS alone by default;
`EMBER_BLAS_THREADS=n` (or `set_blas_threads(n)`) sets it, e.g. 1 for graphs with wide independent
branches (bench/engine_parallel.py pins 1 and gets its speed-up from the workers).  While BLAS uses
every core (`uses_every_core`), imperative ops with large outputs run in their caller instead of on a
worker (ember.imperative.invoke.LARGE_OPS_IN_CALLER).
"""
from __future__ import annotations

import os
from typing import Optional

_limiter = None
_threads: Optional[int] = None  # BLAS's thread count, as last looked up (None: not looked up since a change)
_CORES = os.cpu_count() or 1  # (os.cpu_count costs ~10 us a call: read once)


def set_blas_threads(n: Optional[int]) -> bool:
    """Limit BLAS to `n` threads per call (None: restore the library default). False if threadpoolctl is absent."""
    global _limiter, _threads
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    _threads = None
    if _limiter is not None:
        _limiter.restore_original_limits()
        _limiter = None
    if n is not None:
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"BLAS thread count must be a positive int, got {n!r}")
        _limiter = threadpool_limits(limits=n, user_api="blas")
    return True


def uses_every_core() -> bool:
    """Whether a BLAS call may use every core (the libraries' default, one thread per core, unless
    limited by set_blas_threads or OMP/OPENBLAS_NUM_THREADS).  Then an engine worker running a large
    kernel buys no parallelism over the thread that wants it, and costs that thread a core
    (ember.imperative.invoke.execute runs such kernels in their caller).  Looked up once per limit
    (threadpoolctl; without it, assumed)."""
    global _threads
    if _threads is None:
        try:
            from threadpoolctl import threadpool_info
            # (a sequential BLAS, oneMKL's under ember's native kernels, has no threads: the team splits its products)
            counts = [lib.get("num_threads") or 1 for lib in threadpool_info()
                      if lib.get("user_api") == "blas" and lib.get("threading_layer") != "sequential"]
        except ImportError:
            counts = []
        _threads = min(counts) if counts else _CORES
    return _threads >= _CORES


def env_int(name: str, low: int) -> Optional[int]:
    """The integer in environment variable `name` (None when unset or empty); ValueError naming the
    variable when it is not an integer or is below `low`."""
    value = os.environ.get(name)
    if not value:
        return None
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not an integer") from None
    if n < low:
        raise ValueError(f"{name}={value!r} must be at least {low}")
    return n


def configure() -> Optional[int]:
    """Apply EMBER_BLAS_THREADS at import; returns the BLAS thread count set (None if left alone)."""
    n = env_int("EMBER_BLAS_THREADS", 1)
    if n is not None:
        set_blas_threads(n)
    return n
