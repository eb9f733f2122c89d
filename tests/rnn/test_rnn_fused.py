"""FusedRNNCell: the RNN operator against its unfused equivalent, and weight packing."""
import warnings

import numpy as np
import pytest

import ember as mx
from rnn_reference import run

N, T, I, H = 2, 5, 4, 3


def _fused_graph(cell, layout):
    begin = cell.begin_state(func=mx.sym.Variable)
    outputs, states = cell.unroll(T, mx.sym.Variable("data"), begin_state=begin, layout=layout, merge_outputs=True)
    return mx.sym.Group([outputs] + list(states)), [s.name for s in begin]


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_fused_equals_unfused(mode, bidirectional):
    rng = np.random.RandomState(7)
    layers, dirs = 2, (2 if bidirectional else 1)
    fused = mx.rnn.FusedRNNCell(H, num_layers=layers, mode=mode, bidirectional=bidirectional,
                                get_next_state=True, prefix="f_")
    net, state_names = _fused_graph(fused, "TNC")
    state_shape = (layers * dirs, N, H)
    shapes = dict(data=(T, N, I), **{n: state_shape for n in state_names})
    arg_shapes, _, _ = net.infer_shape(**shapes)
    values = {n: rng.uniform(-0.5, 0.5, s).astype(np.float32) for n, s in zip(net.list_arguments(), arg_shapes)}
    got = run(net, values)

    # the same weights, unpacked, in the step cells `unfuse` builds
    stack = fused.unfuse()
    weights = stack.pack_weights(fused.unpack_weights({"f_parameters": mx.nd.array(values["f_parameters"])}))
    begin = stack.begin_state(func=mx.sym.Variable)
    outputs, states = stack.unroll(T, mx.sym.Variable("data"), begin_state=begin, layout="TNC", merge_outputs=True)
    unfused = mx.sym.Group([outputs] + list(_flatten(states)))
    feed = {k: v.asnumpy() for k, v in weights.items()}
    feed["data"] = values["data"]
    # the fused states are (layer * direction, N, H); the step cells take one (N, H) slice each
    per_cell = [s.name for s in begin]
    n_state = 2 if mode == "lstm" else 1
    for j, name in enumerate(per_cell):
        cell_index, which = divmod(j, n_state)
        feed[name] = values[state_names[which]][cell_index]
    expected = run(unfused, {k: feed[k] for k in unfused.list_arguments()})
    np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)
    # final states: fused hy/cy stack the per-cell states in layer-major, direction-minor order
    ends = expected[1:]
    for which in range(n_state):
        stacked = np.stack([ends[c * n_state + which] for c in range(layers * dirs)])
        np.testing.assert_allclose(got[1 + which], stacked, rtol=1e-5, atol=1e-6)


def _flatten(states):
    for s in states:
        if isinstance(s, (list, tuple)):
            yield from _flatten(s)
        else:
            yield s


def test_ntc_layout_equals_tnc():
    rng = np.random.RandomState(8)
    cell = mx.rnn.FusedRNNCell(H, mode="gru", prefix="g_")
    tnc, names = _fused_graph(cell, "TNC")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ntc, _ = _fused_graph(cell, "NTC")
    assert any("TNC" in str(w.message) for w in caught)
    x = rng.rand(T, N, I).astype(np.float32)
    arg_shapes, _, _ = tnc.infer_shape(data=(T, N, I), g_begin_state_0=(1, N, H))
    values = {n: rng.uniform(-0.5, 0.5, s).astype(np.float32) for n, s in zip(tnc.list_arguments(), arg_shapes)}
    values["data"] = x
    a = run(tnc, values)[0]
    values["data"] = x.transpose(1, 0, 2)
    b = run(ntc, values)[0]
    np.testing.assert_allclose(b, a.transpose(1, 0, 2), rtol=1e-6)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh"])
def test_pack_unpack_round_trip(mode):
    cell = mx.rnn.FusedRNNCell(H, num_layers=2, mode=mode, bidirectional=True, prefix="p_")
    gates = {"lstm": 4, "gru": 3, "rnn_tanh": 1}[mode]
    size = 2 * gates * H * ((I + H + 2) + (2 * H + H + 2))
    packed = mx.nd.array(np.arange(size, dtype=np.float32))
    unpacked = cell.unpack_weights({"p_parameters": packed, "other": mx.nd.ones((1,))})
    assert "p_parameters" not in unpacked and "other" in unpacked
    assert unpacked[f"p_l0_i2h{cell._gate_names[0]}_weight"].shape == (H, I)
    assert unpacked[f"p_r1_i2h{cell._gate_names[0]}_weight"].shape == (H, 2 * H)
    assert unpacked[f"p_l1_h2h{cell._gate_names[-1]}_bias"].shape == (H,)
    assert len(unpacked) == 1 + 2 * 2 * gates * 4
    # the first weight comes first in the packed vector, biases last
    np.testing.assert_array_equal(unpacked[f"p_l0_i2h{cell._gate_names[0]}_weight"].asnumpy().ravel(),
                                  np.arange(H * I))
    np.testing.assert_array_equal(unpacked[f"p_r1_h2h{cell._gate_names[-1]}_bias"].asnumpy(),
                                  np.arange(size - H, size))
    repacked = cell.pack_weights(unpacked)
    np.testing.assert_array_equal(repacked["p_parameters"].asnumpy(), packed.asnumpy())


def test_step_cell_pack_unpack_round_trip():
    cell = mx.rnn.LSTMCell(H, prefix="s_")
    args = {"s_i2h_weight": mx.nd.array(np.random.rand(4 * H, I)), "s_i2h_bias": mx.nd.array(np.random.rand(4 * H)),
            "s_h2h_weight": mx.nd.array(np.random.rand(4 * H, H)), "s_h2h_bias": mx.nd.array(np.random.rand(4 * H))}
    unpacked = cell.unpack_weights(args)
    assert sorted(unpacked) == sorted(f"s_{g}{gate}_{kind}" for g in ("i2h", "h2h") for gate in ("_i", "_f", "_c", "_o")
                                      for kind in ("weight", "bias"))
    np.testing.assert_array_equal(unpacked["s_i2h_f_weight"].asnumpy(), args["s_i2h_weight"].asnumpy()[H:2 * H])
    packed = cell.pack_weights(unpacked)
    for k, v in args.items():
        np.testing.assert_array_equal(packed[k].asnumpy(), v.asnumpy())
    rnn = mx.rnn.RNNCell(H, prefix="e_")
    assert sorted(rnn.unpack_weights({"e_i2h_weight": mx.nd.ones((H, I)), "e_i2h_bias": mx.nd.ones((H,)),
                                      "e_h2h_weight": mx.nd.ones((H, H)), "e_h2h_bias": mx.nd.ones((H,))})) == \
        ["e_h2h_bias", "e_h2h_weight", "e_i2h_bias", "e_i2h_weight"]  # one gate: names unchanged


def test_fused_rnn_initializer_sets_forget_bias_and_weights():
    cell = mx.rnn.FusedRNNCell(H, num_layers=1, mode="lstm", forget_bias=2.5, prefix="")
    net, _ = _fused_graph(cell, "TNC")
    attrs = net.attr_dict()["parameters"]
    size = 4 * H * (I + H + 2)
    arr = mx.nd.zeros((size,))
    mx.init.Uniform(0.1)(mx.init.InitDesc("parameters", attrs), arr)
    parts = cell.unpack_weights({"parameters": arr})
    # as MXNet's FusedRNN initializer: every forget-gate bias, i2h and h2h, gets forget_bias
    np.testing.assert_array_equal(parts["l0_i2h_f_bias"].asnumpy(), np.full(H, 2.5))
    np.testing.assert_array_equal(parts["l0_h2h_f_bias"].asnumpy(), np.full(H, 2.5))
    for name in ("l0_i2h_i_bias", "l0_h2h_c_bias", "l0_h2h_o_bias"):
        np.testing.assert_array_equal(parts[name].asnumpy(), np.zeros(H))
    w = parts["l0_i2h_c_weight"].asnumpy()
    assert np.abs(w).max() <= 0.1 and np.abs(w).max() > 0


def test_fused_cell_cannot_step_and_checks_mode():
    cell = mx.rnn.FusedRNNCell(H)
    assert cell._prefix == "lstm_"
    with pytest.raises(NotImplementedError, match="unroll"):
        cell(mx.sym.Variable("x"), [])
    with pytest.raises(ValueError, match="mode"):
        mx.rnn.FusedRNNCell(H, mode="lstmp")
    with pytest.raises(ValueError, match="size"):
        cell.unpack_weights({"lstm_parameters": mx.nd.ones((7,))})


def test_unfuse_names_and_dropout_layers():
    cell = mx.rnn.FusedRNNCell(H, num_layers=3, mode="lstm", prefix="test_", bidirectional=True, dropout=0.5)
    stack = cell.unfuse()
    kinds = [type(c).__name__ for c in stack._cells]
    assert kinds == ["BidirectionalCell", "DropoutCell", "BidirectionalCell", "DropoutCell", "BidirectionalCell"]
    begin = stack.begin_state(func=mx.sym.Variable)
    outputs, _ = stack.unroll(3, [mx.sym.Variable(f"t{i}") for i in range(3)], begin_state=begin)
    assert mx.sym.Group(outputs).list_outputs() == ["test_bi_l2_t0_output", "test_bi_l2_t1_output",
                                                    "test_bi_l2_t2_output"]
