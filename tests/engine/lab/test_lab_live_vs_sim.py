"""A policy runs the same live (on the engine) and in the simulator: same order of ready ops."""
import threading

import numpy as np
import pytest

import ember.engine as engine
from ember.engine import core, lab
from ember.engine.policy import PythonPolicy

TIMEOUT = 30


class PreferShortNamesThenPriority(PythonPolicy):
    name = "short_names_then_priority"

    def key(self, name, priority, seq, dependants, queue):
        return -100 * len(name) + priority


OPS = [("op_aaaa", 0), ("op_b", 2), ("op_cc", 0), ("op_d", 5), ("op_eee", 7), ("op_f", 0), ("op_gg", 1)]


def _live_order(policy, ops=OPS, dependants=None):
    """Run `ops` on the engine so that they all become ready at one instant and one worker takes them
    one by one; returns the order they ran in, and the recorded trace.  dependants[name] = k: the op
    writes k variables and k later ops (pushed before the gate opens) each read one of them."""
    engine.set_policy(policy)
    holders = core.CPU_WORKERS - 1
    release_holders, release_gate = threading.Event(), threading.Event()
    started = threading.Semaphore(0)
    order = []

    def hold():
        started.release()
        release_holders.wait(TIMEOUT)

    def gate():
        started.release()
        release_gate.wait(TIMEOUT)

    gate_var = engine.Var("gate")
    try:
        with lab.record() as rec:
            for _ in range(holders):  # every other worker is busy
                engine.push(hold, write=[engine.Var()], name="hold")
            for _ in range(holders):
                assert started.acquire(timeout=TIMEOUT)
            engine.push(gate, write=[gate_var], name="gate")  # the last free worker runs it
            assert started.acquire(timeout=TIMEOUT)
            later, keep = [], []  # variables kept alive: a deletion is an access the engine counts too
            for name, prio in ops:  # all wait for the gate, then become ready together
                outs = [engine.Var() for _ in range(max(1, (dependants or {}).get(name, 0)))]
                engine.push(lambda name=name: order.append(name), read=[gate_var], write=outs,
                            name=name, priority=prio)
                later += outs[:(dependants or {}).get(name, 0)]
                keep += outs
            for v in later:
                keep.append(engine.Var())
                engine.push(lambda: None, read=[v], write=[keep[-1]], name="later")
            release_gate.set()
            for _ in range(200):
                if len(order) == len(ops):
                    break
                threading.Event().wait(0.05)
            release_holders.set()
            engine.wait_all()
    finally:
        release_gate.set()
        release_holders.set()
        engine.wait_all_quiet()
    return order, rec.trace


def _simulated_order(policy):
    n = len(OPS) + 1  # op 0 is the gate
    wl = lab.Workload.from_edges(np.ones(n), np.zeros(n - 1, np.int64), np.arange(1, n),
                                 priority=np.array([0] + [p for _, p in OPS]), names=["gate"] + [o for o, _ in OPS])
    res = lab.simulate(wl, workers=1, policy=policy)
    return [wl.names[i] for i in np.argsort(res.start_s, kind="stable") if i > 0]


@pytest.mark.parametrize("policy", ["priority", "fifo", "lifo", PreferShortNamesThenPriority()])
def test_live_order_equals_simulated_order(policy):
    live, trace = _live_order(policy)
    assert live == _simulated_order(policy)
    # the recording saw the same order (the ops' start stamps) and the gate's edges
    recorded = [trace.names[i] for i in np.argsort(trace.start_ns) if trace.names[i] not in ("gate", "hold")]
    assert recorded == live
    g = trace.names.index("gate")
    assert sorted((s, d) for s, d, _, _ in trace.edges) == [(g, g + i) for i in range(1, len(OPS) + 1)]


def test_critical_path_live_equals_the_replay_of_its_recording():
    # the engine counts dependants per variable queue: each op also gets one from the next reader of
    # the gate variable (e, the last, does not).  a 1, b 1 + 2, c 1, d 1 + 1, e 1, so the keys
    # (dependants * 1024 + priority) are a 1024, b 3072, c 1027, d 2049, e 1024: b d c a e
    ops = [("a", 0), ("b", 0), ("c", 3), ("d", 1), ("e", 0)]
    deps = {"b": 2, "d": 1, "e": 1}
    live, trace = _live_order("critical_path", ops, deps)
    assert live == ["b", "d", "c", "a", "e"]
    names = [trace.names.index(n) for n, _ in ops]
    assert [lab.engine_dependants(trace.reads, trace.writes)[i] for i in names] == [1, 3, 1, 2, 1]
    # the recording's own DAG, replayed on one worker under the same policy, gives the same order
    res = lab.simulate(lab.Workload.from_trace(trace), workers=1, policy="critical_path")
    wanted = {n for n, _ in ops}
    order = [trace.names[i] for i in np.argsort(res.start_s, kind="stable") if trace.names[i] in wanted]
    assert order == live
