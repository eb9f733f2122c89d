"""mx.runtime: which optional features this ember installation has (MXNet's compile-time feature list).

MXNet reports what its native library was built with; ember reports what it can do in this process, under
MXNet's feature names (the same names, in MXNet's order, so code that asks `is_enabled('CUDA')` or
`is_enabled('INT64_TENSOR_SIZE')` gets an answer that matches ember's behaviour):
CUDA when the GPU backend (CuPy) sees a device, OPENCV when `cv2` imports, BLAS_OPEN/LAPACK through numpy,
PROFILER and DIST_KVSTORE (ember has both); never cuDNN/NCCL/TensorRT/MKLDNN/TVM, and never
INT64_TENSOR_SIZE (index outputs default to float32, as a default MXNet build).
"""
from __future__ import annotations

import collections
import importlib.util
from typing import Callable, List

__all__ = ["Feature", "Features", "feature_list"]


class Feature:
    """One feature: `name` and `enabled`."""

    __slots__ = ("name", "enabled")

    def __init__(self, name: str, enabled: bool):
        self.name = name
        self.enabled = bool(enabled)

    def __repr__(self) -> str:
        return ("\u2714 " if self.enabled else "\u2716 ") + self.name


def _has_gpu() -> bool:
    from .context import num_gpus
    try:
        return num_gpus() > 0
    except Exception:  # a broken CUDA install means no GPU here, not an import failure of mx.runtime
        return False


def _importable(module: str) -> Callable[[], bool]:
    return lambda: importlib.util.find_spec(module) is not None


def _never() -> bool:
    return False


def _always() -> bool:
    return True


# MXNet 1.9.1's libinfo order.
_FEATURES = [
    ("CUDA", _has_gpu), ("CUDNN", _never), ("NCCL", _never), ("CUDA_RTC", _never), ("TENSORRT", _never),
    ("CPU_SSE", _never), ("CPU_SSE2", _never), ("CPU_SSE3", _never), ("CPU_SSE4_1", _never),
    ("CPU_SSE4_2", _never), ("CPU_SSE4A", _never), ("CPU_AVX", _never), ("CPU_AVX2", _never),
    ("OPENMP", _never), ("SSE", _never), ("F16C", _never), ("JEMALLOC", _never),
    ("BLAS_OPEN", _always), ("BLAS_ATLAS", _never), ("BLAS_MKL", _never), ("BLAS_APPLE", _never),
    ("LAPACK", _always), ("MKLDNN", _never), ("OPENCV", _importable("cv2")), ("CAFFE", _never),
    ("PROFILER", _always), ("DIST_KVSTORE", _always), ("CXX14", _never), ("INT64_TENSOR_SIZE", _never),
    ("SIGNAL_HANDLER", _never), ("DEBUG", _never), ("TVM_OP", _never),
]


def feature_list() -> List[Feature]:
    """Every known feature, in MXNet's order."""
    return [Feature(name, probe()) for name, probe in _FEATURES]


class Features(collections.OrderedDict):
    """Name -> Feature for every known feature (one shared instance, as MXNet)."""

    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            collections.OrderedDict.__init__(cls.instance, [(f.name, f) for f in feature_list()])
        return cls.instance

    def __init__(self):  # filled once in __new__; a second Features() must not clear it
        pass

    def __repr__(self) -> str:
        return str(list(self.values()))

    def is_enabled(self, feature_name: str) -> bool:
        """Whether the feature is available; RuntimeError for a name that is not a known feature."""
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{name}' is unknown, known features are: {list(self.keys())}")
        return self[name].enabled
