"""`mx.gluon.nn`: only SymbolBlock so far."""
from ..block import SymbolBlock  # noqa: F401
