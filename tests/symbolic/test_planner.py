"""The memory planner: no two tensors live at once share bytes, on random intervals and random graphs."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ember as mx
from ember.symbolic import planner
from ember.symbolic.executor import Executor


@st.composite
def intervals(draw):
    n = draw(st.integers(1, 40))
    starts = draw(st.lists(st.integers(0, 50), min_size=n, max_size=n))
    lens = draw(st.lists(st.integers(0, 12), min_size=n, max_size=n))
    sizes = draw(st.lists(st.integers(0, 1 << 16), min_size=n, max_size=n))
    return sizes, starts, [s + l for s, l in zip(starts, lens)]


@settings(max_examples=150, deadline=None)
@given(intervals())
def test_every_method_gives_a_valid_plan_at_or_above_the_bound(case):
    sizes, starts, ends = case
    aligned = [planner.align(s) for s in sizes]
    bound = planner.lower_bound(aligned, starts, ends)
    totals = {}
    for method in ("size_matching", "offset_packing", "offset_packing_search", "naive", "best"):
        p = planner.plan(sizes, starts, ends, method)
        planner.check_plan(aligned, starts, ends, p)
        assert p.total >= bound
        totals[method] = p.total
    # "best" keeps the smallest candidate, or stops early at one within GOOD_ENOUGH of the bound
    assert (totals["best"] <= min(totals["size_matching"], totals["offset_packing"])
            or totals["best"] <= bound * planner.GOOD_ENOUGH)
    assert totals["best"] <= totals["naive"]
    assert totals["offset_packing_search"] <= totals["offset_packing"]  # it starts from that order


def test_check_plan_catches_overlap():
    p = planner.Placement([0, 0], [0, 32], [128], "handmade")
    with pytest.raises(AssertionError, match="share bytes"):
        planner.check_plan([64, 64], [0, 1], [2, 3], p)
    planner.check_plan([64, 64], [0, 3], [2, 4], p)  # disjoint lifetimes may overlap in bytes


def test_worked_example_from_docs():
    # a(100B, steps 0-1), b(200B, 1-2), c(100B, 2-3), d(300B, 3-4): bound = max(live) = 400 (c+d at step 3)
    sizes, starts, ends = [128, 192, 128, 320], [0, 1, 2, 3], [1, 2, 3, 4]
    assert planner.lower_bound(sizes, starts, ends) == 448
    p = planner.plan(sizes, starts, ends)
    planner.check_plan(sizes, starts, ends, p)
    assert p.total == 448


def test_order_search_reaches_bound_where_greedy_orders_miss():
    # MLP training (MB x 64 KiB): fc1/fc2 activations, two 16 MB gradient chains and fc1's unused
    # 24.5 MB data gradient, live only at its producing step 20.  Largest-first puts that gradient
    # at 0 and the chains end up stacked above it; the bound (48 MB at steps 16-18) is reachable.
    mb = 1 << 16
    sizes = [16 * mb, 16 * mb, mb // 4, mb // 4, 16 * mb, 16 * mb, 49 * mb // 2]
    starts = [3, 7, 11, 15, 16, 18, 20]
    ends = [19, 17, 21, 16, 18, 20, 20]
    bound = planner.lower_bound(sizes, starts, ends)
    for method in ("offset_packing", "size_matching"):
        assert planner.plan(sizes, starts, ends, method).total > 1.15 * bound
    p = planner.plan(sizes, starts, ends)
    planner.check_plan(sizes, starts, ends, p)
    assert p.algorithm == "offset_packing_search" and p.total == bound


def test_mlp_training_plan_near_bound_and_correct(rng):
    """The MLP of bench/memplan.py (data grad_req null: fc1's data gradient has no reader)."""
    data = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=64, name="fc1"), act_type="relu")
    h = mx.sym.Activation(mx.sym.FullyConnected(h, num_hidden=64, name="fc2"), act_type="relu")
    sym = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=10, name="fc3"), name="softmax")
    req = {n: ("null" if n in ("data", "softmax_label") else "write") for n in sym.list_arguments()}
    arg_shapes, _, _ = sym.infer_shape(data=(256, 98))
    exes = []
    for method in ("best", "naive"):
        args = [mx.nd.zeros(s) for s in arg_shapes]
        grads = [mx.nd.zeros(s) if req[n] == "write" else None for n, s in zip(sym.list_arguments(), arg_shapes)]
        exes.append(Executor(sym, mx.cpu(), args, grads, req, None, plan_method=method))
    st_ = exes[0].memory_stats()
    assert st_["planned_bytes"] <= 1.1 * st_["lower_bound_bytes"]
    p = exes[0]._graph.plan
    planner.check_plan(p.sizes, p.starts, p.ends, p.placement)
    vals = {n: rng.uniform(-1, 1, a.shape).astype(np.float32) for n, a in exes[0].arg_dict.items()}
    vals["softmax_label"] = rng.randint(0, 10, 256).astype(np.float32)
    got = []
    for e in exes:
        e.forward(is_train=True, **{k: mx.nd.array(v) for k, v in vals.items()})
        e.backward()
        got.append({k: g.asnumpy() for k, g in e.grad_dict.items()})
    assert set(got[0]) == {"fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias", "fc3_weight", "fc3_bias"}
    for k in got[0]:
        np.testing.assert_allclose(got[0][k], got[1][k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_unknown_method():
    with pytest.raises(ValueError, match="unknown planning method"):
        planner.plan([1], [0], [0], "magic")


# -- random graphs through real executors ---------------------------------------------------
UNARY = ("tanh", "sigmoid", "relu", "exp_scaled", "mul_scalar", "negative")


def random_graph(seed):
    r = np.random.RandomState(seed)
    x = mx.sym.var("x")
    pool = [(x, 8)]
    for i in range(r.randint(6, 25)):
        kind = r.randint(4)
        a, wa = pool[r.randint(len(pool))]
        if kind == 0:
            width = int(r.choice([4, 8, 16, 32]))
            s = mx.sym.FullyConnected(a, num_hidden=width, name=f"fc{i}")
            pool.append((s, width))
        elif kind == 1:
            same = [p for p in pool if p[1] == wa]
            b, _ = same[r.randint(len(same))]
            pool.append((a + b if r.rand() < 0.5 else a * b, wa))
        else:
            u = UNARY[r.randint(len(UNARY))]
            if u == "exp_scaled":
                s = mx.sym.exp(a * 0.1)
            elif u == "mul_scalar":
                s = a * 0.5 + 1
            elif u == "negative":
                s = -a
            else:
                s = getattr(mx.sym, u)(a)
            pool.append((s, wa))
    nheads = r.randint(1, 4)
    heads = [pool[-1][0]] + [pool[r.randint(len(pool))][0] for _ in range(nheads - 1)]
    return mx.sym.Group(heads)


def _bind(sym, method, train, seed, monkeypatch, inplace):
    monkeypatch.setenv("EMBER_EXEC_ENABLE_INPLACE", "1" if inplace else "0")
    arg_shapes, _, _ = sym.infer_shape(x=(3, 8))
    r = np.random.RandomState(seed)
    args = {n: mx.nd.array(r.uniform(-1, 1, s).astype(np.float32)) for n, s in zip(sym.list_arguments(), arg_shapes)}
    grads = {n: mx.nd.zeros(s) for n, s in zip(sym.list_arguments(), arg_shapes)} if train else None
    return Executor(sym, mx.cpu(), args, grads, "write" if train else "null", None, plan_method=method)


def _check_executor_plan(exe):
    p = exe._graph.plan
    planner.check_plan(p.sizes, p.starts, p.ends, p.placement)
    assert p.lower_bound <= p.total_bytes
    # an in-place output may only take bytes from an input read for the last time by its node
    g = exe._graph
    step = {id(n): i for i, n in enumerate(g.nodes)}
    for okey in g.inplace:
        node = next(n for n in g.nodes if id(n) == okey[0])
        for c, j in node.inputs:
            if p.group_of.get((id(c), j)) == p.group_of[okey]:
                later = [step[id(m)] for m in g.nodes for e in m.inputs if e == (c, j) and step[id(m)] > step[id(node)]]
                assert not later, f"{node.name} overwrote {c.name} which is read later"


@pytest.mark.parametrize("seed", range(12))
def test_random_graphs_planned_equal_unplanned(seed, monkeypatch):
    sym = random_graph(seed)
    train = seed % 2 == 0
    ref = _bind(sym, "naive", train, seed, monkeypatch, inplace=False)
    exe = _bind(sym, "best", train, seed, monkeypatch, inplace=True)
    _check_executor_plan(exe)
    results = []
    for e in (ref, exe):
        outs = e.forward(is_train=train)
        if train:
            r = np.random.RandomState(99)
            e.backward([mx.nd.array(r.uniform(-1, 1, o.shape).astype(np.float32)) for o in outs])
        results.append([o.asnumpy() for o in outs] + ([g.asnumpy() for g in e.grad_arrays] if train else []))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    st_ = exe.memory_stats()
    assert st_["planned_bytes"] <= ref.memory_stats()["planned_bytes"]


def test_shared_weight_gradient_terms_do_not_pile_up():
    """20 uses of one 64 KiB weight: its 20 gradient terms are summed as they appear."""
    x, w = mx.sym.var("x"), mx.sym.var("w")
    h = x
    for i in range(20):
        h = mx.sym.tanh(mx.sym.FullyConnected(h, weight=w, num_hidden=128, no_bias=True, name=f"fc{i}"))
    exe = mx.sym.MakeLoss(mx.sym.sum(h)).simple_bind(mx.cpu(), x=(4, 128), w=(128, 128))
    g = exe._graph
    order = {id(n): i for i, n in enumerate(g.nodes)}
    for n in g.nodes:  # still a valid topological order
        assert all(order[id(c)] < order[id(n)] for c, _ in n.inputs)
    weight_bytes = 128 * 128 * 4
    assert exe.memory_stats()["planned_bytes"] < 5 * weight_bytes
    exe.arg_dict["x"][:] = np.random.RandomState(0).uniform(-1, 1, (4, 128))
    exe.arg_dict["w"][:] = np.random.RandomState(1).uniform(-0.1, 0.1, (128, 128))
    exe.forward(is_train=True)
    exe.backward()
    # reference: the same net with a weight per layer; d/dw of the shared weight is their sum
    xs = [mx.sym.var("x")]
    h2 = xs[0]
    for i in range(20):
        h2 = mx.sym.tanh(mx.sym.FullyConnected(h2, num_hidden=128, no_bias=True, name=f"l{i}"))
    ref = mx.sym.MakeLoss(mx.sym.sum(h2)).simple_bind(mx.cpu(), x=(4, 128))
    ref.arg_dict["x"][:] = exe.arg_dict["x"]
    for i in range(20):
        ref.arg_dict[f"l{i}_weight"][:] = exe.arg_dict["w"]
    ref.forward(is_train=True)
    ref.backward()
    want = sum(ref.grad_dict[f"l{i}_weight"].asnumpy() for i in range(20))
    np.testing.assert_allclose(exe.grad_dict["w"].asnumpy(), want, rtol=1e-4, atol=1e-6)
