"""Record gluon.nn / gluon.contrib.nn layer fixtures from real MXNet 1.9.1 (run with the anchors venv).

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_gluon_nn_fixtures.py [CASE ...]

For each case (a layer built by a Python expression that ember evaluates the same way) one
`CASE.npz` in tests/data/gluon_nn/: the expression, the layer's repr before and after its first
call, its parameter names/shapes/grad_reqs in collect_params() order, the parameter values it
was given (numpy.random.default_rng(20261205)), the input, the output in predict mode, the
output and head/input/parameter gradients of one training-mode (autograd.record) step, and
the parameters after it (running statistics).  Replayed by tests/gluon/test_nn_fixtures.py.

It also exports hybridized networks made of these layers (`export-NAME-symbol.json`,
`export-NAME-0000.params`, `export-NAME-io.npz` with an input and MXNet's predict-mode output),
which tests/gluon/test_nn_fixtures.py loads with ember's SymbolBlock.imports.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

os.environ.setdefault("MXNET_MKLDNN_ENABLED", "0")   # reference kernels (oneDNN rejects grouped deconvolution)
import mxnet as mx  # noqa: E402
from mxnet.gluon import nn  # noqa: E402,F401  (used by the case expressions)
from mxnet.gluon.contrib import nn as cnn  # noqa: E402,F401

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gluon_nn")


def stack(container, make_children):
    """container with make_children()'s layers added inside its name scope (the usual Gluon idiom)."""
    with container.name_scope():
        container.add(*make_children())
    return container


# (case, expression, input shape, input kind: 'randn' | 'index<N>', deterministic in training mode)
CASES = [
    ("dense_relu", "nn.Dense(5, activation='relu')", (2, 3, 4), "randn", True),
    ("dense_noflatten_nobias", "nn.Dense(6, use_bias=False, flatten=False, in_units=4)", (2, 3, 4), "randn", True),
    ("conv1d", "nn.Conv1D(4, 3, strides=2, padding=1)", (2, 3, 9), "randn", True),
    ("conv2d_group_act", "nn.Conv2D(6, (3, 2), strides=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2, "
                         "activation='sigmoid')", (2, 4, 7, 6), "randn", True),
    ("conv3d", "nn.Conv3D(4, 2, padding=1, in_channels=2, use_bias=False)", (1, 2, 3, 4, 3), "randn", True),
    ("conv1d_transpose", "nn.Conv1DTranspose(3, 3, strides=2, padding=1, output_padding=1)", (2, 4, 5), "randn", True),
    ("conv2d_transpose_group", "nn.Conv2DTranspose(4, (3, 3), strides=(2, 2), padding=(1, 1), output_padding=(1, 0), "
                               "groups=2, in_channels=4)", (1, 4, 3, 4), "randn", True),
    ("conv3d_transpose", "nn.Conv3DTranspose(2, 2, strides=2, in_channels=3)", (1, 3, 2, 2, 3), "randn", True),
    ("maxpool1d_ceil", "nn.MaxPool1D(3, 2, 1, ceil_mode=True)", (2, 3, 10), "randn", True),
    ("maxpool2d", "nn.MaxPool2D((3, 2), strides=(2, 1), padding=(1, 0))", (2, 3, 7, 6), "randn", True),
    ("maxpool3d", "nn.MaxPool3D(2)", (1, 2, 4, 4, 6), "randn", True),
    ("avgpool1d_excl", "nn.AvgPool1D(3, 2, 1, count_include_pad=False)", (2, 3, 10), "randn", True),
    ("avgpool2d_ceil", "nn.AvgPool2D(3, 2, 1, ceil_mode=True)", (2, 3, 7, 6), "randn", True),
    ("avgpool3d", "nn.AvgPool3D((2, 3, 2), padding=1)", (1, 2, 4, 5, 4), "randn", True),
    ("maxpool2d_nhwc", "nn.MaxPool2D(3, 2, layout='NHWC', ceil_mode=True)", (1, 7, 6, 2), "randn", True),
    ("avgpool1d_nwc", "nn.AvgPool1D(2, layout='NWC')", (2, 6, 3), "randn", True),
    ("globalavgpool3d_ndhwc", "nn.GlobalAvgPool3D(layout='NDHWC')", (1, 2, 3, 4, 2), "randn", True),
    ("globalmaxpool1d", "nn.GlobalMaxPool1D()", (2, 3, 5), "randn", True),
    ("globalmaxpool2d", "nn.GlobalMaxPool2D()", (2, 3, 4, 5), "randn", True),
    ("globalmaxpool3d", "nn.GlobalMaxPool3D()", (1, 2, 3, 4, 5), "randn", True),
    ("globalavgpool1d", "nn.GlobalAvgPool1D()", (2, 3, 5), "randn", True),
    ("globalavgpool2d", "nn.GlobalAvgPool2D()", (2, 3, 4, 5), "randn", True),
    ("globalavgpool3d", "nn.GlobalAvgPool3D()", (1, 2, 3, 4, 5), "randn", True),
    ("batchnorm", "nn.BatchNorm(momentum=0.8, epsilon=1e-3)", (4, 3, 2, 2), "randn", True),
    ("batchnorm_axis_last_fixed", "nn.BatchNorm(axis=-1, scale=False, center=False, in_channels=3)", (4, 2, 3),
     "randn", True),
    ("batchnorm_global_stats", "nn.BatchNorm(use_global_stats=True)", (3, 2, 4), "randn", True),
    ("batchnormrelu", "nn.BatchNormReLU(momentum=0.6)", (4, 3, 2, 2), "randn", True),
    ("instancenorm", "nn.InstanceNorm()", (2, 3, 4, 5), "randn", True),
    ("instancenorm_axis2_scale", "nn.InstanceNorm(axis=2, scale=True, epsilon=1e-3)", (2, 3, 4, 5), "randn", True),
    ("layernorm", "nn.LayerNorm()", (2, 3, 4), "randn", True),
    ("layernorm_axis1", "nn.LayerNorm(axis=1, center=False, in_channels=3)", (2, 3, 4), "randn", True),
    ("groupnorm", "nn.GroupNorm(num_groups=2)", (2, 4, 3, 3), "randn", True),
    ("embedding", "nn.Embedding(10, 4)", (2, 3), "index10", True),
    ("flatten", "nn.Flatten()", (2, 3, 4), "randn", True),
    ("dropout", "nn.Dropout(0.4, axes=(1,))", (3, 4, 5), "randn", False),
    ("dropout_zero", "nn.Dropout(0.0)", (3, 4), "randn", True),
    ("act_relu", "nn.Activation('relu')", (3, 4), "randn", True),
    ("act_sigmoid", "nn.Activation('sigmoid')", (3, 4), "randn", True),
    ("act_tanh", "nn.Activation('tanh')", (3, 4), "randn", True),
    ("act_softrelu", "nn.Activation('softrelu')", (3, 4), "randn", True),
    ("act_softsign", "nn.Activation('softsign')", (3, 4), "randn", True),
    ("leakyrelu", "nn.LeakyReLU(0.1)", (3, 4), "randn", True),
    ("prelu", "nn.PReLU()", (3, 4, 2), "randn", True),
    ("prelu_channels", "nn.PReLU(in_channels=4)", (3, 4, 2), "randn", True),
    ("elu", "nn.ELU(0.5)", (3, 4), "randn", True),
    ("selu", "nn.SELU()", (3, 4), "randn", True),
    ("gelu", "nn.GELU()", (3, 4), "randn", True),
    ("swish", "nn.Swish(1.5)", (3, 4), "randn", True),
    ("reflectionpad2d", "nn.ReflectionPad2D(2)", (1, 2, 4, 5), "randn", True),
    ("lambda_name", "nn.Lambda('tanh')", (3, 4), "randn", True),
    ("hybridlambda_name", "nn.HybridLambda('tanh')", (3, 4), "randn", True),
    ("hybridlambda_fn", "nn.HybridLambda(lambda F, x: F.LeakyReLU(x, slope=0.1))", (3, 4), "randn", True),
    ("sequential", "stack(nn.Sequential(), lambda: [nn.Dense(3, activation='relu'), nn.Dense(2)])", (2, 4),
     "randn", True),
    ("hybridsequential_cnn", "stack(nn.HybridSequential(), lambda: [nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), "
                             "nn.Activation('relu'), nn.MaxPool2D(), nn.Flatten(), nn.Dense(3)])", (2, 3, 6, 6),
     "randn", True),
    ("concurrent", "stack(cnn.Concurrent(axis=1), lambda: [nn.Dense(3), nn.Dense(2), cnn.Identity()])", (2, 4),
     "randn", True),
    ("hybridconcurrent", "stack(cnn.HybridConcurrent(axis=1), lambda: [nn.Dense(3), cnn.Identity()])", (2, 4),
     "randn", True),
    ("identity", "cnn.Identity()", (2, 3), "randn", True),
    ("syncbatchnorm", "cnn.SyncBatchNorm(num_devices=1, momentum=0.7)", (4, 3, 2, 2), "randn", True),
    ("pixelshuffle1d", "cnn.PixelShuffle1D(2)", (1, 4, 3), "randn", True),
    ("pixelshuffle2d", "cnn.PixelShuffle2D((2, 3))", (1, 12, 2, 3), "randn", True),
    ("pixelshuffle3d", "cnn.PixelShuffle3D(2)", (1, 16, 2, 1, 2), "randn", True),
]
# Networks exported with HybridBlock.export (oneDNN on: BatchNormReLU needs it)
EXPORTS = [
    ("net2d", "stack(nn.HybridSequential(), lambda: [nn.Conv2D(8, 3, padding=1, activation='relu'), nn.BatchNorm(), "
              "nn.BatchNormReLU(), nn.MaxPool2D(3, 2, ceil_mode=True), nn.Conv2DTranspose(8, 3, strides=2, "
              "output_padding=1), nn.InstanceNorm(scale=True), nn.GroupNorm(4), nn.AvgPool2D(3, 1, 1, "
              "count_include_pad=False), nn.ReflectionPad2D(1), nn.PReLU(), cnn.PixelShuffle2D(2), "
              "nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dense(5, activation='tanh'), nn.Dropout(0.5), nn.LayerNorm(), "
              "nn.ELU(0.5), nn.SELU(), nn.GELU(), nn.Swish(), nn.LeakyReLU(0.2), nn.Dense(3)])", (2, 3, 9, 8)),
    ("net3d", "stack(nn.HybridSequential(), lambda: [nn.Conv3D(4, 2, padding=1), nn.MaxPool3D(2), "
              "nn.AvgPool3D(2, 1, ceil_mode=True), nn.Conv3DTranspose(3, 2, strides=2), nn.GlobalMaxPool3D(), "
              "nn.Flatten(), nn.Dense(2)])", (2, 2, 5, 6, 5)),
    ("net1d", "stack(nn.HybridSequential(), lambda: [nn.Conv1D(6, 3, strides=2, groups=2), nn.AvgPool1D(2), "
              "nn.Conv1DTranspose(4, 3, strides=2), cnn.PixelShuffle1D(2), nn.GlobalMaxPool1D(), nn.Flatten(), "
              "stack(cnn.HybridConcurrent(axis=1), lambda: [nn.Dense(3), cnn.Identity()])])", (2, 4, 17)),
]


def export(name, expr, shape):
    rng = np.random.default_rng(20261206)
    mx.random.seed(20261206)  # the Xavier initial weights
    with mx.name.NameManager():
        net = eval(expr)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(rng.standard_normal(shape).astype(np.float32))
    net(x)
    for p in net.collect_params().values():  # non-trivial statistics and scales
        if p.name.endswith(("running_var", "gamma")):
            p.set_data(mx.nd.array(rng.uniform(0.5, 1.5, p.shape)))
        elif p.name.endswith(("running_mean", "beta")):
            p.set_data(mx.nd.array(rng.standard_normal(p.shape) * 0.1))
    net.hybridize()
    y = net(x)
    net.export(os.path.join(HERE, f"export-{name}"))
    np.savez_compressed(os.path.join(HERE, f"export-{name}-io.npz"), x=x.asnumpy(), y=y.asnumpy())


# MXNet's reference CPU kernels have no 3-D deconvolution and no BatchNormWithReLU: record them with oneDNN on
NEEDS_ONEDNN = ("conv3d_transpose", "batchnormrelu")


def make_input(rng, shape, kind):
    if kind.startswith("index"):
        return rng.integers(0, int(kind[5:]), size=shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def param_value(rng, name, shape):
    if name.endswith(("running_var", "gamma")):
        return rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
    return (rng.standard_normal(shape) * 0.5).astype(np.float32)


def record(case, expr, shape, kind, deterministic):
    rng = np.random.default_rng(20261205)
    with mx.name.NameManager():
        net = eval(expr)
    repr_before = repr(net)
    net.initialize()
    x = mx.nd.array(make_input(rng, shape, kind))
    net(x)  # finishes deferred initialization
    params = net.collect_params()
    names = list(params.keys())
    values = {n: param_value(rng, n, params[n].shape) for n in names}
    for n in names:
        params[n].set_data(mx.nd.array(values[n]))
    y_pred = net(x).asnumpy()
    if kind == "randn":  # (index inputs have no gradient)
        x.attach_grad()
    with mx.autograd.record():
        y = net(x)
    head = rng.standard_normal(y.shape).astype(np.float32)
    y.backward(mx.nd.array(head))
    data = {"expr": np.array(expr), "repr_before": np.array(repr_before), "repr_after": np.array(repr(net)),
            "names": np.array(json.dumps(names)), "deterministic": np.array(deterministic),
            "grad_reqs": np.array(json.dumps([params[n].grad_req for n in names])),
            "x": x.asnumpy(), "y_pred": y_pred, "y_train": y.asnumpy(), "head": head,
            "x_grad": x.grad.asnumpy() if kind == "randn" else np.zeros(0, np.float32)}
    for i, n in enumerate(names):
        data[f"param_{i}"] = values[n]
        data[f"param_after_{i}"] = params[n].data().asnumpy()
        if params[n].grad_req != "null":
            data[f"grad_{i}"] = params[n].grad().asnumpy()
    np.savez_compressed(os.path.join(HERE, f"{case}.npz"), **data)


def main():
    os.makedirs(HERE, exist_ok=True)
    only = set(sys.argv[1:])
    if not only and os.environ["MXNET_MKLDNN_ENABLED"] != "1":
        subprocess.run([sys.executable, os.path.abspath(__file__), *NEEDS_ONEDNN, *[e[0] for e in EXPORTS]],
                       check=True, env=dict(os.environ, MXNET_MKLDNN_ENABLED="1"))
    for name, expr, shape in EXPORTS:
        if name in only:
            export(name, expr, shape)
            print("exported", name)
    for case in CASES:
        if (only and case[0] not in only) or (not only and case[0] in NEEDS_ONEDNN):
            continue
        try:
            record(*case)
            print("recorded", case[0])
        except mx.base.MXNetError as e:
            print("FAILED", case[0], str(e)[-600:])


if __name__ == "__main__":
    main()
