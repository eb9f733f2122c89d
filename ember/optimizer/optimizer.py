"""The Optimizer base class, the optimizer registry and `create`.

An optimizer turns (index, weight, grad, state) into an in-place weight update.
The base class owns what every optimizer shares: the learning rate (fixed or
from an LRScheduler), weight decay, per-parameter lr/wd multipliers, gradient
rescaling and clipping, and the per-index update counts the schedules read.
Subclasses issue the update as registry ops through mx.nd (sgd_update, ...),
so updates are engine ops ordered with the forward/backward that use the weights.
"""
from __future__ import annotations

import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple, Type

import numpy as np

from .. import ndarray as nd
from ..base import EmberError
from ..util import is_np_array


class OptimizerError(EmberError, ValueError):
    """An optimizer was asked for by an unknown name or configured wrongly."""


_REGISTRY: Dict[str, Type["Optimizer"]] = {}


class Optimizer:
    """Base class of every optimizer (MXNet's `mx.optimizer.Optimizer`).

    rescale_grad: multiply gradients by this first (often 1/batch_size).
    clip_gradient: clip the rescaled gradient to [-c, c] (None: no clipping).
    learning_rate: fixed lr; with an lr_scheduler it overrides the scheduler's base_lr.
    wd: L2 weight decay.  param_idx2name: index -> parameter name, used for
    lr/wd multipliers; parameters whose name ends neither in '_weight' nor in
    '_gamma' get wd_mult 0 (no decay of biases and BN shifts), as in MXNet.
    sym: a Symbol whose '__lr_mult__' / '__wd_mult__' attributes set multipliers.
    multi_precision: float16 weights are updated through float32 master copies kept in their
    state (create_state_multi_precision / update_multi_precision).
    """

    def __init__(self, rescale_grad: float = 1.0, param_idx2name: Optional[dict] = None, wd: float = 0.0,
                 clip_gradient: Optional[float] = None, learning_rate: Optional[float] = None,
                 lr_scheduler=None, sym=None, begin_num_update: int = 0, multi_precision: bool = False,
                 param_dict: Optional[dict] = None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if lr_scheduler is not None and learning_rate is not None and lr_scheduler.base_lr != learning_rate:
            warnings.warn("learning rate from ``lr_scheduler`` has been overwritten by "
                          "``learning_rate`` in optimizer.", UserWarning, stacklevel=3)
            lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        # update counts per device (see _set_current_context); _index_update_count is the current one's
        self._all_index_update_counts: Dict[int, Dict[Any, int]] = {0: {}}
        self._index_update_count: Dict[Any, int] = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        # float16 weights get a float32 master copy in their state (create_state_multi_precision)
        self.multi_precision = multi_precision
        # > 0: the Updater hands this many weights of one dtype to update_multi_precision at once
        self.aggregate_num = 0
        # made under NumPy array semantics: the Updater may hand it mx.np arrays (as legacy views)
        self.allow_np_array = is_np_array()
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError(f"param_idx2name must be a dict of index -> name, got {type(param_idx2name).__name__}")
        self.idx2name = dict(param_idx2name)
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.lr_mult: Dict[Any, float] = {}
        self.wd_mult: Dict[Any, float] = {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # -- registry -------------------------------------------------------------------
    @staticmethod
    def register(klass: type) -> type:
        """Class decorator: make `klass` available to `create` under its lower-cased name."""
        if not isinstance(klass, type) or not issubclass(klass, Optimizer):
            raise TypeError(f"only Optimizer subclasses can be registered, got {klass!r}")
        name = klass.__name__.lower()
        if name in _REGISTRY and _REGISTRY[name] is not klass:
            warnings.warn(f"optimizer {klass.__module__}.{klass.__name__} overrides "
                          f"{_REGISTRY[name].__module__}.{_REGISTRY[name].__name__}", stacklevel=2)
        _REGISTRY[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name: str, **kwargs) -> "Optimizer":
        """An optimizer instance by registered name (case-insensitive)."""
        if not isinstance(name, str):
            raise TypeError(f"optimizer name must be a string, got {type(name).__name__}")
        klass = _REGISTRY.get(name.lower())
        if klass is None:
            raise OptimizerError(f"cannot find optimizer '{name}'; registered: {sorted(_REGISTRY)}")
        return klass(**kwargs)

    # -- states and updates ---------------------------------------------------------------
    def create_state(self, index, weight):
        """The auxiliary state (NDArray, tuple of them, or None) for one weight."""
        return None

    def create_state_multi_precision(self, index, weight):
        """create_state, with a float32 master copy of a float16 weight when multi_precision is on:
        then the state is (weight32, create_state(index, weight32)), as MXNet's generic wrapper."""
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (master, self.create_state(index, master))
        _warn_fp16(weight, type(self).__name__)
        return self.create_state(index, weight)

    def update(self, index, weight, grad, state) -> None:
        """Update `weight` in place from `grad` and `state`."""
        raise NotImplementedError(f"{type(self).__name__} must define update()")

    def update_multi_precision(self, index, weight, grad, state) -> None:
        """update, on the float32 master copy for a float16 weight under multi_precision (the weight
        then receives the master copy cast back); lists of indices are updated one by one."""
        if isinstance(index, (list, tuple)):
            for i, w, g, s in zip(index, weight, grad, state):
                self.update_multi_precision(i, w, g, s)
            return
        if self.multi_precision and weight.dtype == np.float16:
            master, inner = state
            self.update(index, master, grad.astype(np.float32), inner)
            nd.cast(master, dtype=weight.dtype, out=weight)
        else:
            self.update(index, weight, grad, state)

    # -- learning rate --------------------------------------------------------------------
    @property
    def learning_rate(self) -> float:
        """The current learning rate (the scheduler's value at num_update, if any)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr: float) -> None:
        """Set the fixed learning rate (not allowed when a scheduler drives it)."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. set_learning_rate can "
                              "change the learning rate only when the optimizer has no LRScheduler.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale: dict) -> None:  # MXNet's deprecated name
        """Deprecated alias of set_lr_mult."""
        self.set_lr_mult(args_lrscale)

    def set_lr_mult(self, args_lr_mult: dict) -> None:
        """Per-parameter lr multipliers (by name or index), after the symbol's '__lr_mult__' attrs."""
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = float(attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    # names whose weight decay is kept by default (set_wd_mult); others start with wd_mult 0
    _decayed_suffixes = ("_weight", "_gamma")

    def set_wd_mult(self, args_wd_mult: dict) -> None:
        """Per-parameter wd multipliers; names not ending in `_decayed_suffixes` default to 0."""
        self.wd_mult = {}
        for name in self.idx2name.values():
            if not name.endswith(self._decayed_suffixes):
                self.wd_mult[name] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    def _set_current_context(self, device_id: int) -> None:
        """Count updates of the device `device_id` from now on (MXNet 1.9.1): when each device
        updates its own copy of a weight, every copy sees the same step number, not a count
        bumped once per device."""
        counts = self.__dict__.setdefault("_all_index_update_counts", {0: self._index_update_count})
        self._index_update_count = counts.setdefault(device_id, {})

    def _update_count(self, index) -> None:
        indices = index if isinstance(index, (list, tuple)) else [index]
        for idx in indices:
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(count, self.num_update)

    def _mult(self, index, table: Dict[Any, float], attr: str) -> float:
        if index in self.param_dict:
            return getattr(self.param_dict[index], attr)
        if index in table:
            return table[index]
        if index in self.idx2name:
            return table.get(self.idx2name[index], 1.0)
        return 1.0

    def _count_and_rates(self, index) -> Tuple[float, float]:
        """Count this update of `index`, then its (learning rate, weight decay) at the new step."""
        self._update_count(index)
        return self._get_lr(index), self._get_wd(index)

    def _rescaled_grad(self, grad, weight=None, wd: float = 0.0):
        """A new array: rescale_grad * grad (plus wd * weight when `weight` is given), clipped to
        [-clip_gradient, clip_gradient] when clip_gradient is set."""
        grad = grad * self.rescale_grad
        if weight is not None:
            grad = grad + wd * weight
        if self.clip_gradient is not None:
            grad = nd.clip(grad, -self.clip_gradient, self.clip_gradient)
        return grad

    def _get_lrs(self, indices: Sequence) -> List[float]:
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return [lr * self._mult(i, self.lr_mult, "lr_mult") for i in indices]

    def _get_wds(self, indices: Sequence) -> List[float]:
        return [self.wd * self._mult(i, self.wd_mult, "wd_mult") for i in indices]

    def _get_lr(self, index) -> float:
        return self._get_lrs([index])[0]

    def _get_wd(self, index) -> float:
        return self._get_wds([index])[0]

    def _common_kwargs(self) -> dict:
        """rescale_grad and (when set) clip_gradient, as the update ops take them."""
        kwargs = {"rescale_grad": self.rescale_grad}
        if self.clip_gradient:
            kwargs["clip_gradient"] = self.clip_gradient
        return kwargs

    def _uses_master_copy(self, weight) -> bool:
        """Whether `weight` (or the first of a list) is updated through a float32 master copy."""
        first = weight[0] if isinstance(weight, (list, tuple)) else weight
        return bool(self.multi_precision) and first.dtype == np.float16

    def _master_copy_state(self, index, weight):
        """(create_state(weight32), weight32) for a float16 weight under multi_precision, else
        create_state(weight): the layout of MXNet's SGD, NAG, LARS (state first, master copy last)."""
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            return (self.create_state(index, master), master)
        _warn_fp16(weight, type(self).__name__)
        return self.create_state(index, weight)

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.param_dict = {}  # set again by the Trainer that owns the parameters
        self.__dict__.setdefault("aggregate_num", 0)

    def __getstate__(self):
        # the param_dict holds live parameters owned by their block: not part of a saved optimizer
        state = self.__dict__.copy()
        state["param_dict"] = {}
        return state


class _ImplOptimizer(Optimizer):
    """Base of the optimizers whose `_update_impl(index, weight, grad, state, multi_precision)` makes
    both updates (multi_precision: through the float32 master copy a float16 weight has)."""

    def update(self, index, weight, grad, state) -> None:
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state) -> None:
        self._update_impl(index, weight, grad, state, multi_precision=self._uses_master_copy(weight))


def _warn_fp16(weight, name: str) -> None:
    if weight.dtype == np.float16:
        warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or slow convergence. "
                      f"Consider using multi_precision=True option of the {name} optimizer", stacklevel=3)


register = Optimizer.register
create = Optimizer.create_optimizer
