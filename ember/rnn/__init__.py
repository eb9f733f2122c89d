"""`mx.rnn`: MXNet 1.x's legacy symbolic RNN API (cells, unrolling, bucketing data, checkpoints).

Cells build `mx.sym` graphs step by step (`RNNCell`, `LSTMCell`, `GRUCell`, the convolutional
cells) or with the fused RNN operator (`FusedRNNCell`, whose `unfuse()` gives the step-cell
equivalent); containers and modifiers combine them.  Begin states use 0 for the batch size,
completed by shape inference when the graph is bound.
"""
from . import io, rnn, rnn_cell  # noqa: F401
from .initializers import FusedRNN, LSTMBias  # noqa: F401
from .io import BucketSentenceIter, encode_sentences  # noqa: F401
from .rnn import do_rnn_checkpoint, load_rnn_checkpoint, rnn_unroll, save_rnn_checkpoint  # noqa: F401
from .rnn_cell import (BaseConvRNNCell, BaseRNNCell, BidirectionalCell, ConvGRUCell, ConvLSTMCell,  # noqa: F401
                       ConvRNNCell, DropoutCell, FusedRNNCell, GRUCell, LSTMCell, ModifierCell, ResidualCell,
                       RNNCell, RNNParams, SequentialRNNCell, ZoneoutCell)
