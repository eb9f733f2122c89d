"""Write the MXNet-made symbol fixtures ember's tests load (run with MXNet 1.9.1's python).

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/symbolic/make_fixtures.py

For each net: <name>-symbol.json (written by MXNet's sym.save) and <name>-expected.json
with MXNet's list_arguments/outputs/auxiliary_states, infer_shape results, inputs drawn
from a fixed seed and MXNet's forward outputs (is_train=False) for them.
"""
import json
import os

import mxnet as mx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def mlp():
    data = mx.sym.var("data")
    h = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    h = mx.sym.Activation(h, act_type="relu", name="relu1")
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(h, name="softmax"), {"data": (2, 5)}


def convnet():
    data = mx.sym.var("data")
    h = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, pad=(1, 1), name="conv1")
    h = mx.sym.BatchNorm(h, name="bn1", fix_gamma=False)
    h = mx.sym.Activation(h, act_type="relu")
    h = mx.sym.Pooling(h, pool_type="max", kernel=(2, 2), stride=(2, 2))
    h = mx.sym.Flatten(h)
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc")
    return mx.sym.SoftmaxOutput(h, name="softmax"), {"data": (2, 2, 6, 6)}


def arith():
    a = mx.sym.var("a", shape=(2, 3), lr_mult=2.0, wd_mult=0.5, __myattr__="x")
    b = mx.sym.var("b")
    outs = [a + b, a * 2 + 1, a - b, 3 / (a * a + 1), -a, (a * a) ** 2, mx.sym.exp(a) * b, 2 - a]
    return mx.sym.Group(outs), {"a": (2, 3), "b": (2, 3)}


def main():
    rng = np.random.RandomState(0)
    for name, make in (("mlp", mlp), ("convnet", convnet), ("arith", arith)):
        sym, shapes = make()
        sym.save(os.path.join(HERE, f"{name}-symbol.json"))
        arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**shapes)
        args = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in zip(sym.list_arguments(), arg_shapes)}
        if "softmax_label" in args:
            args["softmax_label"] = np.array([0, 2], dtype=np.float32)
        aux = {n: (rng.uniform(0.5, 1.5, s) if n.endswith("var") else rng.uniform(-0.2, 0.2, s)).astype(np.float32)
               for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
        exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()},
                       aux_states={k: mx.nd.array(v) for k, v in aux.items()}, grad_req="null")
        outs = [o.asnumpy() for o in exe.forward(is_train=False)]
        expected = {
            "shapes": {k: list(v) for k, v in shapes.items()},
            "list_arguments": sym.list_arguments(), "list_outputs": sym.list_outputs(),
            "list_auxiliary_states": sym.list_auxiliary_states(),
            "arg_shapes": [list(s) for s in arg_shapes], "out_shapes": [list(s) for s in out_shapes],
            "aux_shapes": [list(s) for s in aux_shapes],
            "args": {k: v.tolist() for k, v in args.items()}, "aux": {k: v.tolist() for k, v in aux.items()},
            "outputs": [o.tolist() for o in outs],
            "attr_dict": sym.attr_dict(), "mxnet_version": mx.__version__,
        }
        with open(os.path.join(HERE, f"{name}-expected.json"), "w") as f:
            json.dump(expected, f)
    print("fixtures written to", HERE)


if __name__ == "__main__":
    main()
