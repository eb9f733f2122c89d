"""Record NN-operator fixtures from real MXNet 1.9.1 (run with the anchors venv, not with ember).

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_op_fixtures.py

Writes one small .npz per case under tests/data/ops/: the op name, its attributes
(as MXNet strings), whether it ran in training mode, the inputs, aux states before
and after one forward+backward, the visible outputs, the head gradient and the
input gradients MXNet computed for it.  tests/ops/test_nn_mxnet_fixtures.py replays them.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

# MXNet's reference CPU kernels: its oneDNN path rejects some valid cases (grouped deconvolution)
os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")
import mxnet as mx  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops")
R = np.random.default_rng(20261203)


def randn(*shape, scale=1.0):
    return (R.standard_normal(shape) * scale).astype(np.float32)


def rand(*shape, lo=0.0, hi=1.0):
    return R.uniform(lo, hi, size=shape).astype(np.float32)


def rnn_param_size(mode, layers, h, i, bi):
    g = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}[mode]
    d = 2 if bi else 1
    return sum(d * (g * h * ((i if l == 0 else d * h) + h) + 2 * g * h) for l in range(layers))


def cases():
    """(case name, op, inputs, attrs, aux, is_train, grad input indices)."""
    c = []
    # FullyConnected
    c.append(("fc_flatten", "FullyConnected", [randn(4, 3, 2), randn(5, 6), randn(5)], {"num_hidden": 5}, [], False, [0, 1, 2]))
    c.append(("fc_noflatten_nobias", "FullyConnected", [randn(2, 3, 4), randn(6, 4)],
              {"num_hidden": 6, "flatten": False, "no_bias": True}, [], False, [0, 1]))
    # Convolution
    c.append(("conv2d_pad", "Convolution", [randn(2, 3, 7, 6), randn(4, 3, 3, 3), randn(4)],
              {"kernel": (3, 3), "num_filter": 4, "pad": (1, 1)}, [], False, [0, 1, 2]))
    c.append(("conv2d_stride_dilate_group", "Convolution", [randn(2, 4, 9, 8), randn(6, 2, 3, 2)],
              {"kernel": (3, 2), "num_filter": 6, "stride": (2, 1), "dilate": (2, 2), "pad": (1, 0),
               "num_group": 2, "no_bias": True}, [], False, [0, 1]))
    c.append(("conv1d", "Convolution", [randn(2, 3, 10), randn(4, 3, 3), randn(4)],
              {"kernel": (3,), "num_filter": 4, "stride": (2,), "pad": (1,)}, [], False, [0, 1, 2]))
    c.append(("conv2d_1x1_stride2", "Convolution", [randn(2, 6, 7, 7), randn(4, 6, 1, 1)],
              {"kernel": (1, 1), "num_filter": 4, "stride": (2, 2), "no_bias": True}, [], False, [0, 1]))
    c.append(("conv2d_depthwise", "Convolution", [randn(2, 4, 6, 5), randn(4, 1, 3, 3), randn(4)],
              {"kernel": (3, 3), "num_filter": 4, "num_group": 4, "pad": (1, 1), "stride": (2, 1)}, [], False, [0, 1, 2]))
    # Deconvolution
    c.append(("deconv2d_stride_adj", "Deconvolution", [randn(2, 3, 4, 5), randn(3, 4, 3, 3), randn(4)],
              {"kernel": (3, 3), "num_filter": 4, "stride": (2, 2), "pad": (1, 1), "adj": (1, 1), "no_bias": False},
              [], False, [0, 1, 2]))
    c.append(("deconv2d_target_group", "Deconvolution", [randn(1, 4, 3, 3), randn(4, 3, 4, 4)],
              {"kernel": (4, 4), "num_filter": 6, "stride": (2, 2), "num_group": 2, "target_shape": (7, 6)},
              [], False, [0, 1]))
    c.append(("deconv1d", "Deconvolution", [randn(2, 3, 5), randn(3, 2, 3)],
              {"kernel": (3,), "num_filter": 2, "stride": (2,), "pad": (1,)}, [], False, [0, 1]))
    # Pooling
    x = randn(2, 3, 7, 6)
    c.append(("pool_max_valid", "Pooling", [x], {"kernel": (3, 2), "stride": (2, 2), "pool_type": "max"}, [], False, [0]))
    c.append(("pool_max_full_pad", "Pooling", [x], {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1),
                                                    "pool_type": "max", "pooling_convention": "full"}, [], False, [0]))
    c.append(("pool_avg_full_incl", "Pooling", [x], {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1),
                                                     "pool_type": "avg", "pooling_convention": "full"}, [], False, [0]))
    c.append(("pool_avg_excl", "Pooling", [x], {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1),
                                                "pool_type": "avg", "count_include_pad": False}, [], False, [0]))
    c.append(("pool_avg_full_excl", "Pooling", [x], {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1),
                                                     "pool_type": "avg", "pooling_convention": "full",
                                                     "count_include_pad": False}, [], False, [0]))
    c.append(("pool_sum", "Pooling", [x], {"kernel": (2, 2), "stride": (1, 2), "pool_type": "sum"}, [], False, [0]))
    c.append(("pool_global_avg", "Pooling", [x], {"kernel": (1, 1), "global_pool": True, "pool_type": "avg"}, [], False, [0]))
    c.append(("pool_global_max", "Pooling", [x], {"kernel": (1, 1), "global_pool": True, "pool_type": "max"}, [], False, [0]))
    c.append(("pool1d_max", "Pooling", [randn(2, 3, 9)], {"kernel": (3,), "stride": (2,), "pool_type": "max"}, [], False, [0]))
    c.append(("pool_lp2", "Pooling", [rand(2, 2, 4, 4, lo=0.1)], {"kernel": (2, 2), "stride": (2, 2), "pool_type": "lp",
                                                                  "p_value": 2}, [], False, [0]))
    # BatchNorm
    bx = randn(4, 3, 2, 3)
    for name, attrs, train in [("bn_train", {"fix_gamma": False}, True),
                               ("bn_train_fixgamma", {}, True),
                               ("bn_eval", {"fix_gamma": False}, False),
                               ("bn_global_stats_train", {"fix_gamma": False, "use_global_stats": True}, True),
                               ("bn_output_mean_var", {"fix_gamma": False, "output_mean_var": True}, True),
                               ("bn_axis_last_momentum", {"fix_gamma": False, "axis": -1, "momentum": 0.7, "eps": 1e-5}, True)]:
            ch = bx.shape[attrs.get("axis", 1)]
            c.append((name, "BatchNorm", [bx, rand(ch, lo=0.5, hi=1.5), randn(ch)], attrs,
                      [randn(ch, scale=0.1), rand(ch, lo=0.5, hi=1.5)], train, [0, 1, 2]))
    c.append(("layernorm_last", "LayerNorm", [randn(3, 4, 5), rand(5, lo=0.5, hi=1.5), randn(5)], {}, [], False, [0, 1, 2]))
    c.append(("layernorm_axis1", "LayerNorm", [randn(3, 4, 5), rand(4, lo=0.5, hi=1.5), randn(4)],
              {"axis": 1, "eps": 1e-3}, [], False, [0, 1, 2]))
    # Activations
    for act in ("relu", "sigmoid", "tanh", "softrelu", "softsign"):
        c.append((f"act_{act}", "Activation", [randn(3, 4)], {"act_type": act}, [], False, [0]))
    for act, extra in (("leaky", {"slope": 0.1}), ("elu", {"slope": 0.7}), ("selu", {}), ("gelu", {}), ("rrelu", {})):
        c.append((f"leaky_{act}", "LeakyReLU", [randn(3, 4)], dict(act_type=act, **extra), [], False, [0]))
    c.append(("leaky_prelu", "LeakyReLU", [randn(3, 4, 2), rand(4)], {"act_type": "prelu"}, [], False, [0, 1]))
    # softmax family
    c.append(("softmax_axis1_temp", "softmax", [randn(2, 4, 3)], {"axis": 1, "temperature": 2.0}, [], False, [0]))
    c.append(("log_softmax_last", "log_softmax", [randn(2, 4, 3)], {}, [], False, [0]))
    c.append(("softmax_use_length", "softmax", [randn(3, 5), np.array([2, 5, 1], np.int32)],
              {"use_length": True}, [], False, [0]))
    c.append(("softmax_activation_channel", "SoftmaxActivation", [randn(2, 4, 3)], {"mode": "channel"}, [], False, [0]))
    # 2-D only: for >2-D data MXNet's instance-mode backward sums over axis 1 while its forward uses the last axis
    c.append(("softmax_activation_instance", "SoftmaxActivation", [randn(3, 5)], {}, [], False, [0]))
    lab = np.array([0, 3, 1, 2, 3], dtype=np.float32)
    c.append(("softmaxout_plain", "SoftmaxOutput", [randn(5, 4), lab], {"grad_scale": 0.5}, [], True, [0]))
    c.append(("softmaxout_ignore_valid", "SoftmaxOutput", [randn(5, 4), np.array([0, -1, 1, 2, -1], np.float32)],
              {"use_ignore": True, "normalization": "valid"}, [], True, [0]))
    c.append(("softmaxout_multi_batch", "SoftmaxOutput", [randn(2, 3, 2, 2), np.array([[[0, 1], [2, 1]], [[2, 2], [0, 1]]], np.float32)],
              {"multi_output": True, "normalization": "batch"}, [], True, [0]))
    c.append(("softmaxout_preserve", "SoftmaxOutput", [randn(2, 3, 4), np.array([[0, 1, 3], [2, 2, 0]], np.float32)],
              {"preserve_shape": True}, [], True, [0]))
    c.append(("softmaxout_smooth", "SoftmaxOutput", [randn(5, 4), lab], {"smooth_alpha": 0.2}, [], True, [0]))
    c.append(("softmaxout_multi_null_label3", "SoftmaxOutput", [randn(2, 3, 4), np.array([[0, 1, 2, 2], [1, 0, 0, 2]], np.float32)],
              {"multi_output": True, "grad_scale": 2.0}, [], True, [0]))
    c.append(("softmaxout_prob_label", "SoftmaxOutput", [randn(3, 4), rand(3, 4)], {"normalization": "batch"}, [], True, [0]))
    for op in ("LinearRegressionOutput", "LogisticRegressionOutput", "MAERegressionOutput"):
        c.append((op, op, [randn(4, 3), randn(4, 3)], {"grad_scale": 2.0}, [], True, [0]))
    c.append(("linreg_label_1d", "LinearRegressionOutput", [randn(4, 1), randn(4)], {}, [], True, [0]))
    c.append(("makeloss_batch", "MakeLoss", [randn(4, 3)], {"normalization": "batch", "grad_scale": 3.0}, [], True, [0]))
    c.append(("makeloss_valid", "MakeLoss", [randn(4, 3)], {"normalization": "valid", "valid_thresh": 0.1}, [], True, [0]))
    c.append(("blockgrad", "BlockGrad", [randn(3, 2)], {}, [], True, [0]))
    c.append(("embedding", "Embedding", [np.array([[0, 2, 2], [4, 1, 0]], np.float32), randn(5, 3)],
              {"input_dim": 5, "output_dim": 3}, [], True, [1]))
    # RNN
    for name, mode, layers, bi, so in [("rnn_lstm_2l_bi", "lstm", 2, True, True), ("rnn_gru_1l", "gru", 1, False, True),
                                       ("rnn_gru_2l_bi", "gru", 2, True, False), ("rnn_tanh_2l", "rnn_tanh", 2, False, True),
                                       ("rnn_relu_1l_bi", "rnn_relu", 1, True, False), ("rnn_lstm_1l", "lstm", 1, False, False)]:
        t, n, i, h = 4, 2, 3, 5
        d = 2 if bi else 1
        ins = [randn(t, n, i), randn(rnn_param_size(mode, layers, h, i, bi), scale=0.4), randn(layers * d, n, h)]
        if mode == "lstm":
            ins.append(randn(layers * d, n, h))
        c.append((name, "RNN", ins, {"mode": mode, "num_layers": layers, "bidirectional": bi, "state_size": h,
                                     "state_outputs": so}, [], True, list(range(len(ins)))))
    # no lstm_state_clip case: MXNet 1.9.1 ignores it on CPU (a cuDNN-only feature); ember clips
    return c


def record(name, op, inputs, attrs, aux, is_train, grad_idx):
    nd_in = [mx.nd.array(x, dtype=x.dtype) for x in inputs]
    nd_aux = [mx.nd.array(a) for a in aux]
    for k in grad_idx:
        nd_in[k].attach_grad()
    with mx.autograd.record(train_mode=is_train):
        res = getattr(mx.nd, op)(*nd_in, *nd_aux, **attrs)
    outs = list(res) if isinstance(res, (list, tuple)) else [res]
    head = [R.standard_normal(o.shape).astype(np.float32) for o in outs]
    mx.autograd.backward(outs, [mx.nd.array(g) for g in head])
    data = {"op": np.array(op), "attrs": np.array(json.dumps({k: str(v) for k, v in attrs.items()})),
            "is_train": np.array(is_train), "grad_idx": np.array(grad_idx, dtype=np.int64)}
    for k, x in enumerate(inputs):
        data[f"in_{k}"] = x
    for k, a in enumerate(aux):
        data[f"aux_{k}"] = a
        data[f"aux_after_{k}"] = nd_aux[k].asnumpy()
    for k, (o, g) in enumerate(zip(outs, head)):
        data[f"out_{k}"] = o.asnumpy()
        data[f"head_{k}"] = g
    for k in grad_idx:
        data[f"grad_{k}"] = nd_in[k].grad.asnumpy()
    np.savez_compressed(os.path.join(HERE, f"{name}.npz"), **data)


# MXNet's reference RNN kernel fails its own output-count check when oneDNN is off: record those with it on
NEEDS_ONEDNN = "RNN"


def main():
    os.makedirs(HERE, exist_ok=True)
    only = set(sys.argv[1:])
    onednn = os.environ["MXNET_MKLDNN_ENABLED"] == "1"
    if not only and not onednn:
        names = [c[0] for c in cases() if c[1] == NEEDS_ONEDNN]
        subprocess.run([sys.executable, os.path.abspath(__file__), *names], check=True,
                       env=dict(os.environ, MXNET_MKLDNN_ENABLED="1"))
    for case in cases():
        if (only and case[0] not in only) or (not only and case[1] == NEEDS_ONEDNN):
            continue
        try:
            record(*case)
            print("recorded", case[0])
        except mx.base.MXNetError as e:  # keep going: report which cases MXNet itself rejects
            print("FAILED", case[0], str(e)[-600:])


if __name__ == "__main__":
    main()
