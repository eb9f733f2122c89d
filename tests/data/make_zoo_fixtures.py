"""Record MXNet 1.9.1's gluon model zoo for ember's tests (tests/gluon/test_model_zoo.py).

Run with the real MXNet venv (never with ember):

    ~/.cache/ember-anchors/mxnet/bin/python tests/data/make_zoo_fixtures.py [structure] [NAME ...]

Writes into tests/data/model_zoo/:

- `structure.json.gz` (`structure`): for each of the 34 names `vision.get_model` knows, built with
  its defaults inside a fresh `mx.name.NameManager()` (so the first block is numbered 0): the
  block's prefix, `repr(net)`, and per parameter in `collect_params()` order its full name,
  declared shape (0 = unknown before the first call), shape after one inference call on zeros of
  `input_shape` (1x3x224x224, 1x3x299x299 for inceptionv3), dtype and grad_req; and the
  structural names `save_parameters` writes, in its order.  `repr_declared` is the repr before
  the call (unknown input channels), `repr` after it.  The same for the constructor calls in
  VARIANTS (options the names leave at their defaults), keyed by the call's text.
- `NAME.npz` for the representative nets in NETS (built with classes=10 on small inputs): every
  parameter and BatchNorm statistic is set from `recipe_value(structural name, shape)`
  (tests/toolkit/model_recipe.py, imported, so the test rebuilds identical values), then MXNet's
  `save_parameters` writes the file: the npz keeps its SHA-1 and size (`params_sha1`,
  `params_size`; ember must write the very same bytes), the SHA-1 of the input's float32 bytes
  (`data_sha1`; the input is `input_value(shape)`: RandomState(1234) uniform(-1, 1), which the
  test regenerates) and MXNet's inference output (`output`).  For TRAIN_NET it also records one
  training-mode step in float64 (`net.cast('float64')`): `head` (output gradient),
  `train_output`, the gradients `grad:<structural name>` of GRAD_PARAMS and the BatchNorm
  running statistics after the step (`after:<name>`).
- `mobilenetv2_0.25.params`: that net's file as MXNet wrote it (1 MB; the other nets' files
  are rebuilt by the test and checked against the recorded SHA-1 instead of being committed).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys

import numpy as np

import mxnet as mx
from mxnet.gluon.model_zoo import vision

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "model_zoo")
sys.path.insert(0, os.path.join(HERE, "..", "toolkit"))
from model_recipe import recipe_value  # noqa: E402

ALL = ["resnet18_v1", "resnet34_v1", "resnet50_v1", "resnet101_v1", "resnet152_v1",
       "resnet18_v2", "resnet34_v2", "resnet50_v2", "resnet101_v2", "resnet152_v2",
       "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn",
       "alexnet", "inceptionv3", "densenet121", "densenet161", "densenet169", "densenet201",
       "squeezenet1.0", "squeezenet1.1",
       "mobilenet1.0", "mobilenet0.75", "mobilenet0.5", "mobilenet0.25",
       "mobilenetv2_1.0", "mobilenetv2_0.75", "mobilenetv2_0.5", "mobilenetv2_0.25"]

# Constructor options get_model's names leave at their defaults: expression -> input shape.
VARIANTS = {
    "vision.get_resnet(1, 18, thumbnail=True)": (1, 3, 32, 32),
    "vision.get_resnet(2, 50, thumbnail=True, classes=10)": (1, 3, 32, 32),
    "vision.ResNetV1(vision.BottleneckV1, [1, 1], [16, 64, 128], classes=7)": (1, 3, 64, 64),
    "vision.ResNetV2(vision.BasicBlockV2, [1, 2], [16, 16, 32], classes=7, prefix='net_')": (1, 3, 64, 64),
    "vision.DenseNet(16, 8, [2, 3], bn_size=2, dropout=0.2, classes=5)": (1, 3, 224, 224),
    "vision.MobileNetV2(1.5)": (1, 3, 224, 224),
    "vision.MobileNet(0.3, classes=4)": (1, 3, 64, 64),
    "vision.get_vgg(11, batch_norm=True, classes=3)": (1, 3, 32, 32),
    "vision.SqueezeNet('1.0', classes=6)": (1, 3, 224, 224),
    "vision.Inception3(classes=12)": (1, 3, 299, 299),
    "vision.AlexNet(classes=9)": (1, 3, 224, 224),
    "vision.inception.make_aux(7)": (1, 768, 17, 17),
}

# name -> input shape (classes=10).  squeezenet and densenet end with fixed 13x13 / 7x7 average
# pools and inceptionv3 with an 8x8 one, so they need (about) their full input size.
NETS = {
    "resnet18_v1": (2, 3, 32, 32),
    "resnet50_v2": (1, 3, 32, 32),
    "mobilenetv2_0.25": (2, 3, 32, 32),
    "mobilenet0.25": (2, 3, 32, 32),
    "squeezenet1.1": (1, 3, 224, 224),
    "densenet121": (1, 3, 224, 224),
    "vgg11_bn": (1, 3, 32, 32),
    "inceptionv3": (1, 3, 299, 299),
}
COMMITTED = {"mobilenetv2_0.25"}
CLASSES = 10
TRAIN_NET = "mobilenetv2_0.25"
GRAD_PARAMS = ["features.0.weight", "features.1.gamma", "features.5.out.3.weight", "output.0.weight"]


def input_value(shape) -> np.ndarray:
    return np.random.RandomState(1234).uniform(-1, 1, size=shape).astype(np.float32)


def structural(net) -> dict:
    """structural name -> Parameter, in save_parameters' order."""
    return net._collect_params_with_prefix()


def describe(net, shape) -> dict:
    """What the structure test compares: names, shapes and reprs before and after one call."""
    declared = {p.name: list(p.shape) for p in net.collect_params().values()}
    repr_declared = repr(net)
    net.initialize()
    net(mx.nd.zeros(shape))
    params = [[p.name, declared[p.name], list(p.shape), np.dtype(p.dtype).name, p.grad_req]
              for p in net.collect_params().values()]
    return {"prefix": net.prefix, "repr_declared": repr_declared, "repr": repr(net), "input_shape": list(shape),
            "params": params, "structural": [[k, p.name] for k, p in structural(net).items()]}


def make_structure() -> None:
    record = {}
    for name in ALL:
        with mx.name.NameManager():
            net = vision.get_model(name)
        record[name] = describe(net, (1, 3, 299, 299) if name == "inceptionv3" else (1, 3, 224, 224))
        print(f"{name}: {len(record[name]['params'])} parameters")
    for expr, shape in VARIANTS.items():
        with mx.name.NameManager():
            net = eval(expr, {"vision": vision})  # noqa: S307 - our own constant expressions
        record[expr] = describe(net, shape)
        print(f"{expr}: {len(record[expr]['params'])} parameters")
    os.makedirs(OUT, exist_ok=True)
    with gzip.open(os.path.join(OUT, "structure.json.gz"), "wt") as f:
        json.dump(record, f, sort_keys=True)


def set_recipe(net) -> None:
    for key, p in structural(net).items():
        p.set_data(mx.nd.array(recipe_value(key, p.shape)))


def make_net(name: str, shape) -> None:
    with mx.name.NameManager():
        net = vision.get_model(name, classes=CLASSES)
    net.initialize()
    net(mx.nd.zeros(shape))  # complete the deferred shapes
    set_recipe(net)
    path = os.path.join(OUT, name + ".params")
    net.save_parameters(path)
    with open(path, "rb") as f:
        blob = f.read()
    data = input_value(shape)
    record = {"data_sha1": np.array(hashlib.sha1(data.tobytes()).hexdigest()),
              "output": net(mx.nd.array(data)).asnumpy(),
              "params_sha1": np.array(hashlib.sha1(blob).hexdigest()), "params_size": np.array(len(blob))}
    if name == TRAIN_NET:
        # float64: through ~50 BatchNorms in training mode float32 gradients differ by a few
        # percent between any two implementations (MXNet's oneDNN and reference kernels too).
        net.cast("float64")
        params = structural(net)
        head = np.random.RandomState(99).uniform(-1, 1, size=record["output"].shape)
        with mx.autograd.record():
            out = net(mx.nd.array(data, dtype=np.float64))
        out.backward(mx.nd.array(head, dtype=np.float64))
        record["head"] = head
        record["train_output"] = out.asnumpy()
        for key in GRAD_PARAMS:
            record["grad:" + key] = params[key].grad().asnumpy()
        for key, p in params.items():
            if key.endswith(("running_mean", "running_var")):
                record["after:" + key] = p.data().asnumpy()
    np.savez_compressed(os.path.join(OUT, name + ".npz"), **record)
    if name not in COMMITTED:
        os.remove(path)
    print(f"{name}: input {shape}, file {len(blob)} bytes, |out|max {np.abs(record['output']).max():.4g}")


def main(argv) -> None:
    todo = argv or ["structure"] + list(NETS)
    for item in todo:
        if item == "structure":
            make_structure()
        else:
            make_net(item, NETS[item])


if __name__ == "__main__":
    main(sys.argv[1:])
