"""MXNet JSON: ember reads MXNet-written files and MXNet 1.9.1 reads ember-written ones."""
import json
import os
import subprocess

import numpy as np
import pytest

import ember as mx
from ember.base import FormatError, OperatorError

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "symbolic")
MXNET_PY = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")
NETS = ("mlp", "convnet", "arith")


def _expected(name):
    with open(os.path.join(DATA, f"{name}-expected.json")) as f:
        return json.load(f)


def _run(sym, exp):
    args = {k: mx.nd.array(np.array(v, dtype=np.float32)) for k, v in exp["args"].items()}
    aux = {k: mx.nd.array(np.array(v, dtype=np.float32)) for k, v in exp["aux"].items()}
    exe = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
    return [o.asnumpy() for o in exe.forward(is_train=False)]


@pytest.mark.parametrize("name", NETS)
def test_load_mxnet_written_json(name):
    sym = mx.sym.load(os.path.join(DATA, f"{name}-symbol.json"))
    exp = _expected(name)
    assert sym.list_arguments() == exp["list_arguments"]
    assert sym.list_outputs() == exp["list_outputs"]
    assert sym.list_auxiliary_states() == exp["list_auxiliary_states"]
    arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**{k: tuple(v) for k, v in exp["shapes"].items()})
    assert [list(s) for s in arg_shapes] == exp["arg_shapes"]
    assert [list(s) for s in out_shapes] == exp["out_shapes"]
    assert [list(s) for s in aux_shapes] == exp["aux_shapes"]
    assert sym.attr_dict() == exp["attr_dict"]
    for got, want in zip(_run(sym, exp), exp["outputs"]):
        np.testing.assert_allclose(got, np.array(want), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", NETS)
def test_round_trip_is_stable(name):
    sym = mx.sym.load(os.path.join(DATA, f"{name}-symbol.json"))
    text = sym.tojson()
    again = mx.sym.load_json(text)
    assert again.tojson() == text
    doc = json.loads(text)
    assert doc["attrs"] == {"mxnet_version": ["int", 10901]}
    original = json.load(open(os.path.join(DATA, f"{name}-symbol.json")))
    # same nodes, in the same order, with the same ops, names, inputs and attributes as MXNet wrote
    assert [(n["op"], n["name"], n.get("attrs", {})) for n in doc["nodes"]] == \
        [(n["op"], n["name"], n.get("attrs", {})) for n in original["nodes"]]
    assert [[e[:2] for e in n["inputs"]] for n in doc["nodes"]] == \
        [[e[:2] for e in n["inputs"]] for n in original["nodes"]]
    assert doc["arg_nodes"] == original["arg_nodes"]
    # node_row_ptr may differ: MXNet's MKLDNN build gives Pooling a hidden workspace output.
    assert len(doc["node_row_ptr"]) == len(original["node_row_ptr"])
    assert doc["heads"] == original["heads"]


def test_save_and_load_file(tmp_path):
    a = mx.sym.var("a", shape=(2, 2))
    s = mx.sym.FullyConnected(a, num_hidden=3, name="fc")
    path = str(tmp_path / "net-symbol.json")
    s.save(path)
    back = mx.sym.load(path)
    assert back.list_arguments() == ["a", "fc_weight", "fc_bias"]
    assert back.attr_dict()["a"]["__shape__"] == "(2, 2)"



def test_numpy_shape_mode_is_recorded_in_graph_attrs(tmp_path):
    # MXNet 1.6+ marks JSON written under NumPy shape semantics (0 = zero-size dimension) with
    # attrs["is_np_shape"] = ["int", 1], and leaves it out otherwise.
    net = mx.sym.FullyConnected(mx.sym.var("data"), mx.sym.var("weight", shape=(8, 0)), num_hidden=8)
    assert json.loads(net.tojson())["attrs"] == {"mxnet_version": ["int", 10901]}
    with mx.util.np_shape(True):
        doc = json.loads(net.tojson())
    assert doc["attrs"] == {"is_np_shape": ["int", 1], "mxnet_version": ["int", 10901]}
    assert not mx.util.is_np_shape()
    back = mx.sym.load_json(json.dumps(doc))
    arg_shapes, out_shapes, _ = back.infer_shape(data=(4, 5))
    assert arg_shapes == [(4, 5), (8, 5), (8,)] and out_shapes == [(4, 8)]

def test_legacy_param_and_attr_keys():
    text = json.dumps({
        "nodes": [
            {"op": "null", "name": "x", "param": {}, "attr": {"__shape__": "(2, 4)"}, "inputs": [], "backward_source_id": -1},
            {"op": "null", "name": "fc_weight", "param": {}, "inputs": []},
            {"op": "null", "name": "fc_bias", "param": {}, "inputs": []},
            {"op": "FullyConnected", "name": "fc", "param": {"num_hidden": "5", "no_bias": "False"},
             "attr": {"__lr_mult__": "0.5"}, "inputs": [[0, 0], [1, 0], [2, 0]]},
        ],
        "arg_nodes": [0, 1, 2], "heads": [[3, 0]]})
    s = mx.sym.load_json(text)
    assert s.attr("__lr_mult__") == "0.5"
    assert s.attr("num_hidden") == "5"
    _, outs, _ = s.infer_shape()
    assert outs == [(2, 5)]


@pytest.mark.parametrize("text, fragment", [
    ("{not json", "not valid JSON"),
    ('{"nodes": 3, "heads": []}', "'nodes' and 'heads'"),
    ('{"nodes": [{"op": "null", "name": "a", "inputs": []}], "heads": [[4, 0, 0]]}', "bad head entry"),
    ('{"nodes": [{"op": "exp", "name": "e", "inputs": [[0, 0, 0]]}], "heads": [[0, 0, 0]]}', "does not precede"),
    ('{"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "exp", "name": "e", "inputs": [[0, 3, 0]]}],'
     ' "heads": [[1, 0, 0]]}', "output 3"),
    ('{"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "elemwise_add", "name": "e", "inputs": [[0, 0, 0]]}],'
     ' "heads": [[1, 0, 0]]}', "has 1 inputs"),
    ('{"nodes": [{"name": "a", "inputs": []}], "heads": [[0, 0, 0]]}', "needs 'op' and 'name'"),
])
def test_malformed_json_errors(text, fragment):
    with pytest.raises(FormatError, match=fragment):
        mx.sym.load_json(text)


@pytest.mark.parametrize("content", [
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",   # binary
    "{\"nodes\": [], \"heads\": [], \"x\": \"caf\u00e9\"}".encode("latin-1"),  # not UTF-8
    b"\x00" * 64,                                       # valid UTF-8, not JSON
    b"[" * 100000,                                       # nested past the parser's recursion limit
])
def test_load_non_json_file_is_format_error_naming_file(tmp_path, content):
    path = tmp_path / "weights.params"
    path.write_bytes(content)
    with pytest.raises(FormatError, match="weights.params.*malformed symbol JSON"):
        mx.sym.load(str(path))


def test_load_json_bytes_not_utf8_is_format_error():
    with pytest.raises(FormatError, match="not UTF-8 text.*byte 1"):
        mx.sym.load_json(b"{\xff\xfe}")


def test_unknown_operator_in_json_is_named():
    text = '{"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "NoSuchOp", "name": "z", ' \
           '"inputs": [[0, 0, 0]]}], "heads": [[1, 0, 0]]}'
    with pytest.raises(OperatorError, match="'z'.*NoSuchOp"):
        mx.sym.load_json(text)


def test_bad_attribute_in_json_names_node():
    text = '{"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "null", "name": "w", "inputs": []},' \
           '{"op": "null", "name": "b", "inputs": []}, {"op": "FullyConnected", "name": "fc9", ' \
           '"attrs": {"num_hidden": "many"}, "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]]}], "heads": [[3, 0, 0]]}'
    with pytest.raises(OperatorError, match="fc9.*num_hidden"):
        mx.sym.load_json(text)


@pytest.mark.skipif(not os.path.exists(MXNET_PY), reason="MXNet 1.9.1 venv not installed")
def test_mxnet_loads_ember_written_json(tmp_path):
    cases = []
    rng = np.random.RandomState(1)
    nets = []
    data = mx.sym.var("data")
    h = mx.sym.Convolution(data, kernel=(3, 3), num_filter=2, name="c1")
    h = mx.sym.BatchNorm(h, name="bn")
    h = mx.sym.Pooling(mx.sym.Activation(h, act_type="tanh"), kernel=(2, 2), stride=(2, 2), pool_type="avg")
    h = mx.sym.FullyConnected(mx.sym.Flatten(h), num_hidden=4)
    nets.append(("conv", mx.sym.SoftmaxOutput(h, name="softmax"), {"data": (2, 1, 6, 6)}))
    a, b = mx.sym.var("a"), mx.sym.var("b")
    nets.append(("arith", mx.sym.Group([a + b, (a * 3 - 1) / 2, 2 - b, mx.sym.exp(a) * b, -a, a ** 2]),
                 {"a": (3, 2), "b": (3, 2)}))
    for name, sym, shapes in nets:
        path = str(tmp_path / f"{name}-symbol.json")
        sym.save(path)
        arg_shapes, out_shapes, aux_shapes = sym.infer_shape(**shapes)
        args = {n: rng.uniform(-1, 1, s).astype(np.float32) for n, s in zip(sym.list_arguments(), arg_shapes)}
        if "softmax_label" in args:
            args["softmax_label"] = np.array([1, 3], dtype=np.float32)
        aux = {n: rng.uniform(0.5, 1.5, s).astype(np.float32) for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
        exe = sym.bind(mx.cpu(), {k: mx.nd.array(v) for k, v in args.items()},
                       aux_states={k: mx.nd.array(v) for k, v in aux.items()}, grad_req="null")
        outs = [o.asnumpy().tolist() for o in exe.forward(is_train=False)]
        cases.append({"symbol": path, "arguments": sym.list_arguments(), "outputs": sym.list_outputs(),
                      "aux": sym.list_auxiliary_states(), "shapes": {k: list(v) for k, v in shapes.items()},
                      "out_shapes": [list(s) for s in out_shapes], "args": {k: v.tolist() for k, v in args.items()},
                      "aux_values": {k: v.tolist() for k, v in aux.items()}, "outputs_values": outs})
    spec = tmp_path / "cases.json"
    spec.write_text(json.dumps(cases))
    script = os.path.join(os.path.dirname(__file__), "_mxnet_loads_ember.py")
    res = subprocess.run([MXNET_PY, script, str(spec)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"OK {len(cases)}" in res.stdout


MODELS = os.path.join(os.path.dirname(__file__), "..", "data", "models")


@pytest.mark.parametrize("name", ["mobilenet0.25", "squeezenet1.1"])
def test_gluon_exported_models_run_like_mxnet(name):
    """MXNet-exported model-zoo graphs + params, bound by ember's executor: MXNet's outputs."""
    if not os.path.exists(os.path.join(MODELS, f"{name}-0000.params")):
        pytest.skip("model fixture not present")
    sym = mx.sym.load(os.path.join(MODELS, f"{name}-symbol.json"))
    params = mx.nd.load(os.path.join(MODELS, f"{name}-0000.params"))
    io = np.load(os.path.join(MODELS, f"{name}-io.npz"))
    args = {k[4:]: v for k, v in params.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in params.items() if k.startswith("aux:")}
    args["data"] = mx.nd.array(io["data"])
    exe = sym.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
    out = exe.forward(is_train=False)[0].asnumpy()
    np.testing.assert_allclose(out, io["output"], rtol=1e-4, atol=1e-5)
    st = exe.memory_stats()
    assert st["lower_bound_bytes"] <= st["planned_bytes"] < st["naive_bytes"]
