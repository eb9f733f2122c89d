"""`mx.contrib.ndarray`: the contrib operators on NDArrays (the same functions as `mx.nd.contrib`)."""
from ..ndarray import contrib as _contrib


def __getattr__(name: str):
    return getattr(_contrib, name)


def __dir__():
    return dir(_contrib)
