"""Record fixtures for the operators Gluon layers added (3-D Convolution/Deconvolution/Pooling,
InstanceNorm, GroupNorm, SyncBatchNorm, BatchNormWithReLU) from real MXNet 1.9.1.

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_nn_extra_fixtures.py [CASE ...]

Same file format as make_op_fixtures.py (whose `record` it uses), written to tests/data/ops_extra/;
replayed by tests/ops/test_nn_extra_ops.py.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_op_fixtures as base  # noqa: E402  (sets MXNET_MKLDNN_ENABLED=0 before importing mxnet)

base.HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops_extra")
base.R = np.random.default_rng(20261204)
randn, rand = base.randn, base.rand


def cases():
    """(case name, op, inputs, attrs, aux, is_train, grad input indices)."""
    c = []
    c.append(("conv3d_pad_stride_dilate_group", "Convolution", [randn(2, 4, 6, 7, 5), randn(6, 2, 3, 2, 2), randn(6)],
              {"kernel": (3, 2, 2), "num_filter": 6, "stride": (2, 1, 1), "dilate": (1, 2, 1), "pad": (1, 0, 1),
               "num_group": 2}, [], False, [0, 1, 2]))
    c.append(("conv3d_plain_nobias", "Convolution", [randn(1, 3, 4, 5, 4), randn(2, 3, 2, 3, 2)],
              {"kernel": (2, 3, 2), "num_filter": 2, "no_bias": True}, [], False, [0, 1]))
    c.append(("deconv3d_stride_adj", "Deconvolution", [randn(2, 3, 3, 4, 3), randn(3, 2, 3, 3, 2), randn(2)],
              {"kernel": (3, 3, 2), "num_filter": 2, "stride": (2, 2, 1), "pad": (1, 1, 0), "adj": (1, 0, 0),
               "no_bias": False}, [], False, [0, 1, 2]))
    x = randn(2, 3, 5, 6, 4)
    c.append(("pool3d_max_valid", "Pooling", [x], {"kernel": (2, 3, 2), "stride": (2, 2, 1), "pool_type": "max"},
              [], False, [0]))
    c.append(("pool3d_avg_full_pad", "Pooling", [x], {"kernel": (3, 3, 2), "stride": (2, 2, 2), "pad": (1, 1, 1),
                                                      "pool_type": "avg", "pooling_convention": "full"}, [], False, [0]))
    c.append(("pool3d_avg_excl", "Pooling", [x], {"kernel": (3, 3, 3), "stride": (2, 2, 2), "pad": (1, 1, 1),
                                                  "pool_type": "avg", "count_include_pad": False}, [], False, [0]))
    c.append(("pool3d_sum", "Pooling", [x], {"kernel": (2, 2, 2), "stride": (1, 2, 2), "pool_type": "sum"},
              [], False, [0]))
    c.append(("pool3d_global_avg", "Pooling", [x], {"kernel": (1, 1, 1), "global_pool": True, "pool_type": "avg"},
              [], False, [0]))
    c.append(("pool3d_global_max", "Pooling", [x], {"kernel": (1, 1, 1), "global_pool": True, "pool_type": "max"},
              [], False, [0]))
    c.append(("pool2d_nhwc_avg", "Pooling", [randn(2, 7, 6, 3)], {"kernel": (3, 2), "stride": (2, 1), "pad": (1, 0),
                                                               "pool_type": "avg", "layout": "NHWC"}, [], False, [0]))
    c.append(("pool1d_nwc_max", "Pooling", [randn(2, 9, 3)], {"kernel": (3,), "stride": (2,), "pool_type": "max",
                                                            "layout": "NWC", "pooling_convention": "full"},
              [], False, [0]))
    c.append(("pool3d_ndhwc_avg_excl", "Pooling", [randn(1, 4, 5, 4, 2)],
              {"kernel": (2, 3, 2), "stride": (2, 2, 2), "pad": (1, 1, 0), "pool_type": "avg", "layout": "NDHWC",
               "count_include_pad": False}, [], False, [0]))
    c.append(("instancenorm_4d", "InstanceNorm", [randn(2, 3, 4, 5), rand(3, lo=0.5, hi=1.5), randn(3)], {},
              [], True, [0, 1, 2]))
    c.append(("instancenorm_3d_eps", "InstanceNorm", [randn(3, 2, 6), rand(2, lo=0.5, hi=1.5), randn(2)],
              {"eps": 1e-5}, [], True, [0, 1, 2]))
    c.append(("groupnorm_2groups", "GroupNorm", [randn(2, 4, 3, 5), rand(2, lo=0.5, hi=1.5), randn(2)],
              {"num_groups": 2}, [], True, [0, 1, 2]))
    c.append(("groupnorm_1group_mean_var", "GroupNorm", [randn(3, 4, 5), rand(1, lo=0.5, hi=1.5), randn(1)],
              {"eps": 1e-3, "output_mean_var": True}, [], True, [0, 1, 2]))
    bx = randn(4, 3, 2, 3)
    c.append(("syncbn_train", "contrib.SyncBatchNorm", [bx, rand(3, lo=0.5, hi=1.5), randn(3)],
              {"fix_gamma": False, "key": "syncbn0", "momentum": 0.8, "eps": 1e-5},
              [randn(3, scale=0.1), rand(3, lo=0.5, hi=1.5)], True, [0, 1, 2]))
    c.append(("syncbn_eval", "contrib.SyncBatchNorm", [bx, rand(3, lo=0.5, hi=1.5), randn(3)],
              {"fix_gamma": False, "key": "syncbn1"}, [randn(3, scale=0.1), rand(3, lo=0.5, hi=1.5)], False, [0, 1, 2]))
    return c



# MXNet's reference CPU kernels have no 3-D deconvolution and fail 3-D max pooling's backward
# (a TBlob shape check): record those with oneDNN on, in a subprocess.  oneDNN in turn fails
# grouped and target_shape 3-D deconvolutions, so those are checked against a direct reference only.
NEEDS_ONEDNN = ("deconv3d_stride_adj", "pool3d_max_valid")


def main():
    os.makedirs(base.HERE, exist_ok=True)
    only = set(sys.argv[1:])
    if not only and os.environ["MXNET_MKLDNN_ENABLED"] != "1":
        subprocess.run([sys.executable, os.path.abspath(__file__), *NEEDS_ONEDNN], check=True,
                       env=dict(os.environ, MXNET_MKLDNN_ENABLED="1"))
    nd = base.mx.nd
    for name, op, *rest in cases():
        if (only and name not in only) or (not only and name in NEEDS_ONEDNN):
            continue
        if "." in op:  # base.record looks the op up on mx.nd; expose the contrib one there under its dotted name
            setattr(nd, op, getattr(nd.contrib, op.split(".", 1)[1]))
        try:
            base.record(name, op, *rest)
            print("recorded", name)
        except base.mx.base.MXNetError as e:
            print("FAILED", name, str(e)[-600:])


if __name__ == "__main__":
    main()
