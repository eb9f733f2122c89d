"""Stateful property test of the pooled manager: any mix of calls keeps blocks disjoint and stats exact."""
import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import ember as mx
from ember.memory import PooledManager
from ember.memory.arena import ArenaBlock

MiB = 1 << 20
sizes = st.one_of(st.integers(0, 4096), st.integers(4097, MiB), st.integers(MiB + 1, 20 * MiB))


def span(block):
    start = block.data.__array_interface__["data"][0]
    return start, start + block.size


class PooledMachine(RuleBasedStateMachine):
    @initialize(split=st.booleans())
    def make(self, split):
        self.mgr = PooledManager(mx.cpu(), split_large=split)
        self.live = []
        self.peak = 0
        self.allocs = 0
        self.frees = 0

    @rule(nbytes=sizes)
    def alloc(self, nbytes):
        block = self.mgr.alloc(nbytes)
        assert block.nbytes == nbytes and block.size >= nbytes and block.data.size == block.size
        self.live.append(block)
        self.allocs += 1
        self.peak = max(self.peak, sum(b.nbytes for b in self.live))

    @precondition(lambda self: self.live)
    @rule(pick=st.integers(0, 1 << 30))
    def release(self, pick):
        self.mgr.release(self.live.pop(pick % len(self.live)))
        self.frees += 1

    @rule()
    def empty_cache(self):
        self.mgr.empty_cache()
        # all that stays reserved: live small blocks and the segments live large blocks sit in
        segments = {id(b.segment): b.segment.size for b in self.live if isinstance(b, ArenaBlock)}
        small = sum(b.size for b in self.live if not isinstance(b, ArenaBlock))
        s = self.mgr.stats()
        assert s["bytes_reserved"] == small + sum(segments.values())
        assert s["segments"] == len(segments)

    @rule()
    def reset_peak(self):
        self.mgr.reset_peak_stats()
        self.peak = sum(b.nbytes for b in self.live)

    @invariant()
    def blocks_are_disjoint(self):
        spans = sorted(span(b) for b in self.live)
        assert all(end <= nxt for (_, end), (nxt, _) in zip(spans, spans[1:]))

    @invariant()
    def stats_match_the_model(self):
        s = self.mgr.stats()
        assert s["bytes_in_use"] == sum(b.nbytes for b in self.live)
        assert s["internal_fragmentation_bytes"] == sum(b.size - b.nbytes for b in self.live)
        assert s["bytes_reserved"] == s["bytes_cached"] + sum(b.size for b in self.live)
        assert s["peak_bytes_in_use"] == self.peak
        assert (s["num_allocs"], s["num_frees"]) == (self.allocs, self.frees)
        assert s["cache_hits"] + s["cache_misses"] == self.allocs
        assert s["live_blocks"] == len(self.live)


TestPooledMachine = PooledMachine.TestCase
TestPooledMachine.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)
