"""gluon.model_zoo against MXNet 1.9.1 (fixtures from tests/data/make_zoo_fixtures.py).

Every network has MXNet's structure (prefix, parameter names, declared and inferred shapes,
dtypes, grad_reqs, structural names, repr); the representative nets, given the weights of the
recipe in a file byte-identical to the one MXNet's save_parameters wrote, give MXNet's outputs;
pretrained weights are looked up under MXNet's file names; exported graphs load in MXNet.
"""
import errno
import gzip
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import zipfile

import numpy as np
import pytest

import ember as mx
from ember import autograd, nd
from ember.base import MissingFileError
from ember.gluon.model_zoo import model_store, vision

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "data", "model_zoo")
MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")

_spec = importlib.util.spec_from_file_location("model_recipe", os.path.join(HERE, "..", "toolkit", "model_recipe.py"))
model_recipe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(model_recipe)

with gzip.open(os.path.join(FIX, "structure.json.gz"), "rt") as _f:
    STRUCTURE = json.load(_f)

# The nets recorded with outputs (input shapes as in the fixture script; classes=10).
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
CHEAP = {"resnet18_v1", "mobilenetv2_0.25", "mobilenet0.25", "vgg11_bn", "squeezenet1.1"}  # also run op by op
COMMITTED = "mobilenetv2_0.25"  # its MXNet-written .params is in the repo


def _build(name_or_expr, **kwargs):
    """A fresh net numbered as the first of its kind ('resnetv10_'), as the fixtures were made."""
    with mx.name.NameManager():
        if name_or_expr in vision._models:
            return vision.get_model(name_or_expr, **kwargs)
        return eval(name_or_expr, {"vision": vision})  # the fixture's own constructor expressions


def _input(shape):
    data = np.random.RandomState(1234).uniform(-1, 1, size=shape).astype(np.float32)
    return data


def _assert_close(got, want):
    # rtol 1e-4, with an absolute floor at 1e-4 of the output's scale for values near zero
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


def _sha1(path):
    with open(path, "rb") as f:
        return hashlib.sha1(f.read()).hexdigest()


def _write_recipe_params(net, path):
    """The recipe's weights under the structural names, in save_parameters' order (shapes known)."""
    nd.save(path, {k: nd.array(model_recipe.recipe_value(k, p.shape))
                   for k, p in net._collect_params_with_prefix().items()})


# -- names ----------------------------------------------------------------------------------
def test_get_model_knows_mxnets_names():
    assert sorted(vision._models) == sorted(n for n in STRUCTURE if not n.startswith("vision."))
    assert isinstance(vision.get_model("ResNet18_V1"), vision.ResNetV1)  # case-insensitive
    with pytest.raises(ValueError, match=r"Model resnet19_v1 is not supported. Available options are\n\talexnet"):
        vision.get_model("resnet19_v1")


def test_public_names():
    for name in ["ResNetV1", "ResNetV2", "BasicBlockV1", "BasicBlockV2", "BottleneckV1", "BottleneckV2",
                 "get_resnet", "VGG", "get_vgg", "AlexNet", "alexnet", "SqueezeNet", "squeezenet1_0",
                 "squeezenet1_1", "DenseNet", "densenet121", "densenet161", "densenet169", "densenet201",
                 "Inception3", "inception_v3", "MobileNet", "MobileNetV2", "get_mobilenet", "get_mobilenet_v2",
                 "mobilenet1_0", "mobilenet0_75", "mobilenet0_5", "mobilenet0_25", "mobilenet_v2_1_0",
                 "mobilenet_v2_0_75", "mobilenet_v2_0_5", "mobilenet_v2_0_25", "vgg11_bn", "vgg19",
                 "resnet152_v2"]:
        assert hasattr(vision, name), name
    assert mx.gluon.model_zoo.vision is vision
    assert vision.resnet50_v1.__name__ == "resnet50_v1" and vision.mobilenet_v2_0_5.__name__ == "mobilenet_v2_0_5"


# -- structure: every net as MXNet builds it -------------------------------------------------
@pytest.mark.parametrize("name", sorted(STRUCTURE))
def test_structure_matches_mxnet(name):
    want = STRUCTURE[name]
    net = _build(name)
    assert net.prefix == want["prefix"]
    assert repr(net) == want["repr_declared"]
    params = list(net.collect_params().values())
    assert [p.name for p in params] == [row[0] for row in want["params"]]
    assert [list(p.shape) for p in params] == [row[1] for row in want["params"]]
    assert [np.dtype(p.dtype).name for p in params] == [row[3] for row in want["params"]]
    assert [p.grad_req for p in params] == [row[4] for row in want["params"]]
    assert [[k, p.name] for k, p in net._collect_params_with_prefix().items()] == want["structural"]
    net.infer_shape(nd.zeros(tuple(want["input_shape"])))  # completes the unknown dims, no compute
    assert [list(p.shape) for p in params] == [row[2] for row in want["params"]]
    assert repr(net) == want["repr"]


def test_constructor_checks():
    with pytest.raises(AssertionError, match="Invalid number of layers: 20"):
        vision.get_resnet(1, 20)
    with pytest.raises(AssertionError, match="Invalid resnet version: 3"):
        vision.get_resnet(3, 18)
    with pytest.raises(AssertionError, match="Unsupported SqueezeNet version 1.2"):
        vision.SqueezeNet("1.2")
    with pytest.raises(AssertionError):
        vision.ResNetV1(vision.BasicBlockV1, [2, 2], [64, 64])  # channels must be one longer than layers


def test_vgg_initializers():
    net = vision.vgg11()
    conv, dense = net.features[0], net.features[-4]
    assert isinstance(conv.weight.init, mx.init.Xavier)
    assert (conv.weight.init._kwargs["rnd_type"], conv.weight.init._kwargs["factor_type"],
            conv.weight.init._kwargs["magnitude"]) == ("gaussian", "out", 2)
    assert dense.weight.init == "normal" and net.output.bias.init == "zeros"


# -- outputs with MXNet-saved weights --------------------------------------------------------
@pytest.fixture(scope="module")
def recorded():
    return {name: np.load(os.path.join(FIX, name + ".npz")) for name in NETS}


def _net_with_recipe_weights(name, recorded, tmp_path):
    """The net (classes=10) loaded from a recipe file that is byte for byte MXNet's save_parameters file."""
    rec = recorded[name]
    data = _input(NETS[name])
    assert hashlib.sha1(data.tobytes()).hexdigest() == str(rec["data_sha1"])
    net = _build(name, classes=10)
    net.infer_shape(nd.array(data))
    path = str(tmp_path / f"{name}.params")
    if name == COMMITTED:
        shutil.copy(os.path.join(FIX, name + ".params"), path)  # the file MXNet wrote itself
    else:
        _write_recipe_params(net, path)
    assert os.path.getsize(path) == int(rec["params_size"]) and _sha1(path) == str(rec["params_sha1"])
    net.load_parameters(path)
    return net, data, path


@pytest.mark.parametrize("name", sorted(NETS))
def test_mxnet_weights_give_mxnets_outputs(name, recorded, tmp_path):
    net, data, path = _net_with_recipe_weights(name, recorded, tmp_path)
    want = recorded[name]["output"]
    if name in CHEAP:
        _assert_close(net(nd.array(data)).asnumpy(), want)
    net.hybridize()
    _assert_close(net(nd.array(data)).asnumpy(), want)
    # ember's save_parameters writes MXNet's bytes (same structural names, order and values)
    net.save_parameters(str(tmp_path / "again.params"))
    assert _sha1(str(tmp_path / "again.params")) == str(recorded[name]["params_sha1"])


def test_weights_load_into_a_second_instance(recorded, tmp_path):
    """Structural names do not depend on the block counter, and a file of prefix-stripped full
    names (ParameterDict.save(strip_prefix=...)) loads through load_parameters' full-name path."""
    with mx.name.NameManager():
        vision.mobilenet_v2_0_25(classes=10)
        second = vision.mobilenet_v2_0_25(classes=10)
    assert second.prefix == "mobilenetv21_"
    second.load_parameters(os.path.join(FIX, COMMITTED + ".params"))
    data = nd.array(_input(NETS[COMMITTED]))
    _assert_close(second(data).asnumpy(), recorded[COMMITTED]["output"])
    stripped = str(tmp_path / "stripped.params")
    second.collect_params().save(stripped, strip_prefix=second.prefix)
    assert "features_conv0_weight" in nd.load(stripped)
    third = vision.mobilenet_v2_0_25(classes=10)
    third.load_parameters(stripped)
    _assert_close(third(data).asnumpy(), recorded[COMMITTED]["output"])


def test_committed_mxnet_file_holds_the_recipe():
    for key, arr in nd.load(os.path.join(FIX, COMMITTED + ".params")).items():
        np.testing.assert_array_equal(arr.asnumpy(), model_recipe.recipe_value(key, arr.shape), err_msg=key)


def test_training_step_matches_mxnet(recorded, tmp_path):
    """One training-mode call of mobilenetv2_0.25 cast to float64 (in float32, gradients through
    ~50 batch-statistics BatchNorms differ by percents between any two implementations, MXNet's
    own two CPU kernels included): output, gradients and the BatchNorm running statistics
    afterwards, as MXNet computed them."""
    rec = recorded[COMMITTED]
    net, data, _ = _net_with_recipe_weights(COMMITTED, recorded, tmp_path)
    net.cast("float64")
    net.hybridize()
    with autograd.record():
        out = net(nd.array(data, dtype=np.float64))
    out.backward(nd.array(rec["head"], dtype=np.float64))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), rec["train_output"], rtol=1e-9, atol=1e-12)
    params = net._collect_params_with_prefix()
    grads = [k[5:] for k in rec.files if k.startswith("grad:")]
    assert grads
    for key in grads:
        want = rec["grad:" + key]
        np.testing.assert_allclose(params[key].grad().asnumpy(), want, rtol=1e-8,
                                   atol=1e-9 * float(np.abs(want).max()), err_msg=key)
    stats = [k[6:] for k in rec.files if k.startswith("after:")]
    assert len(stats) == 2 * sum(k.endswith("running_mean") for k in params)
    for key in stats:
        # rtol 1e-6: MXNet's BatchNorm keeps `momentum` as a C float, so its float64 update
        # mixes by 0.9f = 0.899999976 (a 2.4e-8 * |running - batch| difference)
        np.testing.assert_allclose(params[key].data().asnumpy(), rec["after:" + key], rtol=1e-6,
                                   atol=1e-6 * float(np.abs(rec["after:" + key]).max()), err_msg=key)


# -- pretrained weights ------------------------------------------------------------------------
def _expected_file(name):
    return f"{name}-{model_store._model_sha1[name][:8]}.params"


@pytest.mark.parametrize("name", sorted(vision._models))
def test_pretrained_without_the_file_names_the_path(name, tmp_path):
    with pytest.raises(MissingFileError) as info:
        vision.get_model(name, pretrained=True, root=str(tmp_path))
    path = os.path.join(str(tmp_path), _expected_file(name))
    assert info.value.errno == errno.ENOENT and info.value.filename == path
    assert path in str(info.value) and name in str(info.value)
    assert isinstance(info.value, FileNotFoundError)


def test_getters_look_for_mxnets_file_names(tmp_path):
    cases = [(lambda: vision.get_vgg(13, batch_norm=True, pretrained=True, root=str(tmp_path)), "vgg13_bn"),
             (lambda: vision.get_mobilenet(0.5, pretrained=True, root=str(tmp_path)), "mobilenet0.5"),
             (lambda: vision.get_mobilenet_v2(1.0, pretrained=True, root=str(tmp_path)), "mobilenetv2_1.0"),
             (lambda: vision.get_resnet(2, 101, pretrained=True, root=str(tmp_path)), "resnet101_v2"),
             (lambda: vision.squeezenet1_0(pretrained=True, root=str(tmp_path)), "squeezenet1.0")]
    for make, name in cases:
        with pytest.raises(FileNotFoundError, match=_expected_file(name).replace(".", r"\.")):
            make()


def test_short_hash_and_unknown_models():
    assert model_store.short_hash("resnet18_v1") == "a0666292"
    with pytest.raises(ValueError, match="Pretrained model for resnet19_v1 is not available."):
        model_store.get_model_file("resnet19_v1")


@pytest.fixture
def fixture_as_published(monkeypatch):
    """The committed mobilenetv2_0.25 file (classes=10) treated as the published weights file."""
    path = os.path.join(FIX, COMMITTED + ".params")
    monkeypatch.setitem(model_store._model_sha1, COMMITTED, _sha1(path))
    monkeypatch.delenv("MXNET_GLUON_REPO", raising=False)
    return path


def test_pretrained_loads_the_file_under_root(fixture_as_published, recorded, tmp_path):
    root = tmp_path / "models"
    root.mkdir()
    shutil.copy(fixture_as_published, root / _expected_file(COMMITTED))
    with mx.name.NameManager():
        net = vision.get_model(COMMITTED, pretrained=True, root=str(root), classes=10, ctx=mx.cpu())
    for key, p in net._collect_params_with_prefix().items():
        np.testing.assert_array_equal(p.data().asnumpy(), model_recipe.recipe_value(key, p.shape), err_msg=key)
    _assert_close(net(nd.array(_input(NETS[COMMITTED]))).asnumpy(), recorded[COMMITTED]["output"])


def test_pretrained_refuses_a_file_with_other_content(fixture_as_published, tmp_path):
    bad = tmp_path / _expected_file(COMMITTED)
    bad.write_bytes(b"not the weights")
    with pytest.raises(ValueError, match=r"not MXNet's published file") as info:
        vision.mobilenet_v2_0_25(pretrained=True, root=str(tmp_path), classes=10)
    assert str(bad) in str(info.value)


def test_pretrained_fetches_from_a_configured_repository(fixture_as_published, tmp_path, monkeypatch):
    """With MXNET_GLUON_REPO set (here a file:// mirror), a missing or different file is fetched
    from `{repo}gluon/models/{file}.zip` as MXNet does, and no temporary file is left behind."""
    file_name = _expected_file(COMMITTED)
    mirror = tmp_path / "mirror" / "gluon" / "models"
    mirror.mkdir(parents=True)
    with zipfile.ZipFile(mirror / (file_name[:-len(".params")] + ".zip"), "w") as zf:
        zf.write(fixture_as_published, file_name)
    monkeypatch.setenv("MXNET_GLUON_REPO", (tmp_path / "mirror").as_uri())
    root = tmp_path / "models"
    path = model_store.get_model_file(COMMITTED, root=str(root))
    assert path == str(root / file_name) and _sha1(path) == model_store._model_sha1[COMMITTED]
    assert sorted(os.listdir(root)) == [file_name]
    (root / file_name).write_bytes(b"stale")  # different content: fetched again
    assert _sha1(model_store.get_model_file(COMMITTED, root=str(root))) == model_store._model_sha1[COMMITTED]
    assert sorted(os.listdir(root)) == [file_name]


def test_purge_removes_only_params_files(tmp_path):
    (tmp_path / "a-12345678.params").write_bytes(b"x")
    (tmp_path / "notes.txt").write_bytes(b"y")
    model_store.purge(root=str(tmp_path))
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_data_dir_follows_mxnet_home(monkeypatch, tmp_path):
    monkeypatch.setenv("MXNET_HOME", str(tmp_path))
    assert mx.base.data_dir() == str(tmp_path)
    monkeypatch.delenv("MXNET_HOME")
    assert mx.base.data_dir() == os.path.join(os.path.expanduser("~"), ".mxnet")


# -- export ------------------------------------------------------------------------------------
@pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="MXNet 1.9.1 venv not installed")
@pytest.mark.parametrize("name", ["mobilenetv2_0.25", "resnet18_v1"])
def test_mxnet_loads_exported_zoo_nets(name, recorded, tmp_path):
    net, data, _ = _net_with_recipe_weights(name, recorded, tmp_path)
    net.hybridize()
    net(nd.array(data))
    net.export(str(tmp_path / "e"))
    np.save(tmp_path / "x.npy", data)
    code = ("import mxnet as mx, numpy as np, sys; d=sys.argv[1]; "
            "b=mx.gluon.SymbolBlock.imports(d+'/e-symbol.json',['data'],d+'/e-0000.params'); "
            "np.save(d+'/out.npy', b(mx.nd.array(np.load(d+'/x.npy'))).asnumpy())")
    subprocess.run([MXNET_PYTHON, "-c", code, str(tmp_path)], check=True, capture_output=True, timeout=300)
    _assert_close(np.load(tmp_path / "out.npy"), recorded[name]["output"])
