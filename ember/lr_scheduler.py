"""`mx.lr_scheduler`: learning-rate schedules (defined in ember.optimizer.lr_scheduler)."""
from .optimizer.lr_scheduler import (CosineScheduler, FactorScheduler, LRScheduler,  # noqa: F401
                                     MultiFactorScheduler, PolyScheduler)
