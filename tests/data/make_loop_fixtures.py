"""Records a hybridized Gluon block whose graph holds a `contrib.foreach` loop (an LSTM cell run by
`gluon.contrib.rnn.dynamic_unroll` over NTC data, with sequence lengths), exported by MXNet 1.9.1.
Run with the MXNet venv:

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_loop_fixtures.py

Writes tests/data/loops/: `lstm_loop-symbol.json` and `lstm_loop-0000.params` (MXNet's `export`: the
`_foreach` node with its body in 'subgraphs') and `io.npz` (the inputs 'data0'..'data3' and MXNet's
outputs 'out0' (sequence) 'out1', 'out2' (final states)); and `while-symbol.json` with `while_io.npz`: a
`contrib.while_loop` reading an outer weight (`_while_loop` with its cond and func graphs in 'subgraphs'), its
inputs and MXNet's outputs (the rows past the last step, undefined in MXNet, are not recorded: 'steps' says
how many are valid); and `cond-symbol.json`, `cond-0000.params` with `cond_io.npz`: a hybridized block
choosing between two branches with `contrib.cond` (a `_cond` node with its predicate, then and else graphs),
exported, with its outputs and the gradients of its input and parameters (MXNet's imperative ones) for an
input taking each branch (replayed by tests/symbolic/test_cond.py).  Replayed by tests/symbolic/test_control_flow.py.
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
    record_while(rs)
    record_cond(rs)


def record_while(rs):
    x, acc, w = mx.sym.var("x"), mx.sym.var("acc"), mx.sym.var("w")

    def cond(x, acc):
        return mx.sym.sum(acc) < 20

    def func(x, acc):
        new = acc + mx.sym.tanh(x * w)
        return [new * 2], [x + 1, new]
    outs, states = mx.sym.contrib.while_loop(cond, func, [x, acc], max_iterations=8)
    loop = mx.sym.Group(outs + states)
    loop.save(os.path.join(HERE, "while-symbol.json"))
    values = {"x": rs.uniform(0, 1, (2, 3)).astype(np.float32), "acc": np.zeros((2, 3), np.float32),
              "w": rs.uniform(0.5, 1.5, (2, 3)).astype(np.float32)}
    res = loop.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in values.items()}).forward()
    out, x_end, acc_end = (r.asnumpy() for r in res)
    steps = int(x_end[0, 0] - values["x"][0, 0] + 0.5)
    np.savez_compressed(os.path.join(HERE, "while_io.npz"), out=out[:steps], x_end=x_end, acc_end=acc_end,
                        steps=np.array(steps), **values)
    print("recorded while_loop,", steps, "steps")


class CondNet(gluon.HybridBlock):
    def __init__(self, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.dense = gluon.nn.Dense(4, in_units=3)

    def hybrid_forward(self, F, x):
        h = self.dense(x)
        return F.contrib.cond(F.sum(h) > 0, lambda: F.broadcast_add(F.tanh(h) * 2, F.sum(x)),
                              lambda: F.log(F.relu(h) + 1) - h)


def record_cond(rs):
    # The gradients are MXNet's imperative ones: its hybridized `_cond` backward (1.9.1) reads memory it
    # never wrote (input gradients of 1e35 and more from one run to the next); the imperative cond and
    # the exported graph's outputs are right.
    net = CondNet(prefix="condnet_")
    net.initialize(mx.init.Uniform(0.5))
    w = net.dense.weight.data().asnumpy()
    b = net.dense.bias.data().asnumpy()
    data = {}
    for tag, positive in (("then", True), ("else", False)):
        for _ in range(1000):  # an input whose predicate picks this branch
            x = rs.uniform(-1.0, 1.0, (2, 3)).astype(np.float32)
            if (((x @ w.T) + b).sum() > 0) == positive:
                break
        xa = mx.nd.array(x)
        xa.attach_grad()
        with mx.autograd.record():
            out = net(xa)
        out.backward(mx.nd.ones_like(out))
        data.update({f"x_{tag}": x, f"out_{tag}": out.asnumpy(), f"dx_{tag}": xa.grad.asnumpy(),
                     f"dw_{tag}": net.dense.weight.grad().asnumpy(), f"db_{tag}": net.dense.bias.grad().asnumpy()})
    net.hybridize()
    for tag in ("then", "else"):
        hybrid = net(mx.nd.array(data[f"x_{tag}"])).asnumpy()
        if not np.allclose(hybrid, data[f"out_{tag}"], rtol=1e-6):
            raise SystemExit(f"MXNet's hybridized cond gives other outputs than its imperative one ({tag})")
    net.export(os.path.join(HERE, "cond"))
    np.savez_compressed(os.path.join(HERE, "cond_io.npz"), **data)
    print("recorded cond", sorted(data))


if __name__ == "__main__":
    main()
