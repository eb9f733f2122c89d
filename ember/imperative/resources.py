"""Per-device resources for kernels: the random number generator behind an engine var.

Each device has one `numpy.random.Generator`; every op listing the 'rng'
resource writes its var, so draws happen in push order whatever the thread
timing, and `seed()` (itself an engine op on the var) reseeds the same
generator object in place: ops pushed before it draw from the old stream,
ops pushed after it from the new one.
"""
from __future__ import annotations

import threading
from typing import Dict, Optional, Tuple

import numpy as np

from .. import engine
from ..context import Context

_lock = threading.Lock()
_rngs: Dict[tuple, Tuple[object, np.random.Generator]] = {}
# As in MXNet, every process starts from the same default seed: runs repeat unless seeded otherwise.
DEFAULT_SEED = 0
_global_seed: Optional[int] = DEFAULT_SEED


def _key(ctx: Context) -> tuple:
    # All CPU contexts share host memory and one generator, as in MXNet.
    return ("cpu", 0) if ctx.device_type == "cpu" else (ctx.device_type, ctx.device_id)


def _seeded_state(seed: int, key: tuple):
    devtype = Context.devtype2id[key[0]]  # MXNet's number of the device kind: 1 cpu, 2 gpu, ...
    return np.random.PCG64(np.random.SeedSequence([seed, devtype, key[1]])).state


def rng(ctx: Context) -> Tuple[object, np.random.Generator]:
    """(var, generator) of the device `ctx`.

    An op drawing from the generator reads and writes the var (it reads the generator's state and
    advances it): so a failed draw leaves its error on the generator and later draws inherit it
    until it is raised, as MXNet's random resource does (a second script line then fails with the
    first error, which one wait raises and clears for all of them)."""
    key = _key(ctx)
    found = _rngs.get(key)
    if found is not None:
        return found
    with _lock:
        found = _rngs.get(key)
        if found is None:
            gen = np.random.Generator(np.random.PCG64())
            if _global_seed is not None:
                gen.bit_generator.state = _seeded_state(_global_seed, key)
            found = (engine.Var(f"rng:{key[0]}({key[1]})"), gen)
            _rngs[key] = found
    return found


def seed(seed_state: int, ctx="all") -> None:
    """Reseed the generator of `ctx` ('all': every device, now and later), in push order."""
    global _global_seed
    if isinstance(seed_state, bool) or not isinstance(seed_state, (int, np.integer)):
        raise ValueError(f"seed_state must be an int, got {type(seed_state).__name__}")
    value = int(seed_state) % (1 << 64)
    if isinstance(ctx, Context):
        rng(ctx)
        targets = [(_key(ctx), _rngs[_key(ctx)])]
    elif isinstance(ctx, str) and ctx == "all":
        with _lock:
            _global_seed = value
            targets = list(_rngs.items())
    else:
        raise ValueError(f"ctx must be a Context or 'all', got {ctx!r}")
    for key, (var, gen) in targets:
        state = _seeded_state(value, key)

        def reseed(gen=gen, state=state):
            gen.bit_generator.state = state
        engine.push(reseed, write=(var,), name="random_seed")
