"""Learning-rate schedules (`mx.lr_scheduler`): lr as a function of the update count.

Each scheduler is called with the optimizer's `num_update` and returns the
learning rate.  Like MXNet's, the factor schedules are stateful (they keep the
decayed `base_lr`), so they must be called with non-decreasing counts.
"""
from __future__ import annotations

import logging
import math
from typing import List, Sequence

_WARMUP_MODES = ("linear", "constant")


class LRScheduler:
    """Base class: holds `base_lr` and the optional warm-up ramp.

    warmup_steps updates go from `warmup_begin_lr` to `base_lr`, linearly or
    staying constant at `warmup_begin_lr` (warmup_mode 'linear' / 'constant').
    """

    def __init__(self, base_lr: float = 0.01, warmup_steps: int = 0, warmup_begin_lr: float = 0,
                 warmup_mode: str = "linear"):
        if not isinstance(warmup_steps, int) or isinstance(warmup_steps, bool):
            raise TypeError(f"warmup_steps must be an int, got {warmup_steps!r}")
        if warmup_steps < 0:
            raise ValueError(f"warmup_steps must be >= 0, got {warmup_steps}")
        if warmup_begin_lr > base_lr:
            raise ValueError(f"warmup_begin_lr ({warmup_begin_lr}) must not exceed base_lr ({base_lr})")
        if warmup_mode not in _WARMUP_MODES:
            raise ValueError(f"warmup_mode must be one of {list(_WARMUP_MODES)}, got {warmup_mode!r}")
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update: int) -> float:
        """The learning rate during warm-up (num_update < warmup_steps)."""
        if num_update >= self.warmup_steps:
            raise ValueError(f"update {num_update} is past the {self.warmup_steps} warm-up steps")
        if self.warmup_mode == "constant":
            return self.warmup_begin_lr
        span = self.warmup_final_lr - self.warmup_begin_lr
        return self.warmup_begin_lr + span * float(num_update) / float(self.warmup_steps)

    def __call__(self, num_update: int) -> float:
        raise NotImplementedError(f"{type(self).__name__} must define __call__(num_update)")


def _check_factor(factor: float) -> None:
    if factor > 1.0:
        raise ValueError(f"factor must be no more than 1 so the learning rate decreases, got {factor}")


class FactorScheduler(LRScheduler):
    """Multiply the lr by `factor` every `step` updates, never below `stop_factor_lr`."""

    def __init__(self, step: int, factor: float = 1, stop_factor_lr: float = 1e-8, base_lr: float = 0.01,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError(f"step must be at least 1 update, got {step}")
        _check_factor(factor)
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        # a loop, not an if: training resumed at a later epoch jumps several steps at once
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr = max(self.base_lr * self.factor, self.stop_factor_lr)
            logging.info("Update[%d]: learning rate is now %0.5e", num_update, self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the lr by `factor` when the update count passes each value of `step`."""

    def __init__(self, step: Sequence[int], factor: float = 1, base_lr: float = 0.01, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, (list, tuple)) or len(step) < 1:
            raise TypeError(f"step must be a non-empty list of update counts, got {step!r}")
        for i, s in enumerate(step):
            if s < 1:
                raise ValueError(f"every step must be at least 1 update, got {s}")
            if i and s <= step[i - 1]:
                raise ValueError(f"step must be strictly increasing, got {list(step)}")
        _check_factor(factor)
        self.step: List[int] = list(step)
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: learning rate is now %0.5e", num_update, self.base_lr)
        return self.base_lr


def _check_max_update(max_update) -> None:
    if not isinstance(max_update, int) or isinstance(max_update, bool):
        raise TypeError(f"max_update must be an int, got {max_update!r}")
    if max_update < 1:
        raise ValueError(f"max_update must be strictly positive, got {max_update}")


class _Annealing(LRScheduler):
    """After the warm-up, lr = final_lr + (base_lr - final_lr) * left(t) for t = 0 .. max_steps updates
    (left falls from 1 to 0), then final_lr."""

    def __init__(self, max_update: int, base_lr: float, final_lr: float, warmup_steps: int,
                 warmup_begin_lr: float, warmup_mode: str):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        _check_max_update(max_update)
        # MXNet keeps the constructor's base_lr here, so an optimizer's learning_rate does not change it
        self.base_lr_orig = self.base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = max_update - warmup_steps

    def _left(self, t: int) -> float:
        raise NotImplementedError

    def __call__(self, num_update: int) -> float:
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            left = self._left(num_update - self.warmup_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * left
        return self.base_lr


class PolyScheduler(_Annealing):
    """lr = final_lr + (base_lr - final_lr) * (1 - t / max_steps) ** pwr, then final_lr."""

    def __init__(self, max_update: int, base_lr: float = 0.01, pwr: float = 2, final_lr: float = 0,
                 warmup_steps: int = 0, warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        self.power = pwr

    def _left(self, t: int) -> float:
        return pow(1.0 - float(t) / float(self.max_steps), self.power)


class CosineScheduler(_Annealing):
    """lr = final_lr + (base_lr - final_lr) * (1 + cos(pi * t / max_steps)) / 2, then final_lr."""

    def __init__(self, max_update: int, base_lr: float = 0.01, final_lr: float = 0, warmup_steps: int = 0,
                 warmup_begin_lr: float = 0, warmup_mode: str = "linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr, warmup_mode)

    def _left(self, t: int) -> float:
        return (1 + math.cos(math.pi * t / self.max_steps)) / 2
