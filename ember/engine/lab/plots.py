"""Plots of replays: a Gantt chart per worker, live memory over time, makespan against workers.

matplotlib is an optional dependency (`pip install matplotlib`, or ember's `lab` extra).  Every
function draws into the `ax` it is given, or into a new figure made without pyplot (so nothing
opens a window or touches pyplot's global state), and returns the matplotlib Axes.
"""
from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

import numpy as np

from .simulate import SimResult
from .workload import Workload


def _figure(figsize):
    try:
        from matplotlib.figure import Figure
    except ImportError as exc:  # optional dependency: say exactly what to install
        raise ImportError("ember.engine.lab plots need matplotlib: pip install matplotlib "
                          "(or pip install 'ember[lab]')") from exc
    return Figure(figsize=figsize, layout="constrained")


def _axes(ax, figsize):
    return ax if ax is not None else _figure(figsize).add_subplot()


def replay_figure(wl: Workload, res: SimResult):
    """A figure with the Gantt chart of one replay above its live-memory curve."""
    fig = _figure((10, 6))
    top, bottom = fig.subplots(2, 1, height_ratios=[2, 1])
    gantt(wl, res, ax=top)
    memory(res, ax=bottom)
    return fig


def gantt(wl: Workload, res: SimResult, ax=None, max_ops: int = 20000, label_ops: int = 0):
    """One row per (queue, worker), one bar per op from its simulated start to its end; ops run
    in the caller get their own row per queue.  Only the `max_ops` longest ops are drawn on big
    workloads (a bar narrower than a pixel shows nothing).  `label_ops` > 0 writes the names of
    that many longest ops on their bars."""
    if len(res.start_s) != len(wl):
        raise ValueError(f"gantt: the result has {len(res.start_s)} ops but the workload {len(wl)}")
    ax = _axes(ax, (10, 4))
    dur = res.end_s - res.start_s
    order = np.argsort(-dur, kind="stable")[:max_ops] if len(dur) > max_ops else np.arange(len(dur))
    rows = sorted({(int(wl.queue[i]), int(res.worker[i])) for i in order})
    row_of = {r: k for k, r in enumerate(rows)}
    for k, (q, w) in enumerate(rows):
        sel = order[(wl.queue[order] == q) & (res.worker[order] == w)]
        ax.broken_barh(list(zip(res.start_s[sel] * 1e3, dur[sel] * 1e3)), (k - 0.4, 0.8),
                       facecolors=f"C{q % 10}", edgecolors="none")
    for i in order[:label_ops]:
        k = row_of[(int(wl.queue[i]), int(res.worker[i]))]
        ax.text((res.start_s[i] + dur[i] / 2) * 1e3, k, wl.name(int(i)), ha="center", va="center", fontsize=6,
                clip_on=True)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"q{q} caller" if w < 0 else f"q{q} w{w}" for q, w in rows])
    ax.set_xlabel("time (ms)")
    ax.set_title(f"{res.policy}: makespan {res.makespan_s * 1e3:.3f} ms "
                 f"(lower bound {res.lower_bound_s * 1e3:.3f} ms)")
    return ax


def memory(results: Iterable[SimResult], ax=None, labels: Optional[Sequence[str]] = None):
    """Live bytes over time for one or more replays (a step curve each), peak marked in the legend."""
    results = [results] if isinstance(results, SimResult) else list(results)
    ax = _axes(ax, (8, 3.5))
    for k, res in enumerate(results):
        name = labels[k] if labels is not None else f"{res.policy}, {sum(res.workers.values())} workers"
        ax.step(res.memory_t * 1e3, res.memory_bytes / 2**20, where="post",
                label=f"{name} (peak {res.peak_bytes / 2**20:.2f} MiB)")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("live MiB")
    ax.legend(fontsize=7)
    return ax


def makespan_vs_workers(rows: List[dict], ax=None, bound: bool = True):
    """Makespan against worker count, one line per policy, from `compare(...)`'s rows; with
    `bound`, the lower bound (the same for every policy) as a dashed line."""
    ax = _axes(ax, (6, 4))
    policies = sorted({r["policy"] for r in rows})
    for p in policies:
        pts = sorted((r["workers"], r["makespan_s"]) for r in rows if r["policy"] == p)
        ax.plot([w for w, _ in pts], [m * 1e3 for _, m in pts], marker="o", label=p)
    if bound and rows:
        lb = sorted({(r["workers"], r["lower_bound_s"]) for r in rows})
        ax.plot([w for w, _ in lb], [b * 1e3 for _, b in lb], "k--", label="lower bound")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("workers per queue")
    ax.set_ylabel("makespan (ms)")
    ax.legend(fontsize=7)
    return ax


def table(rows: List[dict]) -> str:
    """`compare(...)`'s rows as an aligned text table (for a terminal or a notebook cell)."""
    head = f"{'workers':>8} {'policy':<16} {'makespan ms':>12} {'bound ms':>10} {'vs bound':>9} {'peak MiB':>10}"
    lines = [head]
    for r in rows:
        lines.append(f"{r['workers']:>8} {r['policy']:<16} {r['makespan_s'] * 1e3:>12.3f} "
                     f"{r['lower_bound_s'] * 1e3:>10.3f} {r.get('vs_bound', float('nan')):>9.3f} "
                     f"{r['peak_bytes'] / 2**20:>10.2f}")
    return "\n".join(lines)
