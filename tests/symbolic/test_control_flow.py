"""mx.sym.contrib.foreach: shapes and dtypes through the body, values and gradients of the unrolled loop
against numpy and the imperative foreach, outer entries read by the body, nested loops, errors; Gluon's
dynamic_unroll hybridized against the cell's own unroll; MXNet's JSON form both ways (a loop model MXNet
1.9.1 exported, tests/data/make_loop_fixtures.py, and MXNet running one ember exported).
mx.sym.contrib.while_loop: values and gradients against the imperative loop, only the steps cond allows
run (forward and backward), random draws replayed by the backward, hybridized in a block, JSON."""
import json
import os
import subprocess

import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon
from ember.base import MXNetError, ShapeError

rng = np.random.RandomState(0)


def _rnn_body(W, U):
    def body(x_t, states):
        h = mx.sym.tanh(mx.sym.dot(x_t, W) + mx.sym.dot(states[0], U))
        return h * 2, [h]
    return body


def _bind(sym, values, grad=True):
    args = {k: mx.nd.array(v) for k, v in values.items()}
    grads = {k: mx.nd.zeros(v.shape) for k, v in values.items()} if grad else None
    return sym.bind(mx.cpu(), args, args_grad=grads), args, grads


def test_shapes_values_and_gradients_of_a_loop():
    x, h0, W, U = (mx.sym.var(n) for n in ("x", "h0", "W", "U"))
    outs, states = mx.sym.contrib.foreach(_rnn_body(W, U), x, [h0])
    loop = mx.sym.Group([outs, states[0]])
    arg_shapes, out_shapes, _ = loop.infer_shape(x=(5, 3, 4), h0=(3, 6), W=(4, 6), U=(6, 6))
    assert out_shapes == [(5, 3, 6), (3, 6)] and arg_shapes == [(5, 3, 4), (3, 6), (4, 6), (6, 6)]
    # the initial state's shape is learnt back out of the body (h = tanh(x W + h0 U) is (3, 6))
    arg_shapes, out_shapes, _ = loop.infer_shape_partial(x=(5, 3, 4), W=(4, 6), U=(6, 6))
    assert arg_shapes[1] == (3, 6) and out_shapes == [(5, 3, 6), (3, 6)]
    _, out_types, _ = loop.infer_type(x="float64", h0="float64", W="float64", U="float64")
    assert all(t == np.float64 for t in out_types)
    values = {"x": rng.rand(5, 3, 4), "h0": rng.rand(3, 6), "W": rng.rand(4, 6) * 0.3, "U": rng.rand(6, 6) * 0.3}
    ex, args, grads = _bind(loop, values)
    out, last = ex.forward(is_train=True)
    h, want = values["h0"], []
    for t in range(5):
        h = np.tanh(values["x"][t] @ values["W"] + h @ values["U"])
        want.append(2 * h)
    np.testing.assert_allclose(out.asnumpy(), np.stack(want), rtol=1e-5)
    np.testing.assert_allclose(last.asnumpy(), h, rtol=1e-5)
    heads = [mx.nd.array(rng.rand(5, 3, 6)), mx.nd.array(rng.rand(3, 6))]
    ex.backward(heads)
    for a in args.values():  # the imperative foreach on the same values, through autograd
        a.attach_grad()
    with autograd.record():
        def body(x_t, st):
            hh = mx.nd.tanh(mx.nd.dot(x_t, args["W"]) + mx.nd.dot(st[0], args["U"]))
            return hh * 2, [hh]
        o, s = mx.nd.contrib.foreach(body, args["x"], [args["h0"]])
        loss = (o * heads[0]).sum() + (s[0] * heads[1]).sum()
    loss.backward()
    for k in values:
        np.testing.assert_allclose(grads[k].asnumpy(), args[k].grad.asnumpy(), rtol=1e-4, atol=1e-7, err_msg=k)


def test_an_unknown_length_leaves_the_step_shapes_known():
    # MXNet's partial shapes: (0, 3, 32, 32) data gives (0, 3, 32, 32) outputs before the length is known
    data = mx.sym.var("data", shape=(0, 3, 32, 32))
    outs, states = mx.sym.contrib.foreach(lambda d, s: (d + s[0], [s[0] * 2]), data, [mx.sym.var("state")])
    args, out_shapes, _ = mx.sym.Group([outs] + states).infer_shape_partial()
    assert out_shapes == [(0, 3, 32, 32), (3, 32, 32)] and args == [(0, 3, 32, 32), (3, 32, 32)]
    assert outs.infer_shape() == (None, None, None)
    assert outs.simple_bind(mx.cpu(), data=(2, 3, 32, 32)).outputs[0].shape == (2, 3, 32, 32)


def test_outer_entries_several_data_no_states_and_nesting():
    a, b, w = mx.sym.var("a"), mx.sym.var("b"), mx.sym.var("w")
    scale = w * 3  # computed outside the loop, read inside: an input of the loop node

    def inner(row, _):
        return [row * scale], []

    def outer(step, _):
        inner_out, _ = mx.sym.contrib.foreach(inner, step[0] + step[1], [])
        return [inner_out[0], step[0] - step[1]], []
    (o1, o2), states = mx.sym.contrib.foreach(outer, [a, b], [])
    assert states == []
    va, vb, vw = rng.rand(4, 2, 3), rng.rand(4, 2, 3), rng.rand(3)
    ex, args, grads = _bind(mx.sym.Group([o1, o2]), {"a": va, "b": vb, "w": vw})
    r1, r2 = ex.forward(is_train=True)
    np.testing.assert_allclose(r1.asnumpy(), (va + vb) * vw * 3, rtol=1e-6)
    np.testing.assert_allclose(r2.asnumpy(), va - vb, rtol=1e-6)
    ex.backward([mx.nd.ones((4, 2, 3)), mx.nd.ones((4, 2, 3))])
    np.testing.assert_allclose(grads["w"].asnumpy(), ((va + vb) * 3).sum(axis=(0, 1)), rtol=1e-5)
    np.testing.assert_allclose(grads["a"].asnumpy(), np.broadcast_to(vw * 3 + 1, va.shape), rtol=1e-6)


def test_bad_loops_are_refused_clearly():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    with pytest.raises(ValueError, match="returns 2 states for 1 initial states"):
        mx.sym.contrib.foreach(lambda d, s: (d, [s[0], s[0]]), x, [y])
    out, _ = mx.sym.contrib.foreach(lambda d, s: (d[0] + d[1], []), [x, y], [])
    with pytest.raises(ShapeError, match="same length on axis 0"):
        out.infer_shape(x=(3, 2), y=(4, 2))
    with pytest.raises(AssertionError, match="does not use"):  # MXNet's AssertionError (an MXNetError too)
        mx.sym.contrib.foreach(lambda d, s: (d[0] * 2, []), [x, y], [])
    with pytest.raises(MXNetError, match="every data and state input must be used"):
        mx.sym.contrib.foreach(lambda d, s: (d, [x]), x, [y])
    grows, _ = mx.sym.contrib.foreach(lambda d, s: (d, [mx.sym.concat(s[0], s[0], dim=0)]), x, [y])
    with pytest.raises(ShapeError, match="keeps its shape"):
        grows.infer_shape(x=(3, 2), y=(2, 2))
    with pytest.raises(TypeError, match="Symbols"):
        mx.sym.contrib.foreach(lambda d, s: (d, s), [x, 3], [])


class _Unrolled(gluon.HybridBlock):
    def __init__(self, layout, **kw):
        super().__init__(**kw)
        self.layout = layout
        with self.name_scope():
            self.cell = gluon.rnn.LSTMCell(8, prefix="rnn_")

    def hybrid_forward(self, F, inputs, states, valid_length):
        return gluon.contrib.rnn.dynamic_unroll(self.cell, inputs, states, valid_length=valid_length,
                                                layout=self.layout)


@pytest.mark.parametrize("layout", ["TNC", "NTC"])
def test_dynamic_unroll_hybridized_equals_the_cells_unroll(layout):
    seq = mx.nd.array(rng.normal(size=(6, 4, 5) if layout == "TNC" else (4, 6, 5)))
    valid = mx.nd.array([6, 2, 5, 1])
    states = [mx.nd.array(rng.normal(size=(4, 8))) for _ in range(2)]
    net = _Unrolled(layout)
    net.initialize()
    net(seq, states, valid)  # deferred shapes learnt (imperatively)
    ref_out, ref_states = net.cell.unroll(6, seq, states, layout=layout, merge_outputs=True, valid_length=valid)
    net.hybridize()
    params = net.collect_params()
    for p in params.values():
        p.grad_req = "write"
    with autograd.record():
        out, new_states = net(seq, states, valid)
        out.sum().backward()
    np.testing.assert_allclose(out.asnumpy(), ref_out.asnumpy(), rtol=1e-5, atol=1e-6)
    for got, want in zip(new_states, ref_states):
        np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-6)
    hybrid_grads = {k: p.grad().asnumpy().copy() for k, p in params.items()}
    net.hybridize(False)
    with autograd.record():
        out2, _ = net(seq, states, valid)
        out2.sum().backward()
    for k, p in params.items():
        np.testing.assert_allclose(hybrid_grads[k], p.grad().asnumpy(), rtol=1e-4, atol=1e-6, err_msg=k)


# -- MXNet's JSON form: 'subgraphs' and the in_data/in_state/remain locations ---------------------------
LOOPS = os.path.join(os.path.dirname(__file__), "..", "data", "loops")
MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")


class _LoopLSTM(gluon.HybridBlock):
    """The block tests/data/make_loop_fixtures.py exports from MXNet."""

    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.cell = gluon.rnn.LSTMCell(6, input_size=4, prefix="rnn_")

    def hybrid_forward(self, F, x, h, c, valid_length):
        out, states = gluon.contrib.rnn.dynamic_unroll(self.cell, x, [h, c], layout="NTC", valid_length=valid_length)
        return out, states[0], states[1]


def test_json_round_trip_in_mxnet_form():
    x, h0, W, U = (mx.sym.var(n) for n in ("x", "h0", "W", "U"))
    outs, states = mx.sym.contrib.foreach(_rnn_body(W, U), x, [h0])
    loop = mx.sym.Group([outs, states[0]])
    doc = json.loads(loop.tojson())
    node = doc["nodes"][-1]
    assert node["op"] == "_foreach" and node["name"].startswith("_foreach")
    assert node["attrs"] == {"in_data_locs": "[0]", "in_state_locs": "[2]", "num_args": "5", "num_out_data": "1",
                             "num_outputs": "2", "remain_locs": "[1, 3]"}  # what MXNet 1.9.1 writes for it
    again = mx.sym.load_json(loop.tojson())
    values = {"x": rng.rand(4, 2, 3), "h0": rng.rand(2, 5), "W": rng.rand(3, 5), "U": rng.rand(5, 5)}
    first = [o.asnumpy() for o in _bind(loop, values, grad=False)[0].forward()]
    second = [o.asnumpy() for o in _bind(again, values, grad=False)[0].forward()]
    for a, b in zip(first, second):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_mxnet_exported_loop_loads_and_gives_mxnet_outputs():
    io = np.load(os.path.join(LOOPS, "io.npz"))
    block = gluon.SymbolBlock.imports(os.path.join(LOOPS, "lstm_loop-symbol.json"), [f"data{i}" for i in range(4)],
                                      os.path.join(LOOPS, "lstm_loop-0000.params"))
    outs = block(*[mx.nd.array(io[f"data{i}"]) for i in range(4)])
    for i, o in enumerate(outs):
        np.testing.assert_allclose(o.asnumpy(), io[f"out{i}"], rtol=1e-5, atol=1e-6)
    net = _LoopLSTM(prefix="looplstm_")  # the same weights in ember's own block, imperative and hybridized
    net.collect_params().load(os.path.join(LOOPS, "lstm_loop-0000.params"))  # export's full names
    for hybrid in (False, True):
        net.hybridize(hybrid)
        for i, o in enumerate(net(*[mx.nd.array(io[f"data{i}"]) for i in range(4)])):
            np.testing.assert_allclose(o.asnumpy(), io[f"out{i}"], rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="MXNet 1.9.1 venv not installed")
def test_mxnet_runs_an_ember_exported_loop(tmp_path):
    io = np.load(os.path.join(LOOPS, "io.npz"))
    net = _LoopLSTM(prefix="looplstm_")
    net.initialize(mx.init.Uniform(0.4))
    net.hybridize()
    want = [o.asnumpy() for o in net(*[mx.nd.array(io[f"data{i}"]) for i in range(4)])]
    net.export(str(tmp_path / "e"))
    code = ("import mxnet as mx, numpy as np, sys; d=sys.argv[1]; io=np.load(sys.argv[2]); "
            "b=mx.gluon.SymbolBlock.imports(d+'/e-symbol.json',['data0','data1','data2','data3'],d+'/e-0000.params'); "
            "np.savez(d+'/out.npz', *[o.asnumpy() for o in b(*[mx.nd.array(io['data%d' % i]) for i in range(4)])])")
    res = subprocess.run([MXNET_PYTHON, "-c", code, str(tmp_path), os.path.join(LOOPS, "io.npz")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    got = np.load(tmp_path / "out.npz")
    for i, w in enumerate(want):
        np.testing.assert_allclose(got[f"arr_{i}"], w, rtol=1e-5, atol=1e-6)


def test_what_the_body_makes_runs_at_every_step():
    # an operator the body makes without reading the step (a random draw) runs per step, as in MXNet;
    # one made outside the loop is computed once and read by every step
    x = mx.sym.var("x")
    outside = mx.sym.random.uniform(shape=(2,))
    per_step, _ = mx.sym.contrib.foreach(lambda d, s: (d * 0 + mx.sym.random.uniform(shape=(2,)), []), x, [])
    once, _ = mx.sym.contrib.foreach(lambda d, s: (d * 0 + outside, []), x, [])
    ex = mx.sym.Group([per_step, once]).bind(mx.cpu(), {"x": mx.nd.zeros((4, 2))})
    steps, same = (o.asnumpy() for o in ex.forward())
    assert len({tuple(r) for r in steps}) == 4  # a fresh draw per step
    assert len({tuple(r) for r in same}) == 1
    assert '"__subgraph_name__"' in per_step.tojson()  # MXNet's mark on what the body made


# -- while_loop --------------------------------------------------------------------------------------
def _while_parts(w):
    def cond(x, acc):
        return mx.sym.sum(acc) < 20

    def func(x, acc):
        new = acc + mx.sym.tanh(x * w)
        return [new * 2], [x + 1, new]
    return cond, func


def test_while_loop_values_and_gradients_match_the_imperative_loop():
    x, acc, w = mx.sym.var("x"), mx.sym.var("acc"), mx.sym.var("w")
    cond, func = _while_parts(w)
    outs, states = mx.sym.contrib.while_loop(cond, func, [x, acc], max_iterations=8)
    loop = mx.sym.Group(outs + states)
    _, out_shapes, _ = loop.infer_shape(x=(2, 3), acc=(2, 3), w=(2, 3))
    assert out_shapes == [(8, 2, 3), (2, 3), (2, 3)]
    values = {"x": rng.uniform(0, 1, (2, 3)), "acc": np.zeros((2, 3)), "w": rng.uniform(0.5, 1.5, (2, 3))}
    ex, args, grads = _bind(loop, values)
    res = [o.asnumpy() for o in ex.forward(is_train=True)]
    heads = [rng.rand(8, 2, 3), rng.rand(2, 3), rng.rand(2, 3)]
    ex.backward([mx.nd.array(h) for h in heads])
    for a in args.values():
        a.attach_grad()
    with autograd.record():
        def icond(x, acc):
            return (acc.sum() < 20)

        def ifunc(x, acc):
            new = acc + mx.nd.tanh(x * args["w"])
            return [new * 2], [x + 1, new]
        o, s = mx.nd.contrib.while_loop(icond, ifunc, [args["x"], args["acc"]], max_iterations=8)
        want = [o[0], s[0], s[1]]
        loss = sum((v * mx.nd.array(h)).sum() for v, h in zip(want, heads))
    loss.backward()
    steps = int(round(res[1][0, 0] - values["x"][0, 0]))
    assert 1 <= steps < 8  # the loop ended before max_iterations: the rows past the end are exercised
    for got, ref in zip(res, want):
        np.testing.assert_allclose(got, ref.asnumpy(), rtol=1e-5, atol=1e-6)  # zero rows past the end, as ember's nd
    for k in values:
        np.testing.assert_allclose(grads[k].asnumpy(), args[k].grad.asnumpy(), rtol=1e-4, atol=1e-6, err_msg=k)


def test_while_loop_runs_only_the_steps_cond_allows():
    """The executor keeps one `_while_loop` node and runs func while cond holds: a huge max_iterations
    costs nothing but its output rows, and the gradient flows through the steps taken only."""
    x, w = mx.sym.var("x"), mx.sym.var("w")
    outs, final = mx.sym.contrib.while_loop(lambda v: mx.sym.sum(v) < 50, lambda v: ([v * w], [v * 2]), [x],
                                            max_iterations=100000)
    loop = mx.sym.Group(outs + final)
    values = {"x": np.array([1.0, 2.0]), "w": np.array([3.0, 0.5])}
    ex, args, grads = _bind(loop, values)
    assert [n.op.name for n in ex._graph.nodes if n.op is not None].count("_while_loop") == 1
    assert len(ex._graph.nodes) < 20
    res = [o.asnumpy() for o in ex.forward(is_train=True)]
    # v: [1, 2] -> [2, 4] -> [4, 8] -> [8, 16] -> [16, 32] (sum 48) -> [32, 64] (sum 96: stop)
    steps = 5
    want_rows = np.array([[1.0, 2.0] * np.array([3.0, 0.5]) * 2 ** t for t in range(steps)])
    assert res[0].shape == (100000, 2)
    np.testing.assert_allclose(res[0][:steps], want_rows)
    assert not res[0][steps:].any()
    np.testing.assert_allclose(res[1], [32.0, 64.0])
    head_out, head_final = rng.rand(100000, 2), rng.rand(2)
    ex.backward([mx.nd.array(head_out), mx.nd.array(head_final)])
    scale = 2.0 ** np.arange(steps)[:, None]  # d v_t / d x
    np.testing.assert_allclose(grads["x"].asnumpy(), (head_out[:steps] * scale).sum(0) * values["w"] +
                               head_final * 2 ** steps, rtol=1e-6)
    np.testing.assert_allclose(grads["w"].asnumpy(), (head_out[:steps] * scale * values["x"]).sum(0), rtol=1e-6)


def test_while_loop_that_never_runs_its_body():
    x, y = mx.sym.var("x"), mx.sym.var("y")
    outs, final = mx.sym.contrib.while_loop(lambda v: mx.sym.sum(v) > 100, lambda v: ([v * y], [v + 1]), [x],
                                            max_iterations=4)
    values = {"x": np.array([1.0, 2.0]), "y": np.array([3.0, 4.0])}
    ex, args, grads = _bind(mx.sym.Group(outs + final), values)
    res = ex.forward(is_train=True)
    assert not res[0].asnumpy().any()
    np.testing.assert_array_equal(res[1].asnumpy(), values["x"])
    ex.backward([mx.nd.ones((4, 2)), mx.nd.array([5.0, 6.0])])
    np.testing.assert_array_equal(grads["x"].asnumpy(), [5.0, 6.0])  # the final variables are the start
    np.testing.assert_array_equal(grads["y"].asnumpy(), [0.0, 0.0])


def test_while_loop_backward_replays_the_forward_dropout():
    """func draws (Dropout): the backward runs each step's gradient with that step's mask."""
    x = mx.sym.var("x")
    outs, _ = mx.sym.contrib.while_loop(
        lambda i, v: i < 4, lambda i, v: ([mx.sym.Dropout(v * 3, p=0.5)], [i + 1, v]),
        [mx.sym.var("i"), x], max_iterations=6)
    values = {"i": np.zeros(1), "x": rng.uniform(1, 2, (50,))}
    ex, args, grads = _bind(outs[0], values)
    out = ex.forward(is_train=True)[0].asnumpy()
    assert 0 < (out[:4] == 0).sum() < out[:4].size and not out[4:].any()
    assert len({tuple(r != 0) for r in out[:4]}) > 1  # a fresh mask per step
    ex.backward([mx.nd.ones(out.shape)])
    # out_t = 3 x m_t / (1 - p): d sum(out) / dx = sum_t out_t / x
    np.testing.assert_allclose(grads["x"].asnumpy(), out[:4].sum(0) / values["x"], rtol=1e-5)


def test_while_loop_replays_each_executors_own_draws():
    x = mx.sym.var("x")
    outs, _ = mx.sym.contrib.while_loop(lambda i, v: i < 3, lambda i, v: ([mx.sym.Dropout(v * 3, p=0.5)], [i + 1, v]),
                                        [mx.sym.var("i"), x], max_iterations=3)
    values = rng.uniform(1, 2, (200,))
    bound = [_bind(outs[0], {"i": np.zeros(1), "x": values}) for _ in range(2)]
    res = [ex.forward(is_train=True)[0].asnumpy() for ex, _, _ in bound]
    assert (res[0] != res[1]).any()
    for (ex, _, grads), out in zip(bound, res):  # the first executor's backward after the second's forward
        ex.backward([mx.nd.ones(out.shape)])
        np.testing.assert_allclose(grads["x"].asnumpy(), out.sum(0) / values, rtol=1e-5)


def test_while_loop_in_a_hybridized_block_trains():
    class Loop(gluon.HybridBlock):
        def __init__(self):
            super().__init__()
            with self.name_scope():
                self.dense = gluon.nn.Dense(3, in_units=3)

        def hybrid_forward(self, F, x):
            outs, (_, h) = F.contrib.while_loop(lambda i, h: i < 3, lambda i, h: ([h], [i + 1, self.dense(h)]),
                                                [F.zeros((1,)), x], max_iterations=5)
            return outs[0].sum(axis=0) + h

    data = mx.nd.array(rng.rand(2, 3))
    grads = {}
    for hybrid in (False, True):
        net = Loop()
        net.initialize(mx.init.Constant(0.1))
        if hybrid:
            net.hybridize()
        with autograd.record():
            y = net(data)
        y.backward()
        grads[hybrid] = (y.asnumpy(), {k.split("_", 1)[1]: p.grad().asnumpy() for k, p in net.collect_params().items()})
    np.testing.assert_allclose(grads[True][0], grads[False][0], rtol=1e-5)
    for k, g in grads[False][1].items():
        np.testing.assert_allclose(grads[True][1][k], g, rtol=1e-5, atol=1e-7, err_msg=k)


def test_while_loop_cond_must_be_a_scalar():
    x = mx.sym.var("x")
    outs, _ = mx.sym.contrib.while_loop(lambda v: v < 3, lambda v: ([v], [v + 1]), [x], max_iterations=3)
    ex = outs[0].bind(mx.cpu(), {"x": mx.nd.ones((2,))})
    ex.forward()
    with pytest.raises(MXNetError, match="cond must be a scalar"):
        ex.outputs[0].asnumpy()


def test_while_loop_in_mxnet_json_both_ways(tmp_path):
    io = np.load(os.path.join(LOOPS, "while_io.npz"))
    steps = int(io["steps"])
    loop = mx.sym.load(os.path.join(LOOPS, "while-symbol.json"))  # MXNet 1.9.1 wrote it (inputs not in var order)
    res = loop.bind(mx.cpu(), {k: mx.nd.array(io[k]) for k in ("x", "acc", "w")}).forward()
    np.testing.assert_allclose(res[0].asnumpy()[:steps], io["out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(res[1].asnumpy(), io["x_end"], rtol=1e-6)
    np.testing.assert_allclose(res[2].asnumpy(), io["acc_end"], rtol=1e-5, atol=1e-6)
    x, acc, w = mx.sym.var("x"), mx.sym.var("acc"), mx.sym.var("w")
    outs, states = mx.sym.contrib.while_loop(*_while_parts(w), [x, acc], max_iterations=8)
    node = json.loads(mx.sym.Group(outs + states).tojson())["nodes"][-1]
    assert node["op"] == "_while_loop" and len(node["subgraphs"]) == 2
    assert {k: node["attrs"][k] for k in ("max_iterations", "num_out_data", "num_outputs")} == \
        {"max_iterations": "8", "num_out_data": "1", "num_outputs": "3"}
    again = mx.sym.load_json(mx.sym.Group(outs + states).tojson())
    res2 = again.bind(mx.cpu(), {k: mx.nd.array(io[k]) for k in ("x", "acc", "w")}).forward()
    np.testing.assert_allclose(res2[2].asnumpy(), io["acc_end"], rtol=1e-5, atol=1e-6)
    if not os.path.exists(MXNET_PYTHON):
        return
    mx.sym.Group(outs + states).save(str(tmp_path / "w.json"))
    code = ("import mxnet as mx, numpy as np, sys; io=np.load(sys.argv[2]); g=mx.sym.load(sys.argv[1]); "
            "r=g.bind(mx.cpu(), {k: mx.nd.array(io[k]) for k in ('x','acc','w')}).forward(); "
            "np.save(sys.argv[3], r[2].asnumpy())")
    done = subprocess.run([MXNET_PYTHON, "-c", code, str(tmp_path / "w.json"), os.path.join(LOOPS, "while_io.npz"),
                           str(tmp_path / "acc.npy")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    np.testing.assert_allclose(np.load(tmp_path / "acc.npy"), io["acc_end"], rtol=1e-5, atol=1e-6)


def test_while_loop_errors():
    x = mx.sym.var("x")
    with pytest.raises(ValueError, match="max_iterations"):
        mx.sym.contrib.while_loop(lambda v: v < 3, lambda v: ([v], [v + 1]), [x])
    with pytest.raises(ValueError, match="loop variables"):
        mx.sym.contrib.while_loop(lambda v: v < 3, lambda v: ([v], [v + 1, v]), [x], max_iterations=3)
    grows, _ = mx.sym.contrib.while_loop(lambda v: mx.sym.sum(v) < 3, lambda v: ([v], [mx.sym.concat(v, v, dim=0)]),
                                         [x], max_iterations=3)
    with pytest.raises(ShapeError, match="must keep its shape"):
        grows[0].infer_shape(x=(2,))


def test_while_loop_func_may_return_no_step_outputs():
    # MXNet's while_loop takes None for the step outputs: only the loop variables come out
    x = mx.sym.var("x")
    outs, final = mx.sym.contrib.while_loop(lambda v: mx.sym.sum(v) < 10, lambda v: (None, [v * 2]), [x],
                                            max_iterations=6)
    assert outs == []
    ex = final[0].bind(mx.cpu(), {"x": mx.nd.ones((2,))})
    np.testing.assert_array_equal(ex.forward()[0].asnumpy(), [8, 8])
    outs, final = mx.nd.contrib.while_loop(lambda v: v.sum() < 10, lambda v: (None, [v * 2]), [mx.nd.ones((2,))],
                                           max_iterations=6)
    assert outs == [] and final[0].asnumpy().tolist() == [8, 8]
