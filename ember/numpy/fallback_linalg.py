"""`mx.np.fallback_linalg`: the numpy.linalg functions mx.np.linalg runs through official NumPy (MXNet 1.9.1's
list; see `mx.np.fallback` for how mx.np arrays reach them)."""
from __future__ import annotations

import numpy as onp

__all__ = ["cond", "lstsq", "matrix_power", "matrix_rank", "multi_dot", "qr"]

cond = onp.linalg.cond
lstsq = onp.linalg.lstsq
matrix_power = onp.linalg.matrix_power
matrix_rank = onp.linalg.matrix_rank
multi_dot = onp.linalg.multi_dot
qr = onp.linalg.qr
