"""Hybridized networks made of every gluon.nn / contrib layer export to files that real MXNet 1.9.1
loads (SymbolBlock.imports) and runs to the same outputs: ember writes MXNet's operator names and
attributes for each layer. Skipped without the MXNet venv. (MXNet runs BatchNormReLU and 3-D
Deconvolution only through oneDNN, on by default.)"""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

import ember as mx
from ember import nd
from ember.gluon import nn
from ember.gluon.contrib import nn as cnn

MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")
pytestmark = pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="MXNet 1.9.1 venv not installed")


def _concurrent():
    block = cnn.HybridConcurrent(axis=1)
    with block.name_scope():
        block.add(nn.Dense(3), cnn.Identity())
    return block


def _net(layers):
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(*layers())
    return net


NETS = {
    "net2d": (lambda: [nn.Conv2D(8, 3, padding=1, activation="relu"), nn.BatchNorm(), nn.BatchNormReLU(), nn.LeakyReLU(0.1),
                       nn.MaxPool2D(3, 2, ceil_mode=True), nn.Conv2DTranspose(8, 3, strides=2, output_padding=1),
                       nn.InstanceNorm(scale=True), nn.GroupNorm(2), cnn.SyncBatchNorm(num_devices=1), nn.AvgPool2D(3, 1, 1, count_include_pad=False),
                       nn.ReflectionPad2D(1), nn.PReLU(), cnn.PixelShuffle2D(2), nn.GlobalAvgPool2D(),
                       nn.Flatten(), nn.Dense(6, activation="tanh"), nn.Dropout(0.3), nn.LayerNorm(), nn.ELU(0.5),
                       nn.SELU(), nn.GELU(), nn.Swish(), nn.Dense(3)], (2, 3, 9, 8)),
    "net3d": (lambda: [nn.Conv3D(4, 2, padding=1), nn.MaxPool3D(2), nn.AvgPool3D(2, 1, ceil_mode=True),
                       nn.Conv3DTranspose(3, 2, strides=2), nn.GlobalMaxPool3D(), nn.Flatten(),
                       cnn.Identity(), nn.Dense(2)], (2, 2, 5, 6, 5)),
    "net1d": (lambda: [nn.Conv1D(6, 3, strides=2, groups=2), nn.AvgPool1D(2), nn.Conv1DTranspose(4, 3, strides=2),
                       cnn.PixelShuffle1D(2), nn.GlobalMaxPool1D(), nn.Flatten(),
                       nn.Activation("softrelu")], (2, 4, 17)),
    "embed_concat": (lambda: [nn.Embedding(10, 4), nn.Flatten(), _concurrent(), nn.Activation("sigmoid")], (2, 3)),
}


@pytest.mark.parametrize("name", sorted(NETS))
def test_mxnet_runs_ember_exported_layers(name, tmp_path):
    layers, shape = NETS[name]
    net = _net(layers)
    net.initialize(mx.init.Xavier())
    rng = np.random.default_rng(3)
    x = (rng.integers(0, 10, shape) if name.startswith("embed") else rng.standard_normal(shape)).astype(np.float32)
    net(nd.array(x))
    for p in net.collect_params().values():  # non-trivial running statistics and scales
        if p.name.endswith(("running_var", "gamma")):
            p.set_data(nd.array(np.random.default_rng(4).uniform(0.5, 1.5, p.shape)))
        elif p.name.endswith(("running_mean", "beta")):
            p.set_data(nd.array(np.random.default_rng(5).standard_normal(p.shape) * 0.1))
    net.hybridize()
    want = net(nd.array(x)).asnumpy()
    net.export(str(tmp_path / "e"))
    np.save(tmp_path / "x.npy", x)
    code = ("import mxnet as mx, numpy as np, sys; d=sys.argv[1]; "
            "b=mx.gluon.SymbolBlock.imports(d+'/e-symbol.json',['data'],d+'/e-0000.params'); "
            "np.save(d+'/out.npy', b(mx.nd.array(np.load(d+'/x.npy'))).asnumpy())")
    res = subprocess.run([MXNET_PYTHON, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-4, atol=1e-5)
