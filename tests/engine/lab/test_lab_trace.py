"""The lab's trace file (versioned JSON lines), Chrome trace, DAG helpers and synthetic generators."""
import json

import networkx as nx
import numpy as np
import pytest

import ember as mx
from ember.engine import lab


def _recorded_trace():
    a = mx.nd.ones((16, 16))
    with lab.record() as rec:
        b = mx.nd.dot(a, a)
        c = b + a
        a += 1
        d = c * b
        d.wait_to_read()
    return rec.trace


def _same(t1, t2):
    assert t1.names == t2.names and t1.reads == t2.reads and t1.writes == t2.writes and t1.prop == t2.prop
    for f in ("queue", "priority", "var_nbytes", "worker", "in_caller"):
        assert getattr(t1, f).tolist() == getattr(t2, f).tolist(), f
    for f in ("push_ns", "start_ns", "end_ns"):
        np.testing.assert_array_equal(getattr(t1, f), getattr(t2, f))
    assert t1.var_names == t2.var_names and t1.queue_names == t2.queue_names and t1.meta == t2.meta
    assert t1.edges == t2.edges


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_round_trip(tmp_path, suffix):
    t = _recorded_trace()
    path = t.save(str(tmp_path / ("step" + suffix)))
    _same(t, lab.load(path))


def test_record_with_a_path_writes_the_trace_and_a_chrome_trace(tmp_path):
    path = tmp_path / "step.jsonl"
    a = mx.nd.ones((4, 4))
    with lab.record(str(path)) as rec:
        b = a + a  # kept alive: its storage is not released inside the block
        b.wait_to_read()
    _same(rec.trace, lab.load(str(path)))
    with open(str(path) + ".chrome.json") as f:
        events = json.load(f)["traceEvents"]
    ops = [e for e in events if e["ph"] == "X"]
    assert [e["name"] for e in ops] == ["broadcast_add"] and ops[0]["dur"] >= 0
    header = json.loads(path.read_text().splitlines()[0])
    assert header["format"] == lab.FORMAT and header["version"] == lab.VERSION


def test_load_refuses_other_files_and_versions(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"format": "something else"}\n')
    with pytest.raises(ValueError, match="not an ember lab trace"):
        lab.load(str(bad))
    bad.write_text(json.dumps({"format": lab.FORMAT, "version": 99}) + "\n")
    with pytest.raises(ValueError, match="version 99"):
        lab.load(str(bad))
    t = _recorded_trace()
    path = t.save(str(tmp_path / "t.jsonl"))
    lines = open(path).read().splitlines()
    op = json.loads(lines[-1])
    op["deps"] = []  # edges no longer match the variables
    lines[-1] = json.dumps(op)
    (tmp_path / "t2.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="edges differ"):
        lab.load(str(tmp_path / "t2.jsonl"))


def test_trace_checks_its_fields():
    with pytest.raises(ValueError, match="out of range"):
        lab.Trace(names=["a"], queue=[0], priority=[0], reads=[(3,)], writes=[()], var_nbytes=[4])
    with pytest.raises(ValueError, match="queue has 2 entries"):
        lab.Trace(names=["a"], queue=[0, 0], priority=[0], reads=[()], writes=[()], var_nbytes=[])


def test_dag_helpers_on_a_diamond():
    # a -> b, a -> c, b -> d, c -> d, plus a -> d (implied)
    t = lab.Trace(names=list("abcd"), queue=[0] * 4, priority=[0] * 4,
                  reads=[(), (0,), (0,), (1, 2, 0)], writes=[(0,), (1,), (2,), (3,)], var_nbytes=[4, 4, 4, 4])
    g = lab.to_networkx(t, cost_s=[1, 2, 5, 1])
    assert set(g.edges) == {(0, 1), (0, 2), (1, 3), (2, 3), (0, 3)}
    assert lab.critical_path(g) == (7, [0, 2, 3])
    assert lab.width_per_level(g) == [1, 2, 1]
    assert set(lab.transitive_reduction(g).edges) == {(0, 1), (0, 2), (1, 3), (2, 3)}
    assert lab.critical_path_s(lab.Workload.from_trace(t, cost_s=[1, 2, 5, 1])) == 7


@pytest.mark.parametrize("make", [
    lambda: lab.synthetic.layered(20, 30, fan_in=3, seed=1),
    lambda: lab.synthetic.fork_join(10, 8),
    lambda: lab.synthetic.transformer(2, heads=4, seq=64, d_model=64, batch=2),
    lambda: lab.synthetic.pipeline(4, 6),
])
def test_synthetic_dags_replay_within_their_bounds(make):
    wl = make()
    g = nx.DiGraph()
    g.add_nodes_from(range(len(wl)))
    src = np.repeat(np.arange(len(wl)), np.diff(wl.succ_ptr))
    g.add_edges_from(zip(src.tolist(), wl.succ_idx.tolist()))
    assert nx.is_directed_acyclic_graph(g)
    for workers in (1, 3):
        for policy in ("priority", "fifo", "lifo", "critical_path"):
            res = lab.simulate(wl, workers=workers, policy=policy)
            assert res.makespan_s >= res.lower_bound_s * (1 - 1e-12)
            # every op starts after its predecessors end
            assert np.all(res.start_s[wl.succ_idx] >= res.end_s[src] - 1e-15)
            assert res.peak_bytes > 0
    one = lab.simulate(wl, workers=1, policy="fifo")
    per_queue = max(wl.cost_s[wl.queue == q].sum() for q in set(wl.queue.tolist()))
    assert one.makespan_s >= per_queue * (1 - 1e-12)


def test_layered_structure_and_pipeline_queues():
    wl = lab.synthetic.layered(5, 4, fan_in=4)
    assert len(wl) == 20 and len(wl.succ_idx) == 4 * 16  # full fan-in between consecutive layers
    pipe = lab.synthetic.pipeline(3, 2, fwd_cost_s=1.0, bwd_cost_s=2.0, latency_s=0.0, act_nbytes=0)
    res = lab.simulate(pipe, workers=1, policy="fifo")
    # by hand, 3 stages x 2 microbatches, sends free: F0 0-1 1-2, F1 1-2 2-3, F2:m0 2-3; at 3 stage 2
    # has B2:m0 ready (F2:m1 waits for its send, ending at 3 too): B2:m0 3-5, F2:m1 5-6, B2:m1 6-8;
    # B1:m0 5-7, B1:m1 8-10; B0:m0 7-9, B0:m1 10-12
    assert res.makespan_s == 12
    with pytest.raises(ValueError):
        lab.synthetic.layered(0, 3)


def test_cli_replay_json_and_compare(tmp_path, capsys):
    from ember.engine.lab.__main__ import main
    path = _recorded_trace().save(str(tmp_path / "t.jsonl"))
    assert main(["replay", path, "--workers", "2", "--policy", "lifo", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = lab.simulate(lab.Workload.from_trace(lab.load(path)), workers=2, policy="lifo")
    assert out["makespan_s"] == expected.makespan_s and out["peak_bytes"] == expected.peak_bytes
    assert out["lower_bound_s"] == expected.lower_bound_s and out["ops"] == len(expected.start_s)
    assert main(["compare", path, "--workers", "1", "2", "--policies", "fifo", "priority", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["workers"], r["policy"]) for r in rows] == [(1, "fifo"), (1, "priority"), (2, "fifo"), (2, "priority")]
