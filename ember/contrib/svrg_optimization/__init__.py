"""`mx.contrib.svrg_optimization`: stochastic variance-reduced gradient (SVRG) training.

`SVRGModule` trains like `mx.mod.Module` but corrects each minibatch gradient with a snapshot of
the weights and the full gradient at that snapshot, refreshed every `update_freq` epochs;
`_SVRGOptimizer` routes the parameters' updates to the user's optimizer and the full-gradient
keys (`<param>_full`) to `_AssignmentOptimizer`, which stores what it is pushed.
"""
from . import svrg_module  # noqa: F401
from . import svrg_optimizer  # noqa: F401
from .svrg_module import SVRGModule  # noqa: F401
from .svrg_optimizer import _AssignmentOptimizer, _SVRGOptimizer  # noqa: F401
