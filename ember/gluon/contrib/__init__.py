"""`mx.gluon.contrib`: experimental Gluon layers (MXNet 1.9.1's `gluon.contrib.nn`)."""
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
