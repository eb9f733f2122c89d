"""Updater: applies an optimizer to (index, grad, weight) and keeps each index's state.

This is what kvstore's set_optimizer installs and what Module uses locally;
get_states/set_states serialise the states (and optionally the optimizer) so
training can be checkpointed and resumed.  get_states writes MXNet 1.9.1's bytes (a pickle
real MXNet loads: ember.optimizer.mxnet_states_writer); set_states reads those, MXNet's own, and
ember's earlier NDArray-buffer format (ember.optimizer.state_file), never unpickling other code.
"""
from __future__ import annotations

from typing import Any, Dict

from . import mxnet_states_writer, state_file
from ..imperative.ndarray import NDArray
from ..numpy.multiarray import ndarray as np_ndarray
from ..util import is_np_array
from .optimizer import Optimizer


class Updater:
    """Calls `optimizer.update_multi_precision` with a per-index state created on first use.

    When the optimizer has `aggregate_num > 0` (SGD, LARS, LAMB, as in MXNet) the weights of one
    call are grouped by dtype and handed over up to aggregate_num at a time, so the optimizer can
    update them with one multi-tensor op (multi_sgd_update, ...).
    """

    def __init__(self, optimizer: Optimizer):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"Updater needs an ember Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        self.states: Dict[Any, Any] = {}
        self.states_synced: Dict[Any, bool] = {}

    def __call__(self, index, grad, weight) -> None:
        """Update weight(s) in place; index/grad/weight may be single values or equal-length lists."""
        if isinstance(index, (list, tuple)):
            indices, grads, weights = list(index), list(grad), list(weight)
            if not len(indices) == len(grads) == len(weights):
                raise ValueError(f"Updater: got {len(indices)} indices, {len(grads)} gradients "
                                 f"and {len(weights)} weights")
        else:
            indices, grads, weights = [index], [grad], [weight]
        if any(type(a) is np_ndarray for a in weights) or any(type(a) is np_ndarray for a in grads):
            grads, weights = _as_classic(grads, self.optimizer), _as_classic(weights, self.optimizer)
        if weights and isinstance(weights[0], NDArray):
            self.optimizer._set_current_context(weights[0].context.device_id)
        checked = []
        for idx, g, w in zip(indices, grads, weights):
            if isinstance(idx, bytes):
                idx = idx.decode()
            if not isinstance(w, NDArray) or not isinstance(g, NDArray):
                raise TypeError(f"Updater: weight and gradient of index {idx!r} must be NDArrays, "
                                f"got {type(w).__name__} and {type(g).__name__}")
            if g.shape != w.shape:
                raise ValueError(f"Updater: gradient shape {g.shape} does not match weight shape "
                                 f"{w.shape} for index {idx!r}")
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, w)
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:
                self.states[idx] = self.sync_state_context(self.states[idx], w.context)
                self.states_synced[idx] = True
            checked.append((idx, w, g))
        aggregate = getattr(self.optimizer, "aggregate_num", 0)
        if aggregate > 0:
            by_dtype: Dict[Any, list] = {}
            for item in checked:
                by_dtype.setdefault(item[1].dtype, []).append(item)
            for items in by_dtype.values():
                for start in range(0, len(items), aggregate):
                    idxs, ws, gs = (list(t) for t in zip(*items[start:start + aggregate]))
                    self.optimizer.update_multi_precision(idxs, ws, gs, [self.states[i] for i in idxs])
        else:
            for idx, w, g in checked:
                self.optimizer.update_multi_precision(idx, w, g, self.states[idx])

    def sync_state_context(self, state, context):
        """The state moved to `context` (after set_states loaded it elsewhere)."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            moved = [self.sync_state_context(s, context) for s in state]
            return tuple(moved) if isinstance(state, tuple) else moved
        return state

    def set_states(self, states: bytes) -> None:
        """Restore states written by get_states (and the optimizer, if it was dumped with them).

        Malformed bytes raise base.FormatError; the updater is unchanged then.
        """
        loaded, optimizer = state_file.loads(states)
        self.states = loaded
        if optimizer is not None:
            self.optimizer = optimizer
        self.states_synced = dict.fromkeys(self.states, False)

    def get_states(self, dump_optimizer: bool = False) -> bytes:
        """The states (and the optimizer when dump_optimizer) as MXNet 1.9.1's pickled bytes."""
        return mxnet_states_writer.dumps(self.states, self.optimizer if dump_optimizer else None)


def get_updater(optimizer: Optimizer) -> Updater:
    """An Updater for `optimizer` (MXNet's mx.optimizer.get_updater)."""
    return Updater(optimizer)


def _as_classic(arrays: list, optimizer) -> list:
    """mx.np arrays as legacy views for the optimizer's mx.nd code (MXNet's rule: allowed when the
    optimizer was made under NumPy array semantics, or, for one without that attribute, when it is on now)."""
    allow = getattr(optimizer, "allow_np_array", None)
    if allow is None:
        allow = is_np_array()
    if not allow:
        raise ValueError("Converting np.ndarray to mx.nd.NDArray is not allowed")
    return [a.as_nd_ndarray() if type(a) is np_ndarray else a for a in arrays]
