"""`mx.gluon.contrib.estimator`: MXNet 1.9.1's Estimator training loop, its event handlers and batch processor."""
from . import batch_processor  # noqa: F401
from . import estimator  # noqa: F401
from . import event_handler  # noqa: F401
from .batch_processor import *  # noqa: F401,F403
from .estimator import *  # noqa: F401,F403
from .event_handler import *  # noqa: F401,F403
