"""`mx.gluon.contrib`: experimental Gluon layers and samplers (MXNet 1.9.1's `gluon.contrib.nn`, `.cnn`, `.rnn`,
`.data`, `.estimator`)."""
from . import cnn  # noqa: F401
from . import data  # noqa: F401
from . import estimator  # noqa: F401
from . import nn  # noqa: F401
from . import rnn  # noqa: F401
