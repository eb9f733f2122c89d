"""`mx.gluon.contrib`: experimental Gluon layers (MXNet 1.9.1's `gluon.contrib.nn`)."""
from . import nn  # noqa: F401
