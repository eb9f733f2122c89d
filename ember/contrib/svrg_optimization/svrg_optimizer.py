"""The two optimizers behind SVRGModule.

`_SVRGOptimizer` holds the optimizer the user asked for (`default_opt`) and an
`_AssignmentOptimizer` (`aux_opt`); it sends each update to one of them by the parameter's name:
names ending in '_full' are the full-gradient keys SVRGModule keeps in the KVStore, where a push
must *store* the (summed) gradient, not step a weight with it.
"""
from __future__ import annotations

from typing import Any, Dict, Union

from ... import optimizer as opt_mod
from ...base import ArgumentError

# the keyword arguments of mx.optimizer.Optimizer itself; the rest belong to the wrapped optimizer
_BASE_PARAMS = ("rescale_grad", "param_idx2name", "wd", "clip_gradient", "learning_rate", "lr_scheduler",
                "sym", "begin_num_update", "multi_precision", "param_dict")
FULL_SUFFIX = "_full"


@opt_mod.register
class _AssignmentOptimizer(opt_mod.Optimizer):
    """Overwrites the weight with the gradient it is given (no learning rate, no rescaling).

    Pushing several devices' full gradients to a KVStore key updated by this optimizer leaves
    their sum in the store, which is how SVRGModule accumulates full gradients.
    """

    def update(self, index, weight, grad, state) -> None:
        """weight[:] = grad; `state` is unused (create_state gives None)."""
        weight[:] = grad


@opt_mod.register
class _SVRGOptimizer(opt_mod.Optimizer):
    """Dispatches updates between a default optimizer and `_AssignmentOptimizer`.

    default_optimizer: an optimizer name (created with every keyword given here, so its own
    options such as momentum pass through) or an Optimizer instance.  The keywords that
    mx.optimizer.Optimizer accepts also configure this wrapper (rescale_grad, param_idx2name, ...).
    """

    def __init__(self, default_optimizer: Union[str, opt_mod.Optimizer], **kwargs: Any):
        super().__init__(**self._check_params(**kwargs))
        if isinstance(default_optimizer, str):
            self.default_opt = opt_mod.create(default_optimizer, **kwargs)
        elif isinstance(default_optimizer, opt_mod.Optimizer):
            self.default_opt = default_optimizer
        else:
            raise ArgumentError("_SVRGOptimizer: default_optimizer must be an optimizer name or an Optimizer, "
                                f"got {type(default_optimizer).__name__}")
        self.aux_opt = opt_mod.create(_AssignmentOptimizer.__name__)

    @staticmethod
    def _check_params(**kwargs: Any) -> Dict[str, Any]:
        """The subset of kwargs that the base Optimizer understands."""
        return {k: v for k, v in kwargs.items() if k in _BASE_PARAMS}

    def _check_index(self, index) -> str:
        """The parameter name of `index`: an int key of idx2name, or already a name (KVStore string keys)."""
        if isinstance(index, str) and (index in self.idx2name.values() or index not in self.idx2name):
            return index
        try:
            return self.idx2name[index]
        except KeyError:
            raise ArgumentError(f"_SVRGOptimizer: index {index!r} has no parameter name; param_idx2name knows "
                                f"{sorted(self.idx2name, key=str)[:10]}") from None

    def _target(self, index) -> opt_mod.Optimizer:
        # a suffix test, not MXNet's substring test: a parameter such as 'fullyconnected0_weight'
        # must be trained, not overwritten by its gradient
        return self.aux_opt if self._check_index(index).endswith(FULL_SUFFIX) else self.default_opt

    def create_state(self, index, weight):
        """The state of the optimizer that will update this index."""
        return self._target(index).create_state(index, weight)

    def update(self, index, weight, grad, state) -> None:
        """Assign full-gradient keys; step every other parameter with the default optimizer."""
        self._target(index).update(index, weight, grad, state)
