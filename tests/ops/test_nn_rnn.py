"""The fused RNN op: MXNet's flat parameter layout, cell maths, stacking, directions, BPTT gradients."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _nn_gradcheck import check_grad, run_op  # noqa: E402

from ember import ops  # noqa: E402
from ember.base import OperatorError, ShapeError  # noqa: E402
from ember.ops.nn_rnn import _param_layout, param_size, params_fit, reserve_size  # noqa: E402

rng = np.random.default_rng(9)


def sig(x):
    return 1 / (1 + np.exp(-x))


def reference_single_layer(mode, x, flat, h0, c0):
    """One forward layer written out gate by gate from MXNet's documented layout."""
    t, n, i = x.shape
    h = h0.shape[-1]
    g = {"lstm": 4, "gru": 3}[mode]
    wx = flat[:g * h * i].reshape(g * h, i)
    wh = flat[g * h * i:g * h * (i + h)].reshape(g * h, h)
    bx = flat[g * h * (i + h):g * h * (i + h + 1)]
    bh = flat[g * h * (i + h + 1):]
    hs, hp, cp = [], h0[0], None if c0 is None else c0[0]
    for step in range(t):
        ax, ah = x[step] @ wx.T + bx, hp @ wh.T + bh
        if mode == "lstm":
            a = ax + ah
            ig, fg, gg, og = sig(a[:, :h]), sig(a[:, h:2 * h]), np.tanh(a[:, 2 * h:3 * h]), sig(a[:, 3 * h:])
            cp = fg * cp + ig * gg
            hp = og * np.tanh(cp)
        else:
            r, z = sig(ax[:, :h] + ah[:, :h]), sig(ax[:, h:2 * h] + ah[:, h:2 * h])
            nn = np.tanh(ax[:, 2 * h:] + r * ah[:, 2 * h:])
            hp = (1 - z) * nn + z * hp
        hs.append(hp)
    return np.stack(hs), hp, cp


def _inputs(mode, layers=1, bi=False, t=3, n=2, i=3, h=4):
    attrs = dict(mode=mode, state_size=h, num_layers=layers, bidirectional=bi, state_outputs=True)
    a = ops.get("RNN").parse_attrs(attrs)
    d = 2 if bi else 1
    ins = [rng.standard_normal((t, n, i)), rng.standard_normal(param_size(a, i)) * 0.5,
           rng.standard_normal((layers * d, n, h))]
    if mode == "lstm":
        ins.append(rng.standard_normal((layers * d, n, h)))
    return ins, attrs


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_single_layer_matches_gate_reference(mode):
    ins, attrs = _inputs(mode)
    outs = run_op("RNN", ins, attrs)
    ref = reference_single_layer(mode, ins[0], ins[1], ins[2], ins[3] if mode == "lstm" else None)
    np.testing.assert_allclose(outs[0], ref[0], rtol=1e-12)
    np.testing.assert_allclose(outs[1][0], ref[1], rtol=1e-12)
    if mode == "lstm":
        np.testing.assert_allclose(outs[2][0], ref[2], rtol=1e-12)


def test_reverse_direction_runs_backwards_in_time():
    ins, attrs = _inputs("gru", bi=True)
    out = run_op("RNN", ins, attrs)[0]
    a = ops.get("RNN").parse_attrs(attrs)
    n_w = param_size(ops.get("RNN").parse_attrs(dict(attrs, bidirectional=False)), 3)
    g, h, i = 3, 4, 3
    w = ins[1]
    nwx, nwh, nb = g * h * i, g * h * h, g * h
    # reassemble the backward direction's own single-direction parameter vector
    rev = np.concatenate([w[nwx + nwh:2 * (nwx + nwh)], w[2 * (nwx + nwh) + 2 * nb:]])
    assert rev.size == n_w and param_size(a, 3) == 2 * n_w
    ref = reference_single_layer("gru", ins[0][::-1], rev, ins[2][1:], None)[0][::-1]
    np.testing.assert_allclose(out[:, :, h:], ref, rtol=1e-12)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("layers,bi", [(1, False), (2, True)])
def test_gradients_bptt(mode, layers, bi):
    ins, attrs = _inputs(mode, layers, bi, t=3, n=2, i=2, h=2)
    check_grad("RNN", ins, attrs, rtol=1e-4, atol=1e-6)


def test_gradients_without_state_outputs_and_with_dropout():
    ins, attrs = _inputs("lstm", 2, False, t=2, n=2, i=2, h=2)
    attrs = dict(attrs, state_outputs=False, p=0.5)
    check_grad("RNN", ins, attrs, is_train=True, seed=4)
    out, mask, _reserve = run_op("RNN", ins, attrs, is_train=True, seed=4)
    assert mask.shape == (1, 2, 2, 2) and set(np.unique(mask)) <= {0.0, 2.0}
    out_eval, mask_eval, _reserve = run_op("RNN", ins, attrs, is_train=False)
    np.testing.assert_array_equal(mask_eval, 1)


def test_shapes_and_param_size():
    op = ops.get("RNN")
    a = op.parse_attrs({"mode": "lstm", "state_size": 8, "num_layers": 2, "bidirectional": True,
                        "state_outputs": True})
    ins, outs, _ = op.shapes(a, [(5, 3, 6), None, None, None])
    expected = 2 * (4 * 8 * (6 + 8) + 2 * 4 * 8) + 2 * (4 * 8 * (16 + 8) + 2 * 4 * 8)
    assert ins[1] == (expected,) and ins[2] == ins[3] == (4, 3, 8)
    assert outs[:3] == [(5, 3, 16), (4, 3, 8), (4, 3, 8)] and outs[3] == (reserve_size(a, 5, 3),)
    assert op.visible_outputs(a) == 3
    g = op.parse_attrs({"mode": "gru", "state_size": 8, "num_layers": 1})
    assert op.input_names(g) == ["data", "parameters", "state"] and op.visible_outputs(g) == 1


@pytest.mark.parametrize("attrs,shape,err,msg", [
    ({"mode": "lstm", "state_size": 4, "num_layers": 1}, (5, 3), ShapeError, "3-D"),
    ({"mode": "lstm", "state_size": 0, "num_layers": 1}, (5, 3, 2), OperatorError, "state_size"),
    ({"mode": "gru", "state_size": 4, "num_layers": 1, "projection_size": 2}, (5, 3, 2), OperatorError, "projection"),
    ({"mode": "lstm", "state_size": 4, "num_layers": 1, "projection_size": 4}, (5, 3, 2), OperatorError, "projection"),
    ({"mode": "gru", "state_size": 4, "num_layers": 1, "p": 1.0}, (5, 3, 2), OperatorError, "dropout"),
])
def test_errors(attrs, shape, err, msg):
    op = ops.get("RNN")
    a = op.parse_attrs(attrs)
    with pytest.raises(err, match=f"RNN.*{msg}"):
        op.shapes(a, [shape] + [None] * (len(op.input_names(a)) - 1))


def test_wrong_parameter_vector_length():
    op = ops.get("RNN")
    a = op.parse_attrs({"mode": "gru", "state_size": 4, "num_layers": 1})
    with pytest.raises(ShapeError, match="RNN: parameters"):
        op.shapes(a, [(5, 3, 2), (10,), None])


def test_lstm_state_clipping():
    ins, attrs = _inputs("lstm", 1, False, t=3, n=2, i=2, h=2)
    ins[1] = ins[1] * 4  # large weights: cell states leave [-0.3, 0.3]
    attrs = dict(attrs, lstm_state_clip_min=-0.3, lstm_state_clip_max=0.3)
    out, hy, cy, _reserve = run_op("RNN", ins, attrs)
    assert np.all(np.abs(cy) <= 0.3 + 1e-12)
    free = run_op("RNN", ins, dict(attrs, lstm_state_clip_min=None, lstm_state_clip_max=None))[2]
    assert np.abs(free).max() > 0.3  # the clip was active
    check_grad("RNN", ins, attrs)


def _projected_inputs(layers, bi, t=3, n=2, i=2, h=3, p=2):
    attrs = dict(mode="lstm", state_size=h, num_layers=layers, bidirectional=bi, state_outputs=True,
                 projection_size=p)
    a = ops.get("RNN").parse_attrs(attrs)
    d = 2 if bi else 1
    ins = [rng.standard_normal((t, n, i)), rng.standard_normal(param_size(a, i)) * 0.5,
           rng.standard_normal((layers * d, n, p)), rng.standard_normal((layers * d, n, h))]
    return ins, attrs


def test_projection_matches_lstmp_reference():
    """LSTMP: gates read the projected state r (P), the output is r = W_h2r (o * tanh(c))."""
    ins, attrs = _projected_inputs(1, False)
    x, flat, r0, c0 = ins
    h, p, i = 3, 2, 2
    sizes = [4 * h * i, 4 * h * p, p * h, 4 * h, 4 * h]
    wx, wh, wr, bx, bh = np.split(flat, np.cumsum(sizes)[:-1])
    wx, wh, wr = wx.reshape(4 * h, i), wh.reshape(4 * h, p), wr.reshape(p, h)
    r, c, outs = r0[0], c0[0], []
    for step in range(x.shape[0]):
        a = x[step] @ wx.T + bx + r @ wh.T + bh
        c = sig(a[:, h:2 * h]) * c + sig(a[:, :h]) * np.tanh(a[:, 2 * h:3 * h])
        r = (sig(a[:, 3 * h:]) * np.tanh(c)) @ wr.T
        outs.append(r)
    out, hy, cy, _reserve = run_op("RNN", ins, attrs)
    np.testing.assert_allclose(out, np.stack(outs), rtol=1e-12)
    np.testing.assert_allclose(hy[0], r, rtol=1e-12)
    np.testing.assert_allclose(cy[0], c, rtol=1e-12)


@pytest.mark.parametrize("layers,bi", [(1, False), (2, True)])
def test_projection_gradients(layers, bi):
    ins, attrs = _projected_inputs(layers, bi)
    assert ins[1].size == param_size(ops.get("RNN").parse_attrs(attrs), 2)
    check_grad("RNN", ins, attrs, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("mode", ["lstm", "gru"])
def test_sequence_length_equals_each_sequence_alone(mode):
    """Padded steps output 0, final states are the last valid step's, the reverse direction starts
    at each sequence's own end: as if every sequence ran alone, truncated."""
    ins, attrs = _inputs(mode, 2, True, t=4, n=3)
    lengths = np.array([2.0, 4.0, 1.0])
    attrs = dict(attrs, use_sequence_length=True)
    out = run_op("RNN", ins + [lengths], attrs)
    for b, ln in enumerate(lengths.astype(int)):
        alone = [ins[0][:ln, b:b + 1], ins[1]] + [s[:, b:b + 1] for s in ins[2:]]
        ref = run_op("RNN", alone, dict(attrs, use_sequence_length=False))
        np.testing.assert_allclose(out[0][:ln, b:b + 1], ref[0], rtol=1e-12)
        np.testing.assert_array_equal(out[0][ln:, b], 0)
        n_states = 2 if mode == "lstm" else 1  # the hidden reserve after them differs in length
        for got, want in zip(out[1:1 + n_states], ref[1:1 + n_states]):
            np.testing.assert_allclose(got[:, b:b + 1], want, rtol=1e-12)


def test_sequence_length_gradients():
    ins, attrs = _inputs("lstm", 1, True, t=3, n=2, i=2, h=2)
    attrs = dict(attrs, use_sequence_length=True)
    check_grad("RNN", ins + [np.array([2.0, 3.0])], attrs, rtol=1e-4, atol=1e-6, wrt=[0, 1, 2, 3])


def test_sequence_length_out_of_range():
    ins, attrs = _inputs("gru", t=3)
    with pytest.raises(OperatorError, match="RNN: sequence_length"):
        run_op("RNN", ins + [np.array([0.0, 3.0])], dict(attrs, use_sequence_length=True))


def _apart(ins, attrs, input_size):
    """ins with the flat vector cut into the network's parameter arrays (weights 2-D), and the attrs."""
    a = ops.get("RNN").parse_attrs(attrs)
    pieces, pos = [], 0
    for _, slot, (rows, cols) in _param_layout(a, input_size):
        pieces.append(ins[1][pos:pos + rows * cols].reshape((rows, cols) if slot < 3 else (cols,)))
        pos += rows * cols
    return [ins[0]] + pieces + ins[2:], dict(attrs, num_params=len(pieces)), pos


@pytest.mark.parametrize("mode,layers,bi", [("lstm", 2, True), ("gru", 1, False), ("rnn_relu", 2, False)])
def test_parameters_apart_equal_the_flat_vector(mode, layers, bi):
    ins, attrs = _inputs(mode, layers, bi)
    apart, apart_attrs, used = _apart(ins, attrs, 3)
    assert used == ins[1].size
    flat_outs = run_op("RNN", ins, attrs)
    for a, b in zip(run_op("_RNN_apart", apart, apart_attrs), flat_outs):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("mode,layers,bi", [("lstm", 2, True), ("gru", 1, False)])
def test_parameters_apart_gradients(mode, layers, bi):
    ins, attrs = _inputs(mode, layers, bi, t=3, n=2, i=2, h=2)
    apart, apart_attrs, _ = _apart(ins, attrs, 2)
    check_grad("_RNN_apart", apart, apart_attrs, rtol=1e-4, atol=1e-6)


def test_parameters_apart_projection_float16():
    ins, attrs = _inputs("lstm", 1, False, h=4)
    attrs = dict(attrs, projection_size=2)
    a = ops.get("RNN").parse_attrs(attrs)
    ins = [ins[0], rng.standard_normal(param_size(a, 3)) * 0.5, ins[2][:, :, :2], ins[3]]
    apart, apart_attrs, _ = _apart(ins, attrs, 3)
    half = [x.astype(np.float16) for x in ins]
    apart_half = [x.astype(np.float16) for x in apart]
    for x, y in zip(run_op("_RNN_apart", apart_half, apart_attrs), run_op("RNN", half, attrs)):
        np.testing.assert_array_equal(x, y)


def test_params_fit():
    a = ops.get("RNN").parse_attrs({"mode": "gru", "state_size": 4, "num_layers": 2, "bidirectional": True})
    sizes = [12 * 5, 12 * 4] * 2 + [12 * 8, 12 * 4] * 2 + [12] * 8   # input size 5
    assert params_fit(a, sizes)
    assert not params_fit(a, sizes[:-1])                              # one array short
    assert not params_fit(a, [12 * 6] + sizes[1:])                    # directions of different input sizes
    assert not params_fit(a, sizes[:2] + [12 * 4, 12 * 5] + sizes[4:])  # two arrays swapped
