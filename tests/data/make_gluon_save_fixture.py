"""Record MXNet 1.9.1's `Block.save` of tests/gluon/core_blocks.py's `saved_model()`.

Run with the real MXNet venv (never with ember):

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_gluon_save_fixture.py

Writes tests/data/gluon/saved-model-model.json and saved-model-model.params (the model, its
hybridized inner Net traced), and saved-model.npz: the input, the output, the block names and
the parameter dictionary's keys.  The input comes from numpy.random.RandomState(11).
"""
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
    x = np.random.RandomState(11).rand(2, 6).astype(np.float32)
    with mx.name.NameManager():
        net = blocks["saved_model"]()
    net.initialize(mx.init.Xavier())
    for child in net._children.values():
        child.hybridize()   # the Net inside (and the outer TinyDense) trace their graphs
    out = net(mx.nd.array(x)).asnumpy()
    net.save(os.path.join(OUT, "saved-model"))
    names = []

    def walk(b):
        names.append(b.name)
        for c in b._children.values():
            walk(c)
    walk(net)
    np.savez(os.path.join(OUT, "saved-model.npz"), x=x, out=out, names=np.array(names),
             keys=np.array(list(net.collect_params().keys())))


if __name__ == "__main__":
    main()
