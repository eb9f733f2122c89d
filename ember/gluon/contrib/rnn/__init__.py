"""`mx.gluon.contrib.rnn`: VariationalDropoutCell and LSTMPCell (MXNet 1.9.1's contrib cells)."""
from . import rnn_cell  # noqa: F401
from .rnn_cell import LSTMPCell, VariationalDropoutCell  # noqa: F401
