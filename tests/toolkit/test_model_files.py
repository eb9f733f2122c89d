"""Real MXNet model files: model-zoo nets exported by MXNet 1.9.1 give MXNet's outputs in ember;
checkpoints round-trip; malformed files give FormatError."""
import os
import shutil

import numpy as np
import pytest

import ember as mx
from ember import model
from ember.base import FormatError
from ember.gluon import SymbolBlock
from model_recipe import recipe_value

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "models")
SMALL = ["mobilenet0.25", "squeezenet1.1"]  # MXNet-written .params committed
BIG = ["resnet18_v1", "vgg11"]  # .params rebuilt here from the recipe


def _prefix(name):
    return os.path.join(DATA, name)


def _expected(name):
    f = np.load(_prefix(name) + "-io.npz")
    return f["data"], f["output"]


def _assert_close(got, want):
    # rtol 1e-4 on the outputs, with an absolute floor at 1e-4 of the output scale for values near 0
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))


@pytest.fixture(scope="module")
def big_checkpoints(tmp_path_factory):
    """prefix -> a checkpoint dir holding symbol JSON + recipe .params written with ember's nd.save."""
    out = {}
    root = tmp_path_factory.mktemp("models")
    for name in BIG:
        prefix = str(root / name)
        shutil.copy(_prefix(name) + "-symbol.json", prefix + "-symbol.json")
        sym = mx.sym.load(prefix + "-symbol.json")
        data, _ = _expected(name)
        arg_shapes, _, aux_shapes = sym.infer_shape(data=data.shape)
        args = {n: mx.nd.array(recipe_value(n, s)) for n, s in zip(sym.list_arguments(), arg_shapes) if n != "data"}
        aux = {n: mx.nd.array(recipe_value(n, s)) for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
        model.save_checkpoint(prefix, 0, None, args, aux)
        out[name] = prefix
    return out


def _forward_bound(prefix, data):
    sym = mx.sym.load(prefix + "-symbol.json")
    saved = mx.nd.load(prefix + "-0000.params")
    args = {k[4:]: v for k, v in saved.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in saved.items() if k.startswith("aux:")}
    args["data"] = mx.nd.array(data)
    ex = sym.bind(mx.cpu(), args, aux_states=aux)
    return ex.forward(is_train=False)[0].asnumpy()


@pytest.mark.parametrize("name", SMALL)
def test_small_nets_with_mxnet_written_params(name):
    data, want = _expected(name)
    _assert_close(_forward_bound(_prefix(name), data), want)


@pytest.mark.parametrize("name", SMALL)
def test_committed_params_follow_the_recipe(name):
    # the MXNet-written file holds the recipe values: ties the big nets' rebuilt params to MXNet's naming
    for key, arr in mx.nd.load(_prefix(name) + "-0000.params").items():
        np.testing.assert_array_equal(arr.asnumpy(), recipe_value(key[4:], arr.shape), err_msg=key)


@pytest.mark.parametrize("name", BIG)
def test_big_nets_with_recipe_params(name, big_checkpoints):
    data, want = _expected(name)
    _assert_close(_forward_bound(big_checkpoints[name], data), want)


def test_load_checkpoint_and_symbolblock(big_checkpoints):
    prefix = big_checkpoints["resnet18_v1"]
    sym, args, aux = model.load_checkpoint(prefix, 0)
    assert "data" not in args and len(aux) > 0 and all(not k.startswith(("arg:", "aux:")) for k in args)
    data, want = _expected("resnet18_v1")
    block = SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    _assert_close(block(mx.nd.array(data)).asnumpy(), want)
    # a second call with other values reuses the bound graph and still gives fresh outputs
    _assert_close(block(mx.nd.array(data[::-1].copy())).asnumpy(), want[::-1])
    via_nn = mx.gluon.nn.SymbolBlock.imports(_prefix("mobilenet0.25") + "-symbol.json", "data",
                                             _prefix("mobilenet0.25") + "-0000.params", ctx=mx.cpu())
    d2, w2 = _expected("mobilenet0.25")
    _assert_close(via_nn(mx.nd.array(d2)).asnumpy(), w2)


def test_checkpoint_round_trip(tmp_path):
    sym, args, aux = model.load_checkpoint(_prefix("mobilenet0.25"), 0)
    prefix = str(tmp_path / "copy")
    model.save_checkpoint(prefix, 7, sym, args, aux)
    assert os.path.exists(prefix + "-symbol.json") and os.path.exists(prefix + "-0007.params")
    sym2, args2, aux2 = model.load_checkpoint(prefix, 7)
    assert sym2.list_arguments() == sym.list_arguments()
    assert set(args2) == set(args) and set(aux2) == set(aux)
    for k in args:
        np.testing.assert_array_equal(args2[k].asnumpy(), args[k].asnumpy())
    data, want = _expected("mobilenet0.25")
    block = SymbolBlock.imports(prefix + "-symbol.json", "data", prefix + "-0007.params")
    _assert_close(block(mx.nd.array(data)).asnumpy(), want)


def test_symbolblock_errors(tmp_path):
    sym_file = _prefix("mobilenet0.25") + "-symbol.json"
    with pytest.raises(mx.EmberError, match="not arguments"):
        SymbolBlock.imports(sym_file, ["image"])
    block = SymbolBlock.imports(sym_file, "data")
    with pytest.raises(RuntimeError, match="has not been initialized"):
        block(mx.nd.zeros((1, 3, 32, 32)))
    with pytest.raises(TypeError, match="either Symbol or NDArray"):
        SymbolBlock.imports(sym_file, "data", _prefix("mobilenet0.25") + "-0000.params")(np.zeros((1, 3, 32, 32)))
    extra = str(tmp_path / "extra.params")
    saved = mx.nd.load(_prefix("mobilenet0.25") + "-0000.params")
    saved["arg:unused_weight"] = mx.nd.zeros((1,))
    mx.nd.save(extra, saved)
    with pytest.raises(AssertionError, match="unused_weight"):
        SymbolBlock.imports(sym_file, "data", extra)
    SymbolBlock.imports(sym_file, "data", extra, ignore_extra=True)
    truncated = str(tmp_path / "truncated.params")
    with open(truncated, "wb") as f:
        f.write(open(_prefix("mobilenet0.25") + "-0000.params", "rb").read()[:4000])
    with pytest.raises(FormatError):
        SymbolBlock.imports(sym_file, "data", truncated)
    with pytest.raises(FormatError):
        SymbolBlock.imports(truncated, "data")


# -- malformed files ------------------------------------------------------------------------
def _copy_checkpoint(tmp_path, name="mobilenet0.25"):
    prefix = str(tmp_path / name)
    shutil.copy(_prefix(name) + "-symbol.json", prefix + "-symbol.json")
    shutil.copy(_prefix(name) + "-0000.params", prefix + "-0000.params")
    return prefix


@pytest.mark.parametrize("keep", [0, 7, 20, 100, 5000, -3])
def test_truncated_params_raise_format_error(tmp_path, keep):
    prefix = _copy_checkpoint(tmp_path)
    raw = open(prefix + "-0000.params", "rb").read()
    with open(prefix + "-0000.params", "wb") as f:
        f.write(raw[:keep] if keep >= 0 else raw[:len(raw) + keep])
    with pytest.raises(FormatError):
        model.load_checkpoint(prefix, 0)


def test_garbage_params_raise_format_error(tmp_path):
    prefix = _copy_checkpoint(tmp_path)
    with open(prefix + "-0000.params", "wb") as f:
        f.write(np.random.RandomState(0).bytes(4096))
    with pytest.raises(FormatError):
        model.load_checkpoint(prefix, 0)


def test_params_without_arg_aux_keys(tmp_path):
    prefix = _copy_checkpoint(tmp_path)
    mx.nd.save(prefix + "-0000.params", {"conv_weight": mx.nd.zeros((1,))})
    with pytest.raises(FormatError, match="arg:<name>"):
        model.load_checkpoint(prefix, 0)
    mx.nd.save(prefix + "-0000.params", [mx.nd.zeros((1,))])
    with pytest.raises(FormatError, match="unnamed list"):
        model.load_checkpoint(prefix, 0)


@pytest.mark.parametrize("cut", [0, 1, 100, 0.5])
def test_truncated_symbol_json_raises_format_error(tmp_path, cut):
    prefix = _copy_checkpoint(tmp_path)
    text = open(prefix + "-symbol.json").read()
    n = int(len(text) * cut) if isinstance(cut, float) else cut
    with open(prefix + "-symbol.json", "w") as f:
        f.write(text[:n])
    with pytest.raises(FormatError):
        model.load_checkpoint(prefix, 0)


def test_binary_symbol_file(tmp_path):
    prefix = _copy_checkpoint(tmp_path)
    shutil.copy(prefix + "-0000.params", prefix + "-symbol.json")
    with pytest.raises(FormatError, match="not a symbol JSON file|not UTF-8"):
        model.load_checkpoint(prefix, 0)


def test_symbol_json_of_wrong_structure(tmp_path):
    prefix = _copy_checkpoint(tmp_path)
    for text in ('{"nodes": 3}', '[1, 2]', '{"nodes": [], "arg_nodes": [], "heads": [[5, 0, 0]]}'):
        with open(prefix + "-symbol.json", "w") as f:
            f.write(text)
        with pytest.raises(FormatError):
            model.load_checkpoint(prefix, 0)


def test_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        model.load_checkpoint(str(tmp_path / "absent"), 0)
