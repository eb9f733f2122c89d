"""Records a hybridized Gluon block whose graph holds a `contrib.foreach` loop (an LSTM cell run by
`gluon.contrib.rnn.dynamic_unroll` over NTC data, with sequence lengths), exported by MXNet 1.9.1.
Run with the MXNet venv:

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_loop_fixtures.py

Writes tests/data/loops/: `lstm_loop-symbol.json` and `lstm_loop-0000.params` (MXNet's `export`: the
`_foreach` node with its body in 'subgraphs') and `io.npz` (the inputs 'data0'..'data3' and MXNet's
outputs 'out0' (sequence) 'out1', 'out2' (final states)); replayed by tests/symbolic/test_control_flow.py.
"""
import os

import numpy as np

import mxnet as mx
from mxnet import gluon

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loops")


class LoopLSTM(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.cell = gluon.rnn.LSTMCell(6, input_size=4, prefix="rnn_")

    def hybrid_forward(self, F, x, h, c, valid_length):
        out, states = gluon.contrib.rnn.rnn_cell.dynamic_unroll(self.cell, x, [h, c], layout="NTC",
                                                                valid_length=valid_length)
        return out, states[0], states[1]


def main():
    os.makedirs(HERE, exist_ok=True)
    rs = np.random.RandomState(5)
    net = LoopLSTM(prefix="looplstm_")
    net.initialize(mx.init.Uniform(0.4))
    inputs = [rs.uniform(-1, 1, (3, 5, 4)).astype(np.float32), rs.uniform(-1, 1, (3, 6)).astype(np.float32),
              rs.uniform(-1, 1, (3, 6)).astype(np.float32), np.array([5, 2, 4], np.float32)]
    net.hybridize()
    outs = net(*[mx.nd.array(a) for a in inputs])
    net.export(os.path.join(HERE, "lstm_loop"))
    data = {f"data{i}": a for i, a in enumerate(inputs)}
    data.update({f"out{i}": o.asnumpy() for i, o in enumerate(outs)})
    np.savez_compressed(os.path.join(HERE, "io.npz"), **data)
    print("recorded", sorted(data))


if __name__ == "__main__":
    main()
