"""ember.engine.lab.record: every op pushed inside is captured with its variables, sizes and edges."""
import random

import networkx as nx
import numpy as np
import pytest

import ember as mx
import ember.engine as engine
from ember.engine import core, lab


def _closure_pairs(trace):
    """Pairs (i, j), i < j, that the engine must order: both access a variable, one writes it."""
    pairs = set()
    acc = {}
    for j, (r, w) in enumerate(zip(trace.reads, trace.writes)):
        for v in set(r) | set(w):
            for i, wrote in acc.get(v, []):
                if wrote or v in w:
                    pairs.add((i, j))
            acc.setdefault(v, []).append((j, v in w))
    return pairs


def _assert_edges_order_exactly_the_conflicts(trace):
    g = lab.to_networkx(trace)
    reach = {(i, j) for i in g for j in nx.descendants(g, i)}
    conflicts = _closure_pairs(trace)
    assert conflicts <= reach                       # every conflicting pair is ordered
    assert {(s, d) for s, d, _, _ in trace.edges} <= conflicts  # and only conflicts make edges


def test_imperative_program_edges_and_sizes():
    a = mx.nd.ones((3, 4))
    b = mx.nd.ones((3, 4))
    with lab.record() as rec:
        c = a + b        # 0: reads a, b; writes c
        d = c * 2        # 1: reads c; writes d
        a += 1           # 2: writes a (after op 0 read it)
        e = c + d        # 3: reads c, d
        e.wait_to_read()
    t = rec.trace
    assert t.names == ["broadcast_add", "_mul_scalar", "_plus_scalar", "broadcast_add"]
    va, vb = t.reads[0]
    (vc,), (vd,), (va2,), (ve,) = t.writes
    assert va2 == va and t.reads[1] == (vc,) and t.reads[3] == (vc, vd)
    assert sorted(t.edges) == sorted([(0, 1, vc, "raw"), (0, 2, va, "war"), (0, 3, vc, "raw"),
                                      (1, 3, vd, "raw")])
    assert set(t.var_nbytes.tolist()) == {3 * 4 * 4}
    assert (~np.isnan(t.start_ns)).all() and (t.end_ns >= t.start_ns).all() and (t.start_ns >= t.push_ns).all()
    assert core.recorder is None and core.bulk_threads == 0
    np.testing.assert_allclose(e.asnumpy(), np.full((3, 4), 6.0))


def test_engine_pushes_write_after_write_and_queues():
    x, y = engine.Var("x", nbytes=10), engine.Var("y", nbytes=20)
    with lab.record() as rec:
        engine.push(lambda: None, write=[x], name="w1")
        engine.push(lambda: None, write=[x], name="w2", priority=3)
        engine.push(lambda: None, read=[x], write=[y], name="r", prop="copy")
        engine.push(lambda: None, read=[x, x], write=[x], name="rw")  # read+write counts as a write
        engine.wait_all()
    t = rec.trace
    assert t.names == ["w1", "w2", "r", "rw"]
    assert t.priority.tolist() == [0, 3, 0, 0]
    assert [t.queue_names[q] for q in t.queue] == ["cpu", "cpu", "copy", "cpu"]
    assert t.var_nbytes.tolist() == [10, 20]
    assert sorted(t.edges) == [(0, 1, 0, "waw"), (1, 2, 0, "raw"), (2, 3, 0, "war")]
    assert t.reads[3] == () and t.writes[3] == (0,)  # as the engine sees it: once, as a write


def test_async_op_timed_until_done_and_skipped_op_has_no_times():
    v, w = engine.Var(), engine.Var()
    with lab.record() as rec:
        engine.push(lambda done: done(), write=[v], prop="async", name="comm")
        engine.push(lambda: (_ for _ in ()).throw(ValueError("boom")), write=[v], name="fails")
        engine.push(lambda: None, read=[v], write=[w], name="skipped")
        engine.wait_all_quiet()
    t = rec.trace
    assert t.prop == ["async", "normal", "normal"]
    assert not np.isnan(t.end_ns[0]) and not np.isnan(t.end_ns[1])
    assert np.isnan(t.start_ns[2]) and t.worker[2] == -2
    with pytest.raises(ValueError):
        engine.wait_all()


def test_recordings_do_not_nest_and_leave_no_hook_behind():
    with lab.record():
        with pytest.raises(RuntimeError, match="do not nest"):
            lab.record().__enter__()
    assert core.recorder is None and core.bulk_threads == 0
    engine.push(lambda: None, name="after")  # not recorded, nothing breaks
    engine.wait_all()


def test_random_imperative_programs_are_ordered_exactly_by_conflicts():
    rng = random.Random(3)
    arrays = [mx.nd.array(np.full((8,), float(i))) for i in range(5)]
    with lab.record() as rec:
        for _ in range(60):
            i, j, k = rng.randrange(5), rng.randrange(5), rng.randrange(5)
            choice = rng.random()
            if choice < 0.4:
                arrays[k] = arrays[i] + arrays[j]
            elif choice < 0.7:
                arrays[k] += arrays[i]
            else:
                arrays[i] *= 1.0
        mx.nd.waitall()
    _assert_edges_order_exactly_the_conflicts(rec.trace)


def test_executor_graph_edges_follow_the_symbol(monkeypatch):
    monkeypatch.setenv("EMBER_EXEC_BULK_EXEC_MAX_NODE", "1")  # one engine op per node
    data = mx.sym.Variable("data")
    fc1 = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    act = mx.sym.Activation(fc1, act_type="relu", name="relu1")
    fc2 = mx.sym.FullyConnected(act, num_hidden=3, name="fc2")
    out = mx.sym.broadcast_add(fc2, mx.sym.sum(fc1, axis=1, keepdims=True, name="sum0"), name="out")
    ex = out.simple_bind(mx.cpu(), data=(4, 5))
    for v in ex.arg_dict.values():
        v[:] = np.random.rand(*v.shape)
    head = mx.nd.ones((4, 3))
    mx.nd.waitall()
    with lab.record() as rec:
        ex.forward(is_train=True)
        ex.backward(head)
        mx.nd.waitall()
    t = rec.trace
    op = {name: i for i, name in enumerate(t.names)}
    # a data-flow edge: the consumer reads the producer's output, or works in place on it (the memory
    # plan may give `out` fc2's bytes: then it writes their variables, a write-after-write edge)
    flow = {(s, d) for s, d, _, kind in t.edges if kind in ("raw", "waw")}
    for a, b in [("fc1", "relu1"), ("relu1", "fc2"), ("fc1", "sum0"), ("fc2", "out"), ("sum0", "out")]:
        assert (op[a], op[b]) in flow, (a, b)
    # planned blocks carry their byte sizes: fc1's output, 4 x 8 float32, is one planned range (one
    # variable per stretch of a block that other groups' bounds cut it into)
    fc1_out = t.writes[op["fc1"]]
    assert sum(t.var_nbytes[v] for v in fc1_out) == 4 * 8 * 4
    assert all(t.var_names[v].startswith("exec:block") for v in fc1_out)
    # the arguments' storage is known too (the weight of fc1 is 8 x 5 float32)
    assert 8 * 5 * 4 in [t.var_nbytes[v] for v in t.reads[op["fc1"]]]
    _assert_edges_order_exactly_the_conflicts(t)
    g = lab.transitive_reduction(lab.to_networkx(t))
    assert nx.is_directed_acyclic_graph(g) and set(g.nodes) == set(range(len(t)))


def test_hybridized_gluon_block_and_kvstore_ops_are_recorded():
    from ember import gluon
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(8, activation="relu"), gluon.nn.Dense(3))
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((4, 5))
    net(x).wait_to_read()  # traced and bound before recording
    kv = mx.kv.create("local")
    kv.init("w", mx.nd.zeros((2, 2)))
    grad, out = mx.nd.ones((2, 2)), mx.nd.zeros((2, 2))
    mx.nd.waitall()
    with lab.record() as rec:
        y = net(x)
        kv.push("w", grad)
        kv.pull("w", out=out)
        y.wait_to_read()
        out.wait_to_read()
    t = rec.trace
    _assert_edges_order_exactly_the_conflicts(t)
    fwd = [i for i, n in enumerate(t.names) if "dense0_fwd" in n]
    assert fwd and [t.var_nbytes[v] for v in t.reads[fwd[0]]].count(4 * 5 * 4) == 1  # reads x (4 x 5 float32)
    push = t.names.index("kvstore_push['w']")
    assert [t.var_nbytes[v] for v in t.reads[push]] == [2 * 2 * 4]  # reads the gradient
    # the local store's pull is a native copy pushed from C: not recorded (docs/policy_lab.md, "Recording")
    assert not any("pull" in n for n in t.names)
    np.testing.assert_allclose(out.asnumpy(), np.ones((2, 2)))


def test_recording_under_the_naive_engine_runs_everything_in_the_caller():
    engine.set_engine_type("NaiveEngine")
    a = mx.nd.ones((2, 2))
    with lab.record() as rec:
        b = a + 1
        c = b * b
        c.wait_to_read()
    t = rec.trace
    assert t.names == ["_plus_scalar", "broadcast_mul"] and t.in_caller.all() and (t.worker == -1).all()
    assert [(s, d) for s, d, _, _ in t.edges] == [(0, 1)]
    assert t.meta["engine_type"] == "NaiveEngine"
