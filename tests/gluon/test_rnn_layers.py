"""gluon.rnn's fused layers RNN, LSTM, GRU: MXNet 1.9.1's recorded runs (weights from MXNet's
save_parameters), parameter names/shapes/file keys, states in and out, layouts, deferred input size,
projection, sequence lengths, dropout, fused == unfused cells on the same weights, finite differences."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon
from rnn_fixtures import DATA, build, cases, replay

LAYERS = cases("layer")


def test_fixtures_present():
    assert {"lstm_2l_bi", "lstmp_2l_bi", "gru_2l", "rnn_tanh_2l_bi"} <= set(LAYERS)


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("case", LAYERS)
def test_against_mxnet(case, hybridize):
    replay(case, hybridize)


def test_parameter_names_shapes_and_file_keys():
    layer = gluon.rnn.LSTM(5, 2, bidirectional=True, projection_size=3, input_size=4, prefix="lstm_")
    names = list(layer.collect_params().keys())
    assert names[:5] == ["lstm_l0_i2h_weight", "lstm_l0_h2h_weight", "lstm_l0_i2h_bias", "lstm_l0_h2h_bias",
                         "lstm_l0_h2r_weight"]
    shapes = {n: p.shape for n, p in layer.collect_params().items()}
    assert shapes["lstm_l0_i2h_weight"] == (20, 4) and shapes["lstm_l0_h2h_weight"] == (20, 3)
    assert shapes["lstm_r1_i2h_weight"] == (20, 6) and shapes["lstm_r1_h2r_weight"] == (3, 5)
    keys = set(layer._collect_params_with_prefix())
    assert "_unfused.0.l_cell.i2h_weight" in keys and "_unfused.1.r_cell.h2r_weight" in keys
    single = gluon.rnn.GRU(3, input_size=2)
    assert set(single._collect_params_with_prefix()) == {"_unfused.0.i2h_weight", "_unfused.0.h2h_weight",
                                                         "_unfused.0.i2h_bias", "_unfused.0.h2h_bias"}


def test_save_load_roundtrip_and_mxnet_file(tmp_path):
    layer, d = build("gru_2l")
    path = str(tmp_path / "gru.params")
    layer.save_parameters(path)
    other = eval("gluon.rnn.GRU(4, 2, layout='NTC')")
    other.load_parameters(path)
    x = mx.nd.array(d["x"])
    np.testing.assert_allclose(other(x).asnumpy(), layer(x).asnumpy(), rtol=1e-6)
    loaded = mx.nd.load(path)
    assert "_unfused.1.h2h_weight" in loaded and loaded["_unfused.0.i2h_weight"].shape == (12, 3)


@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_fused_equals_unrolled_cells(mode, bidirectional):
    """_unfuse() stacks step cells over the layer's own parameters: same outputs and states."""
    make = {"lstm": lambda: gluon.rnn.LSTM(4, 2, bidirectional=bidirectional, input_size=3),
            "gru": lambda: gluon.rnn.GRU(4, 2, bidirectional=bidirectional, input_size=3),
            "rnn_tanh": lambda: gluon.rnn.RNN(4, 2, "tanh", bidirectional=bidirectional, input_size=3),
            "rnn_relu": lambda: gluon.rnn.RNN(4, 2, "relu", bidirectional=bidirectional, input_size=3)}[mode]
    layer = make()
    layer.initialize(mx.init.Uniform(0.5))
    x = mx.nd.random.normal(shape=(5, 2, 3))
    out, states = layer(x, layer.begin_state(2))
    stack = layer._unfuse()
    assert set(stack.collect_params().keys()) == set(layer.collect_params().keys())
    outputs, cell_states = stack.unroll(5, x, layout="TNC", merge_outputs=True)
    np.testing.assert_allclose(outputs.asnumpy(), out.asnumpy(), rtol=1e-5, atol=1e-6)
    # the stack's states are per cell (layer, direction): [h(, c)] each; the layer's are stacked
    per_cell = 2 if mode == "lstm" else 1
    for k in range(len(cell_states) // per_cell):
        for j in range(per_cell):
            np.testing.assert_allclose(cell_states[k * per_cell + j].asnumpy(), states[j][k].asnumpy(),
                                       rtol=1e-5, atol=1e-6)


def test_states_optional_and_layouts():
    layer = gluon.rnn.LSTM(3, 2, layout="NTC", input_size=2)
    layer.initialize()
    x = mx.nd.random.normal(shape=(4, 5, 2))
    out = layer(x)
    assert isinstance(out, mx.nd.NDArray) and out.shape == (4, 5, 3)
    out2, states = layer(x, layer.begin_state(4))
    np.testing.assert_allclose(out2.asnumpy(), out.asnumpy(), rtol=1e-6)
    assert [s.shape for s in states] == [(2, 4, 3), (2, 4, 3)]
    tnc = gluon.rnn.LSTM(3, 2, input_size=2, params=layer.collect_params(), prefix=layer.prefix)
    np.testing.assert_allclose(tnc(x.swapaxes(0, 1)).asnumpy(), out.swapaxes(0, 1).asnumpy(), rtol=1e-6)
    gru = gluon.rnn.GRU(3)
    gru.initialize()
    single = gru(mx.nd.ones((2, 1, 4)), mx.nd.zeros((1, 1, 3)))   # one state may be passed bare
    assert single[0].shape == (2, 1, 3) and single[1][0].shape == (1, 1, 3)


def test_begin_state_names_and_kwargs():
    layer = gluon.rnn.LSTM(3, 2, bidirectional=True, projection_size=2, prefix="m_")
    syms = layer.begin_state(0, func=mx.sym.var)
    assert [s.name for s in syms] == ["m_h0_0", "m_h0_1"]
    ones = layer.begin_state(5, func=mx.nd.ones, dtype="float64")
    assert [s.shape for s in ones] == [(4, 5, 2), (4, 5, 3)] and ones[0].dtype == np.float64


def test_deferred_input_size_and_nesting():
    layer = gluon.rnn.GRU(4, 2, bidirectional=True)
    assert layer.l0_i2h_weight.shape == (12, 0)
    assert repr(layer) == "GRU(None -> 4, TNC, num_layers=2, bidirectional)"
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.rnn.LSTM(4, 2, bidirectional=True))
        net.add(gluon.nn.Dense(3, flatten=False))
    net.initialize()
    net.hybridize()
    assert net(mx.nd.ones((3, 2, 7))).shape == (3, 2, 3)
    lstm = net[0]
    assert lstm.l0_i2h_weight.shape == (16, 7) and lstm.r0_i2h_weight.shape == (16, 7)
    assert lstm.l1_i2h_weight.shape == (16, 8)


def test_wrong_state_shape_and_layout():
    layer = gluon.rnn.RNN(3, input_size=2)
    layer.initialize()
    with pytest.raises(ValueError, match="Invalid recurrent state shape"):
        layer(mx.nd.ones((4, 2, 2)), mx.nd.zeros((1, 3, 3)))
    with pytest.raises(AssertionError, match="Invalid layout"):
        gluon.rnn.LSTM(3, layout="NCT")


def test_sequence_length_masks_padding():
    """use_sequence_length: each sequence as if run alone; padded steps output 0 (cuDNN semantics)."""
    layer = gluon.rnn.LSTM(3, 2, bidirectional=True, input_size=2, use_sequence_length=True)
    layer.initialize(mx.init.Uniform(0.5))
    plain = gluon.rnn.LSTM(3, 2, bidirectional=True, input_size=2, params=layer.collect_params(),
                           prefix=layer.prefix)
    x = mx.nd.random.normal(shape=(5, 3, 2))
    lengths = [5, 2, 3]
    out, states = layer(x, layer.begin_state(3), mx.nd.array(lengths))
    for b, n in enumerate(lengths):
        ref, ref_states = plain(x[:n, b:b + 1], plain.begin_state(1))
        np.testing.assert_allclose(out[:n, b:b + 1].asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)
        assert np.all(out[n:, b].asnumpy() == 0)
        for s, r in zip(states, ref_states):
            np.testing.assert_allclose(s[:, b:b + 1].asnumpy(), r.asnumpy(), rtol=1e-5, atol=1e-6)
    layer.hybridize()
    out_h, _ = layer(x, layer.begin_state(3), mx.nd.array(lengths))
    np.testing.assert_allclose(out_h.asnumpy(), out.asnumpy(), rtol=1e-6)


def test_dropout_between_layers_only_in_training():
    layer = gluon.rnn.GRU(8, 3, dropout=0.5, input_size=4)
    layer.initialize()
    x = mx.nd.random.normal(shape=(3, 2, 4))
    a, b = layer(x).asnumpy(), layer(x).asnumpy()
    np.testing.assert_array_equal(a, b)
    with autograd.record():
        t1 = layer(x)
        t2 = layer(x)
    assert not np.allclose(t1.asnumpy(), a) and not np.allclose(t1.asnumpy(), t2.asnumpy())
    assert repr(layer) == "GRU(4 -> 8, TNC, num_layers=3, dropout=0.5)"


def _loss(layer, x, states, heads):
    out, new_states = layer(x, states)
    return sum(float((a * h).sum().asscalar()) for a, h in zip([out] + list(new_states), heads))


@pytest.mark.parametrize("make", [
    lambda: gluon.rnn.LSTM(3, 2, bidirectional=True, projection_size=2, input_size=2),
    lambda: gluon.rnn.GRU(2, 2, layout="NTC", input_size=2),
    lambda: gluon.rnn.RNN(2, 1, "tanh", bidirectional=True, input_size=2),
], ids=["lstmp_bi", "gru_ntc", "rnn_bi"])
def test_gradients_by_finite_differences(make):
    """Hybridized layer's gradients (input, states, parameters) against central differences in float64."""
    layer = make()
    layer.cast("float64")
    layer.initialize(mx.init.Uniform(0.5))
    layer.hybridize()
    rng = np.random.default_rng(3)
    x = mx.nd.array(rng.standard_normal((3, 2, 2)), dtype="float64")
    states = [mx.nd.array(rng.standard_normal(s.shape) * 0.5, dtype="float64")
              for s in layer.begin_state(x.shape[layer._layout.find("N")], dtype="float64")]
    out, new_states = layer(x, states)
    heads = [mx.nd.array(rng.standard_normal(a.shape), dtype="float64") for a in [out] + list(new_states)]
    x.attach_grad()
    for s in states:
        s.attach_grad()
    with autograd.record():
        out, new_states = layer(x, states)
        loss = sum((a * h).sum() for a, h in zip([out] + list(new_states), heads))
    loss.backward()
    eps = 1e-6
    targets = [("x", x, x.grad)] + [(f"state{i}", s, s.grad) for i, s in enumerate(states)] + \
        [(n, p.data(), p.grad()) for n, p in layer.collect_params().items()]
    for name, arr, grad in targets:
        flat = arr.asnumpy().reshape(-1)
        num = np.zeros_like(flat)
        for i in range(flat.size):
            for sign in (1, -1):
                moved = flat.copy()
                moved[i] += sign * eps
                arr[:] = moved.reshape(arr.shape)
                num[i] += sign * _loss(layer, x, states, heads) / (2 * eps)
            arr[:] = flat.reshape(arr.shape)
        np.testing.assert_allclose(grad.asnumpy().reshape(-1), num, rtol=1e-4, atol=1e-7, err_msg=name)


def test_mxnet_exported_lstm_network_imports():
    """A hybridized LSTM + Dense network exported by MXNet 1.9.1 (_rnn_param_concat + RNN in its JSON)
    loads with SymbolBlock.imports, gives MXNet's output and trains."""
    prefix = os.path.join(DATA, "export-lstm")
    io = np.load(prefix + "-io.npz")
    net = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    x = mx.nd.array(io["x"])
    np.testing.assert_allclose(net(x).asnumpy(), io["out"], rtol=1e-5, atol=1e-6)
    with autograd.record():
        loss = net(x).sum()
    loss.backward()
    assert all(np.isfinite(p.grad().asnumpy()).all() for p in net.collect_params().values())


MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")


@pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="MXNet 1.9.1 venv not installed")
def test_ember_exported_lstm_network_runs_in_mxnet(tmp_path):
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.rnn.GRU(4, 2, bidirectional=True, layout="NTC"))
        net.add(gluon.nn.Dense(3, flatten=False))
    net.initialize(mx.init.Uniform(0.5))
    net.hybridize()
    x = np.random.default_rng(1).standard_normal((2, 5, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "out.npy", net(mx.nd.array(x)).asnumpy())
    net.export(str(tmp_path / "m"))
    code = ("import sys, warnings, numpy as np, mxnet as mx\nwarnings.simplefilter('ignore')\nd = sys.argv[1]\n"
            "b = mx.gluon.SymbolBlock.imports(d + '/m-symbol.json', ['data'], d + '/m-0000.params')\n"
            "print(float(np.abs(b(mx.nd.array(np.load(d + '/x.npy'))).asnumpy() - np.load(d + '/out.npy')).max()))")
    res = subprocess.run([MXNET_PYTHON, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert float(res.stdout.strip().splitlines()[-1]) < 1e-5


@pytest.mark.parametrize("make", [
    lambda: gluon.rnn.LSTM(5, 2, bidirectional=True, input_size=3),
    lambda: gluon.rnn.GRU(4, 1, input_size=3),
], ids=["lstm_2l_bi", "gru"])
def test_imperative_call_takes_the_parameters_apart(make):
    """Imperatively a layer hands its parameters to _RNN_apart as they are (no vector is built); outputs
    and gradients are the same bits as the hybridized layer's, whose graph keeps MXNet's concat + RNN."""
    results = {}
    for hybridize in (False, True):
        mx.random.seed(0)
        layer = make()
        layer.initialize(mx.init.Uniform(0.5))
        if hybridize:
            layer.hybridize()
        x = mx.nd.array(np.random.default_rng(1).standard_normal((4, 2, 3)))
        with autograd.record():
            out = layer(x)
            loss = (out * out).sum()
        loss.backward()
        if not hybridize:
            ops = {n["op"] for n in __import__("json").loads(autograd.get_symbol(out).tojson())["nodes"]}
            assert "_RNN_apart" in ops and "_rnn_param_concat" not in ops, ops
        results[hybridize] = [out.asnumpy()] + [p.grad().asnumpy() for p in layer.collect_params().values()]
    for a, b in zip(results[False], results[True]):
        np.testing.assert_array_equal(a, b)
