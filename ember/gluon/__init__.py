"""`mx.gluon`: just enough to load exported models (SymbolBlock.imports)."""
from . import nn  # noqa: F401
from . import utils  # noqa: F401
from .block import SymbolBlock  # noqa: F401
from .parameter import Parameter, ParameterDict, ParameterError  # noqa: F401
