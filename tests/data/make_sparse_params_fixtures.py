"""Record row_sparse Gluon training runs from real MXNet 1.9.1 into sparse_params/cases.json.

Run with the MXNet 1.9.1 venv:

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_sparse_params_fixtures.py

Each case is a few steps of Gluon training with row_sparse gradients and/or weights; it records
the gradient's storage type, stored rows and values after every backward and the weights at the
end.  `tests/gluon/test_sparse_params.py` runs the same steps on ember and compares.
"""
import json
import os

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "sparse_params", "cases.json")

IDS = [[3, 1], [1, 4]]
MASK = [[[1, 1], [0, 0]], [[0, 0], [1, 2]]]  # row 1 is indexed but gets a zero gradient
OPTIMIZERS = {
    "sgd_mom_wd": ("sgd", {"learning_rate": 0.1, "wd": 0.5, "momentum": 0.9}),
    "sgd_standard": ("sgd", {"learning_rate": 0.1, "wd": 0.5, "momentum": 0.9, "lazy_update": False}),
    "adam_wd": ("adam", {"learning_rate": 0.1, "wd": 0.1}),
}


def grad_record(g):
    return {"stype": g.stype, "indices": g.indices.asnumpy().tolist() if g.stype == "row_sparse" else None,
            "dense": g.asnumpy().tolist()}


def embedding_case(opt_name):
    """Embedding(sparse_grad=True) on one context (no kvstore: updates run in the Trainer)."""
    opt, opt_params = OPTIMIZERS[opt_name]
    layer = gluon.nn.Embedding(6, 2, sparse_grad=True)
    layer.initialize(mx.init.One())
    trainer = gluon.Trainer(layer.collect_params(), opt, opt_params)
    grads = []
    for _ in range(2):
        with autograd.record():
            loss = (layer(mx.nd.array(IDS)) * mx.nd.array(MASK)).sum()
        loss.backward()
        grads.append(grad_record(layer.weight.grad()))
        trainer.step(1)
    return {"kind": "embedding", "optimizer": opt, "optimizer_params": opt_params, "grads": grads,
            "weight": layer.weight.data().asnumpy().tolist()}


def row_sparse_weight_case():
    """A row_sparse weight and gradient on two contexts: the store sums the sparse gradients and
    updates lazily; row_sparse_data pulls the rows asked for."""
    w = gluon.Parameter("w", shape=(5, 3), stype="row_sparse", grad_stype="row_sparse")
    w.initialize(mx.init.Constant(2.0), ctx=[mx.cpu(0), mx.cpu(1)])
    trainer = gluon.Trainer([w], "sgd", {"learning_rate": 0.5, "momentum": 0.5, "wd": 0.1})
    rows = [[0, 2], [2, 3, 3]]
    coef = [[1.0, -1.0, 0.5], [0.25, 2.0, -0.5]]
    grads = []
    for _ in range(2):
        with autograd.record():
            losses = []
            for ctx, r, c in zip([mx.cpu(0), mx.cpu(1)], rows, coef):
                value = w.row_sparse_data(mx.nd.array(r, ctx=ctx))
                losses.append((value * mx.nd.array(c, ctx=ctx)).sum())
        autograd.backward(losses)
        grads.append([grad_record(g) for g in w.list_grad()])
        trainer.step(2)
    pulled = w.row_sparse_data(mx.nd.array([4, 0, 3]))
    return {"kind": "row_sparse_weight", "rows": rows, "coef": coef, "grads": grads,
            "pulled_indices": pulled.indices.asnumpy().tolist(), "pulled": pulled.asnumpy().tolist(),
            "weight": w.row_sparse_data(mx.nd.arange(0, 5)).asnumpy().tolist()}


def dense_weight_sparse_grad_case():
    """A dense weight with a row_sparse gradient on two contexts: the store sums the gradients,
    each context pulls the sum and updates its copy (lazily)."""
    w = gluon.Parameter("w", shape=(4, 2), grad_stype="row_sparse")
    w.initialize(mx.init.Constant(1.0), ctx=[mx.cpu(0), mx.cpu(1)])
    trainer = gluon.Trainer([w], "sgd", {"learning_rate": 0.5, "momentum": 0.5, "wd": 0.2})
    coef = [[[0, 0], [1, 2], [0, 0], [0, 0]], [[0, 0], [0, 0], [0, 0], [3, -1]]]
    grads = []
    for _ in range(2):
        with autograd.record():
            losses = [(x * mx.nd.array(c, ctx=x.context)).sum() for x, c in zip(w.list_data(), coef)]
        autograd.backward(losses)
        grads.append([grad_record(g) for g in w.list_grad()])
        trainer.step(1)
    return {"kind": "dense_weight_sparse_grad", "coef": coef, "grads": grads,
            "kvstore": trainer._kvstore.type, "update_on_kvstore": trainer._update_on_kvstore,
            "weights": [x.asnumpy().tolist() for x in w.list_data()]}


def main():
    cases = {f"embedding_{name}": embedding_case(name) for name in OPTIMIZERS}
    cases["row_sparse_weight"] = row_sparse_weight_case()
    cases["dense_weight_sparse_grad"] = dense_weight_sparse_grad_case()
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w") as f:
        json.dump({"mxnet": mx.__version__, "cases": cases}, f, indent=1, sort_keys=True)
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
