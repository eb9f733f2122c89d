"""Gluon core: blocks, naming, deferred init, hybridize (cached graph + autograd), export/import,
parameter files.  Numbers come from MXNet 1.9.1 (tests/data/gluon, made by
tests/data/make_gluon_fixtures.py) or from numpy."""
import json
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember as mx
from ember import autograd, gluon, nd

from core_blocks import define

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "data", "gluon")
MXNET_PYTHON = os.path.expanduser("~/.cache/ember-anchors/mxnet/bin/python")
BLOCKS = define(gluon)


@pytest.fixture(scope="module")
def ref():
    return np.load(os.path.join(FIX, "core-net.npz"))


def _fresh_net():
    """A Net named as the first block of a fresh program ('net0_...'), as in the fixture."""
    with mx.name.NameManager():
        return BLOCKS["Net"]()


def _net_like_mxnet(ref, hybridize=False):
    net = _fresh_net()
    net.initialize(mx.init.Xavier())
    net(nd.array(ref["x"]))
    for name, p in net.collect_params().items():
        p.set_data(nd.array(ref["w:" + name]))
    if hybridize:
        net.hybridize()
    return net


def _train_step(net, x):
    with autograd.record():
        out = net(x)
        loss = (out ** 2).sum()
    loss.backward()
    return out


def test_names_as_mxnet(ref):
    net = _fresh_net()
    assert list(net.collect_params().keys()) == json.loads(str(ref["names"]))
    assert sorted(net._collect_params_with_prefix().keys()) == json.loads(str(ref["structural"]))
    assert net.name.startswith("net") and net.body.prefix.endswith("stack0_")


def test_deferred_init_shapes(ref):
    net = BLOCKS["Net"]()
    net.initialize()
    w = net.body._children["0"].weight
    assert w.shape == (16, 0)
    with pytest.raises(gluon.DeferredInitializationError, match="deferred"):
        w.data()
    with pytest.raises(RuntimeError):  # DeferredInitializationError is an MXNetError (RuntimeError)
        w.data()
    net(nd.array(ref["x"]))
    shapes = json.loads(str(ref["shapes"]))
    assert {n: list(p.shape) for n, p in net.collect_params().items()} == shapes


@pytest.mark.parametrize("hybridize", [False, True])
def test_forward_backward_equal_mxnet(ref, hybridize):
    net = _net_like_mxnet(ref, hybridize)
    x = nd.array(ref["x"])
    np.testing.assert_allclose(net(x).asnumpy(), ref["predict"], rtol=1e-5, atol=1e-6)
    out = _train_step(net, x)
    np.testing.assert_allclose(out.asnumpy(), ref["train_out"], rtol=1e-5, atol=1e-6)
    for name, p in net.collect_params().items():
        if p.grad_req != "null":
            np.testing.assert_allclose(p.grad().asnumpy(), ref["g:" + name], rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_allclose(p.data().asnumpy(), ref["after:" + name], rtol=1e-5, atol=1e-6)


def test_hybridized_block_used_twice_in_one_step():
    """Two calls before one backward: each keeps its own forward state."""
    dense = BLOCKS["TinyDense"](4, in_units=3)
    dense.initialize(mx.init.Uniform(1.0))
    a, b = nd.array(np.random.rand(2, 3)), nd.array(np.random.rand(2, 3))

    def grads(hybrid):
        dense.hybridize(active=hybrid)
        with autograd.record():
            loss = (dense(a) * dense(b)).sum()
        loss.backward()
        return {n: p.grad().asnumpy().copy() for n, p in dense.collect_params().items()}

    imperative, hybrid = grads(False), grads(True)
    for n in imperative:
        np.testing.assert_allclose(hybrid[n], imperative[n], rtol=1e-5)
    w = dense.weight.data().asnumpy()
    # d/dW sum((aW^T+c)*(bW^T+c)) = (bW^T+c)^T a + (aW^T+c)^T b
    c = dense.bias.data().asnumpy()
    want = (b.asnumpy() @ w.T + c).T @ a.asnumpy() + (a.asnumpy() @ w.T + c).T @ b.asnumpy()
    np.testing.assert_allclose(hybrid[dense.weight.name], want, rtol=1e-5)


def test_inference_between_forward_and_backward():
    dense = BLOCKS["TinyDense"](2, in_units=3)
    dense.initialize(mx.init.Uniform(1.0))
    dense.hybridize()
    x = nd.array(np.arange(6).reshape(2, 3))
    with autograd.record():
        loss = dense(x).sum()
    dense(nd.ones((2, 3)) * 100)  # must not disturb the recorded call
    loss.backward()
    np.testing.assert_allclose(dense.weight.grad().asnumpy(), np.tile(x.asnumpy().sum(0), (2, 1)))


def test_mixed_hybrid_and_plain_blocks_train_like_numpy():
    d1, d2 = BLOCKS["TinyDense"](4, in_units=3), BLOCKS["TinyDense"](1, in_units=4)
    for d in (d1, d2):
        d.initialize(mx.init.Uniform(1.0))
    d1.hybridize()
    x = nd.array(np.random.rand(5, 3))
    with autograd.record():
        h = nd.relu(d1(x))
        loss = d2(h).sum()
    loss.backward()
    w1, b1, w2 = d1.weight.data().asnumpy(), d1.bias.data().asnumpy(), d2.weight.data().asnumpy()
    pre = x.asnumpy() @ w1.T + b1
    dh = np.tile(w2, (5, 1)) * (pre > 0)
    np.testing.assert_allclose(d1.weight.grad().asnumpy(), dh.T @ x.asnumpy(), rtol=1e-5)
    np.testing.assert_allclose(d1.bias.grad().asnumpy(), dh.sum(0), rtol=1e-5)


def test_grad_req_add_and_null():
    dense = BLOCKS["TinyDense"](2, in_units=2)
    dense.initialize(mx.init.One())
    dense.hybridize()
    dense.weight.grad_req = "add"
    dense.bias.grad_req = "null"
    x = nd.ones((1, 2))
    for _ in range(3):
        with autograd.record():
            loss = dense(x).sum()
        loss.backward()
    np.testing.assert_allclose(dense.weight.grad().asnumpy(), np.full((2, 2), 3.0))
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        dense.bias.grad()
    dense.collect_params().zero_grad()
    np.testing.assert_allclose(dense.weight.grad().asnumpy(), 0)


def test_autograd_grad_through_hybridized_block():
    dense = BLOCKS["TinyDense"](1, in_units=2)
    dense.initialize(mx.init.One())
    dense.hybridize()
    x = nd.array([[1.0, 2.0]])
    x.attach_grad()
    with autograd.record():
        y = dense(x)
    (gx,) = autograd.grad([y], [x])
    np.testing.assert_allclose(gx.asnumpy(), [[1.0, 1.0]])


def test_import_mxnet_export(ref):
    block = gluon.SymbolBlock.imports(os.path.join(FIX, "core-net-symbol.json"), ["data"],
                                      os.path.join(FIX, "core-net-0000.params"))
    np.testing.assert_allclose(block(nd.array(ref["x"])).asnumpy(), ref["predict"], rtol=1e-5, atol=1e-6)


def test_symbolblock_trains(ref):
    """An imported SymbolBlock is a HybridBlock whose parameters get gradients (as MXNet computed)."""
    block = gluon.SymbolBlock.imports(os.path.join(FIX, "core-net-symbol.json"), ["data"],
                                      os.path.join(FIX, "core-net-0000.params"))
    out = _train_step(block, nd.array(ref["x"]))
    np.testing.assert_allclose(out.asnumpy(), ref["train_out"], rtol=1e-5, atol=1e-6)
    for name, p in block.collect_params().items():
        if p.grad_req != "null":
            np.testing.assert_allclose(p.grad().asnumpy(), ref["g:" + name], rtol=1e-4, atol=1e-5)


def test_load_mxnet_structural_params(ref):
    net = _fresh_net()
    net.load_parameters(os.path.join(FIX, "core-net-structural.params"))
    np.testing.assert_allclose(net(nd.array(ref["x"])).asnumpy(), ref["predict"], rtol=1e-5, atol=1e-6)


def test_export_roundtrip_and_files(ref, tmp_path):
    net = _net_like_mxnet(ref, hybridize=True)
    x = nd.array(ref["x"])
    want = net(x).asnumpy()
    sym_file, params_file = net.export(str(tmp_path / "m"), epoch=3)
    assert params_file.endswith("m-0003.params")
    saved = nd.load(params_file)
    assert any(k.startswith("aux:") and k.endswith("running_mean") for k in saved)
    assert all(k.startswith(("arg:", "aux:")) for k in saved)
    back = gluon.SymbolBlock.imports(sym_file, "data", params_file)
    np.testing.assert_allclose(back(x).asnumpy(), want, rtol=1e-6)
    sym, args, aux = mx.model.load_checkpoint(str(tmp_path / "m"), 3)
    assert set(args) | set(aux) == set(net.collect_params().keys())


@pytest.mark.skipif(not os.path.exists(MXNET_PYTHON), reason="MXNet 1.9.1 venv not installed")
def test_mxnet_loads_ember_export(ref, tmp_path):
    net = _net_like_mxnet(ref, hybridize=True)
    x = nd.array(ref["x"])
    want = net(x).asnumpy()
    net.export(str(tmp_path / "e"))
    np.save(tmp_path / "x.npy", ref["x"])
    code = ("import mxnet as mx, numpy as np, sys; d=sys.argv[1]; "
            "b=mx.gluon.SymbolBlock.imports(d+'/e-symbol.json',['data'],d+'/e-0000.params'); "
            "np.save(d+'/out.npy', b(mx.nd.array(np.load(d+'/x.npy'))).asnumpy())")
    subprocess.run([MXNET_PYTHON, "-c", code, str(tmp_path)], check=True, capture_output=True, timeout=120)
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-4, atol=1e-6)


def test_failed_load_changes_nothing(ref, tmp_path):
    net = _net_like_mxnet(ref)
    before = {n: p.data().asnumpy().copy() for n, p in net.collect_params().items()}
    bad = nd.load(os.path.join(FIX, "core-net-structural.params"))
    bad["head.weight"] = nd.zeros((3, 15))
    bad["body.0.weight"] = nd.ones((16, 6)) * 7  # comes first: must not be applied either
    path = str(tmp_path / "bad.params")
    nd.save(path, bad)
    with pytest.raises(AssertionError, match=r"head.weight|tinydense1_weight") as info:
        net.load_parameters(path)
    assert "(3, 16)" in str(info.value) and "(3, 15)" in str(info.value)
    for n, p in net.collect_params().items():
        np.testing.assert_array_equal(p.data().asnumpy(), before[n])


def test_load_missing_and_extra(ref, tmp_path):
    net = _net_like_mxnet(ref)
    saved = nd.load(os.path.join(FIX, "core-net-structural.params"))
    missing = dict(saved)
    del missing["head.bias"]
    nd.save(str(tmp_path / "missing.params"), missing)
    with pytest.raises(AssertionError, match="head.bias"):
        net.load_parameters(str(tmp_path / "missing.params"))
    net.load_parameters(str(tmp_path / "missing.params"), allow_missing=True)
    extra = dict(saved, **{"tail.weight": nd.zeros((1,))})
    nd.save(str(tmp_path / "extra.params"), extra)
    with pytest.raises(AssertionError, match="tail.weight"):
        net.load_parameters(str(tmp_path / "extra.params"))
    net.load_parameters(str(tmp_path / "extra.params"), ignore_extra=True)


def test_save_load_roundtrip_and_cast_dtype(ref, tmp_path):
    net = _net_like_mxnet(ref)
    path = str(tmp_path / "p.params")
    net.save_parameters(path)
    assert set(nd.load(path)) == set(json.loads(str(ref["structural"])))
    other = _fresh_net()
    other.cast("float64")
    with pytest.raises(AssertionError, match="dtype"):
        other.load_parameters(path)
    other.load_parameters(path, cast_dtype=True)
    assert other.head.weight.data().dtype == np.float64
    np.testing.assert_allclose(other.head.weight.data().asnumpy(), ref["w:" + net.head.weight.name])


def test_uninitialized_errors():
    dense = BLOCKS["TinyDense"](2, in_units=2)
    with pytest.raises(RuntimeError, match="has not been initialized"):
        dense.weight.data()
    with pytest.raises(RuntimeError, match="has not been initialized"):
        dense(nd.ones((1, 2)))
    dense.initialize()
    with pytest.raises(RuntimeError, match="was not initialized on context cpu\\(1\\)"):
        dense.weight.data(mx.cpu(1))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        dense.initialize()
    assert any("already initialized" in str(x.message) for x in w)


def test_changed_input_structure_is_an_error():
    class Two(gluon.HybridBlock):
        def hybrid_forward(self, F, x, y=None):
            return x if y is None else x + y
    blk = Two()
    blk.hybridize()
    blk(nd.ones((2,)), nd.ones((2,)))
    with pytest.raises(ValueError, match="does not match the cached"):
        blk(nd.ones((2,)))
    blk.hybridize()  # traced anew
    np.testing.assert_allclose(blk(nd.ones((2,))).asnumpy(), [1, 1])


def test_one_input_calls_after_hybridizing_check_like_the_general_path():
    # a block traced with one array takes the short path per call: contexts, np arrays, a second
    # input, list outputs and hooks behave as on the general one
    class Pair(gluon.HybridBlock):
        def hybrid_forward(self, F, x, y=None):
            return [x * 2, x + 1] if y is None else x + y
    blk = Pair()
    blk.hybridize()
    seen = []
    blk.register_forward_hook(lambda b, args, out: seen.append(len(args)))
    out = blk(nd.array([1.0, 2.0]))
    assert isinstance(out, list) and len(out) == 2
    np.testing.assert_allclose(out[0].asnumpy(), [2, 4])
    np.testing.assert_allclose(out[1].asnumpy(), [2, 3])
    with pytest.raises(ValueError, match="does not match the cached"):
        blk(nd.ones((2,)), nd.ones((2,)))
    with mx.cpu(1):
        x1 = nd.array([3.0], ctx=mx.cpu(1))
    out1 = blk(x1)
    assert out1[0].context == mx.cpu(1)
    np.testing.assert_allclose(out1[0].asnumpy(), [6])
    assert seen == [1, 1]


def test_trace_failure_names_the_block():
    class Branchy(gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            if x.sum() > 0:
                return x
            return -x
    blk = Branchy(prefix="branchy_")
    np.testing.assert_allclose(blk(nd.ones((2,))).asnumpy(), [1, 1])  # fine imperatively
    blk.hybridize()
    with pytest.raises(ValueError, match="branchy.*could not be traced"):
        blk(nd.ones((2,)))


def test_new_input_shape_rebinds_and_param_reinit_is_seen():
    dense = BLOCKS["TinyDense"](2, in_units=3)
    dense.initialize(mx.init.One())
    dense.hybridize()
    np.testing.assert_allclose(dense(nd.ones((1, 3))).asnumpy(), [[3, 3]])
    np.testing.assert_allclose(dense(nd.ones((4, 3))).asnumpy(), np.full((4, 2), 3.0))
    dense.initialize(mx.init.Zero(), force_reinit=True)
    np.testing.assert_allclose(dense(nd.ones((1, 3))).asnumpy(), [[0, 0]])
    dense.weight.set_data(nd.ones((2, 3)) * 2)
    np.testing.assert_allclose(dense(nd.ones((1, 3))).asnumpy(), [[6, 6]])


def test_hooks_apply_and_repr():
    net = BLOCKS["Net"]()
    net.initialize()
    seen = []
    h1 = net.head.register_forward_pre_hook(lambda blk, args: seen.append(("pre", blk.name)))
    h2 = net.head.register_forward_hook(lambda blk, args, out: seen.append(("post", out.shape)))
    net(nd.ones((2, 6)))
    assert seen == [("pre", net.head.name), ("post", (2, 3))]
    h1.detach()
    h2.detach()
    net(nd.ones((2, 6)))
    assert len(seen) == 2
    names = []
    net.apply(lambda b: names.append(type(b).__name__))
    assert names == ["TinyDense", "TinyBN", "Stack", "TinyDense", "Net"]
    text = repr(net)
    assert text.startswith("Net(") and "(body): Stack(" in text and "(head): TinyDense(" in text


def test_collect_params_select_and_setattr():
    net = BLOCKS["Net"]()
    sel = net.collect_params(".*weight")
    assert all(k.endswith("weight") for k in sel.keys()) and len(sel) == 2
    net.collect_params(".*running_.*").setattr("lr_mult", 0.0)
    assert net.body._children["1"].running_mean.lr_mult == 0.0


def test_parameter_dict_sharing_and_shape_merge():
    shared = gluon.ParameterDict("model_")
    w = shared.get("weight", shape=(3, 0))
    other = gluon.ParameterDict("model_", shared=shared)
    assert other.get("weight", shape=(0, 4)) is w and w.shape == (3, 4)
    with pytest.raises(AssertionError, match="desired attribute does not match"):
        other.get("weight", shape=(5, 4))
    a = BLOCKS["TinyDense"](2, in_units=3, prefix="a_")
    b = BLOCKS["TinyDense"](2, in_units=3, prefix="b_", params=a.collect_params())
    assert b.weight is a.weight


def test_constant_and_multi_context():
    c = gluon.Constant("c", [[1.0, 2.0]])
    c.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert c.grad_req == "null" and len(c.list_data()) == 2
    np.testing.assert_allclose(c.data(mx.cpu(1)).asnumpy(), [[1, 2]])
    p = gluon.Parameter("p", shape=(2,), init=mx.init.One())
    p.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    assert p.list_ctx() == [mx.cpu(0), mx.cpu(1)] and len(p.list_grad()) == 2
    p.data(mx.cpu(1))[:] = 3
    p.reset_ctx(mx.cpu(2))
    np.testing.assert_allclose(p.data().asnumpy(), [2, 2])  # the average of the copies
    assert p.list_ctx() == [mx.cpu(2)]


def test_summary_prints_layers(capsys):
    net = BLOCKS["Net"]()
    net.initialize()
    net.summary(nd.ones((2, 6)))
    text = capsys.readouterr().out
    assert "TinyDense-1" in text and "(2, 16)" in text and "(2, 3)" in text
    total = 16 * 6 + 16 + 4 * 16 + 3 * 16 + 3
    assert f"Total params: {total}" in text
    assert f"Trainable params: {total - 32}" in text


def test_memory_plan_after_one_call():
    dense = BLOCKS["TinyDense"](2, in_units=3)
    dense.initialize()
    with pytest.raises(ValueError, match="no cached graph"):
        dense.memory_plan()
    dense.hybridize()
    dense(nd.ones((1, 3)))
    assert "fwd" in dense.memory_plan()


def test_graph_returning_its_input_under_record():
    """Outputs that are the graph's inputs, with attach_grad'ed inputs, over several recorded calls."""
    class Identity(gluon.HybridBlock):
        def hybrid_forward(self, F, a):
            return a
    blk = Identity()
    blk.hybridize()
    d = nd.arange(4)
    for step in range(3):
        d.attach_grad()
        with autograd.record():
            out = blk(d)
        out.backward(nd.ones(4) * (step + 1))
        np.testing.assert_allclose(d.grad.asnumpy(), np.full(4, step + 1.0))
        np.testing.assert_allclose(out.asnumpy(), np.arange(4))


def test_op_hook_reports_outputs_with_op_names():
    seen = []
    dense = BLOCKS["TinyDense"](2, in_units=3, prefix="hooked_")
    dense.initialize()
    dense.hybridize()
    dense.register_op_hook(lambda name, op, arr: seen.append((name.decode(), op.decode(), arr.shape)))
    dense(nd.ones((4, 3)))
    assert seen == [("hooked_fwd_output", "FullyConnected", (4, 2))]
    seen.clear()
    dense.register_op_hook(lambda name, op, arr: seen.append(name.decode()), monitor_all=True)
    dense(nd.ones((4, 3)))
    assert seen == ["hooked_fwd_data", "hooked_fwd_weight", "hooked_fwd_bias", "hooked_fwd_output"]


def test_block_freed_without_cycle_collection():
    """A hybridized block (and its executors' storage) goes as soon as the last reference does."""
    import gc
    import weakref
    dense = BLOCKS["TinyDense"](2, in_units=3)
    dense.initialize()
    dense.hybridize()
    dense(nd.ones((1, 3)))
    ref = weakref.ref(dense)
    gc.disable()
    try:
        del dense
        assert ref() is None
    finally:
        gc.enable()


def test_summary_of_hybridized_block_is_refused():
    net = BLOCKS["Net"]()
    net.initialize()
    net.hybridize()
    with pytest.raises(AssertionError, match="must not be hybridized"):
        net.summary(nd.ones((2, 6)))


def test_optimize_for_builds_the_graph_without_running():
    dense = BLOCKS["TinyDense"](2, in_units=3)
    dense.initialize(mx.init.One())
    dense.optimize_for(nd.ones((1, 3)))
    assert dense._cached_op is not None and dense._active
    np.testing.assert_allclose(dense(nd.ones((1, 3))).asnumpy(), [[3, 3]])
    with pytest.raises(ValueError, match="no graph backend 'MKLDNN'"):
        dense.optimize_for(nd.ones((1, 3)), backend="MKLDNN")


def test_small_graphs_are_recorded_op_by_op_as_mxnet_inlines_them():
    # MXNet 1.9.1's test_inline: a hybridized graph of at most inline_limit operators (static_alloc off)
    # is taped operator by operator; a larger one is one _CachedOp step, as autograd.get_symbol shows
    import json
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        for _ in range(3):
            net.add(gluon.nn.Dense(10))
    net.initialize()
    x = nd.array(np.random.RandomState(0).rand(2, 10))
    counts = {}
    for limit in (3, 0):
        net.hybridize(inline_limit=limit)
        with mx.autograd.record():
            y = net(x)
        sym = mx.autograd.get_symbol(y)
        counts[limit] = [n["op"] for n in json.loads(sym.tojson())["nodes"]]
        y.backward()
        grads = [p.grad().asnumpy().copy() for p in net.collect_params().values()]
        # the symbol re-runs the computation: bind it to the same values
        values = [x] + [p.data() for p in net.collect_params().values()]
        ex = sym.bind(mx.cpu(), dict(zip(sym.list_arguments(), values)))
        np.testing.assert_allclose(ex.forward()[0].asnumpy(), y.asnumpy(), rtol=1e-5)
        counts[limit, "grads"] = grads
    assert counts[3].count("FullyConnected") == 3 and "_CachedOp" not in counts[3] and len(counts[3]) == 10
    assert counts[0] == ["null"] * 7 + ["_CachedOp"]
    for a, b in zip(counts[3, "grads"], counts[0, "grads"]):
        np.testing.assert_allclose(a, b, rtol=1e-5)
    net.hybridize(inline_limit=3, static_alloc=True)  # static_alloc never inlines (MXNet)
    with mx.autograd.record():
        y = net(x)
    assert "_CachedOp" in mx.autograd.get_symbol(y).tojson()
    again = mx.sym.load_json(mx.autograd.get_symbol(y).tojson())  # ember writes the called graph too
    assert again.list_arguments() == [f"var{i}" for i in range(7)]
