"""`mx.contrib.symbol`: the contrib operators on Symbols (the same functions as `mx.sym.contrib`)."""
from .. import symbol as _symbol


def __getattr__(name: str):
    return getattr(_symbol.contrib, name)


def __dir__():
    return dir(_symbol.contrib)
