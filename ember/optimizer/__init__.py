"""`mx.optimizer`: optimizers, their registry, the Updater, and learning-rate schedules."""
from . import lr_scheduler  # noqa: F401
from .optimizer import Optimizer, OptimizerError, create, register  # noqa: F401
from .sgd import SGD, ccSGD  # noqa: F401
from .nag import NAG  # noqa: F401
from .adam import Adam, Adamax, Nadam  # noqa: F401
from .rmsprop import RMSProp  # noqa: F401
from .adagrad import AdaGrad  # noqa: F401
from .adadelta import AdaDelta  # noqa: F401
from .ftml import FTML, Ftrl  # noqa: F401
from .signum import Signum  # noqa: F401
from .lamb import LAMB  # noqa: F401
from .lars import LARS, LBSGD  # noqa: F401
from .sgld import SGLD  # noqa: F401
from .dcasgd import DCASGD  # noqa: F401
from .testing import Test  # noqa: F401
from . import contrib  # noqa: F401  (GroupAdaGrad)
from .updater import Updater, get_updater  # noqa: F401
from . import lazy_updates  # noqa: F401  (sparse kernels of the update ops for row_sparse gradients)
