"""Records MXNet 1.9.1's deformable convolutions (forward: MXNet's CPU kernels have no modulated
backward) on inputs whose sample points reach every boundary case (before row/column 0, inside
(-1, 0), the last row/column, past the image).  Run with the MXNet venv:

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_deformable_fixtures.py

Writes tests/data/deformable/<case>.npz: 'op', 'attrs' (JSON), 'in_<k>' and 'out'; replayed by
tests/ops/test_deformable_conv.py.  Also the two gluon.contrib.cnn layers with random parameters:
tests/data/deformable/layers/<Layer>.params (MXNet's save_parameters) and outputs.npz (the input 'x'
and each layer's output), replayed by tests/gluon/test_contrib_cnn.py.
"""
import json
import os

import numpy as np

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")
import mxnet as mx  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deformable")


def cases(rs):
    out = []
    for name, dg, ng, stride, dil, pad, no_bias in (("dg1", 1, 1, (1, 1), (1, 1), (1, 1), False),
                                                     ("dg2_groups_stride", 2, 2, (2, 1), (1, 1), (1, 0), False),
                                                     ("dilate_nobias", 1, 1, (1, 1), (2, 2), (2, 1), True)):
        n, c, h, w, f, k = 2, 4, 5, 6, 4, (3, 3)
        ho = (h + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1
        wo = (w + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1
        x = rs.uniform(-1, 1, (n, c, h, w)).astype(np.float32)
        off = rs.uniform(-2.5, 2.5, (n, dg * 2 * k[0] * k[1], ho, wo)).astype(np.float32)
        mask = rs.uniform(0, 1, (n, dg * k[0] * k[1], ho, wo)).astype(np.float32)
        wt = rs.uniform(-1, 1, (f, c // ng, *k)).astype(np.float32)
        b = rs.uniform(-1, 1, (f,)).astype(np.float32)
        attrs = {"kernel": k, "stride": stride, "dilate": dil, "pad": pad, "num_filter": f, "num_group": ng,
                 "num_deformable_group": dg, "no_bias": no_bias}
        tail = [] if no_bias else [b]
        out.append((f"modulated_{name}", "ModulatedDeformableConvolution", [x, off, mask, wt] + tail, attrs))
        out.append((f"v1_{name}", "DeformableConvolution", [x, off, wt] + tail, attrs))
    return out


def record_layers():
    from mxnet.gluon.contrib import cnn
    where = os.path.join(HERE, "layers")
    os.makedirs(where, exist_ok=True)
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 4, 7, 6)).astype(np.float32))
    outs = {"x": x.asnumpy()}
    rs = np.random.RandomState(1)
    for cls in ("DeformableConvolution", "ModulatedDeformableConvolution"):
        layer = getattr(cnn, cls)(6, kernel_size=3, padding=1, num_deformable_group=2)
        layer.initialize()
        layer(x)
        for _, p in sorted(layer.collect_params().items()):
            p.set_data(mx.nd.array(rs.uniform(-0.3, 0.3, p.shape).astype(np.float32)))
        layer.save_parameters(os.path.join(where, f"{cls}.params"))
        outs[cls] = layer(x).asnumpy()
        print("recorded layer", cls)
    np.savez_compressed(os.path.join(where, "outputs.npz"), **outs)


def main():
    os.makedirs(HERE, exist_ok=True)
    record_layers()
    for name, op, inputs, attrs in cases(np.random.RandomState(11)):
        res = getattr(mx.nd.contrib, op)(*[mx.nd.array(a) for a in inputs], **attrs)
        data = {"op": np.array(op), "attrs": np.array(json.dumps(attrs)), "out": res.asnumpy()}
        data.update({f"in_{k}": a for k, a in enumerate(inputs)})
        np.savez_compressed(os.path.join(HERE, f"{name}.npz"), **data)
        print("recorded", name)


if __name__ == "__main__":
    main()
