"""Write _contrib_box_nms fixtures with real MXNet 1.9.1: outputs and input gradients of
mx.nd.contrib.box_nms for several attribute sets on one batch of random boxes.

Run with the MXNet venv (see tests/data/README.md):
    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_box_nms_fixtures.py

box_nms/cases.npz   data (2, 3, 12, 6) rows [id, score, xmin, ymin, xmax, ymax] with distinct scores
                    (MXNet's order among equal scores is not specified); per case i: attrs_i (a JSON
                    string), ograd_i, out_i (forward) and grad_i (the gradient for ograd_i)
Values come from numpy.random.RandomState(1), so reruns reproduce the file.
"""
import json
import os

import mxnet as mx
import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "box_nms")
CASES = [dict(), dict(overlap_thresh=0.3, id_index=0), dict(overlap_thresh=0.3, id_index=0, force_suppress=True),
         dict(valid_thresh=0.4, topk=5), dict(id_index=0, background_id=1, overlap_thresh=0.2),
         dict(in_format="center", out_format="corner", overlap_thresh=0.2), dict(out_format="center")]


def main():
    r = np.random.RandomState(1)
    d = np.zeros((2, 3, 12, 6), np.float32)
    d[..., 0] = r.randint(0, 3, size=d.shape[:-1])
    d[..., 1] = r.permutation(2 * 3 * 12).reshape(2, 3, 12) / 72.0
    xy = r.uniform(0, 1, size=d.shape[:-1] + (2,))
    wh = r.uniform(0.1, 0.5, size=d.shape[:-1] + (2,))
    d[..., 2:4] = xy
    d[..., 4:6] = xy + wh
    arrays = {"data": d}
    for i, attrs in enumerate(CASES):
        x = mx.nd.array(d)
        x.attach_grad()
        with mx.autograd.record():
            y = mx.nd.contrib.box_nms(x, **attrs)
        og = r.uniform(size=d.shape).astype(np.float32)
        y.backward(mx.nd.array(og))
        arrays.update({f"attrs_{i}": np.array(json.dumps(attrs)), f"ograd_{i}": og, f"out_{i}": y.asnumpy(),
                       f"grad_{i}": x.grad.asnumpy()})
    os.makedirs(OUT, exist_ok=True)
    np.savez(os.path.join(OUT, "cases.npz"), **arrays)


if __name__ == "__main__":
    main()
