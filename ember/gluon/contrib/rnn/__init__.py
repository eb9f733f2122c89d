"""`mx.gluon.contrib.rnn`: VariationalDropoutCell, LSTMPCell, the convolutional cells and dynamic_unroll
(MXNet 1.9.1's)."""
from . import conv_rnn_cell, rnn_cell  # noqa: F401
from .conv_rnn_cell import (Conv1DGRUCell, Conv1DLSTMCell, Conv1DRNNCell, Conv2DGRUCell,  # noqa: F401
                            Conv2DLSTMCell, Conv2DRNNCell, Conv3DGRUCell, Conv3DLSTMCell, Conv3DRNNCell)
from .rnn_cell import LSTMPCell, VariationalDropoutCell, dynamic_unroll  # noqa: F401
