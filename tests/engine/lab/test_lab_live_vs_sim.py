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


def _live_order(policy):
    """Run OPS on the engine so that they all become ready at one instant and one worker takes them
    one by one; returns the order they ran in, and the recorded trace."""
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
            for name, prio in OPS:  # all wait for the gate, then become ready together
                engine.push(lambda name=name: order.append(name), read=[gate_var], write=[engine.Var()],
                            name=name, priority=prio)
            release_gate.set()
            for _ in range(200):
                if len(order) == len(OPS):
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
