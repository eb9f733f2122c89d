"""The deterministic parameter recipe of tests/data/make_model_fixtures.py (keep the two identical)."""
import zlib

import numpy as np


def recipe_value(name: str, shape) -> np.ndarray:
    """Seeded by crc32(name): He-uniform weights, uniform(-0.1, 0.1) biases/beta/means,
    uniform(0.5, 1.5) gamma/variances."""
    rs = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
    shape = tuple(int(s) for s in shape)
    if name.endswith(("gamma", "running_var", "moving_var")):
        v = rs.uniform(0.5, 1.5, size=shape)
    elif name.endswith(("beta", "bias", "running_mean", "moving_mean")):
        v = rs.uniform(-0.1, 0.1, size=shape)
    else:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        bound = np.sqrt(6.0 / max(fan_in, 1))
        v = rs.uniform(-bound, bound, size=shape)
    return v.astype(np.float32)
