"""Command line: record a script's ops, replay a trace, compare policies.

    python -m ember.engine.lab record -o TRACE.jsonl SCRIPT.py [script args]
    python -m ember.engine.lab replay TRACE.jsonl --workers 16 --policy critical_path [--json] [--plot OUT.png]
    python -m ember.engine.lab compare TRACE.jsonl --workers 1 2 4 --policies priority fifo lifo critical_path [--plot OUT.png]
"""
from __future__ import annotations

import argparse
import json
import runpy
import sys
from typing import List, Optional

from . import compare, load, plots, record, simulate, Workload
from .. import policy as _policy


def _workload(args) -> Workload:
    return Workload.from_trace(load(args.trace), dispatch_s=args.dispatch_us * 1e-6,
                               release=args.release, caller=args.caller)


def _add_replay_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace")
    p.add_argument("--dispatch-us", type=float, default=0.0, help="fixed cost added to every op (µs)")
    p.add_argument("--release", action="store_true", help="ops may not start before their recorded push time")
    p.add_argument("--caller", action="store_true", help="ops recorded in the pushing thread run there again")
    p.add_argument("--gil", type=float, default=0.0, help="fraction of each op spent holding the GIL (0..1)")
    p.add_argument("--plot", metavar="OUT.png", help="also save a plot (needs matplotlib)")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ember.engine.lab", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="run a Python script and record every engine op it pushes")
    r.add_argument("script")
    r.add_argument("-o", "--output", required=True)
    r.add_argument("script_args", nargs=argparse.REMAINDER)
    p = sub.add_parser("replay", help="simulate a trace on a machine size under a policy")
    _add_replay_options(p)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--policy", default="priority", choices=sorted(_policy.BUILTIN))
    p.add_argument("--memory-high", type=int, default=None, metavar="BYTES",
                   help="memory_aware only: apply the memory term only while live bytes >= BYTES")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    c = sub.add_parser("compare", help="makespan and peak bytes for each (workers, policy)")
    _add_replay_options(c)
    c.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8])
    c.add_argument("--policies", nargs="+", default=sorted(_policy.BUILTIN), choices=sorted(_policy.BUILTIN))
    c.add_argument("--json", action="store_true", help="print one JSON object per line")
    args = ap.parse_args(argv)

    if args.cmd == "record":
        sys.argv = [args.script] + [a for a in args.script_args if a != "--"]
        with record(args.output):
            runpy.run_path(args.script, run_name="__main__")
        print(f"trace: {args.output} (Chrome trace: {args.output}.chrome.json)")
        return 0
    wl = _workload(args)
    if args.cmd == "replay":
        policy = args.policy
        if args.memory_high is not None:
            if policy != "memory_aware":
                ap.error("--memory-high goes with --policy memory_aware")
            policy = _policy.MemoryAware(args.memory_high)
        res = simulate(wl, workers=args.workers, policy=policy, gil=args.gil)
        out = res.to_dict()
        if args.plot:
            plots.replay_figure(wl, res).savefig(args.plot, dpi=120)
        if args.json:
            print(json.dumps(out))
        else:
            print(f"{out['ops']} ops, {args.workers} workers/queue, policy {args.policy}: "
                  f"makespan {out['makespan_s'] * 1e3:.3f} ms (lower bound {out['lower_bound_s'] * 1e3:.3f} ms), "
                  f"peak {out['peak_bytes'] / 2**20:.2f} MiB")
        return 0
    rows = compare(wl, workers=args.workers, policies=args.policies, gil=args.gil)
    if args.plot:
        ax = plots.makespan_vs_workers(rows)
        ax.figure.savefig(args.plot, dpi=120)
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(plots.table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
