"""`mx.autograd`: record operations on NDArrays and compute gradients (MXNet 1.x API)."""
from __future__ import annotations

import contextlib
from typing import Optional

from .imperative import autograd_state as _state
from .imperative.autograd_tape import AutogradError, backward, grad  # noqa: F401
from .imperative.ndarray import NDArray

is_recording = _state.is_recording
is_training = _state.is_training
set_recording = _state.set_recording
set_training = _state.set_training


class _Scope:
    """Sets the recording/training flags on entry and restores them on exit."""

    def __init__(self, recording: Optional[bool], training: Optional[bool]):
        self._rec, self._train = recording, training
        self._prev = None

    def __enter__(self):
        self._prev = (_state.is_recording(), _state.is_training())
        if self._rec is not None:
            _state.set_recording(self._rec)
        if self._train is not None:
            _state.set_training(self._train)
        return self

    def __exit__(self, *exc):
        _state.set_recording(self._prev[0])
        _state.set_training(self._prev[1])


def record(train_mode: bool = True) -> _Scope:
    """Record ops for backward inside this block (training mode unless train_mode=False)."""
    return _Scope(True, train_mode)


def pause(train_mode: bool = False) -> _Scope:
    """Stop recording inside this block."""
    return _Scope(False, train_mode)


def train_mode() -> _Scope:
    """Training behaviour (dropout active, batch statistics) without changing recording."""
    return _Scope(None, True)


def predict_mode() -> _Scope:
    """Inference behaviour without changing recording."""
    return _Scope(None, False)


def mark_variables(variables, gradients, grad_reqs="write") -> None:
    """Make arrays variables whose gradients go into the given buffers."""
    if isinstance(variables, NDArray):
        variables, gradients = [variables], [gradients]
    variables, gradients = list(variables), list(gradients)
    if len(variables) != len(gradients):
        raise ValueError(f"mark_variables: {len(variables)} variables but {len(gradients)} gradients")
    reqs = [grad_reqs] * len(variables) if isinstance(grad_reqs, str) else list(grad_reqs)
    if len(reqs) != len(variables):
        raise ValueError(f"mark_variables: {len(variables)} variables but {len(reqs)} grad_reqs")
    for v, g, r in zip(variables, gradients, reqs):
        _state.mark_variable(v, g, r)

