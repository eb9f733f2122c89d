"""How long a ready communication op waits behind queued compute (what limits kvstore overlap).

    python bench/kvstore_engine_priority.py [--layers 4 --compute-ms 10 --priority 1048576]

A fake backward: L compute ops (each sleeps --compute-ms, engine priority 0) issued last layer
first, each followed by an async "push" op reading its output with engine priority
--priority - layer (the kvstore lifts communication ops by 2**20).  Reports, per push, how long
after its input was ready it started.  Ideally ~0 ms: MXNet runs kvstore ops on a prioritized
queue.  A delay of about --compute-ms means the push was queued behind a compute op (e.g. batched
onto a worker behind it).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from ember import engine  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--compute-ms", type=float, default=10.0)
    p.add_argument("--priority", type=int, default=1 << 20)
    args = p.parse_args()
    t0 = time.perf_counter()
    ready, started = {}, {}
    outs = [engine.Var(name=f"grad{i}") for i in range(args.layers)]
    for layer in reversed(range(args.layers)):
        def compute(layer=layer):
            time.sleep(args.compute_ms / 1e3)
            ready[layer] = time.perf_counter() - t0

        def push(done, layer=layer):
            started[layer] = time.perf_counter() - t0
            done()
        engine.push(compute, write=[outs[layer]], name=f"backward{layer}")
        engine.push(push, read=[outs[layer]], write=[engine.Var()], prop="async",
                    priority=args.priority - layer, name=f"push{layer}")
    engine.wait_all()
    delays = {layer: round((started[layer] - ready[layer]) * 1e3, 2) for layer in sorted(ready)}
    print(json.dumps({"bench": "kvstore_engine_priority", "engine": engine.engine_type(),
                      "compute_ms": args.compute_ms, "push_start_delay_ms": delays,
                      "max_delay_ms": max(delays.values())}))


if __name__ == "__main__":
    main()
