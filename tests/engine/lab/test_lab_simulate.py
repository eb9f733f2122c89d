"""The lab's simulator: schedules on hand-built DAGs equal the ones worked out by hand."""
import numpy as np
import pytest

from ember.engine import lab
from ember.engine.policy import PythonPolicy


def _five_ops(names=("s0", "s1", "s2", "x", "y")):
    # three independent ops of 3 s pushed first, then a chain x (1 s) -> y (10 s)
    return lab.Workload.from_edges([3, 3, 3, 1, 10], [3], [4], names=list(names))


class LongestNameFirst(PythonPolicy):
    name = "longest_name_first"

    def key(self, name, priority, seq, dependants, queue):
        return len(name)


# Two workers.  Worked out by hand (start times per op, then the makespan):
#   fifo / priority (all 0): s0, s1 at 0; s2, x at 3; y after x at 4 -> ends 14
#   lifo (newest first):     x, s2 at 0; y at 1 (x done) -> 11; s1 at 3, s0 at 6 -> ends 11
#   critical_path:           x has 1 dependant: x, s0 at 0; at 1 s1 (ties in push order before y);
#                            s2 at 3; y at 4 -> ends 14
#   longest name first with names s0 s1 s2 x_head y_tail: x_head, s0 at 0; y_tail at 1 -> 11;
#                            s1 at 3, s2 at 6 -> ends 11
@pytest.mark.parametrize("policy,starts,makespan", [
    ("fifo", [0, 0, 3, 3, 4], 14),
    ("priority", [0, 0, 3, 3, 4], 14),
    ("lifo", [6, 3, 0, 0, 1], 11),
    ("critical_path", [0, 1, 3, 0, 4], 14),
])
def test_builtin_policies_two_workers(policy, starts, makespan):
    res = lab.simulate(_five_ops(), workers=2, policy=policy)
    assert res.start_s.tolist() == starts
    assert res.makespan_s == makespan
    assert res.critical_path_s == 11 and res.work_bound_s == 10 and res.lower_bound_s == 11
    assert sum(res.utilisation.values()) * makespan == pytest.approx(20)


def test_python_policy_object_and_plain_function():
    wl = _five_ops(names=("s0", "s1", "s2", "x_head", "y_tail"))
    res = lab.simulate(wl, workers=2, policy=LongestNameFirst())
    assert res.start_s.tolist() == [0, 3, 6, 0, 1] and res.makespan_s == 11 and res.policy == "longest_name_first"
    fn = lab.simulate(wl, workers=2, policy=lambda name, priority, seq, dependants, queue: len(name))
    assert fn.start_s.tolist() == res.start_s.tolist()


def test_priority_one_worker_order_and_ties_in_push_order():
    # roots 0, 1, 2; ops 3 and 4 need op 2.  costs 1 2 3 1 2, priorities 0 2 1 0 3
    wl = lab.Workload.from_edges([1, 2, 3, 1, 2], [2, 2], [3, 4], priority=np.array([0, 2, 1, 0, 3]))
    # priority: 1 (0-2), 2 (2-5), then 4 (prio 3) 5-7, then 0 and 3 tie (prio 0): push order, 0 then 3
    assert lab.simulate(wl, 1, "priority").start_s.tolist() == [7, 0, 2, 8, 5]
    # fifo: push order among the ready ones: 0, 1, 2, 3, 4
    assert lab.simulate(wl, 1, "fifo").start_s.tolist() == [0, 1, 3, 6, 7]
    # lifo: 2 (0-3), then newest ready: 4, 3, 1, 0
    assert lab.simulate(wl, 1, "lifo").start_s.tolist() == [8, 6, 0, 5, 3]
    # critical_path: op 2 has 2 dependants (key 2049): 2 first; then by priority 4, 1, then 0, 3
    assert lab.simulate(wl, 1, "critical_path").start_s.tolist() == [7, 5, 0, 8, 3]
    assert lab.simulate(wl, 1, "fifo").makespan_s == 9


def test_a_broken_python_key_falls_back_to_priority_as_the_engine_does():
    wl = lab.Workload.from_edges([1, 2, 3, 1, 2], [2, 2], [3, 4], priority=np.array([0, 2, 1, 0, 3]))

    def broken(name, priority, seq, dependants, queue):
        raise RuntimeError("experiment bug")
    assert lab.simulate(wl, 1, broken).start_s.tolist() == lab.simulate(wl, 1, "priority").start_s.tolist()


def test_queues_have_their_own_workers_and_release_times_delay_ops():
    # op 0 on queue 0, op 1 on queue 1 (both 2 s, independent): they overlap with one worker each
    wl = lab.Workload.from_edges([2, 2, 1], [0, 1], [2, 2], queue=np.array([0, 1, 0]))
    res = lab.simulate(wl, workers={0: 1, 1: 1})
    assert res.start_s.tolist() == [0, 0, 2] and res.makespan_s == 3
    # the same with op 1 pushed at t = 5
    wl.release_s = np.array([0.0, 5.0, 0.0])
    res = lab.simulate(wl, workers=1)
    assert res.start_s.tolist() == [0, 5, 7] and res.makespan_s == 8 and res.critical_path_s == 8


def test_ops_in_the_caller_use_no_worker():
    wl = lab.Workload.from_edges([2, 2, 2], [], [])
    wl.in_caller = np.array([False, True, False])
    res = lab.simulate(wl, workers=1)
    assert res.start_s.tolist() == [0, 0, 2] and res.worker.tolist() == [0, -1, 0]
    assert res.work_bound_s == 4


def test_peak_bytes_equal_the_hand_computation():
    # A (100 B) feeds B (10 B) and C (20 B); D (1 B) needs B and C.  Costs 1 1 2 1.
    wl = lab.Workload.from_edges([1, 1, 2, 1], [0, 0, 1, 2], [1, 2, 3, 3], out_nbytes=[100, 10, 20, 1])
    res = lab.simulate(wl, workers=2)
    # A 0-1, B 1-2, C 1-3, D 3-4.  Live: A [0,3) B [1,4) C [1,4) D [3,4)
    assert res.start_s.tolist() == [0, 1, 1, 3]
    assert res.peak_bytes == 130
    curve = dict(zip(res.memory_t.tolist(), res.memory_bytes.tolist()))  # last value at each time
    assert curve == {0: 100, 1: 130, 3: 31, 4: 0}
    # one worker, fifo: A 0-1, B 1-2, C 2-4, D 4-5; A lives until C ends: 100 + 10 + 20 at t = 2
    res1 = lab.simulate(wl, workers=1, policy="fifo")
    assert res1.start_s.tolist() == [0, 1, 2, 4] and res1.peak_bytes == 130


def test_peak_bytes_from_trace_variables():
    # variables: 0 (8 B, exists before), 1 (16 B), 2 (32 B).  op0 writes 1 reading 0; op1 writes 2
    # reading 1; op2 writes 1 again (after op1 read it: war); op3 reads 2.  Costs 1 each, 1 worker.
    trace = lab.Trace(names=["a", "b", "c", "d"], queue=[0] * 4, priority=[0] * 4,
                      reads=[(0,), (1,), (), (2,)], writes=[(1,), (2,), (1,), ()], var_nbytes=[8, 16, 32])
    assert sorted(trace.edges) == [(0, 1, 1, "raw"), (1, 2, 1, "war"), (1, 3, 2, "raw")]
    res = lab.simulate(lab.Workload.from_trace(trace, cost_s=[1, 1, 1, 1]), workers=1, policy="fifo")
    # var 0: [0, 1); var 1: [0, 3) (last access op2 ends at 3); var 2: [1, 4)
    assert res.start_s.tolist() == [0, 1, 2, 3]
    assert res.peak_bytes == 8 + 16 + 32 - 8  # at t = 1: var 0 freed, var 2 allocated: 48
    assert res.makespan_s == 4


def test_cost_model():
    trace = lab.Trace(names=["matmul", "kvstore_push"], queue=[0, 0], priority=[0, 0], reads=[(0,), (1,)],
                      writes=[(1,), (2,)], var_nbytes=[1000, 1000, 0])
    cm = lab.CostModel(default_flops_per_s=1e6, default_bytes_per_s=1e6, dispatch_s=1e-3, latency_s=1e-2,
                       bandwidth_Bps=1e5, flops=[4000, 0])
    cost = lab.Workload.from_trace(trace, cost_model=cm).cost_s
    # matmul: 1 ms + max(4000 / 1e6, 2000 / 1e6) = 5 ms; kvstore: 1 ms + 10 ms + 1000 / 1e5 = 21 ms
    np.testing.assert_allclose(cost, [5e-3, 21e-3])


def test_interpreter_lock_serialises_the_held_part():
    # three independent 2 s ops, 3 workers.  gil=1: one after another; gil=0.5: each holds the lock
    # for its first second: starts 0, 1, 2, ends 2, 3, 4
    wl = lab.Workload.from_edges([2, 2, 2], [], [])
    assert lab.simulate(wl, 3).makespan_s == 2
    assert lab.simulate(wl, 3, gil=1.0).start_s.tolist() == [0, 2, 4]
    res = lab.simulate(wl, 3, gil=0.5)
    assert res.start_s.tolist() == [0, 1, 2] and res.makespan_s == 4
    with pytest.raises(ValueError, match="gil"):
        lab.simulate(wl, 3, gil=2.0)


def test_start_gaps_measure_the_engine_cost_per_op():
    # one worker: op0 0-10; op1 needs op0, starts at 13 (gap 3); op2 pushed at 20, starts at 25 (gap 5);
    # op3 ran in the caller (not a worker gap)
    t = lab.Trace(names=["a", "b", "c", "d"], queue=[0] * 4, priority=[0] * 4, reads=[(), (0,), (), ()],
                  writes=[(0,), (1,), (2,), (3,)], var_nbytes=[0, 0, 0, 0], push_ns=[0, 0, 20, 21],
                  start_ns=[0, 13, 25, 21], end_ns=[10, 15, 30, 22], worker=[0, 0, 0, -1],
                  in_caller=[False, False, False, True])
    np.testing.assert_allclose(lab.start_gaps_s(t), [3e-9, 5e-9])


def test_compare_table():
    rows = lab.compare(_five_ops(), workers=(1, 2), policies=("fifo", "lifo"))
    assert [(r["workers"], r["policy"], r["makespan_s"]) for r in rows] == [
        (1, "fifo", 20), (1, "lifo", 20), (2, "fifo", 14), (2, "lifo", 11)]
    assert rows[3]["vs_bound"] == 1.0 and rows[2]["lower_bound_s"] == 11


def test_bad_inputs():
    with pytest.raises(ValueError, match="earlier-pushed"):
        lab.Workload.from_edges([1, 1], [1], [0])
    with pytest.raises(ValueError, match="at least one worker"):
        lab.simulate(_five_ops(), workers=0)
    with pytest.raises(ValueError, match="unknown scheduling policy"):
        lab.simulate(_five_ops(), policy="random")
    with pytest.raises(ValueError, match="finite"):
        lab.Workload.from_edges([1, np.nan], [], [])
