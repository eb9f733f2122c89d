"""Write _contrib_MultiBoxDetection and _contrib_MultiBoxTarget fixtures with real MXNet 1.9.1.

Run with the MXNet venv (see tests/data/README.md):
    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_multibox_fixtures.py

multibox/detection.npz   cls_prob (2, 4, 30) softmax probabilities, loc_pred (2, 120), anchor
                         (1, 30, 4) from MultiBoxPrior; per case i: attrs_i (a JSON string) and
                         out_i, MXNet's MultiBoxDetection output
multibox/target.npz      anchor (1, 48, 4), label (3, 4, 5) (the last batch without ground truth),
                         cls_pred (3, 4, 48); per case i: attrs_i and MXNet's loc_target_i,
                         loc_mask_i, cls_target_i
Values come from numpy.random.RandomState(5) and (6), so reruns reproduce the files.
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
    targets()


TARGET_CASES = [dict(), dict(overlap_threshold=0.3), dict(negative_mining_ratio=3, negative_mining_thresh=0.5),
                dict(negative_mining_ratio=2, minimum_negative_samples=10, ignore_label=-2,
                     variances=(0.2, 0.2, 0.1, 0.1)),
                dict(negative_mining_ratio=0.5, negative_mining_thresh=0.3, overlap_threshold=0.6)]


def targets():
    r = np.random.RandomState(6)
    anchor = mx.nd.contrib.MultiBoxPrior(mx.nd.zeros((1, 1, 4, 4)), sizes=(0.3, 0.6), ratios=(1, 2)).asnumpy()
    n = anchor.shape[1]
    label = np.full((3, 4, 5), -1, np.float32)
    for b, k in ((0, 3), (1, 2)):
        xy = r.uniform(0, 0.6, size=(k, 2))
        wh = r.uniform(0.15, 0.4, size=(k, 2))
        label[b, :k, 0] = r.randint(0, 3, size=k)
        label[b, :k, 1:3] = xy
        label[b, :k, 3:5] = xy + wh
    cls_pred = r.normal(0, 1, size=(3, 4, n)).astype(np.float32)
    arrays = {"anchor": anchor, "label": label, "cls_pred": cls_pred}
    for i, attrs in enumerate(TARGET_CASES):
        loc, mask, cls = mx.nd.contrib.MultiBoxTarget(mx.nd.array(anchor), mx.nd.array(label),
                                                      mx.nd.array(cls_pred), **attrs)
        arrays.update({f"attrs_{i}": np.array(json.dumps(attrs)), f"loc_target_{i}": loc.asnumpy(),
                       f"loc_mask_{i}": mask.asnumpy(), f"cls_target_{i}": cls.asnumpy()})
    np.savez(os.path.join(OUT, "target.npz"), **arrays)


if __name__ == "__main__":
    main()
