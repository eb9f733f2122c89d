"""mx.sym.contrib.foreach: shapes and dtypes through the body, values and gradients of the unrolled loop
against numpy and the imperative foreach, outer entries read by the body, nested loops, errors; Gluon's
dynamic_unroll hybridized against the cell's own unroll."""
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
    with pytest.raises(MXNetError, match="contrib.foreach"):
        out.tojson()
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
