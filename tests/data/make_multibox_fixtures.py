"""Write _contrib_MultiBoxDetection fixtures with real MXNet 1.9.1.

Run with the MXNet venv (see tests/data/README.md):
    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_multibox_fixtures.py

multibox/detection.npz   cls_prob (2, 4, 30) softmax probabilities, loc_pred (2, 120), anchor
                         (1, 30, 4) from MultiBoxPrior; per case i: attrs_i (a JSON string) and
                         out_i, MXNet's MultiBoxDetection output
Values come from numpy.random.RandomState(5), so reruns reproduce the file.
"""
import json
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "multibox")
CASES = [dict(), dict(threshold=0.3), dict(force_suppress=True, nms_threshold=0.3), dict(nms_topk=5, clip=False),
         dict(background_id=2, threshold=0.2), dict(variances=(0.2, 0.2, 0.1, 0.1), nms_threshold=0.2)]


def main():
    r = np.random.RandomState(5)
    logits = r.normal(0, 2, size=(2, 4, 30)).astype(np.float32)
    prob = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    loc = r.normal(0, 1, size=(2, 120)).astype(np.float32)
    anchor = mx.nd.contrib.MultiBoxPrior(mx.nd.zeros((1, 1, 3, 5)), sizes=(0.3, 0.5), ratios=(1,)).asnumpy()
    arrays = {"cls_prob": prob, "loc_pred": loc, "anchor": anchor}
    for i, attrs in enumerate(CASES):
        out = mx.nd.contrib.MultiBoxDetection(mx.nd.array(prob), mx.nd.array(loc), mx.nd.array(anchor), **attrs)
        arrays[f"attrs_{i}"] = np.array(json.dumps(attrs))
        arrays[f"out_{i}"] = out.asnumpy()
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, "detection.npz"), **arrays)


if __name__ == "__main__":
    main()
