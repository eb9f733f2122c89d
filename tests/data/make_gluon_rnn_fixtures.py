"""Record gluon.rnn fixtures from real MXNet 1.9.1 (run with the anchors venv).

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_gluon_rnn_fixtures.py [CASE ...]

For each case (a fused layer or a cell built by a Python expression that ember evaluates the
same way) two files in tests/data/gluon_rnn/:
  CASE.params  the block's parameters written by MXNet's `save_parameters` (values drawn from
               numpy.random.default_rng(20261206) after a first call completed the shapes);
  CASE.npz     the expression, the repr, the parameter names and shapes (collect_params order),
               the input, the begin states, and from one `autograd.record()` call: the output,
               the final states, the head gradients used, and the gradients of the input, the
               begin states and every parameter (predict mode and no gradients for the cases in
               NO_TRAINING, which MXNet's CPU kernel cannot train).
Also `export-lstm-*`: a hybridized LSTM + Dense network exported by MXNet, with its input and
predict-mode output (case name `export`).
Layers are called as `layer(x, states)` (plus `sequence_length` where the case has one); cells
as `cell.unroll(T, x, begin_state=states, layout=..., merge_outputs=True, valid_length=...)`.
Replayed by tests/gluon/test_rnn_layers.py and tests/gluon/test_rnn_cells.py.
"""
from __future__ import annotations

import os
import sys

import numpy as np

import mxnet as mx
from mxnet import autograd
from mxnet.gluon import contrib, rnn  # noqa: F401  (used by the case expressions)

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gluon_rnn")


def stack(container, *makers):
    """A stacked cell holding the cells the `makers` build inside its name scope."""
    with container.name_scope():
        for make in makers:
            container.add(make())
    return container


# (case, kind 'layer' | 'cell', expression, input shape, layout, valid lengths or None)
CASES = [
    ("lstm_2l_bi", "layer", "rnn.LSTM(5, 2, bidirectional=True)", (4, 2, 3), "TNC", None),
    ("lstm_ntc", "layer", "rnn.LSTM(4, 1, layout='NTC', input_size=3)", (2, 5, 3), "NTC", None),
    ("lstmp_2l_bi", "layer", "rnn.LSTM(6, 2, bidirectional=True, projection_size=3)", (4, 2, 3), "TNC", None),
    ("gru_2l", "layer", "rnn.GRU(4, 2, layout='NTC')", (2, 4, 3), "NTC", None),
    ("gru_bi", "layer", "rnn.GRU(3, 1, bidirectional=True)", (3, 2, 4), "TNC", None),
    ("rnn_tanh_2l_bi", "layer", "rnn.RNN(4, 2, activation='tanh', bidirectional=True)", (3, 2, 3), "TNC", None),
    ("rnn_relu", "layer", "rnn.RNN(3, 1)", (4, 3, 2), "TNC", None),
    ("lstm_cell", "cell", "rnn.LSTMCell(4)", (2, 4, 3), "NTC", None),
    ("gru_cell", "cell", "rnn.GRUCell(4, input_size=3)", (4, 2, 3), "TNC", None),
    ("rnn_cell_relu", "cell", "rnn.RNNCell(3, activation='relu')", (2, 3, 3), "NTC", None),
    ("rnn_cell_softsign", "cell", "rnn.RNNCell(3, activation='softsign')", (2, 3, 3), "NTC", None),
    ("stack_cells", "cell", "stack(rnn.HybridSequentialRNNCell(), lambda: rnn.LSTMCell(4), lambda: rnn.GRUCell(3))",
     (2, 4, 3), "NTC", None),
    ("seq_stack_residual", "cell", "stack(rnn.SequentialRNNCell(), lambda: rnn.ResidualCell(rnn.GRUCell(3)), "
     "lambda: rnn.RNNCell(2))", (2, 4, 3), "NTC", None),
    ("bidirectional_cell", "cell", "rnn.BidirectionalCell(rnn.LSTMCell(3), rnn.GRUCell(2))", (4, 2, 3), "TNC",
     None),
    ("lstmp_cell", "cell", "contrib.rnn.LSTMPCell(5, 3)", (2, 3, 4), "NTC", None),
    ("lstm_cell_valid_length", "cell", "rnn.LSTMCell(3)", (3, 4, 2), "NTC", [2, 4, 1]),
    ("bidirectional_valid_length", "cell", "rnn.BidirectionalCell(rnn.GRUCell(3), rnn.GRUCell(3))",
     (4, 3, 2), "TNC", [4, 2, 3]),
    ("residual_valid_length", "cell", "rnn.ResidualCell(rnn.RNNCell(2))", (3, 4, 2), "NTC", [1, 4, 3]),
    ("conv1d_gru_cell", "cell", "contrib.rnn.Conv1DGRUCell((2, 6), 3, 3, 3)", (2, 3, 2, 6), "NTC", None),
    ("conv2d_lstm_cell", "cell", "contrib.rnn.Conv2DLSTMCell((2, 5, 4), 2, (3, 1), 3, i2h_pad=(1, 0), "
     "h2h_dilate=(1, 2))", (3, 2, 2, 5, 4), "TNC", None),
    ("conv3d_rnn_cell", "cell", "contrib.rnn.Conv3DRNNCell((1, 3, 4, 3), 2, 2, (1, 3, 1), activation='relu')",
     (2, 2, 1, 3, 4, 3), "NTC", None),
]

# MXNet 1.9.1's CPU kernel has no backward for projected LSTMs ("No training support for LSTM with
# projection on CPU currently"): these record predict-mode outputs and states only.
NO_TRAINING = {"lstmp_2l_bi"}


def _list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def record(case, kind, expr, shape, layout, valid):
    rng = np.random.default_rng(20261206)
    block = eval(expr)
    block.initialize()
    x = mx.nd.array(rng.standard_normal(shape).astype(np.float32))
    batch = shape[layout.find("N")]
    steps = shape[layout.find("T")]
    vl = mx.nd.array(valid) if valid is not None else None

    def run(inp, states):
        if kind == "layer":
            return block(inp, states)
        return block.unroll(steps, inp, begin_state=states, layout=layout, merge_outputs=True, valid_length=vl)

    run(x, None if kind == "cell" else block.begin_state(batch))  # completes deferred shapes
    params = block.collect_params()
    names = list(params.keys())
    for p in params.values():
        p.set_data(mx.nd.array((rng.standard_normal(p.shape) * 0.5).astype(np.float32)))
    block.save_parameters(os.path.join(HERE, case + ".params"))
    states = [mx.nd.array((rng.standard_normal(s.shape) * 0.5).astype(np.float32))
              for s in block.begin_state(batch_size=batch, func=mx.nd.zeros)]
    grads = case not in NO_TRAINING
    x.attach_grad()
    for s in states:
        s.attach_grad()
    with (autograd.record() if grads else autograd.predict_mode()):
        out, new_states = run(x, states)
        new_states = _list(new_states)
        heads = [rng.standard_normal(a.shape).astype(np.float32) for a in [out] + new_states]
        loss = sum((a * mx.nd.array(h)).sum() for a, h in zip([out] + new_states, heads))
    if grads:
        loss.backward()
    arrays = {
        "expr": np.array(expr), "kind": np.array(kind), "layout": np.array(layout), "repr": np.array(repr(block)),
        "names": np.array(names), "shapes": np.array([str(p.shape) for p in params.values()]),
        "x": x.asnumpy(), "out": out.asnumpy(), "n_states": np.array(len(states)), "grads": np.array(grads),
    }
    if valid is not None:
        arrays["valid_length"] = np.array(valid, dtype=np.float32)
    for i, (s, ns, h) in enumerate(zip(states, new_states, heads[1:])):
        arrays[f"state{i}"] = s.asnumpy()
        arrays[f"state{i}_out"] = ns.asnumpy()
        arrays[f"state{i}_head"] = h
        if grads:
            arrays[f"state{i}_grad"] = s.grad.asnumpy()
    arrays["out_head"] = heads[0]
    if grads:
        arrays["x_grad"] = x.grad.asnumpy()
        for i, p in enumerate(params.values()):
            arrays[f"param{i}_grad"] = p.grad().asnumpy()
    np.savez_compressed(os.path.join(HERE, case + ".npz"), **arrays)
    print(f"{case}: {repr(block).splitlines()[0]} out {out.shape}")


def export_network():
    """A hybridized LSTM + Dense network exported by MXNet (export-lstm-symbol.json, -0000.params) and
    its predict-mode output on a fixed input (export-lstm-io.npz)."""
    rng = np.random.default_rng(20261207)
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(rnn.LSTM(4, 2, bidirectional=True, layout="NTC"))
        net.add(mx.gluon.nn.Dense(3, flatten=False))
    net.initialize(mx.init.Uniform(0.5))
    net.hybridize()
    x = mx.nd.array(rng.standard_normal((2, 5, 3)).astype(np.float32))
    out = net(x)
    net.export(os.path.join(HERE, "export-lstm"))
    np.savez_compressed(os.path.join(HERE, "export-lstm-io.npz"), x=x.asnumpy(), out=out.asnumpy())
    print(f"export-lstm: out {out.shape}")


def main(argv):
    os.makedirs(HERE, exist_ok=True)
    wanted = set(argv)
    for case in CASES:
        if not wanted or case[0] in wanted:
            record(*case)
    if not wanted or "export" in wanted:
        export_network()


if __name__ == "__main__":
    main(sys.argv[1:])
