"""Static storage planning: give every intermediate tensor bytes, reusing dead tensors' bytes.

Input: *groups*, one per storage need, each with a byte size and a live interval
[start, end] of execution steps (inclusive: a tensor read at step t cannot share bytes
with a tensor written at step t).  In-place sharing has already merged the tensors that
must share one group.  Two algorithms, the better total is kept:

* size matching (MXNet's GraphAllocator): walk the steps, free groups whose last use
  passed, take a free block of similar size (within a factor `match_range`), growing
  a smaller one if needed; the total is the sum of block sizes.
* offset packing (greedy by size): place groups largest first in one arena at the
  offset that leaves the tightest gap beside groups live at the same time; when that
  misses the lower bound, a local search over the placement order (the group ending on
  top moves to the front) tries again for a few rounds.

`lower_bound` is the most bytes live at one step: no plan can use less.
"""
from __future__ import annotations

import bisect
import os
from dataclasses import dataclass, field
from typing import List, Sequence

import numpy as np

ALIGN = 64  # bytes; keeps every tensor aligned for any dtype and SIMD loads
OFFSET_MAX_GROUPS = int(os.environ.get("EMBER_PLAN_OFFSET_MAX_GROUPS", "6000"))


def align(nbytes: int) -> int:
    return (int(nbytes) + ALIGN - 1) // ALIGN * ALIGN


@dataclass
class Placement:
    """Where each group lives: block id and byte offset; block sizes; which algorithm made it."""

    block: List[int]
    offset: List[int]
    block_sizes: List[int]
    algorithm: str
    candidates: dict = field(default_factory=dict)

    @property
    def total(self) -> int:
        return int(sum(self.block_sizes))


def lower_bound(sizes: Sequence[int], starts: Sequence[int], ends: Sequence[int]) -> int:
    """Max over steps of the bytes of groups live at that step."""
    if len(sizes) == 0:
        return 0
    sizes, starts, ends = _arrays(sizes, starts, ends)
    n = int(ends.max()) + 2
    delta = np.zeros(n + 1, dtype=np.int64)
    np.add.at(delta, starts, sizes)
    np.add.at(delta, ends + 1, -sizes)
    return int(np.cumsum(delta).max())


def size_matching(sizes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                  match_range: int = 16) -> Placement:
    """MXNet-style pool of blocks matched by size; each block holds one group at a time."""
    n = len(sizes)
    order = sorted(range(n), key=lambda g: (starts[g], g))
    by_end = sorted(range(n), key=lambda g: ends[g])
    free: List[tuple] = []          # sorted (size, block)
    block_sizes: List[int] = []
    block = [0] * n
    released = 0
    for g in order:
        t = starts[g]
        while released < n and ends[by_end[released]] < t:
            done = by_end[released]
            released += 1
            b = block[done]
            bisect.insort(free, (block_sizes[b], b))
        need = sizes[g]
        lo = bisect.bisect_left(free, (need // match_range, -1))
        mid = bisect.bisect_left(free, (need, -1))
        hi = bisect.bisect_right(free, (need * match_range, 1 << 62))
        pick = None
        if mid < hi:
            pick = mid                      # smallest free block at least as big
        elif mid > lo:
            pick = mid - 1                  # largest smaller block, grown to fit
        if pick is None:
            block[g] = len(block_sizes)
            block_sizes.append(need)
        else:
            size, b = free.pop(pick)
            block[g] = b
            block_sizes[b] = max(size, need)
    return Placement(block, [0] * n, block_sizes, "size_matching")


def _place_in_order(sizes_a: np.ndarray, starts_a: np.ndarray, ends_a: np.ndarray, order: Sequence[int],
                    best_fit: bool = True) -> tuple:
    """(offsets, top): each group in `order` at the best (or first) fitting gap among the groups
    already placed that live at the same time."""
    n = len(sizes_a)
    p_start = np.empty(n, dtype=np.int64)
    p_end = np.empty(n, dtype=np.int64)
    p_off = np.empty(n, dtype=np.int64)
    p_size = np.empty(n, dtype=np.int64)
    offset = [0] * n
    k = 0
    top = 0
    for g in order:
        s, e, need = int(starts_a[g]), int(ends_a[g]), int(sizes_a[g])
        mask = (p_start[:k] <= e) & (p_end[:k] >= s)
        offs = p_off[:k][mask]
        if offs.size == 0:
            off = 0
        else:
            idx = np.argsort(offs, kind="stable")
            offs = offs[idx]
            ends_b = (offs + p_size[:k][mask][idx])
            # reach[i]: highest byte used by conflicting groups placed below offs[i]
            reach = np.maximum.accumulate(ends_b)
            prev = np.concatenate(([0], reach[:-1]))
            gaps = offs - prev
            fits = np.nonzero(gaps >= need)[0]
            if fits.size:
                j = fits[np.argmin(gaps[fits])] if best_fit else fits[0]
                off = int(prev[j])
            else:
                off = int(reach[-1])
        offset[g] = off
        p_start[k], p_end[k], p_off[k], p_size[k] = s, e, off, need
        k += 1
        top = max(top, off + need)
    return offset, top


def _size_order(sizes_a: np.ndarray, starts_a: np.ndarray, ends_a: np.ndarray) -> List[int]:
    """Largest first, then longest lifetime, then earliest start."""
    return np.lexsort((starts_a, -(ends_a - starts_a), -sizes_a)).tolist()


def _arrays(sizes, starts, ends):
    return (np.asarray(sizes, dtype=np.int64), np.asarray(starts, dtype=np.int64),
            np.asarray(ends, dtype=np.int64))


def offset_packing(sizes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                   best_fit: bool = True, by: str = "size") -> Placement:
    """Greedy: groups largest first (by='size') or in step order (by='start'), each at the best (or
    first) fitting gap among the groups already placed that live at the same time, in one arena."""
    n = len(sizes)
    sizes_a, starts_a, ends_a = _arrays(sizes, starts, ends)
    if by == "size":
        order = _size_order(sizes_a, starts_a, ends_a)
    else:
        order = np.lexsort((-sizes_a, starts_a)).tolist()
    offset, top = _place_in_order(sizes_a, starts_a, ends_a, order, best_fit)
    label = "offset_packing" + ("" if best_fit else "_first_fit") + ("" if by == "size" else "_by_start")
    return Placement([0] * n, offset, [top] if n else [], label)


def offset_packing_search(sizes: Sequence[int], starts: Sequence[int], ends: Sequence[int],
                          iterations: int, target: int = 0) -> Placement:
    """Offset packing improved by a local search over the placement order.

    Greedy placement fails when a group placed early takes the very bytes a later, larger
    neighbour needed (MLP training: an unused 24.5 MB data gradient pushes a 16 MB gradient to
    the top).  Each round moves the group that ends highest (of those reaching the top, the
    one placed last) to the front of the order and places everything again; the best top seen
    is kept.  Stops after `iterations` rounds, when the top reaches `target` (the lower bound),
    or when the group on top is already placed first.
    """
    n = len(sizes)
    sizes_a, starts_a, ends_a = _arrays(sizes, starts, ends)
    order = _size_order(sizes_a, starts_a, ends_a)
    offset, top = _place_in_order(sizes_a, starts_a, ends_a, order)
    best_off, best_top = offset, top
    for _ in range(iterations):
        if best_top <= target:
            break
        pos = {g: i for i, g in enumerate(order)}
        on_top = max((g for g in range(n) if offset[g] + sizes_a[g] == top), key=pos.__getitem__)
        if pos[on_top] == 0:
            break
        order.remove(on_top)
        order.insert(0, on_top)
        offset, top = _place_in_order(sizes_a, starts_a, ends_a, order)
        if top < best_top:
            best_off, best_top = offset, top
    return Placement([0] * n, best_off, [best_top] if n else [], "offset_packing_search")


# Rounds of the order search: each costs one placement, O(groups x live-at-once), so the number of
# rounds shrinks with the graph (SEARCH_WORK / groups, at most SEARCH_MAX_ROUNDS).
SEARCH_WORK = int(os.environ.get("EMBER_PLAN_SEARCH_WORK", "8000"))
SEARCH_MAX_ROUNDS = 64


# "best" stops at the first candidate within this factor of the lower bound: no other can be
# better by more than that, and the offset-packing candidates cost far more than size matching.
GOOD_ENOUGH = float(os.environ.get("EMBER_PLAN_GOOD_ENOUGH", "1.001"))


def plan(sizes: Sequence[int], starts: Sequence[int], ends: Sequence[int], method: str = "best") -> Placement:
    """The smallest of size matching and offset packing (or the one named by `method`).

    "best" tries, cheapest first: size matching, offset packing (best fit, then first fit and
    step order on smaller graphs), then the order search; it stops as soon as a candidate is
    within GOOD_ENOUGH of the lower bound.
    """
    sizes = [align(s) for s in sizes]
    n = len(sizes)
    if method == "naive":  # every group its own block: the reference the tests compare against
        return Placement(list(range(n)), [0] * n, list(sizes), "naive")
    # Offset packing costs O(groups x live-at-once groups); past OFFSET_MAX_GROUPS "best" keeps to
    # size matching (O(n log n)), which the plan-time bench shows is already at the bound there.
    small = n <= OFFSET_MAX_GROUPS
    rounds = min(SEARCH_MAX_ROUNDS, SEARCH_WORK // max(n, 1))
    bound = lower_bound(sizes, starts, ends)
    steps = [
        ("size_matching", method in ("best", "size_matching"), lambda: size_matching(sizes, starts, ends)),
        ("offset_packing", method == "offset_packing" or (method == "best" and small),
         lambda: offset_packing(sizes, starts, ends, best_fit=True)),
        ("offset_packing_first_fit", method == "best" and n <= OFFSET_MAX_GROUPS // 4,
         lambda: offset_packing(sizes, starts, ends, best_fit=False)),
        ("offset_packing_by_start", method == "best" and n <= OFFSET_MAX_GROUPS // 4,
         lambda: offset_packing(sizes, starts, ends, best_fit=True, by="start")),
        ("offset_packing_search", method == "offset_packing_search" or (method == "best" and small and rounds > 0),
         lambda: offset_packing_search(sizes, starts, ends, max(rounds, 1), bound)),
    ]
    cands = {}
    for name, wanted, run in steps:
        if not wanted:
            continue
        cands[name] = run()
        if method == "best" and cands[name].total <= bound * GOOD_ENOUGH:
            break
    if not cands:
        raise ValueError(f"unknown planning method {method!r} "
                         "(best, size_matching, offset_packing, offset_packing_search, naive)")
    best = min(cands.values(), key=lambda p: p.total)  # ties: the first listed
    best.candidates = {k: v.total for k, v in cands.items()}
    return best


def check_plan(sizes, starts, ends, placement: Placement) -> None:
    """Raise AssertionError if two groups live at the same time overlap in bytes (or a block is too small)."""
    n = len(sizes)
    for g in range(n):
        b, off = placement.block[g], placement.offset[g]
        if off < 0 or off + sizes[g] > placement.block_sizes[b]:
            raise AssertionError(f"group {g} ({sizes[g]} B at {off}) exceeds block {b} of {placement.block_sizes[b]} B")
    for g in range(n):
        for h in range(g + 1, n):
            if placement.block[g] != placement.block[h]:
                continue
            if starts[g] <= ends[h] and starts[h] <= ends[g]:
                a0, a1 = placement.offset[g], placement.offset[g] + sizes[g]
                b0, b1 = placement.offset[h], placement.offset[h] + sizes[h]
                if a0 < b1 and b0 < a1 and sizes[g] and sizes[h]:
                    raise AssertionError(f"groups {g} and {h} are live together (steps {starts[g]}-{ends[g]} and "
                                         f"{starts[h]}-{ends[h]}) and share bytes [{max(a0, b0)}, {min(a1, b1)})")
