"""Random DAGs: every op applies a non-commutative update, so any ordering error changes the answer."""
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember.engine as engine
from ember.engine import PythonPolicy

MOD = (1 << 61) - 1


def make_program(n_ops, n_vars, seed):
    rng = random.Random(seed)
    program = []
    for i in range(n_ops):
        reads = [rng.randrange(n_vars) for _ in range(rng.randrange(0, 4))]
        writes = [rng.randrange(n_vars) for _ in range(rng.randrange(1, 3))]
        if reads and rng.random() < 0.05:
            writes.append(reads[0])  # a var both read and written counts as written
        program.append((i, reads, writes, rng.randrange(-3, 4)))
    return program


def apply(vals, op_id, reads, writes):
    acc = op_id
    for r in reads:
        acc = (acc * 1000003 + vals[r]) % MOD
    for k, w in enumerate(writes):
        vals[w] = (vals[w] * 31 + acc + k) % MOD


def run_serial(program, n_vars):
    vals = list(range(n_vars))
    for op_id, reads, writes, _ in program:
        apply(vals, op_id, reads, writes)
    return vals


def run_engine(program, n_vars, inline_every=0):
    vals = list(range(n_vars))
    vars_ = [engine.Var(f"v{i}") for i in range(n_vars)]
    for op_id, reads, writes, prio in program:
        engine.push(lambda o=op_id, r=reads, w=writes: apply(vals, o, r, w),
                    read=[vars_[r] for r in reads], write=[vars_[w] for w in writes], priority=prio,
                    name="update", inline=bool(inline_every and op_id % inline_every == 0))
    engine.wait_all()
    return vals


class CountingPolicy(PythonPolicy):
    """A Python policy (reverse push order) that also proves it was consulted."""

    name = "reverse_python"

    def __init__(self):
        self.calls = 0

    def key(self, name, priority, seq, dependants, queue):
        self.calls += 1
        return seq


@pytest.mark.parametrize("policy", ["priority", "fifo", "lifo", "critical_path"])
def test_100k_ops_threaded_each_policy(policy):
    program = make_program(100_000, 50, seed=hash(policy) & 0xFFFF)
    engine.set_policy(policy)
    assert run_engine(program, 50, inline_every=7) == run_serial(program, 50)


def test_100k_ops_naive_engine():
    program = make_program(100_000, 50, seed=11)
    engine.set_engine_type("NaiveEngine")
    assert run_engine(program, 50) == run_serial(program, 50)


def test_python_policy_is_used_and_correct():
    program = make_program(20_000, 50, seed=5)
    policy = CountingPolicy()
    engine.set_policy(policy)
    assert engine.get_policy() == "reverse_python"
    assert run_engine(program, 50) == run_serial(program, 50)
    assert policy.calls > 0


def test_bulk_mode_keeps_order():
    program = make_program(20_000, 50, seed=3)
    vals = list(range(50))
    vars_ = [engine.Var() for _ in range(50)]
    before = engine.stats()["pushed"]
    with engine.bulk(16):
        for op_id, reads, writes, _ in program:
            engine.push(lambda o=op_id, r=reads, w=writes: apply(vals, o, r, w),
                        read=[vars_[r] for r in reads], write=[vars_[w] for w in writes])
    engine.wait_all()
    assert vals == run_serial(program, 50)
    pushed = engine.stats()["pushed"] - before
    assert pushed <= len(program) // 16 + 2  # grouped into far fewer engine ops


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 7), max_size=3), st.lists(st.integers(0, 7), min_size=1, max_size=3)),
                min_size=1, max_size=60),
       st.sampled_from(["priority", "fifo", "lifo", "critical_path"]))
def test_hypothesis_small_dags(ops, policy):
    engine.set_policy(policy)
    program = [(i, r, w, 0) for i, (r, w) in enumerate(ops)]
    assert run_engine(program, 8, inline_every=3) == run_serial(program, 8)
