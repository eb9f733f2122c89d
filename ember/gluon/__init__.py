"""`mx.gluon`: blocks, parameters, layers, losses and the Trainer (MXNet 1.9.1's Gluon API)."""
from . import loss  # noqa: F401
from . import contrib  # noqa: F401
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
from . import utils  # noqa: F401
from . import data  # noqa: F401
from . import model_zoo  # noqa: F401
from .block import Block, HybridBlock, SymbolBlock  # noqa: F401
from .parameter import (Constant, DeferredInitializationError, Parameter, ParameterDict,  # noqa: F401
                        ParameterError)
from .trainer import Trainer  # noqa: F401
