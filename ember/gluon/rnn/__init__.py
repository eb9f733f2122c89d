"""`mx.gluon.rnn`: recurrent cells and the fused RNN/LSTM/GRU layers (MXNet 1.9.1's API)."""
from . import rnn_cell, rnn_layer  # noqa: F401
from .rnn_cell import (BidirectionalCell, DropoutCell, GRUCell, HybridRecurrentCell,  # noqa: F401
                       HybridSequentialRNNCell, LSTMCell, ModifierCell, RecurrentCell, ResidualCell, RNNCell,
                       SequentialRNNCell, ZoneoutCell)
from .rnn_layer import GRU, LSTM, RNN  # noqa: F401
