"""`mx.contrib.autograd`: MXNet's older autograd API (training sections, `compute_gradient`, `grad_and_loss`).

Thin functions over `ember.autograd`: a training section turns recording and training on together, as
MXNet's does; graphs, gradient buffers and the backward pass are `ember.autograd`'s own."""
from __future__ import annotations

import functools
from typing import Callable, List, Optional, Sequence, Union

from .. import autograd as _ag
from ..ndarray import zeros_like as _zeros_like
from ..imperative.ndarray import NDArray

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section", "mark_variables",
           "backward", "compute_gradient", "grad_and_loss", "grad"]


def set_is_training(is_train: bool) -> bool:
    """Turn recording and training mode both on (or both off); return the previous recording state."""
    _ag.set_training(bool(is_train))
    return _ag.set_recording(bool(is_train))


class TrainingStateScope:
    """A `with` block that runs with `set_is_training(enter_state)` and then restores the earlier state."""

    def __init__(self, enter_state: bool):
        self._enter_state = bool(enter_state)
        self._prev: Optional[bool] = None

    def __enter__(self) -> "TrainingStateScope":
        self._prev = set_is_training(self._enter_state)
        return self

    def __exit__(self, *exc) -> None:
        if self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section() -> TrainingStateScope:
    """A `with` block that records operations for backward, in training mode."""
    return TrainingStateScope(True)


def test_section() -> TrainingStateScope:
    """A `with` block (typically inside a `train_section`) that neither records nor trains."""
    return TrainingStateScope(False)


def mark_variables(variables: Sequence[NDArray], gradients: Sequence[NDArray],
                   grad_reqs: Union[str, Sequence[str]] = "write") -> None:
    """Make `variables` autograd variables whose gradients go into `gradients` ('write', 'add' or 'null',
    one for all or one per variable)."""
    _ag.mark_variables(variables, gradients, grad_reqs)


def backward(outputs: Sequence[NDArray], out_grads: Optional[Sequence[Optional[NDArray]]] = None,
             retain_graph: bool = False) -> None:
    """Back-propagate from the list `outputs` into the marked variables' gradient buffers.

    `out_grads` gives each output's head gradient (None entries: ones); `retain_graph` keeps the graph for
    another backward."""
    if not isinstance(outputs, (list, tuple)):
        raise AssertionError(f"outputs must be a list or tuple of NDArrays, got {type(outputs).__name__}")
    if out_grads is not None and len(out_grads) != len(outputs):
        raise AssertionError(f"outputs and out_grads must have the same length, got {len(outputs)} and "
                             f"{len(out_grads)}")
    _ag.backward(list(outputs), None if out_grads is None else list(out_grads), retain_graph=retain_graph)


def compute_gradient(outputs: Sequence[NDArray]) -> None:
    """Deprecated alias of `backward(outputs)`."""
    backward(outputs)


def grad_and_loss(func: Callable, argnum: Optional[Union[int, List[int]]] = None) -> Callable:
    """Wrap `func` so that a call returns ``(gradients, outputs)``: the gradients of the outputs with respect
    to the NDArray arguments (all of them, or those at the positions `argnum`) and `func`'s own outputs."""
    @functools.wraps(func)
    def wrapped(*args):
        if argnum is None:
            variables = list(args)
        else:
            positions = argnum if isinstance(argnum, list) else [argnum]
            variables = [args[i] for i in positions]
        for i, x in enumerate(variables):
            if not isinstance(x, NDArray):
                raise AssertionError(f"type of autograd input should be NDArray, got {type(x).__name__} for "
                                     f"variable {i}")
        grads = [_zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func: Callable, argnum: Optional[Union[int, List[int]]] = None) -> Callable:
    """Like `grad_and_loss`, but a call returns only the gradients."""
    with_loss = grad_and_loss(func, argnum)

    @functools.wraps(with_loss)
    def wrapped(*args):
        return with_loss(*args)[0]
    return wrapped
