"""Every legacy RNN cell under MXNet's module name (`mx.rnn.rnn_cell`)."""
from .base import BaseRNNCell, RNNParams  # noqa: F401
from .cells import GRUCell, LSTMCell, RNNCell  # noqa: F401
from .conv import BaseConvRNNCell, ConvGRUCell, ConvLSTMCell, ConvRNNCell  # noqa: F401
from .fused import FusedRNNCell  # noqa: F401
from .modifiers import DropoutCell, ModifierCell, ResidualCell, ZoneoutCell  # noqa: F401
from .stacks import BidirectionalCell, SequentialRNNCell  # noqa: F401
