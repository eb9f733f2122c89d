"""Record MXNet 1.9.1 reference outputs for ember's model-file tests.

Run with the real MXNet venv (never with ember):

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_model_fixtures.py [NAME ...]

(NAME: a network below, 'optimizers' or 'module'; all of them by default.)

For each gluon model-zoo network it hybridizes the net, sets every parameter and
BatchNorm statistic from `recipe_value` (a deterministic numpy recipe, repeated
in tests/toolkit/model_recipe.py so the ember test can rebuild the same
weights), exports `<name>-symbol.json` / `<name>-0000.params` and records the
inference output for a fixed input in `<name>-io.npz` (keys: data, output).
The .params files of the big nets (resnet18_v1, vgg11) are deleted afterwards:
the ember test writes them itself with `mx.nd.save`.

It also records a few steps of each MXNet optimizer (toolkit-optimizer-steps.npz)
so ember's optimizers are checked against MXNet, not only against numpy, and three
Module training steps of a small LeNet with BatchNorm (toolkit-lenet-bn-*).
"""
from __future__ import annotations

import os
import sys
import zlib

import numpy as np

import mxnet as mx
from mxnet.gluon.model_zoo import vision

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "models")

# name -> (input shape, keep the MXNet-written .params in git)
NETS = {
    "mobilenet0.25": ((2, 3, 32, 32), True),
    "squeezenet1.1": ((1, 3, 224, 224), True),  # its AvgPool2D(13) needs ~224 px
    "resnet18_v1": ((2, 3, 32, 32), False),
    "vgg11": ((1, 3, 32, 32), False),
}
CLASSES = 10


def recipe_value(name: str, shape) -> np.ndarray:
    """The deterministic value of parameter `name` (same code in tests/toolkit/model_recipe.py).

    Seeded by crc32 of the name, so it does not depend on parameter order.
    Weights: He-uniform in (-sqrt(6/fan_in), sqrt(6/fan_in)); biases and BN beta /
    running_mean: uniform(-0.1, 0.1); BN gamma / running_var: uniform(0.5, 1.5).
    """
    rs = np.random.RandomState(zlib.crc32(name.encode()) & 0x7FFFFFFF)
    shape = tuple(int(s) for s in shape)
    if name.endswith(("gamma", "running_var", "moving_var")):
        v = rs.uniform(0.5, 1.5, size=shape)
    elif name.endswith(("beta", "bias", "running_mean", "moving_mean")):
        v = rs.uniform(-0.1, 0.1, size=shape)
    else:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        bound = np.sqrt(6.0 / max(fan_in, 1))
        v = rs.uniform(-bound, bound, size=shape)
    return v.astype(np.float32)


def input_value(shape) -> np.ndarray:
    return np.random.RandomState(1234).uniform(-1, 1, size=shape).astype(np.float32)


def make_net(name: str, shape, keep_params: bool) -> None:
    net = vision.get_model(name, classes=CLASSES)
    net.initialize()
    net.hybridize()
    net(mx.nd.zeros(shape))  # materialise deferred shapes
    for pname, p in net.collect_params().items():
        p.set_data(mx.nd.array(recipe_value(pname, p.shape)))
    data = input_value(shape)
    out = net(mx.nd.array(data)).asnumpy()
    prefix = os.path.join(OUT, name)
    net.export(prefix, epoch=0)
    # The exported names are the symbol's argument names: check the recipe sees the same names.
    saved = mx.nd.load(prefix + "-0000.params")
    for key, arr in saved.items():
        pname = key.split(":", 1)[1]
        assert np.array_equal(arr.asnumpy(), recipe_value(pname, arr.shape)), key
    np.savez_compressed(prefix + "-io.npz", data=data, output=out)
    if not keep_params:
        os.remove(prefix + "-0000.params")
    print(f"{name}: input {shape} output {out.shape} |out|max {np.abs(out).max():.4g}")


# -- optimizer anchors ------------------------------------------------------------
OPT_CASES = {
    "sgd_plain": ("sgd", dict(learning_rate=0.1)),
    "sgd_mom_wd_clip": ("sgd", dict(learning_rate=0.05, momentum=0.9, wd=0.01,
                                    clip_gradient=0.5, rescale_grad=0.5)),
    "adam": ("adam", dict(learning_rate=0.01, wd=0.001)),
    "adam_clip": ("adam", dict(learning_rate=0.02, beta1=0.8, beta2=0.99, epsilon=1e-6,
                               clip_gradient=0.3, rescale_grad=2.0)),
    "rmsprop": ("rmsprop", dict(learning_rate=0.01, gamma1=0.9, wd=0.01)),
    "rmsprop_centered": ("rmsprop", dict(learning_rate=0.01, gamma1=0.95, gamma2=0.9,
                                         centered=True, clip_weights=0.8)),
    "adagrad": ("adagrad", dict(learning_rate=0.1, wd=0.01, eps=1e-6)),
    "sgd_factor_sched": ("sgd", dict(learning_rate=0.1, momentum=0.5,
                                     lr_scheduler=mx.lr_scheduler.FactorScheduler(step=2, factor=0.5))),
}
OPT_STEPS = 5


def make_optimizer_steps() -> None:
    rs = np.random.RandomState(7)
    w0 = rs.uniform(-1, 1, size=(3, 4)).astype(np.float32)
    grads = rs.uniform(-2, 2, size=(OPT_STEPS, 3, 4)).astype(np.float32)
    record = {"w0": w0, "grads": grads}
    for case, (kind, kwargs) in OPT_CASES.items():
        opt = mx.optimizer.create(kind, **kwargs)
        updater = mx.optimizer.get_updater(opt)
        w = mx.nd.array(w0)
        traj = []
        for g in grads:
            updater(0, mx.nd.array(g), w)
            traj.append(w.asnumpy().copy())
        record[case] = np.stack(traj)
    np.savez_compressed(os.path.join(OUT, "toolkit-optimizer-steps.npz"), **record)
    print("optimizer steps:", ", ".join(OPT_CASES))


# -- Module training anchor ------------------------------------------------------------
MODULE_BATCH = (16, 1, 8, 8)
MODULE_STEPS = 3


def lenet_bn_symbol():
    """A small LeNet with BatchNorm, built with mx.sym (the same graph ember loads from the JSON)."""
    data = mx.sym.Variable("data")
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name="conv1")
    x = mx.sym.BatchNorm(x, fix_gamma=False, momentum=0.9, name="bn1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    x = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=16, name="conv2")
    x = mx.sym.Activation(x, act_type="relu", name="relu2")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="pool2")
    x = mx.sym.Flatten(x, name="flatten")
    x = mx.sym.FullyConnected(x, num_hidden=32, name="fc1")
    x = mx.sym.Activation(x, act_type="tanh", name="tanh1")
    x = mx.sym.FullyConnected(x, num_hidden=10, name="fc2")
    return mx.sym.SoftmaxOutput(x, name="softmax")


def make_module_steps() -> None:
    """Three Module SGD-momentum steps (forward_backward + update) on fixed batches."""
    sym = lenet_bn_symbol()
    prefix = os.path.join(OUT, "toolkit-lenet-bn")
    sym.save(prefix + "-symbol.json")
    mod = mx.mod.Module(sym, context=mx.cpu())
    mod.bind(data_shapes=[("data", MODULE_BATCH)], label_shapes=[("softmax_label", MODULE_BATCH[:1])])
    arg_shapes, _, aux_shapes = sym.infer_shape(data=MODULE_BATCH, softmax_label=MODULE_BATCH[:1])
    inputs = ("data", "softmax_label")
    args = {n: mx.nd.array(recipe_value(n, sh)) for n, sh in zip(sym.list_arguments(), arg_shapes) if n not in inputs}
    aux = {n: mx.nd.array(recipe_value(n, sh)) for n, sh in zip(sym.list_auxiliary_states(), aux_shapes)}
    mod.init_params(arg_params=args, aux_params=aux)
    mod.init_optimizer(optimizer="sgd", optimizer_params={"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3})
    rs = np.random.RandomState(99)
    record = {}
    for step in range(MODULE_STEPS):
        data = rs.uniform(0, 1, size=MODULE_BATCH).astype(np.float32)
        label = rs.randint(0, 10, size=MODULE_BATCH[:1]).astype(np.float32)
        batch = mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)])
        mod.forward_backward(batch)
        record[f"output_{step}"] = mod.get_outputs()[0].asnumpy()
        mod.update()
        record[f"data_{step}"], record[f"label_{step}"] = data, label
    arg_after, aux_after = mod.get_params()
    record.update({"arg:" + k: v.asnumpy() for k, v in arg_after.items()})
    record.update({"aux:" + k: v.asnumpy() for k, v in aux_after.items()})
    np.savez_compressed(prefix + "-steps.npz", **record)
    print("module steps: toolkit-lenet-bn")


def main(argv) -> None:
    os.makedirs(OUT, exist_ok=True)
    mx.random.seed(0)
    extras = {"optimizers": make_optimizer_steps, "module": make_module_steps}
    names = argv[1:] or list(NETS) + list(extras)
    for name in names:
        if name in extras:
            extras[name]()
        else:
            shape, keep = NETS[name]
            make_net(name, shape, keep)


if __name__ == "__main__":
    main(sys.argv)
