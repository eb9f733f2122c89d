"""Record what MXNet 1.9.1's Gluon does with the blocks of tests/gluon/core_blocks.py.

Run with the real MXNet venv (never with ember):

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_gluon_fixtures.py

Writes tests/data/gluon/:
- core-net.npz: parameter names (collect_params order), structural names (save_parameters),
  shapes after deferred initialization, the input, the initial weights (by name), the forward
  output in predict mode, and after one recorded train-mode forward/backward of sum(out**2):
  the output, each gradient and the BatchNorm running statistics;
- core-net-symbol.json / core-net-0000.params: the hybridized net exported (`export`);
- core-net-structural.params: `save_parameters` of the same weights.
Inputs come from numpy.random.RandomState(7), so reruns reproduce the files.
"""
import json
import os
import sys

import numpy as np

import mxnet as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gluon"))
from core_blocks import define  # noqa: E402

OUT = os.path.join(HERE, "gluon")


def main():
    os.makedirs(OUT, exist_ok=True)
    blocks = define(mx.gluon)
    rng = np.random.RandomState(7)
    net = blocks["Net"]()
    names = list(net.collect_params().keys())
    structural = sorted(net._collect_params_with_prefix().keys())
    net.initialize(mx.init.Xavier())
    x = rng.rand(5, 6).astype(np.float32)
    net(mx.nd.array(x))  # deferred init
    weights = {}
    for name, p in net.collect_params().items():
        value = rng.uniform(-0.5, 0.5, size=p.shape).astype(np.float32)
        if name.endswith("running_var"):
            value = np.abs(value) + 0.5
        p.set_data(mx.nd.array(value))
        weights[name] = value
    rec = {"names": json.dumps(names), "structural": json.dumps(structural), "x": x,
           "shapes": json.dumps({n: list(p.shape) for n, p in net.collect_params().items()})}
    for n, v in weights.items():
        rec["w:" + n] = v
    rec["predict"] = net(mx.nd.array(x)).asnumpy()
    net.save_parameters(os.path.join(OUT, "core-net-structural.params"))
    net.hybridize()
    net(mx.nd.array(x))
    net.export(os.path.join(OUT, "core-net"))
    xs = mx.nd.array(x)
    with mx.autograd.record():
        out = net(xs)
        loss = (out ** 2).sum()
    loss.backward()
    rec["train_out"] = out.asnumpy()
    for n, p in net.collect_params().items():
        if p.grad_req != "null":
            rec["g:" + n] = p.grad().asnumpy()
        else:
            rec["after:" + n] = p.data().asnumpy()
    np.savez(os.path.join(OUT, "core-net.npz"), **rec)
    print("wrote", sorted(os.listdir(OUT)))


if __name__ == "__main__":
    main()
