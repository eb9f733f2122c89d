"""mx.sym.contrib.cond (`_cond`): only the branch the predicate picks runs, forward and backward; Gluon's
F.contrib.cond hybridized; MXNet's JSON both ways (tests/data/loops/cond-*, made by
tests/data/make_loop_fixtures.py with MXNet 1.9.1)."""
import json
import os
import subprocess

import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon
from ember.base import MXNetError, ShapeError

LOOPS = os.path.join(os.path.dirname(__file__), "..", "data", "loops")
MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")
rng = np.random.RandomState(11)


def _branchy():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    return mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: mx.sym.tanh(x) * y, lambda: mx.sym.log(y) - x)


def _run(sym, values, head):
    exe = sym.simple_bind(mx.cpu(), **{k: v.shape for k, v in values.items()})
    for k, v in values.items():
        exe.arg_dict[k][:] = v
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward(mx.nd.array(head))
    return out, {k: exe.grad_dict[k].asnumpy() for k in values}


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_the_branch_the_predicate_picks_gives_values_and_gradients(sign):
    x = sign * rng.uniform(0.1, 1.0, (2, 3))
    y = rng.uniform(0.5, 2.0, (2, 3))
    head = rng.rand(2, 3)
    out, grads = _run(_branchy(), {"x": x, "y": y}, head)
    if sign > 0:
        want, gx, gy = np.tanh(x) * y, (1 - np.tanh(x) ** 2) * y * head, np.tanh(x) * head
    else:
        want, gx, gy = np.log(y) - x, -head, head / y
    np.testing.assert_allclose(out, want, rtol=1e-5)
    np.testing.assert_allclose(grads["x"], gx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grads["y"], gy, rtol=1e-5, atol=1e-6)


def test_the_branch_not_taken_does_not_run_nor_leak_nan_into_gradients():
    # where(pred, log(x), x) would give NaN gradients for negative x (0 * the NaN of log's gradient)
    x = mx.sym.var("x")
    sym = mx.sym.contrib.cond(mx.sym.min(x) > 0, lambda: mx.sym.log(x), lambda: x * 3.0)
    values = -rng.uniform(0.5, 1.0, (4,))
    out, grads = _run(sym, {"x": values}, np.ones(4))
    np.testing.assert_allclose(out, values * 3, rtol=1e-6)
    np.testing.assert_allclose(grads["x"], np.full(4, 3.0), rtol=1e-6)
    assert np.isfinite(out).all()


def test_outer_entries_nested_conds_and_an_identity_branch():
    x, w = mx.sym.var("x"), mx.sym.var("w")
    h = mx.sym.FullyConnected(x, w, num_hidden=3, no_bias=True)

    def inner():
        return mx.sym.contrib.cond(mx.sym.sum(h) > 1, lambda: h * 2.0, lambda: h)
    sym = mx.sym.contrib.cond(mx.sym.sum(x) > 0, inner, lambda: -h)
    xv, wv = rng.uniform(0.1, 1, (2, 4)), rng.uniform(0.1, 1, (3, 4))
    hv = xv @ wv.T
    out, grads = _run(sym, {"x": xv, "w": wv}, np.ones((2, 3)))
    scale = 2.0 if hv.sum() > 1 else 1.0
    np.testing.assert_allclose(out, hv * scale, rtol=1e-5)
    np.testing.assert_allclose(grads["w"], scale * np.ones((2, 3)).T @ xv, rtol=1e-5)
    out, _ = _run(sym, {"x": -xv, "w": wv}, np.ones((2, 3)))
    np.testing.assert_allclose(out, -(-xv @ wv.T), rtol=1e-5)


def test_random_draws_happen_only_in_the_branch_taken():
    x = mx.sym.var("x")
    sym = mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: x + mx.sym.random.uniform(shape=(3,)), lambda: x * 1.0)
    exe = sym.simple_bind(mx.cpu(), grad_req="null", x=(3,))
    exe.arg_dict["x"][:] = -1.0
    mx.random.seed(5)
    exe.forward()
    after_else = mx.nd.random.uniform(shape=(3,)).asnumpy()
    mx.random.seed(5)
    expected_first = mx.nd.random.uniform(shape=(3,)).asnumpy()
    np.testing.assert_array_equal(after_else, expected_first)  # the else branch drew nothing
    exe.arg_dict["x"][:] = 1.0
    a = exe.forward()[0].asnumpy()
    b = exe.forward()[0].asnumpy()
    assert not np.array_equal(a, b) and (a >= 1).all() and (a < 2).all()


class _CondNet(gluon.HybridBlock):
    """The block tests/data/make_loop_fixtures.py exports from MXNet."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.dense = gluon.nn.Dense(4, in_units=3)

    def hybrid_forward(self, F, x):
        h = self.dense(x)
        return F.contrib.cond(F.sum(h) > 0, lambda: F.broadcast_add(F.tanh(h) * 2, F.sum(x)),
                              lambda: F.log(F.relu(h) + 1) - h)


def _grads(net, x):
    xa = mx.nd.array(x)
    xa.attach_grad()
    with autograd.record():
        out = net(xa)
    out.backward(mx.nd.ones_like(out))
    params = net.collect_params()
    return out.asnumpy(), xa.grad.asnumpy(), {k: p.grad().asnumpy() for k, p in params.items()}


def test_mxnet_exported_cond_gives_mxnet_outputs_and_gradients():
    io = np.load(os.path.join(LOOPS, "cond_io.npz"))
    block = gluon.SymbolBlock.imports(os.path.join(LOOPS, "cond-symbol.json"), ["data"],
                                      os.path.join(LOOPS, "cond-0000.params"))
    net = _CondNet(prefix="condnet_")  # ember's own block on the same weights, imperative and hybridized
    net.collect_params().load(os.path.join(LOOPS, "cond-0000.params"))
    for tag in ("then", "else"):
        for model, hybrid in ((block, None), (net, False), (net, True)):
            if hybrid is not None:
                net.hybridize(hybrid)
            out, dx, pgrads = _grads(model, io[f"x_{tag}"])
            np.testing.assert_allclose(out, io[f"out_{tag}"], rtol=1e-5, atol=1e-6, err_msg=tag)
            np.testing.assert_allclose(dx, io[f"dx_{tag}"], rtol=1e-5, atol=1e-6, err_msg=tag)
            w = [g for k, g in pgrads.items() if k.endswith("weight")][0]
            b = [g for k, g in pgrads.items() if k.endswith("bias")][0]
            np.testing.assert_allclose(w, io[f"dw_{tag}"], rtol=1e-5, atol=1e-6, err_msg=tag)
            np.testing.assert_allclose(b, io[f"db_{tag}"], rtol=1e-5, atol=1e-6, err_msg=tag)


def test_json_round_trip_in_mxnet_form(tmp_path):
    sym = _branchy()
    node = [n for n in json.loads(sym.tojson())["nodes"] if n["op"] == "_cond"][0]
    assert len(node["subgraphs"]) == 3
    assert set(node["attrs"]) >= {"cond_input_locs", "then_input_locs", "else_input_locs", "num_args", "num_outputs"}
    again = mx.sym.load_json(sym.tojson())
    assert again.tojson() == sym.tojson()
    values = {"x": -rng.uniform(0.1, 1, (2, 3)), "y": rng.uniform(0.5, 2, (2, 3))}
    np.testing.assert_allclose(_run(again, values, np.ones((2, 3)))[0], _run(sym, values, np.ones((2, 3)))[0])
    if not os.path.exists(MXNET_PYTHON):
        return
    sym.save(str(tmp_path / "c.json"))
    np.savez(tmp_path / "in.npz", **values)
    code = ("import mxnet as mx, numpy as np, sys; io=np.load(sys.argv[2]); g=mx.sym.load(sys.argv[1]); "
            "r=g.bind(mx.cpu(), {k: mx.nd.array(io[k]) for k in ('x','y')}).forward(); "
            "np.save(sys.argv[3], r[0].asnumpy())")
    done = subprocess.run([MXNET_PYTHON, "-c", code, str(tmp_path / "c.json"), str(tmp_path / "in.npz"),
                           str(tmp_path / "out.npy")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), np.log(values["y"]) - values["x"], rtol=1e-5)


def test_bad_conds_are_refused_clearly():
    x = mx.sym.var("x")
    with pytest.raises(ValueError, match="same number"):
        mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: [x, x], lambda: x)
    with pytest.raises(ValueError, match="pred must be one Symbol"):
        mx.sym.contrib.cond(1, lambda: x, lambda: x)
    differ = mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: x, lambda: mx.sym.concat(x, x, dim=0))
    with pytest.raises(ShapeError, match="agree on each output"):
        differ.infer_shape(x=(2,))
    wide = mx.sym.contrib.cond(x > 0, lambda: x, lambda: x * 2.0)  # a predicate of 3 elements
    exe = wide.simple_bind(mx.cpu(), grad_req="null", x=(3,))
    with pytest.raises(MXNetError, match="predicate must be a scalar"):
        exe.forward()[0].asnumpy()


def test_gradients_through_a_branch_with_dropout_use_the_forward_mask():
    x = mx.sym.var("x")
    sym = mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: mx.sym.Dropout(x * 2.0, p=0.5) * x, lambda: x * 1.0)
    values = rng.uniform(0.5, 1.0, (64,))
    mx.random.seed(9)
    out, grads = _run(sym, {"x": values}, np.ones(64))
    kept = out != 0  # the forward's mask (kept elements are 2x * 2 * x)
    assert 0 < kept.sum() < 64
    np.testing.assert_allclose(out[kept], 4 * values[kept] ** 2, rtol=1e-5)
    np.testing.assert_allclose(grads["x"], np.where(kept, 8 * values, 0.0), rtol=1e-5)


def test_each_executor_replays_its_own_forward_draws():
    """One symbol bound twice: each backward replays its own executor's forward, not the last one run."""
    x = mx.sym.var("x")
    sym = mx.sym.contrib.cond(mx.sym.sum(x) > 0, lambda: mx.sym.Dropout(x * 2.0, p=0.5) * x, lambda: x * 1.0)
    values = rng.uniform(0.5, 1.0, (200,))
    bound = []
    for _ in range(2):
        grads = {"x": mx.nd.zeros(200)}
        bound.append((sym.bind(mx.cpu(), {"x": mx.nd.array(values)}, args_grad=grads), grads))
    outs = [ex.forward(is_train=True)[0].asnumpy() for ex, _ in bound]
    assert (outs[0] != outs[1]).any()
    for (ex, grads), out in zip(bound, outs):  # the first executor's backward after the second's forward
        ex.backward([mx.nd.ones(200)])
        np.testing.assert_allclose(grads["x"].asnumpy(), np.where(out != 0, 8 * values, 0.0), rtol=1e-5)


class _DenseInBranch(gluon.HybridBlock):
    def __init__(self, in_units=0, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.a = gluon.nn.Dense(5, in_units=in_units)
            self.b = gluon.nn.Dense(5, in_units=in_units)

    def hybrid_forward(self, F, x):
        return F.contrib.cond(F.sum(x) > 0, lambda: F.relu(self.a(x)), lambda: F.tanh(self.b(x)))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_hybridized_block_with_layers_inside_the_branches_trains_as_the_imperative_one(sign):
    x = sign * rng.uniform(0.1, 1.0, (3, 4))
    results = []
    for hybrid in (False, True):
        mx.random.seed(1)
        net = _DenseInBranch(in_units=4, prefix="dib_")
        net.initialize(mx.init.Uniform(0.5))
        if hybrid:
            net.hybridize()
        out, dx, grads = _grads(net, x)
        results.append((out, dx, grads))
    (o1, d1, g1), (o2, d2, g2) = results
    np.testing.assert_allclose(o2, o1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d2, d1, rtol=1e-5, atol=1e-6)
    for k in g1:
        np.testing.assert_allclose(g2[k], g1[k], rtol=1e-5, atol=1e-6, err_msg=k)
    unused = "dib_dense1_weight" if sign > 0 else "dib_dense0_weight"
    assert not g2[unused].any()  # the branch not taken gives its parameters no gradient


def test_deferred_parameters_learn_their_shapes_through_both_branches():
    net = _DenseInBranch(prefix="dib_")  # input size deferred
    net.initialize()
    net.hybridize()
    net(mx.nd.ones((2, 7))).wait_to_read()  # the then branch runs; the else branch's layer is shaped too
    assert net.a.weight.shape == (5, 7) and net.b.weight.shape == (5, 7)


def test_a_cond_node_without_its_graphs_is_refused_when_loaded():
    doc = json.loads(_branchy().tojson())
    node = [n for n in doc["nodes"] if n["op"] == "_cond"][0]
    node["subgraphs"] = node["subgraphs"][:2]
    with pytest.raises(MXNetError, match="needs its cond, then and else graphs"):
        mx.sym.load_json(json.dumps(doc))
    node["subgraphs"] = None
    with pytest.raises(MXNetError, match="_cond"):
        mx.sym.load_json(json.dumps(doc))
