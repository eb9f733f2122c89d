"""Push cost as the number of pending ops grows from 10 to 1,000,000.

A gate op holds one variable; every further op waits behind it (so none can run), and the cost of
each batch of pushes is timed as the pending count grows.  A per-variable version queue keeps the
push O(variables of the op), so the figure must stay flat.

    python bench/engine_pending.py [--max 1000000]
"""
import argparse
import threading
import time

import ember.engine as engine
from ember.engine._native import lib

from _util import emit

p = argparse.ArgumentParser(description=__doc__)
p.add_argument("--max", type=int, default=1_000_000)
p.add_argument("--batch", type=int, default=2000)
args = p.parse_args()

gate = threading.Event()
started = threading.Event()
hub = engine.Var("hub")
others = [engine.Var() for _ in range(16)]
engine.push(lambda: (started.set(), gate.wait(600)), write=[hub], name="gate")
started.wait(10)
fn = lib.ember_noop
levels = {}
pending = 1
target = 10
i = 0
while target <= args.max:
    while pending + args.batch < target:  # fill up to the level without timing
        for _ in range(args.batch):
            engine.push_native(fn, read=[hub], write=[others[i % 16]])
            i += 1
        pending += args.batch
    t0 = time.perf_counter()
    for _ in range(args.batch):
        engine.push_native(fn, read=[hub], write=[others[i % 16]])
        i += 1
    dt = time.perf_counter() - t0
    pending += args.batch
    levels[str(target)] = round(dt / args.batch * 1e6, 3)
    target *= 10
gate.set()
t0 = time.perf_counter()
engine.wait_all()
emit("engine_pending", results={"push_us_at_pending": levels, "drain_s": round(time.perf_counter() - t0, 2),
                                "total_ops": i})
