"""Step cells unrolled (mx.rnn.RNNCell / LSTMCell / GRUCell and the containers) against numpy."""
import numpy as np
import pytest

import ember as mx
from rnn_reference import gru_step, lstm_step, rnn_step, random_params, run

N, T, I, H = 3, 4, 5, 6


def _begin(cell):
    """Begin states as variables named like begin_state's, so tests give them explicit shapes."""
    return cell.begin_state(func=mx.sym.Variable)


def _state_shapes(cell, n=N):
    return {f"{cell._prefix}begin_state_{i}": (n,) + tuple(info["shape"][1:])
            for i, info in enumerate(cell.state_info)}


@pytest.mark.parametrize("layout", ["NTC", "TNC"])
@pytest.mark.parametrize("merge", [True, False])
def test_lstm_unroll_matches_numpy(layout, merge):
    rng = np.random.RandomState(0)
    cell = mx.rnn.LSTMCell(H, prefix="lstm_")
    data = mx.sym.Variable("data")
    begin = _begin(cell)
    outputs, states = cell.unroll(T, data, begin_state=begin, layout=layout, merge_outputs=merge)
    net = mx.sym.Group(([outputs] if merge else list(outputs)) + list(states))
    dshape = (N, T, I) if layout == "NTC" else (T, N, I)
    shapes = dict(data=dshape, **_state_shapes(cell))
    values = random_params(net, shapes, rng)
    got = run(net, values)
    x = values["data"] if layout == "NTC" else values["data"].transpose(1, 0, 2)
    h, c = values["lstm_begin_state_0"], values["lstm_begin_state_1"]
    expected = []
    for t in range(T):
        h, c = lstm_step(x[:, t], h, c, values, "lstm_")
        expected.append(h)
    if merge:
        stacked = np.stack(expected, axis=1 if layout == "NTC" else 0)
        np.testing.assert_allclose(got[0], stacked, rtol=1e-5, atol=1e-6)
        rest = got[1:]
    else:
        for t in range(T):
            np.testing.assert_allclose(got[t], expected[t], rtol=1e-5, atol=1e-6)
        rest = got[T:]
    np.testing.assert_allclose(rest[0], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rest[1], c, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("activation", ["tanh", "relu"])
def test_rnn_cell_unroll_matches_numpy(activation):
    rng = np.random.RandomState(1)
    cell = mx.rnn.RNNCell(H, activation=activation, prefix="rnn_")
    inputs = [mx.sym.Variable(f"x{t}") for t in range(T)]
    outputs, _ = cell.unroll(T, inputs, begin_state=_begin(cell))
    net = mx.sym.Group(outputs)
    shapes = dict({f"x{t}": (N, I) for t in range(T)}, **_state_shapes(cell))
    values = random_params(net, shapes, rng)
    got = run(net, values)
    act = np.tanh if activation == "tanh" else (lambda v: np.maximum(v, 0))
    h = values["rnn_begin_state_0"]
    for t in range(T):
        h = rnn_step(values[f"x{t}"], h, values, "rnn_", act)
        np.testing.assert_allclose(got[t], h, rtol=1e-5, atol=1e-6)


def test_gru_unroll_matches_numpy():
    rng = np.random.RandomState(2)
    cell = mx.rnn.GRUCell(H, prefix="gru_")
    outputs, _ = cell.unroll(T, mx.sym.Variable("data"), begin_state=_begin(cell), merge_outputs=True)
    shapes = dict(data=(N, T, I), **_state_shapes(cell))
    values = random_params(outputs, shapes, rng)
    got = run(outputs, values)[0]
    h = values["gru_begin_state_0"]
    for t in range(T):
        h = gru_step(values["data"][:, t], h, values, "gru_")
        np.testing.assert_allclose(got[:, t], h, rtol=1e-5, atol=1e-6)


def test_names_follow_mxnet():
    cell = mx.rnn.LSTMCell(H, prefix="rnn_")
    outputs, _ = cell.unroll(3, [mx.sym.Variable(f"rnn_t{i}_data") for i in range(3)], begin_state=_begin(cell))
    assert mx.sym.Group(outputs).list_outputs() == ["rnn_t0_out_output", "rnn_t1_out_output", "rnn_t2_out_output"]
    assert sorted(cell.params._params) == ["rnn_h2h_bias", "rnn_h2h_weight", "rnn_i2h_bias", "rnn_i2h_weight"]
    states = cell.begin_state()  # unroll reset the counter; later calls continue it
    assert [s.name for s in states] == ["rnn_begin_state_0", "rnn_begin_state_1"]
    assert [s.name for s in cell.begin_state()] == ["rnn_begin_state_2", "rnn_begin_state_3"]
    assert cell.state_info == [{"shape": (0, H), "__layout__": "NC"}] * 2


def test_params_are_shared_through_rnnparams():
    params = mx.rnn.RNNParams("shared_")
    a = mx.rnn.GRUCell(H, prefix="a_", params=params)
    b = mx.rnn.GRUCell(H, prefix="b_", params=params)
    out_a, _ = a.unroll(1, [mx.sym.Variable("x")], begin_state=_begin(a))
    out_b, _ = b.unroll(1, [mx.sym.Variable("x")], begin_state=_begin(b))
    args = mx.sym.Group(out_a + out_b).list_arguments()
    assert sorted(a for a in args if a.startswith("shared_")) == \
        ["shared_h2h_bias", "shared_h2h_weight", "shared_i2h_bias", "shared_i2h_weight"]


def test_sequential_stack_matches_numpy():
    rng = np.random.RandomState(3)
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.LSTMCell(H, prefix="l0_"))
    stack.add(mx.rnn.GRUCell(H, prefix="l1_"))
    begin = stack.begin_state(func=mx.sym.Variable)
    assert [s.name for s in begin] == ["l0_begin_state_0", "l0_begin_state_1", "l1_begin_state_0"]
    outputs, states = stack.unroll(T, mx.sym.Variable("data"), begin_state=begin, merge_outputs=False)
    shapes = {"data": (N, T, I), "l0_begin_state_0": (N, H), "l0_begin_state_1": (N, H), "l1_begin_state_0": (N, H)}
    net = mx.sym.Group(list(outputs) + states)
    values = random_params(net, shapes, rng)
    got = run(net, values)
    h0, c0, h1 = values["l0_begin_state_0"], values["l0_begin_state_1"], values["l1_begin_state_0"]
    for t in range(T):
        h0, c0 = lstm_step(values["data"][:, t], h0, c0, values, "l0_")
        h1 = gru_step(h0, h1, values, "l1_")
        np.testing.assert_allclose(got[t], h1, rtol=1e-5, atol=1e-6)
    for g, e in zip(got[T:], (h0, c0, h1)):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    # stepping the stack by hand gives the same graph values
    stack.reset()
    inputs = list(mx.sym.split(mx.sym.Variable("data"), axis=1, num_outputs=T, squeeze_axis=1))
    st = begin
    for t in range(T):
        out, st = stack(inputs[t], st)
    np.testing.assert_allclose(run(out, values)[0], h1, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("merge", [True, False])
def test_bidirectional_matches_numpy(merge):
    rng = np.random.RandomState(4)
    cell = mx.rnn.BidirectionalCell(mx.rnn.RNNCell(H, prefix="l_"), mx.rnn.RNNCell(H, prefix="r_"),
                                    output_prefix="bi_")
    begin = cell.begin_state(func=mx.sym.Variable)
    outputs, states = cell.unroll(T, mx.sym.Variable("data"), begin_state=begin, merge_outputs=merge)
    if not merge:
        assert mx.sym.Group(outputs).list_outputs() == [f"bi_t{t}_output" for t in range(T)]
    net = outputs if merge else mx.sym.Group(outputs)
    shapes = {"data": (N, T, I), "l_begin_state_0": (N, H), "r_begin_state_0": (N, H)}
    values = random_params(net, shapes, rng)
    got = run(net, values)
    x = values["data"]
    fwd, h = [], values["l_begin_state_0"]
    for t in range(T):
        h = rnn_step(x[:, t], h, values, "l_")
        fwd.append(h)
    bwd, h = [None] * T, values["r_begin_state_0"]
    for t in reversed(range(T)):
        h = rnn_step(x[:, t], h, values, "r_")
        bwd[t] = h
    expected = [np.concatenate([f, b], axis=1) for f, b in zip(fwd, bwd)]
    if merge:
        np.testing.assert_allclose(got[0], np.stack(expected, axis=1), rtol=1e-5, atol=1e-6)
    else:
        for t in range(T):
            np.testing.assert_allclose(got[t], expected[t], rtol=1e-5, atol=1e-6)
    assert len(states) == 2 and len(states[0]) == 1 and len(states[1]) == 1


def test_residual_cell_adds_the_input():
    rng = np.random.RandomState(5)
    base = mx.rnn.GRUCell(I, prefix="rnn_")
    cell = mx.rnn.ResidualCell(base)
    begin = cell.begin_state(func=mx.sym.Variable)
    for merge in (True, False):
        outputs, _ = cell.unroll(2, mx.sym.Variable("data"), begin_state=begin, merge_outputs=merge)
        net = outputs if merge else mx.sym.Group(outputs)
        values = random_params(net, {"data": (N, 2, I), "rnn_begin_state_0": (N, I)}, rng)
        got = run(net, values)
        h, expected = values["rnn_begin_state_0"], []
        for t in range(2):
            h = gru_step(values["data"][:, t], h, values, "rnn_")
            expected.append(h + values["data"][:, t])
        if merge:
            np.testing.assert_allclose(got[0], np.stack(expected, axis=1), rtol=1e-5, atol=1e-6)
        else:
            for t in range(2):
                np.testing.assert_allclose(got[t], expected[t], rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="modifier"):
        base.begin_state()  # the base cell is used through the modifier only


def test_dropout_cell_is_identity_at_inference_and_drops_in_training():
    cell = mx.rnn.DropoutCell(0.5)
    out, states = cell.unroll(3, mx.sym.Variable("data"), merge_outputs=True)
    assert states == []
    x = np.random.rand(2, 3, 40).astype(np.float32) + 1
    np.testing.assert_array_equal(run(out, {"data": x})[0], x)
    trained = run(out, {"data": x}, is_train=True)[0]
    kept = trained != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(trained[kept], 2 * x[kept], rtol=1e-6)
    with pytest.raises(AssertionError, match="number"):
        mx.rnn.DropoutCell("0.5")


def test_zoneout_states_keep_old_or_take_new_values():
    rng = np.random.RandomState(6)
    base = mx.rnn.RNNCell(H, prefix="rnn_")
    cell = mx.rnn.ZoneoutCell(base, zoneout_states=0.5)
    begin = cell.begin_state(func=mx.sym.Variable)
    _, states = cell.unroll(1, [mx.sym.Variable("x")], begin_state=begin)
    values = random_params(states[0], {"x": (N, I), "rnn_begin_state_0": (N, H)}, rng)
    new = rnn_step(values["x"], values["rnn_begin_state_0"], values, "rnn_")
    np.testing.assert_allclose(run(states[0], values)[0], new, rtol=1e-5, atol=1e-6)  # inference: new
    trained = run(states[0], values, is_train=True)[0]
    took_new = np.isclose(trained, new, rtol=1e-5, atol=1e-6)
    kept_old = np.isclose(trained, values["rnn_begin_state_0"])
    assert (took_new | kept_old).all() and kept_old.any() and took_new.any()
    with pytest.raises(AssertionError, match="unfuse"):
        mx.rnn.ZoneoutCell(mx.rnn.FusedRNNCell(H))
    with pytest.raises(AssertionError, match="Bidirectional"):
        mx.rnn.ZoneoutCell(mx.rnn.BidirectionalCell(mx.rnn.RNNCell(H), mx.rnn.RNNCell(H, prefix="r_")))


def test_lstm_bias_initializer_sets_the_forget_gate():
    cell = mx.rnn.LSTMCell(4, forget_bias=2.0, prefix="l_")
    out, _ = cell.unroll(1, [mx.sym.Variable("x")], begin_state=_begin(cell))
    attrs = out[0].attr_dict()["l_i2h_bias"]
    bias = mx.nd.ones((16,))
    mx.init.Xavier()(mx.init.InitDesc("l_i2h_bias", attrs), bias)
    np.testing.assert_array_equal(bias.asnumpy(), np.r_[np.zeros(4), 2 * np.ones(4), np.zeros(8)])
    assert mx.init.create(mx.rnn.LSTMBias(3.0).dumps()).forget_bias == 3.0


def test_unroll_input_errors():
    cell = mx.rnn.RNNCell(H)
    with pytest.raises(AssertionError, match="inputs=None"):
        cell.unroll(2, None)
    with pytest.raises(AssertionError, match="2 input symbols for length 3"):
        cell.unroll(3, [mx.sym.Variable("a"), mx.sym.Variable("b")])
    with pytest.raises(ValueError, match="layout"):
        cell.unroll(2, mx.sym.Variable("d"), layout="NCT")
    with pytest.raises(NotImplementedError):
        mx.rnn.BidirectionalCell(mx.rnn.RNNCell(H), mx.rnn.RNNCell(H, prefix="r_"))(mx.sym.Variable("x"), [])


def test_conv_lstm_cell_shapes_and_names():
    cell = mx.rnn.ConvLSTMCell(input_shape=(1, 3, 8, 6), num_hidden=4, prefix="rnn_")
    assert cell.state_info == [{"shape": (0, 4, 8, 6), "__layout__": "NCHW"}] * 2
    begin = cell.begin_state(func=mx.sym.Variable)
    outputs, _ = cell.unroll(2, [mx.sym.Variable(f"rnn_t{i}_data") for i in range(2)], begin_state=begin)
    net = mx.sym.Group(outputs)
    assert net.list_outputs() == ["rnn_t0_out_output", "rnn_t1_out_output"]
    _, outs, _ = net.infer_shape(rnn_t0_data=(1, 3, 8, 6), rnn_t1_data=(1, 3, 8, 6),
                                 rnn_begin_state_0=(1, 4, 8, 6), rnn_begin_state_1=(1, 4, 8, 6))
    assert outs == [(1, 4, 8, 6), (1, 4, 8, 6)]
