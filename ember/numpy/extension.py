"""`mx.npx`: MXNet's numpy-extension switches (`set_np`, `reset_np`, `is_np_array`, `is_np_shape`).

`set_np()` turns on NumPy array semantics, which ember does not support: it raises MXNetError
(see `ember.util`); `set_np(shape=True, array=False)` and `reset_np()` work.
"""
from __future__ import annotations

from ..context import cpu, current_context, gpu, num_gpus  # noqa: F401
from ..imperative.creation import waitall  # noqa: F401
from ..util import is_np_array, is_np_shape, reset_np, set_np, use_np, use_np_array, use_np_shape  # noqa: F401
