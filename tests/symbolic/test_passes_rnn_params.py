"""The rnn_params_apart pass: a Gluon RNN layer's `_rnn_param_concat` + RNN compiled as one
`_RNN_apart` node reading each parameter array, checked bit for bit against the same graph compiled
without the pass (EMBER_RNN_PARAMS_APART=0): outputs, final states and every gradient."""
import numpy as np
import pytest

import ember as mx
from ember import gluon

LAYERS = {
    "lstm_2_bidir": lambda: gluon.rnn.LSTM(6, 2, bidirectional=True, input_size=5),
    "gru_1": lambda: gluon.rnn.GRU(7, 1, input_size=5),
    "rnn_tanh_2": lambda: gluon.rnn.RNN(4, 2, activation="tanh", input_size=5),
    "lstm_projection": lambda: gluon.rnn.LSTM(8, 2, projection_size=3, input_size=5),
    "lstm_dropout": lambda: gluon.rnn.LSTM(6, 3, dropout=0.3, input_size=5),
    "lstm_sequence_length": lambda: gluon.rnn.LSTM(6, 1, input_size=5, use_sequence_length=True),
}


def _bind(name, apart, monkeypatch, grad_req="write"):
    monkeypatch.setenv("EMBER_RNN_PARAMS_APART", "1" if apart else "0")
    mx.random.seed(0)
    layer = LAYERS[name]()
    layer.initialize(mx.init.Uniform(0.5))
    data = mx.sym.var("data")
    if name == "lstm_sequence_length":
        out = layer(data, layer.begin_state(4, func=mx.sym.zeros), mx.sym.var("sequence_length"))
    else:
        out = layer(data, layer.begin_state(4, func=mx.sym.zeros))
    sym = mx.sym.Group([out[0]] + list(out[1]))
    rng = np.random.RandomState(1)
    shapes = {"data": (7, 4, 5)}
    if name == "lstm_sequence_length":
        shapes["sequence_length"] = (4,)
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    args = {}
    for n, s in zip(sym.list_arguments(), arg_shapes):
        if n == "sequence_length":
            args[n] = mx.nd.array([7, 3, 5, 1])
        elif n in layer.collect_params():
            args[n] = layer.collect_params()[n].data().copy()
        else:
            args[n] = mx.nd.array(rng.standard_normal(s).astype(np.float32))
    reqs = {n: ("null" if n == "sequence_length" else grad_req) for n in args}
    grads = {n: mx.nd.array(rng.standard_normal(a.shape).astype(np.float32)) for n, a in args.items()}
    return sym.bind(mx.cpu(), args, args_grad=grads, grad_req=reqs), args, grads


def _run(name, apart, monkeypatch, grad_req="write"):
    ex, args, grads = _bind(name, apart, monkeypatch, grad_req)
    mx.random.seed(3)
    outs = ex.forward(is_train=True)
    rng = np.random.RandomState(2)
    ex.backward([mx.nd.array(rng.standard_normal(o.shape).astype(np.float32)) for o in outs])
    # by role: the layer's prefix (lstm0_, lstm1_, ...) differs from one build to the next
    return ex, [o.asnumpy() for o in outs], {n.split("_", 1)[-1]: g.asnumpy() for n, g in grads.items()}


def _ops(ex):
    return [n.op.name for n in ex._graph.nodes if n.op is not None]


@pytest.mark.parametrize("name", sorted(LAYERS))
@pytest.mark.parametrize("grad_req", ["write", "add"])
def test_same_bits_as_the_flat_vector(name, grad_req, monkeypatch):
    ex, outs, grads = _run(name, True, monkeypatch, grad_req)
    ops = _ops(ex)
    assert ex._graph.stats["rnn_params_apart"] == 1
    assert "_RNN_apart" in ops and "_backward_RNN_apart" in ops
    assert not {"RNN", "_rnn_param_concat", "Reshape", "_backward_Concat"} & set(ops)
    flat_ex, flat_outs, flat_grads = _run(name, False, monkeypatch, grad_req)
    assert "_rnn_param_concat" in _ops(flat_ex) and "rnn_params_apart" not in flat_ex._graph.stats
    for a, b in zip(outs, flat_outs):
        np.testing.assert_array_equal(a, b)
    assert grads.keys() == flat_grads.keys()
    for n in grads:
        np.testing.assert_array_equal(grads[n], flat_grads[n], err_msg=n)


def test_gradients_go_straight_into_the_parameter_arrays(monkeypatch):
    ex, _, _ = _bind("lstm_2_bidir", True, monkeypatch)
    backward = next(n for n in ex._graph.nodes if n.op is not None and n.op.name == "_backward_RNN_apart")
    bound = {ex._graph.external.get((id(backward), i)) for i in range(backward.num_outputs())}
    weights = {n for n in ex.arg_dict if n.endswith(("weight", "bias"))}
    assert weights <= bound   # every parameter's gradient is written by the backward node itself


ARRAYS = {"data": (2, 1, 2), "wx": (3, 2), "wh": (3, 3), "bx": (3,), "bh": (3,), "h0": (1, 1, 3)}


def _tanh_rnn(pieces, extra=lambda flat, pieces: []):
    flat = mx.sym._internal._rnn_param_concat(*pieces, dim=0, num_args=len(pieces))
    rnn = mx.sym.RNN(mx.sym.var("data"), flat, mx.sym.var("h0"), state_size=3, num_layers=1, mode="rnn_tanh")
    return mx.sym.Group([rnn] + extra(flat, pieces))


def _flat_pieces():
    return [mx.sym.var(n).reshape(-1) for n in ("wx", "wh", "bx", "bh")]


def _compare(build, arrays, monkeypatch):
    """Outputs and gradients of build() with and without the pass (bit for bit); the ops compiled."""
    rng = np.random.RandomState(0)
    values = {n: rng.standard_normal(s).astype(np.float32) for n, s in arrays.items()}
    results = {}
    for apart in ("1", "0"):
        monkeypatch.setenv("EMBER_RNN_PARAMS_APART", apart)
        grads = {n: mx.nd.zeros(s) for n, s in arrays.items()}
        ex = build().bind(mx.cpu(), {n: mx.nd.array(v) for n, v in values.items()}, args_grad=grads)
        outs = ex.forward(is_train=True)
        ex.backward([mx.nd.ones(o.shape) for o in outs])
        results[apart] = ([o.asnumpy() for o in outs], {n: g.asnumpy() for n, g in grads.items()}, _ops(ex))
    for a, b in zip(results["1"][0], results["0"][0]):
        np.testing.assert_array_equal(a, b)
    for n in arrays:
        np.testing.assert_array_equal(results["1"][1][n], results["0"][1][n], err_msg=n)
    return results["1"][2]


def test_a_hand_made_vector_of_the_parameters_is_rewritten(monkeypatch):
    ops = _compare(lambda: _tanh_rnn(_flat_pieces()), ARRAYS, monkeypatch)
    assert "_RNN_apart" in ops and not {"Reshape", "_rnn_param_concat"} & set(ops)


def test_the_vector_read_elsewhere_is_left_alone(monkeypatch):
    ops = _compare(lambda: _tanh_rnn(_flat_pieces(), lambda flat, _: [mx.sym.sum(flat)]), ARRAYS, monkeypatch)
    assert "RNN" in ops and "_RNN_apart" not in ops


def test_pieces_that_are_not_the_parameters_are_left_alone(monkeypatch):
    """Two arrays holding the four parameters between them: the flat vector is right, the pieces are
    not one parameter each."""
    arrays = {"data": (2, 1, 2), "w": (3, 5), "b": (6,), "h0": (1, 1, 3)}
    ops = _compare(lambda: _tanh_rnn([mx.sym.var("w").reshape(-1), mx.sym.var("b")]), arrays, monkeypatch)
    assert "RNN" in ops and "_RNN_apart" not in ops


def test_a_reshape_read_elsewhere_stays(monkeypatch):
    ops = _compare(lambda: _tanh_rnn(_flat_pieces(), lambda flat, pieces: [2 * pieces[0]]), ARRAYS, monkeypatch)
    assert "_RNN_apart" in ops and ops.count("Reshape") == 1 and "_rnn_param_concat" not in ops


def test_wrong_parameter_array_size_is_a_shape_error():
    with pytest.raises(mx.base.ShapeError, match="parameter array 1 has shape"):
        mx.nd._internal._RNN_apart(mx.nd.zeros((2, 1, 2)), mx.nd.zeros((3, 2)), mx.nd.zeros((3, 4)),
                                   mx.nd.zeros(3), mx.nd.zeros(3), mx.nd.zeros((1, 1, 3)), num_params=4,
                                   state_size=3, num_layers=1, mode="rnn_tanh")


def test_hybridized_training_is_unchanged(monkeypatch):
    """A hybridized Gluon LSTM trained three steps: the same parameters with and without the pass."""
    def train(apart):
        monkeypatch.setenv("EMBER_RNN_PARAMS_APART", apart)
        mx.random.seed(0)
        net = gluon.nn.HybridSequential()
        net.add(gluon.rnn.LSTM(6, 2, input_size=4), gluon.nn.Dense(3, flatten=False))
        net.initialize(mx.init.Xavier())
        net.hybridize(static_alloc=True)
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
        x = mx.nd.array(np.random.RandomState(5).standard_normal((5, 2, 4)))
        for _ in range(3):
            with mx.autograd.record():
                loss = (net(x) ** 2).sum()
            loss.backward()
            trainer.step(1)
        return [p.data().asnumpy() for p in net.collect_params().values()]
    for a, b in zip(train("1"), train("0")):
        np.testing.assert_array_equal(a, b)
