"""`mx.optimizer`: optimizers, their registry, the Updater, and learning-rate schedules."""
from . import lr_scheduler  # noqa: F401
from .optimizer import Optimizer, OptimizerError, create, register  # noqa: F401
from .sgd import SGD  # noqa: F401
from .adam import Adam  # noqa: F401
from .rmsprop import RMSProp  # noqa: F401
from .adagrad import AdaGrad  # noqa: F401
from .updater import Updater, get_updater  # noqa: F401
