"""The scheduling-policy lab: record a workload's op DAG, analyse it, replay it in a simulator.

    with ember.engine.lab.record("step.jsonl") as rec:     # every op pushed inside, with timings
        ...
    trace = rec.trace                                      # or ember.engine.lab.load("step.jsonl")
    g = ember.engine.lab.to_networkx(trace)                # critical_path(g), width_per_level(g), ...
    wl = ember.engine.lab.Workload.from_trace(trace)       # measured costs (or a CostModel)
    res = ember.engine.lab.simulate(wl, workers=16, policy="critical_path")
    res.makespan_s, res.peak_bytes, res.lower_bound_s

Policies are the engine's: built-in names or a Python object with key(name, priority, seq,
dependants, queue), the same object ember.engine.set_policy takes (memory_aware and comm_first
included).  See docs/policy_lab.md.
"""
from .dag import critical_path, levels, to_networkx, transitive_reduction, width_per_level  # noqa: F401
from .recorder import Recorder, record  # noqa: F401
from .simulate import SimResult, compare, critical_path_s, memory_curve, simulate  # noqa: F401
from .trace_format import FORMAT, VERSION, Trace, derive_edges, engine_dependants, load  # noqa: F401
from .workload import CostModel, Workload, memory_hints, start_gaps_s  # noqa: F401
from . import synthetic  # noqa: F401
