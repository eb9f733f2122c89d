"""`mx.np`: MXNet 1.9's numpy interface: the `ndarray` type, numpy-style creation, the function
library (`functions.py`: arithmetic with numpy broadcasting and mx.np's dtype rules, reductions with
0-d results, dot/matmul, shape and join functions) and `mx.np.random`.

See `multiarray.py` for what differs from `mx.nd`.  The functions also build graphs on np symbols
(a block traced under NumPy array semantics, `npx.set_np()`): see docs/numpy.md.  This module is
`F.np` in a hybrid_forward run on arrays (`mx.nd.np`).
"""
from __future__ import annotations

from ..context import cpu, current_context, gpu  # noqa: F401
from .multiarray import (arange, array, empty, empty_like, full, full_like, ndarray, ones,  # noqa: F401
                         ones_like, reshape, zeros, zeros_like)
from numpy import (bool_, float16, float32, float64, int8, int32, int64, uint8,  # noqa: F401,E402
                   e, euler_gamma, inf, nan, newaxis, pi)

bool = bool_  # noqa: A001 - numpy's name for the type, as mx.np exposes it
# numpy 1.x's signed zeros and infinities, which mx.np keeps exporting (numpy 2 removed them)
PZERO, NZERO, PINF, NINF = 0.0, -0.0, float("inf"), float("-inf")

from . import functions as _functions  # noqa: E402  (installs numpy-semantics operators on ndarray)
from . import random  # noqa: E402,F401
from .functions import *  # noqa: E402,F401,F403
from .functions_more import *  # noqa: E402,F401,F403  (composed functions: tensordot, diag, roll, tril, ...)
from .functions_ufunc import *  # noqa: E402,F401,F403  (arctan2 hypot copysign ldexp lcm bitwise_*)
from .functions_index import *  # noqa: E402,F401,F403  (delete insert unravel_index pad)
from .functions_einsum import *  # noqa: E402,F401,F403  (einsum)
from .functions_counting import *  # noqa: E402,F401,F403  (unique histogram)
from .functions_stats import *  # noqa: E402,F401,F403  (bincount percentile quantile)
from .functions_nonzero import *  # noqa: E402,F401,F403  (nonzero flatnonzero)
from . import linalg  # noqa: E402,F401  (mx.np.linalg)
from . import fallback, fallback_linalg  # noqa: E402,F401  (numpy's own functions, as MXNet's mx.np.fallback)

for _name in fallback.__all__:  # mx.np's own function wins where there is one
    if _name not in globals():
        globals()[_name] = getattr(fallback, _name)
for _name in fallback_linalg.__all__:
    if not hasattr(linalg, _name):
        setattr(linalg, _name, getattr(fallback_linalg, _name))
from . import _internal  # noqa: E402,F401  (mx.np._internal: boolean_mask_assign_*)
