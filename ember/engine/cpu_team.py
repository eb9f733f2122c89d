"""One team of CPU threads for BLAS's parallel regions and ember's kernels (native/thread_pool.h).

numpy's OpenBLAS keeps a pool of its own whose threads busy-wait ~0.1 s after every call; during a
training step they hold every other core, so ember's kernels between two GEMMs ran on one core
while the others spun.  At import ember hands OpenBLAS's parallel regions to its own team
(OpenBLAS's threads callback, OpenBLAS >= 0.3.27), and its kernels split their loops over the same
threads, which wait only briefly between jobs.  It also hands a cblas_sgemm to the native kernels
that run products of their own (native/gemm.h: an LSTM's time steps): oneMKL's when the optional `mkl`
package is installed (`pip install ember[mkl]`; its sequential layer, each product split over the team,
faster than OpenBLAS on Intel CPUs), else numpy's.

    threads()        the team's size, the calling thread included
    set_threads(n)   the team's size for the kernels (BLAS keeps its own thread count)
    blas_libraries() the paths of the BLAS libraries whose regions the team runs (numpy's, scipy's)
    gemm_library()   the path of the library whose cblas_sgemm native kernels call (native/gemm.h)

Size: `EMBER_CPU_THREADS`, else `OMP_NUM_THREADS` (MXNet's knob for its operators' threads),
else the cores this process may run on.  `EMBER_CPU_SPIN_US` sets how long a helper busy-waits
for the next job before it sleeps (default 200).  `EMBER_CPU_TEAM=0` leaves OpenBLAS's own pool
alone (the kernels still use the team and the sgemm).  `EMBER_GEMM=openblas` keeps numpy's sgemm
for the native kernels even where MKL is installed.
"""
from __future__ import annotations

import ctypes
import glob
import os
import sys
from typing import List, Optional, Tuple

from ._native import ffi, lib
from .blas import env_int

# The setter under the names OpenBLAS builds export it by: plain, and numpy's scipy-openblas
# wheels (ILP64 with a "64_" suffix, or 32-bit integers).
_SETTERS = ("openblas_set_threads_callback_function", "scipy_openblas_set_threads_callback_function64_",
            "scipy_openblas_set_threads_callback_function")
# cblas_sgemm likewise, with whether its sizes are 64-bit
_SGEMMS = (("cblas_sgemm64_", True), ("scipy_cblas_sgemm64_", True), ("scipy_cblas_sgemm", False),
           ("cblas_sgemm", False))
_blas_paths: Optional[List[str]] = None
_gemm: Optional[Tuple[str, int, bool]] = None   # the installed sgemm: (library path, address, 64-bit sizes)


def threads() -> int:
    """The number of threads a kernel's loop may be split over, the caller included."""
    return int(lib.ember_pool_threads())


def set_threads(n: int) -> None:
    """Set the team's size for ember's kernels (1: every kernel runs on its caller)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"CPU thread count must be a positive int, got {n!r}")
    lib.ember_pool_set_threads(n)


def blas_libraries() -> List[str]:
    """The BLAS libraries whose parallel regions run on the team."""
    return list(_blas_paths or ())


def gemm_library() -> Optional[str]:
    """The BLAS library whose sgemm the native kernels call (None: none found, they leave it to numpy):
    oneMKL's mkl_rt when the `mkl` package is installed, else numpy's OpenBLAS."""
    return _gemm[0] if _gemm else None


def _default_size() -> int:
    explicit = env_int("EMBER_CPU_THREADS", 1)
    if explicit is not None:
        return explicit
    omp = os.environ.get("OMP_NUM_THREADS", "").split(",")[0]  # OpenMP's own knob: a bad value is OpenMP's to judge
    if omp.isdigit() and int(omp) >= 1:
        return int(omp)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _openblas_handles() -> List[Tuple[str, ctypes.CDLL]]:
    """(path, handle) of each loaded OpenBLAS (numpy's, and scipy's if loaded)."""
    try:
        from threadpoolctl import threadpool_info
        paths = [i["filepath"] for i in threadpool_info() if i.get("internal_api") == "openblas"]
    except ImportError:
        return []
    found = []
    for path in paths:
        try:
            found.append((path, ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LOCAL)))
        except OSError:
            continue
    return found


def _symbol(handle: ctypes.CDLL, names) -> Optional[Tuple[str, int]]:
    """(name, address) of the first of `names` the library exports."""
    for name in names:
        fn = getattr(handle, name, None)
        if fn is not None:
            return name, ctypes.cast(fn, ctypes.c_void_p).value
    return None


def _ilp64(handle: ctypes.CDLL, name: str, wide: bool) -> bool:
    """Whether `name` takes 64-bit sizes: by its suffix, or for the plain name by the build's config."""
    if name != "cblas_sgemm":
        return wide
    config = getattr(handle, "openblas_get_config", None)
    if config is None:
        return False
    config.restype = ctypes.c_char_p
    return b"USE64BITINT" in (config() or b"")


def _find_sgemm(handles) -> Optional[Tuple[str, int, bool]]:
    """(path, address, 64-bit sizes) of the sgemm to install.  Chosen by name, not by threadpoolctl's
    order (which varies from run to run): numpy's 64-bit build before scipy's 32-bit one."""
    for name, wide in _SGEMMS:
        for path, handle in handles:
            fn = _symbol(handle, [name])
            if fn is not None:
                return path, fn[1], _ilp64(handle, name, wide)
    return None


def install() -> None:
    """At import: size the team, hand it the parallel regions of numpy's and scipy's OpenBLAS and
    give the native kernels an sgemm, oneMKL's or numpy's (once)."""
    global _blas_paths, _gemm
    lib.ember_pool_set_threads(_default_size())
    spin = env_int("EMBER_CPU_SPIN_US", 0)
    if spin is not None:
        lib.ember_pool_set_spin_us(spin)
    if _blas_paths is not None:
        return
    _blas_paths = []
    team = os.environ.get("EMBER_CPU_TEAM", "1") != "0"
    handles = _openblas_handles()
    for path, handle in handles:
        setter = _symbol(handle, _SETTERS)
        if team and setter is not None:
            lib.ember_pool_install_blas(ffi.cast("void *", setter[1]))
            _blas_paths.append(path)
    # (only beside numpy's OpenBLAS: a numpy on MKL would be held to one thread by the sequential layer)
    mkl = _mkl_sgemm() if handles and os.environ.get("EMBER_GEMM", "").lower() != "openblas" else None
    _gemm = mkl or _find_sgemm(handles)
    if _gemm is not None:
        lib.ember_gemm_install(ffi.cast("void *", _gemm[1]), int(_gemm[2]))
        lib.ember_gemm_split_on_team(int(mkl is not None))


def _mkl_sgemm() -> Optional[Tuple[str, int, bool]]:
    """(path, address, False) of oneMKL's cblas_sgemm, in its sequential layer (the team splits each
    product: MKL's own OpenMP threads would fight the team for the cores), when the `mkl` wheel is
    installed in this environment; None otherwise."""
    for path in sorted(glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so*"))):
        try:
            handle = ctypes.CDLL(path, mode=os.RTLD_LOCAL)
        except OSError:
            continue
        layer = getattr(handle, "MKL_Set_Threading_Layer", None)
        fn = _symbol(handle, ["cblas_sgemm"])
        if layer is None or fn is None:
            continue
        layer.argtypes = [ctypes.c_int]
        if layer(1) != 1:  # MKL_THREADING_SEQUENTIAL; another layer is fixed once MKL has run
            continue
        return path, fn[1], False  # mkl_rt's default interface: 32-bit sizes (LP64)
    return None
