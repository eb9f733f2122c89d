"""Record CTCLoss-operator and gluon.loss cases from real MXNet 1.9.1 (run with the anchors venv, not ember).

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_loss_fixtures.py

Writes two files under tests/data/loss/:
- ctc_op.npz: for each case `C`: `C/attrs` (JSON), the inputs `C/in_K`, the head gradient `C/head`,
  MXNet's output `C/out` and its data gradient `C/grad` (one forward+backward under autograd).
- gluon_losses.npz: for each case `C`: `C/cls` (the gluon.loss class name), `C/kwargs` (JSON of its
  constructor arguments), `C/nin` (number of positional inputs; a missing optional input is an
  empty array `C/none_K`), the inputs `C/in_K`, MXNet's output `C/out`, the head gradient `C/head`
  and the gradient of every input listed in `C/grad_idx` (`C/grad_K`).
tests/ops/test_ctc.py and tests/gluon/test_loss.py replay them.  Inputs come from
numpy.random.default_rng(20261203), so reruns reproduce the same files.
"""
from __future__ import annotations

import json
import os

import numpy as np
import mxnet as mx
from mxnet import autograd, gluon

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loss")
R = np.random.default_rng(20261203)


def randn(*shape):
    return R.standard_normal(shape).astype(np.float32)


def uniform(lo, hi, *shape):
    return R.uniform(lo, hi, size=shape).astype(np.float32)


def ctc_cases():
    """(name, inputs, attrs)."""
    first = np.array([[1, 2, 2, 0], [3, 0, 0, 0], [4, 1, 3, 2]], np.float32)
    last = np.array([[0, 1, 1, -1], [2, -1, -1, -1], [3, 0, 2, 1]], np.float32)
    return [
        ("first", [randn(7, 3, 5), first], {}),
        ("last", [randn(7, 3, 5), last], {"blank_label": "last"}),
        ("label_lengths", [randn(7, 3, 5), np.array([[1, 2, 2, 4], [3, 3, 1, 1], [4, 1, 3, 2]], np.float32),
                           np.array([3, 1, 4], np.float32)], {"use_label_lengths": True}),
        ("data_lengths", [randn(8, 3, 5), last, np.array([5, 8, 6], np.float32)],
         {"use_data_lengths": True, "blank_label": "last"}),
        ("both_lengths", [randn(8, 2, 6), np.array([[1, 1, 5, 5], [2, 3, 4, 0]], np.float32),
                          np.array([6, 7], np.float32), np.array([2, 3], np.float32)],
         {"use_data_lengths": True, "use_label_lengths": True}),
        # the first sequence needs 4 frames (3 labels, one repeat) but has 3: MXNet gives loss 0, gradient 0
        ("infeasible", [randn(5, 2, 4), np.array([[1, 1, 2], [2, 3, 0]], np.float32), np.array([3, 5], np.float32)],
         {"use_data_lengths": True}),
    ]


def record_ctc():
    out = {}
    for name, inputs, attrs in ctc_cases():
        arrays = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
        arrays[0].attach_grad()
        head = uniform(0.5, 1.5, inputs[0].shape[1]).astype(inputs[0].dtype)
        with autograd.record():
            y = mx.nd.CTCLoss(*arrays, **attrs)
        y.backward(mx.nd.array(head, dtype=head.dtype))
        out[f"{name}/attrs"] = np.array(json.dumps(attrs))
        for k, x in enumerate(inputs):
            out[f"{name}/in_{k}"] = x
        out[f"{name}/head"] = head
        out[f"{name}/out"] = y.asnumpy()
        out[f"{name}/grad"] = arrays[0].grad.asnumpy()
    return out


def gluon_cases():
    """(name, class name, kwargs, inputs (None = optional input left out), indices of inputs to differentiate)."""
    n = 4
    sparse = R.integers(0, 5, size=(n,)).astype(np.float32)
    probs = np.exp(randn(n, 5))
    probs /= probs.sum(axis=1, keepdims=True)
    sign = np.where(R.random((n, 3)) > 0.5, 1.0, -1.0).astype(np.float32)
    binary = (R.random((n, 3)) > 0.5).astype(np.float32)
    ctc_label = np.array([[1, 0, -1, -1], [2, 1, 1, -1], [0, 2, 1, 3], [3, -1, -1, -1]], np.float32)
    return [
        ("l1", "L1Loss", {}, [randn(n, 3), randn(n, 3)], [0]),
        ("l1_weights", "L1Loss", {"weight": 0.5}, [randn(n, 3, 2), randn(n, 6), uniform(0, 1, n, 1, 1)], [0]),
        ("l2", "L2Loss", {}, [randn(n, 3), randn(n, 3)], [0]),
        ("l2_weights_batch_axis", "L2Loss", {"weight": 3.0, "batch_axis": 1},
         [randn(3, n), randn(3, n), uniform(0, 1, 1, n)], [0]),
        ("sce_sparse", "SoftmaxCrossEntropyLoss", {}, [randn(n, 5), sparse], [0]),
        ("sce_sparse_sw", "SoftmaxCrossEntropyLoss", {"weight": 2.0}, [randn(n, 5), sparse, uniform(0, 1, n, 1)], [0]),
        ("sce_axis1", "SoftmaxCrossEntropyLoss", {"axis": 1},
         [randn(n, 5, 3), R.integers(0, 5, size=(n, 3)).astype(np.float32)], [0]),
        ("sce_dense", "SoftmaxCrossEntropyLoss", {"sparse_label": False}, [randn(n, 5), probs], [0, 1]),
        ("sce_from_logits", "SoftmaxCELoss", {"from_logits": True},
         [np.log(probs).astype(np.float32), sparse], [0]),
        ("bce", "SigmoidBinaryCrossEntropyLoss", {}, [randn(n, 3) * 3, binary], [0, 1]),
        ("bce_pos_weight", "SigmoidBCELoss", {}, [randn(n, 3) * 3, binary, None, uniform(0.5, 3, 1, 3)], [0]),
        ("bce_from_sigmoid", "SigmoidBCELoss", {"from_sigmoid": True}, [uniform(0.05, 0.95, n, 3), binary], [0]),
        ("bce_from_sigmoid_pw", "SigmoidBCELoss", {"from_sigmoid": True, "weight": 0.5},
         [uniform(0.05, 0.95, n, 3), binary, uniform(0, 1, n, 1), uniform(0.5, 3, 1, 3)], [0]),
        ("kl", "KLDivLoss", {}, [np.log(probs).astype(np.float32), probs[::-1].copy()], [0]),
        ("kl_softmax", "KLDivLoss", {"from_logits": False, "axis": 1}, [randn(n, 5), probs], [0]),
        ("huber", "HuberLoss", {}, [randn(n, 3) * 2, randn(n, 3)], [0]),
        ("huber_rho", "HuberLoss", {"rho": 0.5, "weight": 2.0}, [randn(n, 3) * 2, randn(n, 3)], [0]),
        ("hinge", "HingeLoss", {}, [randn(n, 3), sign], [0]),
        ("hinge_margin", "HingeLoss", {"margin": 2.0}, [randn(n, 3), sign, uniform(0, 1, n, 1)], [0]),
        ("sq_hinge", "SquaredHingeLoss", {}, [randn(n, 3), sign], [0]),
        ("logistic_signed", "LogisticLoss", {}, [randn(n, 3) * 3, sign], [0]),
        ("logistic_binary", "LogisticLoss", {"label_format": "binary"}, [randn(n, 3) * 3, binary], [0]),
        ("triplet", "TripletLoss", {}, [randn(n, 5), randn(n, 5), randn(n, 5)], [0, 1, 2]),
        ("triplet_margin", "TripletLoss", {"margin": 3.0, "weight": 0.5}, [randn(n, 5), randn(n, 5), randn(n, 5)], [0]),
        ("poisson_logits", "PoissonNLLLoss", {}, [randn(n, 3), uniform(0, 4, n, 3)], [0]),
        ("poisson_full", "PoissonNLLLoss", {"from_logits": False, "compute_full": True},
         [uniform(0.5, 4, n, 3), uniform(0.5, 5, n, 3)], []),
        ("cosine", "CosineEmbeddingLoss", {}, [randn(n, 5), randn(n, 5), sign[:, 0].copy()], [0, 1]),
        ("cosine_margin", "CosineEmbeddingLoss", {"margin": 0.2},
         [randn(n, 5), randn(n, 5), sign[:, 1].copy(), uniform(0, 1, n, 1)], [0]),
        ("ctc", "CTCLoss", {}, [randn(n, 9, 5), ctc_label], [0]),
        ("ctc_tnc_tn", "CTCLoss", {"layout": "TNC", "label_layout": "TN"}, [randn(9, n, 5), ctc_label.T.copy()], [0]),
        ("ctc_lengths", "CTCLoss", {"weight": 2.0},
         [randn(n, 9, 5), np.array([[1, 0, 2, 2], [2, 1, 1, 3], [0, 2, 1, 3], [3, 3, 3, 3]], np.float32),
          np.array([9, 7, 8, 6], np.float32), np.array([2, 3, 4, 1], np.float32), uniform(0.5, 1.5, n)], [0]),
        ("sdml", "SDMLLoss", {}, [randn(n, 5), randn(n, 5)], [0, 1]),
    ]


# MXNet 1.9.1's PoissonNLLLoss(compute_full=True) runs only imperatively outside autograd.record (`loss +=`
# on a recorded array is refused, and hybridized `*=` on a Symbol): that case records the output only.
NO_AUTOGRAD = {"poisson_full"}


def record_gluon():
    out = {}
    for name, cls, kwargs, inputs, grad_idx in gluon_cases():
        arrays = [None if x is None else mx.nd.array(x) for x in inputs]
        for k in grad_idx:
            arrays[k].attach_grad()
        loss = getattr(gluon.loss, cls)(**kwargs)
        if name in NO_AUTOGRAD:
            grad_idx = []
            y = loss(*arrays)
        else:
            with autograd.record():
                y = loss(*arrays)
        head = R.uniform(0.5, 1.5, size=y.shape).astype(np.float32)
        if grad_idx:
            y.backward(mx.nd.array(head))
        out[f"{name}/cls"] = np.array(cls)
        out[f"{name}/kwargs"] = np.array(json.dumps(kwargs))
        out[f"{name}/nin"] = np.array(len(inputs))
        out[f"{name}/grad_idx"] = np.array(grad_idx, dtype=np.int64)
        for k, x in enumerate(inputs):
            out[f"{name}/in_{k}" if x is not None else f"{name}/none_{k}"] = x if x is not None else np.zeros(0)
        out[f"{name}/out"] = y.asnumpy()
        out[f"{name}/head"] = head
        for k in grad_idx:
            out[f"{name}/grad_{k}"] = arrays[k].grad.asnumpy()
    return out


def main():
    os.makedirs(HERE, exist_ok=True)
    np.savez_compressed(os.path.join(HERE, "ctc_op.npz"), **record_ctc())
    np.savez_compressed(os.path.join(HERE, "gluon_losses.npz"), **record_gluon())
    print("wrote", HERE)


if __name__ == "__main__":
    main()
