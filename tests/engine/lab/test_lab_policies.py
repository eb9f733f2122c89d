"""The new policies in the simulator (memory_aware, comm_first): schedules on hand-built DAGs equal
the ones worked out by hand, and the memory hints derived from buffers are what a pusher would pass."""
import numpy as np
import pytest

from ember.engine import lab
from ember.engine.policy import COMM_BOOST, MemoryAware, comm_key, is_comm, memory_key, resolve


def _wide(n=3, big=100, small=1):
    # A0..A{n-1} each write a big buffer (pushed first), then B_i reads A_i's buffer and writes a
    # small one: ops 0..n-1 are the A's, n..2n-1 the B's; every op costs 1 s
    return lab.Workload.from_edges([1.0] * (2 * n), list(range(n)), [n + i for i in range(n)],
                                   out_nbytes=[big] * n + [small] * n)


def test_memory_hints_from_buffers():
    # A_i allocates 100; B_i allocates 1, frees it (its own last use) and frees A_i's 100
    assert _wide().mem_hints.tolist() == [-100, -100, -100, 100, 100, 100]
    explicit = lab.Workload.from_edges([1, 1], [0], [1], mem_bytes=[5, -7])
    assert explicit.mem_hints.tolist() == [5, -7]


def test_memory_aware_one_worker_depth_first():
    wl = _wide()
    # priority (all 0): push order A0 A1 A2 B0 B1 B2; at [3, 4) A0, A1, A2 and B0's buffer are live
    pr = lab.simulate(wl, 1, "priority")
    assert pr.start_s.tolist() == [0, 1, 2, 3, 4, 5] and pr.peak_bytes == 301
    # memory_aware: A's key -100*1024, B's +100*1024: each B runs as soon as its A ended:
    # A0 0, B0 1, A1 2, B1 3, A2 4, B2 5; at most one big buffer and one small one live
    ma = lab.simulate(wl, 1, "memory_aware")
    assert ma.start_s.tolist() == [0, 2, 4, 1, 3, 5] and ma.peak_bytes == 101
    assert ma.makespan_s == pr.makespan_s == 6 and ma.policy == "memory_aware"


def test_memory_aware_threshold_gates_the_memory_term():
    # high = 200: the A's are keyed at 0 with live 0 (priority keys, all 0).  A0 runs; at 1 live is
    # 100 < 200, so B0 gets its priority key 0 and waits behind A1 (push order).  At 2 live is 200:
    # B1 is keyed 100*1024 and runs; at 3 live is 100 again, A2 (seq 2) before B0 (seq 3); at 4
    # live 200: B2 runs; B0 last at 5.
    res = lab.simulate(_wide(), 1, MemoryAware(high_bytes=200))
    assert res.start_s.tolist() == [0, 1, 3, 5, 2, 4]
    assert res.peak_bytes == 201 and res.policy == "memory_aware"
    # a threshold never reached is the priority policy
    never = lab.simulate(_wide(), 1, MemoryAware(high_bytes=10**9))
    assert never.start_s.tolist() == [0, 1, 2, 3, 4, 5]


def test_memory_aware_ties_break_by_priority_then_push_order():
    # two roots with equal hints (0); priorities 1 and 5; one worker: priority decides
    wl = lab.Workload.from_edges([1, 1, 1], [], [], priority=np.array([1, 5, 5]), mem_bytes=[0, 0, 0])
    assert lab.simulate(wl, 1, "memory_aware").start_s.tolist() == [2, 0, 1]


def _backward_with_kvstore():
    # backward chain bwd2 -> bwd1 -> bwd0 with a weight-gradient op per layer (wgrad_k after bwd_k),
    # then a kvstore push per layer (after bwd_k) pushed after the whole backward, as a training step does.
    # ops: 0 bwd2, 1 wgrad2, 2 bwd1, 3 wgrad1, 4 bwd0, 5 wgrad0, 6 kvstore_push2, 7 kvstore_push1,
    #      8 kvstore_push0; costs 1, kvstore pushes 2
    names = ["bwd2", "wgrad2", "bwd1", "wgrad1", "bwd0", "wgrad0",
             "kvstore_push[2]", "kvstore_push[1]", "kvstore_push[0]"]
    src = [0, 0, 2, 2, 4, 0, 2, 4]
    dst = [1, 2, 3, 4, 5, 6, 7, 8]
    return lab.Workload.from_edges([1, 1, 1, 1, 1, 1, 2, 2, 2], src, dst, names=names)


def test_comm_first_one_worker():
    wl = _backward_with_kvstore()
    # priority (all 0) = push order among ready ops: 0 at 0, 1 at 1, 2 at 2, 3 at 3, 4 at 4, 5 at 5,
    # then the three pushes 6, 8, 10
    assert lab.simulate(wl, 1, "priority").start_s.tolist() == [0, 1, 2, 3, 4, 5, 6, 8, 10]
    # comm_first: a push starts as soon as its bwd ended: bwd2 0, kv2 1-3, wgrad2 3, bwd1 4, kv1 5-7,
    # wgrad1 7, bwd0 8, kv0 9-11, wgrad0 11
    res = lab.simulate(wl, 1, "comm_first")
    assert res.start_s.tolist() == [0, 3, 4, 7, 8, 11, 1, 5, 9] and res.makespan_s == 12


def test_comm_first_two_workers():
    wl = _backward_with_kvstore()
    # priority: bwd2 [0,1]; wgrad2, bwd1 at 1; wgrad1, bwd0 at 2; wgrad0 and kv2 at 3;
    # kv1 at 4 (wgrad0 done), kv0 at 5 -> 7
    pr = lab.simulate(wl, 2, "priority")
    assert pr.start_s.tolist() == [0, 1, 1, 2, 2, 3, 3, 4, 5] and pr.makespan_s == 7
    # comm_first: bwd2 [0,1]; kv2 and wgrad2 at 1; bwd1 at 2; kv1 and wgrad1 at 3; bwd0 at 4;
    # kv0 and wgrad0 at 5 -> 7
    cf = lab.simulate(wl, 2, "comm_first")
    assert cf.start_s.tolist() == [0, 1, 2, 3, 4, 5, 1, 3, 5] and cf.makespan_s == 7


def test_key_rules_match_the_engine_constants():
    assert is_comm("kvstore_push[3]") and is_comm("allreduce_grads") and not is_comm("conv") and not is_comm("")
    assert comm_key("kvstore_pull[0]", -3) == COMM_BOOST - 3 and comm_key("fc", 2) == 2
    assert memory_key(4096, 1) == 4096 * 1024 + 1 and memory_key(-(1 << 60), 0) == -(1 << 52) * 1024
    assert resolve("memory_aware")[0] == 5 and resolve("comm_first")[0] == 6
    assert resolve(MemoryAware(7)) == (5, None, "memory_aware")
    with pytest.raises(TypeError, match="high_bytes"):
        MemoryAware(1.5)


def test_compare_rows_and_cli_choices_include_the_new_policies():
    from ember.engine import policy
    rows = lab.compare(_wide(), workers=(1,), policies=("priority", "memory_aware"))
    assert [r["peak_bytes"] for r in rows] == [301, 101]
    assert {"memory_aware", "comm_first"} <= set(policy.BUILTIN)


def test_release_scale_scales_the_recorded_push_times():
    import ember.engine as engine
    with lab.record() as rec:
        v = engine.Var(nbytes=64)
        for _ in range(5):
            engine.push(lambda: None, write=[v], name="w")
    tr = rec.trace
    full = lab.Workload.from_trace(tr, release=True)
    half = lab.Workload.from_trace(tr, release=True, release_scale=0.5)
    assert np.allclose(half.release_s, full.release_s * 0.5)
    assert np.allclose(full.release_s, np.maximum(tr.push_ns, 0) / 1e9)
    with pytest.raises(ValueError, match="release_scale"):
        lab.Workload.from_trace(tr, release=True, release_scale=0.0)


def test_cli_replay_memory_aware_with_threshold(tmp_path, capsys):
    import json
    import ember.engine as engine
    from ember.engine.lab.__main__ import main
    with lab.record() as rec:
        temps = [engine.Var(nbytes=100) for _ in range(3)]
        for t in temps:
            engine.push(lambda: None, write=[t], name="A")
        for t in temps:
            engine.push(lambda: None, read=[t], write=[engine.Var()], name="B")
    path = rec.trace.save(str(tmp_path / "t.jsonl"))
    wl = lab.Workload.from_trace(lab.load(path))
    assert wl.mem_hints.tolist() == [-100, -100, -100, 100, 100, 100]
    assert main(["replay", path, "--policy", "memory_aware", "--memory-high", "200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["policy"] == "memory_aware"
    assert out["makespan_s"] == lab.simulate(wl, 1, MemoryAware(200)).makespan_s
    with pytest.raises(SystemExit):
        main(["replay", path, "--policy", "fifo", "--memory-high", "200"])
