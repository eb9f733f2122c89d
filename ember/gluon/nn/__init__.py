"""`mx.gluon.nn`: neural-network layers (MXNet 1.9.1's names), plus Block, HybridBlock and SymbolBlock."""
from ..block import Block, HybridBlock, SymbolBlock  # noqa: F401
from .activations import *  # noqa: F401,F403
from .basic_layers import *  # noqa: F401,F403
from .conv_layers import *  # noqa: F401,F403
