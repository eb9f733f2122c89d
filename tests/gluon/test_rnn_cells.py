"""gluon.rnn cells and unroll: MXNet 1.9.1's recorded runs (weights from MXNet's save_parameters),
step-by-step calls, layouts and merge_outputs, valid_length, containers and modifiers, symbols,
hybridization, dropout/zoneout/variational dropout masks, finite-difference gradients."""
from __future__ import annotations

import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon
from rnn_fixtures import cases, replay

CELLS = cases("cell")


def test_fixtures_present():
    assert {"lstm_cell", "bidirectional_cell", "stack_cells", "lstm_cell_valid_length"} <= set(CELLS)


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("case", CELLS)
def test_against_mxnet(case, hybridize):
    replay(case, hybridize)


def _lstm(prefix="lstm_"):
    cell = gluon.rnn.LSTMCell(4, input_size=3, prefix=prefix)
    cell.initialize(mx.init.Uniform(0.5))
    return cell


def test_names_repr_and_state_info():
    cell = gluon.rnn.GRUCell(5, prefix="g_")
    assert list(cell.collect_params().keys()) == ["g_i2h_weight", "g_h2h_weight", "g_i2h_bias", "g_h2h_bias"]
    assert cell.i2h_weight.shape == (15, 0) and repr(cell) == "GRUCell(None -> 15)"
    assert cell.state_info(2) == [{"shape": (2, 5), "__layout__": "NC"}]
    assert [s.name for s in cell.begin_state(func=mx.sym.var)] == ["g_begin_state_0"]
    assert repr(gluon.rnn.RNNCell(3, "relu", input_size=2)) == "RNNCell(2 -> 3, relu)"
    assert repr(gluon.rnn.DropoutCell(0.3)) == "DropoutCell(rate=0.3, axes=())"
    assert gluon.rnn.ZoneoutCell(gluon.rnn.LSTMCell(2, prefix="z_")).prefix == "z_zoneout"
    assert gluon.rnn.ResidualCell(gluon.rnn.LSTMCell(2, prefix="r_")).prefix == "r_residualcell"


def test_step_calls_equal_unroll_in_every_form():
    cell = _lstm()
    x = mx.nd.random.normal(shape=(2, 4, 3))   # NTC
    states = cell.begin_state(batch_size=2)
    outs = []
    for t in range(4):
        o, states = cell(x[:, t], states)
        outs.append(o.asnumpy())
    merged, final = cell.unroll(4, x, layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(merged.asnumpy(), np.stack(outs, axis=1), rtol=1e-6)
    np.testing.assert_allclose(final[0].asnumpy(), states[0].asnumpy(), rtol=1e-6)
    listed, _ = cell.unroll(4, [x[:, t] for t in range(4)], layout="NTC", merge_outputs=False)
    assert isinstance(listed, list) and len(listed) == 4
    np.testing.assert_allclose(listed[2].asnumpy(), outs[2], rtol=1e-6)
    tnc, _ = cell.unroll(4, x.swapaxes(0, 1), layout="TNC", merge_outputs=True)
    np.testing.assert_allclose(tnc.asnumpy(), np.stack(outs, axis=0), rtol=1e-6)
    cell.hybridize()
    hyb, _ = cell.unroll(4, x, layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(hyb.asnumpy(), merged.asnumpy(), rtol=1e-6)


def test_symbolic_unroll_binds_and_matches():
    cell = _lstm("s_")
    data = mx.sym.var("data")
    outputs, states = cell.unroll(3, data, layout="NTC", merge_outputs=True)
    assert set(outputs.list_arguments()) >= {"data", "s_i2h_weight", "s_h2h_bias"}
    x = mx.nd.random.normal(shape=(2, 3, 3))
    args = {"data": x}
    args.update({n: p.data() for n, p in cell.collect_params().items()})
    got = outputs.bind(mx.cpu(), args).forward()[0]
    want, _ = cell.unroll(3, x, layout="NTC", merge_outputs=True)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)


def test_valid_length_equals_each_sequence_alone_for_containers():
    stack = gluon.rnn.SequentialRNNCell()
    with stack.name_scope():
        stack.add(gluon.rnn.BidirectionalCell(gluon.rnn.GRUCell(3, input_size=2), gluon.rnn.GRUCell(3, input_size=2)))
        stack.add(gluon.rnn.ResidualCell(gluon.rnn.RNNCell(6, input_size=6)))
    stack.initialize(mx.init.Uniform(0.5))
    x = mx.nd.random.normal(shape=(3, 5, 2))
    lengths = [5, 2, 4]
    outs, states = stack.unroll(5, x, layout="NTC", merge_outputs=True, valid_length=mx.nd.array(lengths))
    for b, n in enumerate(lengths):
        ref, ref_states = stack.unroll(n, x[b:b + 1, :n], layout="NTC", merge_outputs=True)
        np.testing.assert_allclose(outs[b:b + 1, :n].asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)
        assert np.all(outs[b, n:].asnumpy() == 0)
        for s, r in zip(states, ref_states):
            np.testing.assert_allclose(s[b:b + 1].asnumpy(), r.asnumpy(), rtol=1e-5, atol=1e-6)


def test_hybrid_sequential_and_modifiers_hybridize():
    stack = gluon.rnn.HybridSequentialRNNCell()
    with stack.name_scope():
        stack.add(gluon.rnn.LSTMCell(4, input_size=3))
        stack.add(gluon.rnn.DropoutCell(0.0))
        stack.add(gluon.rnn.ZoneoutCell(gluon.rnn.GRUCell(4, input_size=4), 0.0, 0.0))
    stack.initialize(mx.init.Uniform(0.5))
    assert len(stack) == 3 and isinstance(stack[0], gluon.rnn.LSTMCell)
    x = mx.nd.random.normal(shape=(2, 3, 3))
    want, _ = stack.unroll(3, x, merge_outputs=True)
    stack.hybridize()
    got, got_states = stack.unroll(3, x, merge_outputs=True)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-6)
    assert [s.shape for s in got_states] == [(2, 4), (2, 4), (2, 4)]


def test_modifier_and_bidirectional_errors():
    base = gluon.rnn.LSTMCell(3)
    gluon.rnn.ZoneoutCell(base, 0.5)
    with pytest.raises(AssertionError, match="already modified"):
        gluon.rnn.ResidualCell(base)
    with pytest.raises(AssertionError, match="modifier"):
        base.begin_state()
    bi = gluon.rnn.BidirectionalCell(gluon.rnn.LSTMCell(2), gluon.rnn.LSTMCell(2))
    with pytest.raises(NotImplementedError, match="unroll"):
        bi(mx.nd.ones((1, 2)), bi.begin_state(batch_size=1))
    with pytest.raises(AssertionError, match="zoneout"):
        gluon.rnn.ZoneoutCell(bi)
    with pytest.raises(AssertionError, match="rate must be a number"):
        gluon.rnn.DropoutCell("0.5")


def test_dropout_and_zoneout_only_while_training():
    x = mx.nd.ones((4, 5, 6))
    drop = gluon.rnn.DropoutCell(0.5)
    out, _ = drop.unroll(5, x, merge_outputs=True)
    np.testing.assert_array_equal(out.asnumpy(), x.asnumpy())
    with autograd.record():
        out, _ = drop.unroll(5, x, merge_outputs=True)
    assert set(np.unique(out.asnumpy())) <= {0.0, 2.0} and (out.asnumpy() == 0).any()
    cell = gluon.rnn.ZoneoutCell(gluon.rnn.RNNCell(50, input_size=6), zoneout_outputs=0.5, zoneout_states=0.5)
    cell.initialize()
    plain, _ = cell.unroll(5, x, merge_outputs=True)
    with autograd.record():
        zoned, _ = cell.unroll(5, x, merge_outputs=True)
    first = zoned[:, 0].asnumpy()   # zoned units keep the previous output: zeros at the first step
    assert (first == 0).any() and not np.allclose(zoned.asnumpy(), plain.asnumpy())


def test_variational_dropout_shares_one_mask_over_time():
    base = gluon.rnn.RNNCell(20, input_size=10)
    cell = gluon.contrib.rnn.VariationalDropoutCell(base, drop_inputs=0.5, drop_outputs=0.5)
    cell.initialize()
    x = mx.nd.ones((2, 6, 10))
    with autograd.record():
        out, _ = cell.unroll(6, x, merge_outputs=True)
    dropped = out.asnumpy() == 0
    assert dropped.any() and (dropped == dropped[:, :1]).all()   # the same units at every step
    stepped = gluon.contrib.rnn.VariationalDropoutCell(gluon.rnn.GRUCell(20, input_size=10), drop_states=0.5,
                                                       drop_outputs=0.5)
    stepped.initialize()
    with autograd.record():
        out, _ = stepped.unroll(6, x, merge_outputs=True)
    dropped = out.asnumpy() == 0
    assert dropped.any() and (dropped == dropped[:, :1]).all()
    assert repr(stepped) == "VariationalDropoutCell(p_out = 0.5, p_state = 0.5)"
    plain, _ = stepped.unroll(6, x, merge_outputs=True)
    assert not (plain.asnumpy() == 0).any()


@pytest.mark.parametrize("make", [
    lambda: gluon.rnn.LSTMCell(3, input_size=2),
    lambda: gluon.rnn.GRUCell(3, input_size=2),
    lambda: gluon.rnn.RNNCell(3, "relu", input_size=2),
    lambda: gluon.contrib.rnn.LSTMPCell(4, 2, input_size=2),
    lambda: gluon.rnn.BidirectionalCell(gluon.rnn.LSTMCell(2, input_size=2), gluon.rnn.GRUCell(2, input_size=2)),
], ids=["lstm", "gru", "rnn_relu", "lstmp", "bidirectional"])
def test_unroll_gradients_by_finite_differences(make):
    cell = make()
    cell.cast("float64")
    cell.initialize(mx.init.Uniform(0.5))
    cell.hybridize()
    rng = np.random.default_rng(5)
    x = mx.nd.array(rng.standard_normal((2, 3, 2)), dtype="float64")
    lengths = mx.nd.array([3, 2], dtype="float64")

    begin = cell.begin_state(batch_size=2, func=mx.nd.zeros, dtype="float64")

    def loss():
        out, _ = cell.unroll(3, x, begin_state=begin, layout="NTC", merge_outputs=True, valid_length=lengths)
        return out

    out = loss()
    head = mx.nd.array(rng.standard_normal(out.shape), dtype="float64")
    x.attach_grad()
    with autograd.record():
        total = (loss() * head).sum()
    total.backward()
    eps = 1e-6
    targets = [("x", x, x.grad)] + [(n, p.data(), p.grad()) for n, p in cell.collect_params().items()]
    for name, arr, grad in targets:
        flat = arr.asnumpy().reshape(-1)
        num = np.zeros_like(flat)
        for i in range(flat.size):
            for sign in (1, -1):
                moved = flat.copy()
                moved[i] += sign * eps
                arr[:] = moved.reshape(arr.shape)
                num[i] += sign * float((loss() * head).sum().asscalar()) / (2 * eps)
            arr[:] = flat.reshape(arr.shape)
        np.testing.assert_allclose(grad.asnumpy().reshape(-1), num, rtol=1e-4, atol=1e-7, err_msg=name)


def test_conv_cells_shapes_and_errors():
    cell = gluon.contrib.rnn.Conv2DGRUCell((3, 8, 6), 4, (3, 3), 5, i2h_pad=1, h2h_dilate=2, prefix="cg_")
    assert repr(cell) == "Conv2DGRUCell(3 -> 12, tanh, NCHW)"
    assert cell.i2h_weight.shape == (12, 3, 3, 3) and cell.h2h_weight.shape == (12, 4, 5, 5)
    assert cell.state_info(2) == [{"shape": (2, 4, 8, 6), "__layout__": "NCHW"}]
    lstm = gluon.contrib.rnn.Conv1DLSTMCell((2, 7), 3, 3, 3)
    assert lstm.prefix.startswith("conv_lstm") and [i["shape"] for i in lstm.state_info(1)] == [(1, 3, 5)] * 2
    with pytest.raises(AssertionError, match="odd"):
        gluon.contrib.rnn.Conv1DRNNCell((2, 7), 3, 3, 2)
    with pytest.raises(AssertionError, match="2D convolution"):
        gluon.contrib.rnn.Conv2DRNNCell((2, 7, 7), 3, (3, 3, 3), 3)
