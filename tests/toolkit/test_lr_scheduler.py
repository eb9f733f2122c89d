"""mx.lr_scheduler: schedule values against closed forms (MXNet 1.x semantics)."""
import math

import pytest

import ember as mx
from ember.lr_scheduler import CosineScheduler, FactorScheduler, MultiFactorScheduler, PolyScheduler


def test_factor_steps_and_floor():
    s = FactorScheduler(step=3, factor=0.5, stop_factor_lr=0.02, base_lr=0.1)
    got = [s(t) for t in range(1, 14)]
    want = [0.1] * 3 + [0.05] * 3 + [0.025] * 3 + [0.02] * 4
    assert got == pytest.approx(want)


def test_factor_jump_when_resuming():
    s = FactorScheduler(step=10, factor=0.1, base_lr=1.0)
    assert s(35) == pytest.approx(1e-3)


def test_multifactor():
    s = MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1.0)
    got = [s(t) for t in range(1, 8)]
    assert got == pytest.approx([1, 1, 0.1, 0.1, 0.1, 0.01, 0.01])


def test_cosine_with_linear_warmup():
    s = CosineScheduler(max_update=20, base_lr=1.0, final_lr=0.1, warmup_steps=5, warmup_begin_lr=0.5)
    for t in range(5):
        assert s(t) == pytest.approx(0.5 + 0.5 * t / 5)
    for t in range(5, 21):
        assert s(t) == pytest.approx(0.1 + 0.9 * (1 + math.cos(math.pi * (t - 5) / 15)) / 2)
    assert s(40) == pytest.approx(0.1)


def test_poly_and_constant_warmup():
    s = PolyScheduler(max_update=10, base_lr=2.0, pwr=2, final_lr=0.0, warmup_steps=2, warmup_begin_lr=0.3,
                      warmup_mode="constant")
    assert s(0) == s(1) == 0.3
    for t in range(2, 11):
        assert s(t) == pytest.approx(2.0 * (1 - (t - 2) / 8) ** 2)
    assert s(11) == pytest.approx(0.0)


def test_alias_module():
    assert mx.lr_scheduler.FactorScheduler is mx.optimizer.lr_scheduler.FactorScheduler


@pytest.mark.parametrize("make, match", [
    (lambda: FactorScheduler(step=0), "step must be at least 1"),
    (lambda: FactorScheduler(step=1, factor=2), "no more than 1"),
    (lambda: MultiFactorScheduler(step=[3, 2]), "strictly increasing"),
    (lambda: MultiFactorScheduler(step=[0, 2]), "at least 1"),
    (lambda: MultiFactorScheduler(step=5), "non-empty list"),
    (lambda: CosineScheduler(max_update=0), "strictly positive"),
    (lambda: PolyScheduler(max_update=2.5), "must be an int"),
    (lambda: CosineScheduler(10, warmup_mode="ramp"), "warmup_mode"),
    (lambda: CosineScheduler(10, base_lr=0.1, warmup_begin_lr=1.0), "must not exceed"),
    (lambda: FactorScheduler(step=1, warmup_steps=-1), ">= 0"),
])
def test_bad_arguments(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()
