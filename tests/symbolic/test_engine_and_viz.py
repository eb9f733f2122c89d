"""How executors meet the engine (vars, parallel branches, monitor, dropout rng) and mx.viz."""
import numpy as np
import pytest

import ember as mx


def test_independent_branches_touch_disjoint_vars(monkeypatch):
    monkeypatch.setenv("EMBER_EXEC_BULK_EXEC_MAX_NODE", "1")
    a, b = mx.sym.var("a"), mx.sym.var("b")
    left = mx.sym.exp(mx.sym.tanh(a))
    right = mx.sym.sigmoid(mx.sym.relu(b))
    exe = mx.sym.Group([left, right]).simple_bind(mx.cpu(), grad_req="null", a=(64, 64), b=(64, 64))
    runners = {r[6]: r for r in exe._runners if r is not None}
    names = list(runners)
    left_nodes = [n for n in names if n.startswith(("tanh", "exp"))]
    right_nodes = [n for n in names if n.startswith(("relu", "sigmoid"))]
    def vars_of(ns):
        out = set()
        for n in ns:
            out |= {id(v) for v in runners[n][1] + runners[n][2]}
            out |= {id(x.var) for x in runners[n][3] + runners[n][4]}
        return out
    assert not (vars_of(left_nodes) & vars_of(right_nodes))
    av = np.random.rand(64, 64).astype(np.float32)
    bv = np.random.rand(64, 64).astype(np.float32)
    l, r = exe.forward(a=mx.nd.array(av), b=mx.nd.array(bv))
    np.testing.assert_allclose(l.asnumpy(), np.exp(np.tanh(av)), rtol=1e-5)
    np.testing.assert_allclose(r.asnumpy(), 1 / (1 + np.exp(-np.maximum(bv, 0))), rtol=1e-5)


def test_shared_block_nodes_are_ordered_by_vars():
    # a chain whose tensors reuse each other's bytes: every reuse shares a var with the earlier reader
    x = mx.sym.var("x")
    h = x
    for _ in range(6):
        h = mx.sym.FullyConnected(h, num_hidden=32, no_bias=True)
    exe = h.simple_bind(mx.cpu(), grad_req="null", x=(16, 32))
    p = exe._graph.plan
    assert len(p.sizes) >= 3 and p.total_bytes < sum(p.sizes)
    w = np.random.RandomState(0).uniform(-0.3, 0.3, (32, 32)).astype(np.float32)
    xv = np.random.RandomState(1).uniform(-1, 1, (16, 32)).astype(np.float32)
    for k, v in exe.arg_dict.items():
        v[:] = w if k != "x" else xv
    ref = xv
    for _ in range(6):
        ref = ref @ w.T
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), ref, rtol=1e-4, atol=1e-5)


def test_monitor_callback_sees_every_output():
    x = mx.sym.var("x")
    s = mx.sym.exp(mx.sym.tanh(x, name="t"), name="e")
    exe = s.simple_bind(mx.cpu(), grad_req="null", x=(2, 3))
    seen = {}
    exe.set_monitor_callback(lambda name, arr: seen.__setitem__(name, arr))
    xv = np.random.rand(2, 3).astype(np.float32)
    exe.forward(x=mx.nd.array(xv))
    assert sorted(seen) == ["e_output", "t_output"]
    np.testing.assert_allclose(seen["t_output"].asnumpy(), np.tanh(xv), rtol=1e-6)
    with pytest.raises(TypeError):
        exe.set_monitor_callback(3)


def test_dropout_uses_rng_only_in_training():
    x = mx.sym.var("x")
    s = mx.sym.Dropout(x, p=0.5)
    exe = s.simple_bind(mx.cpu(), grad_req="null", x=(50, 40))
    exe.arg_dict["x"][:] = 1
    assert np.array_equal(exe.forward(is_train=False)[0].asnumpy(), np.ones((50, 40), np.float32))
    out = exe.forward(is_train=True)[0].asnumpy()
    assert set(np.unique(out)) <= {0.0, 2.0} and 0.3 < (out == 0).mean() < 0.7


def test_print_summary_and_plot_network(tmp_path, capsys):
    data = mx.sym.var("data")
    h = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=8, name="fc1"), act_type="relu", name="r")
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(h, num_hidden=3, name="fc2"), name="softmax")
    mx.viz.print_summary(net, shape={"data": (4, 5)})
    text = capsys.readouterr().out
    assert "fc1(FullyConnected)" in text and "4x8" in text
    assert f"Total params: {5 * 8 + 8 + 8 * 3 + 3}" in text
    dot = mx.viz.plot_network(net, shape={"data": (4, 5)}, title="mlp")
    path = dot.save(directory=str(tmp_path))
    src = open(path).read()
    assert src.startswith('digraph "mlp"') and "FullyConnected" in src and "4x8" in src
    assert "fc1_weight" not in src  # hide_weights
    with pytest.raises(TypeError):
        mx.viz.plot_network("not a symbol")


def test_plot_network_warns_of_repeated_names_and_takes_node_attrs(tmp_path):
    data = mx.sym.var("data")
    net = mx.sym.FullyConnected(mx.sym.FullyConnected(data, num_hidden=8, name="fc"), num_hidden=3, name="fc")
    with pytest.warns(RuntimeWarning, match="multiple variables with the same name.*Repeated names: fc"):
        dot = mx.viz.plot_network(net, shape={"data": (4, 5)}, node_attrs={"fixedsize": "true", "width": "2"})
    src = open(dot.save(directory=str(tmp_path))).read()
    assert 'fixedsize="true"' in src and 'width="2"' in src
    with pytest.raises(TypeError, match="node_attrs"):
        mx.viz.plot_network(data, node_attrs="bold")


def test_outputs_read_imperatively_are_ordered_with_the_next_forward():
    # lstm-like: the output's bytes are reused by earlier tensors of the next forward
    x = mx.sym.var("x")
    h = x
    for i in range(5):
        h = mx.sym.FullyConnected(mx.sym.tanh(h), num_hidden=64, no_bias=True, name=f"fc{i}")
    exe = h.simple_bind(mx.cpu(), grad_req="null", x=(32, 64))
    r = np.random.RandomState(0)
    for k, v in exe.arg_dict.items():
        v[:] = r.uniform(-0.5, 0.5, v.shape).astype(np.float32)
    firsts, copies = [], []
    for step in range(4):
        out = exe.forward(x=mx.nd.array(r.uniform(-1, 1, (32, 64)).astype(np.float32)))[0]
        copies.append(out * 1.0)       # an imperative read of the output, not waited for
        firsts.append(out)
    results = [c.asnumpy() for c in copies]
    assert all(not np.array_equal(results[0], r_) for r_ in results[1:])
    # recompute each step from its inputs in a fresh executor to check the copies saw their own step
    r = np.random.RandomState(0)
    ref = h.simple_bind(mx.cpu(), grad_req="null", x=(32, 64))
    for k, v in ref.arg_dict.items():
        v[:] = r.uniform(-0.5, 0.5, v.shape).astype(np.float32)
    for step in range(4):
        want = ref.forward(x=mx.nd.array(r.uniform(-1, 1, (32, 64)).astype(np.float32)))[0].asnumpy()
        np.testing.assert_allclose(results[step], want, rtol=1e-5, atol=1e-6)
