"""The fuse_conv_bn pass: Convolution -> BatchNorm (-> relu) folded into one node in forward-only
graphs, checked number by number against the same graph run unfused (EMBER_FUSE_CONV_BN=0)."""
import json

import numpy as np
import pytest

import ember as mx


def _chain(relu=True, no_bias=True, fix_gamma=False, use_global_stats=False, kernel=(3, 3), stride=(1, 1),
           pad=(1, 1), num_group=1, num_filter=6, extra_reader=False, bn_head=False):
    x = mx.sym.var("x")
    c = mx.sym.Convolution(x, kernel=kernel, stride=stride, pad=pad, num_filter=num_filter, num_group=num_group,
                           no_bias=no_bias, name="conv")
    b = mx.sym.BatchNorm(c, fix_gamma=fix_gamma, use_global_stats=use_global_stats, eps=1e-4, momentum=0.8,
                         name="bn")
    out = mx.sym.Activation(b, act_type="relu", name="relu") if relu else b
    out = mx.sym.sum(out, axis=1, name="tail") * 2
    heads = [out]
    if extra_reader:
        heads.append(mx.sym.mean(c, name="side"))
    if bn_head:
        heads.append(b)
    return mx.sym.Group(heads) if len(heads) > 1 else out


def _values(sym, data_shape, seed=0):
    rng = np.random.RandomState(seed)
    arg_shapes, _, aux_shapes = sym.infer_shape(x=data_shape)
    args = {n: rng.standard_normal(s).astype(np.float32) for n, s in zip(sym.list_arguments(), arg_shapes)}
    aux = {n: (rng.uniform(0.5, 2.0, s) if n.endswith("var") else rng.standard_normal(s)).astype(np.float32)
           for n, s in zip(sym.list_auxiliary_states(), aux_shapes)}
    return args, aux


def _run(sym, args, aux, fuse, monkeypatch, is_train=False, grad_req="null", dtype=np.float32):
    monkeypatch.setenv("EMBER_FUSE_CONV_BN", "1" if fuse else "0")
    a = {k: mx.nd.array(v.astype(dtype) if k in ("x", "conv_weight", "conv_bias") else v, dtype=(
        dtype if k in ("x", "conv_weight", "conv_bias") else np.float32)) for k, v in args.items()}
    x = {k: mx.nd.array(v) for k, v in aux.items()}
    grads = {k: mx.nd.zeros(v.shape, dtype=v.dtype) for k, v in a.items()} if grad_req != "null" else None
    ex = sym.bind(mx.cpu(), a, args_grad=grads, grad_req=grad_req, aux_states=x)
    outs = [o.asnumpy() for o in ex.forward(is_train=is_train)]
    return ex, outs, {k: v.asnumpy() for k, v in x.items()}


CASES = {
    "3x3_relu": dict(),
    "no_relu_bias_fixgamma": dict(relu=False, no_bias=False, fix_gamma=True),
    "pointwise": dict(kernel=(1, 1), pad=(0, 0), num_filter=12),
    "strided_1x1": dict(kernel=(1, 1), pad=(0, 0), stride=(2, 2)),
    "grouped_strided": dict(num_group=2, stride=(2, 2), no_bias=False),
    "depthwise": dict(num_group=4, num_filter=4),
    "big_weights": dict(num_filter=40, kernel=(3, 3)),  # weights > output: scale applied to the output
    "pointwise_expand_large": dict(kernel=(1, 1), pad=(0, 0), num_filter=12),  # shift inside the GEMM
    "3x3_large_map": dict(no_bias=False),                 # one GEMM per image, shift inside it
}
SHAPES = {"big_weights": (1, 4, 3, 3), "pointwise_expand_large": (2, 4, 15, 14), "3x3_large_map": (2, 4, 29, 28)}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("is_train", [False, True])
def test_fused_forward_equals_unfused(case, is_train, monkeypatch):
    sym = _chain(**CASES[case])
    shape = SHAPES.get(case, (2, 4, 7, 6))
    args, aux = _values(sym, shape)
    ex_f, out_f, aux_f = _run(sym, args, aux, True, monkeypatch, is_train)
    ex_u, out_u, aux_u = _run(sym, args, aux, False, monkeypatch, is_train)
    assert ex_f._graph.stats.get("fused_conv_bn") == 1
    assert "fused_conv_bn" not in ex_u._graph.stats
    assert "_fused_conv_bn_act" in {n.op.name for n in ex_f._graph.nodes if n.op is not None}
    for a, b in zip(out_f, out_u):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    for k in aux_u:  # training: moving statistics updated in place as BatchNorm does; else untouched
        np.testing.assert_allclose(aux_f[k], aux_u[k], rtol=1e-6, atol=1e-7)
        assert np.array_equal(aux_f[k], aux[k]) != is_train


def test_fused_1d_3d_and_use_global_stats(monkeypatch):
    for data, kernel, pad in (((2, 3, 9), (3,), (1,)), ((1, 2, 4, 5, 5), (3, 3, 3), (1, 1, 1))):
        for ugs in (False, True):
            sym = _chain(kernel=kernel, pad=pad, stride=(), use_global_stats=ugs, num_filter=4)
            args, aux = _values(sym, data, seed=3)
            for is_train in (False, True):
                ex_f, out_f, aux_f = _run(sym, args, aux, True, monkeypatch, is_train)
                _, out_u, aux_u = _run(sym, args, aux, False, monkeypatch, is_train)
                assert ex_f._graph.stats.get("fused_conv_bn") == 1
                np.testing.assert_allclose(out_f[0], out_u[0], rtol=1e-5, atol=1e-5)
                for k in aux_u:
                    np.testing.assert_allclose(aux_f[k], aux_u[k], rtol=1e-6)


def test_fused_float16_runs_the_three_kernels(monkeypatch):
    sym = _chain(no_bias=False)
    args, aux = _values(sym, (2, 4, 5, 5), seed=5)
    ex_f, out_f, _ = _run(sym, args, aux, True, monkeypatch, dtype=np.float16)
    _, out_u, _ = _run(sym, args, aux, False, monkeypatch, dtype=np.float16)
    assert ex_f._graph.stats.get("fused_conv_bn") == 1 and out_f[0].dtype == np.float16
    np.testing.assert_array_equal(out_f[0], out_u[0])


def test_not_fused_where_intermediates_are_needed(monkeypatch):
    # a second reader of the convolution: conv+BN kept apart
    sym = _chain(extra_reader=True)
    args, aux = _values(sym, (2, 4, 6, 6))
    ex_f, out_f, _ = _run(sym, args, aux, True, monkeypatch)
    _, out_u, _ = _run(sym, args, aux, False, monkeypatch)
    assert "fused_conv_bn" not in ex_f._graph.stats
    for a, b in zip(out_f, out_u):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # BatchNorm's output also a graph output: conv+BN fused (its output is BN's), relu its own node
    sym = _chain(bn_head=True)
    args, aux = _values(sym, (2, 4, 6, 6))
    ex_f, out_f, _ = _run(sym, args, aux, True, monkeypatch)
    _, out_u, _ = _run(sym, args, aux, False, monkeypatch)
    fused = [n for n in ex_f._graph.nodes if n.op is not None and n.op.name == "_fused_conv_bn_act"]
    assert len(fused) == 1 and fused[0].parsed_attrs["act_type"] == "none"
    assert "relu" in [n.name for n in ex_f._graph.nodes]
    for a, b in zip(out_f, out_u):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    # a BatchNorm output read by relu and another op: conv+BN fused, relu left as its own node
    x = mx.sym.var("x")
    b = mx.sym.BatchNorm(mx.sym.Convolution(x, kernel=(3, 3), num_filter=3, no_bias=True, name="conv"),
                         fix_gamma=False, name="bn")
    sym = mx.sym.Group([mx.sym.relu(b, name="r"), mx.sym.exp(b, name="e")])
    args, aux = _values(sym, (1, 2, 5, 5))
    ex_f, out_f, _ = _run(sym, args, aux, True, monkeypatch)
    _, out_u, _ = _run(sym, args, aux, False, monkeypatch)
    fused = [n for n in ex_f._graph.nodes if n.op is not None and n.op.name == "_fused_conv_bn_act"]
    assert len(fused) == 1 and fused[0].parsed_attrs["act_type"] == "none"
    for a, b_ in zip(out_f, out_u):
        np.testing.assert_allclose(a, b_, rtol=1e-5, atol=1e-6)


def test_training_graphs_are_not_fused_and_keep_gradients(monkeypatch):
    sym = _chain()
    args, aux = _values(sym, (2, 4, 6, 6))
    ex, _, _ = _run(sym, args, aux, True, monkeypatch, is_train=True, grad_req="write")
    assert "fused_conv_bn" not in ex._graph.stats
    assert "_fused_conv_bn_act" not in {n.op.name for n in ex._graph.nodes if n.op is not None}


def test_the_callers_symbol_is_unchanged(monkeypatch):
    sym = _chain()
    before = sym.tojson()
    args, aux = _values(sym, (1, 4, 5, 5))
    ex, _, _ = _run(sym, args, aux, True, monkeypatch)
    assert ex._graph.stats.get("fused_conv_bn") == 1
    assert sym.tojson() == before
    ops = [n["op"] for n in json.loads(sym.tojson())["nodes"]]
    assert "BatchNorm" in ops and "_fused_conv_bn_act" not in ops


def test_fused_op_called_directly_matches_the_chain():
    rng = np.random.RandomState(7)
    x = mx.nd.array(rng.standard_normal((2, 3, 6, 6)))
    w = mx.nd.array(rng.standard_normal((5, 3, 3, 3)))
    bias = mx.nd.array(rng.standard_normal(5))
    gamma, beta = mx.nd.array(rng.uniform(0.5, 1.5, 5)), mx.nd.array(rng.standard_normal(5))
    mm, mv = mx.nd.array(rng.standard_normal(5)), mx.nd.array(rng.uniform(0.5, 2, 5))
    got = mx.nd._fused_conv_bn_act(x, w, bias, gamma, beta, mm, mv, kernel=(3, 3), num_filter=5, pad=(1, 1),
                                   fix_gamma=False, eps=1e-3, act_type="relu")
    c = mx.nd.Convolution(x, w, bias, kernel=(3, 3), num_filter=5, pad=(1, 1))
    ref = mx.nd.relu(mx.nd.BatchNorm(c, gamma, beta, mm, mv, fix_gamma=False, eps=1e-3))
    np.testing.assert_allclose(got.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-5)
    # numpy reference of the inference form: relu((conv - mean) / sqrt(var + eps) * gamma + beta)
    s = (gamma.asnumpy() / np.sqrt(mv.asnumpy() + 1e-3)).reshape(1, -1, 1, 1)
    np_ref = np.maximum((c.asnumpy() - mm.asnumpy().reshape(1, -1, 1, 1)) * s + beta.asnumpy().reshape(1, -1, 1, 1), 0)
    np.testing.assert_allclose(got.asnumpy(), np_ref, rtol=1e-5, atol=1e-5)


def test_gluon_hybridized_inference_fused_and_training_exact(monkeypatch):
    monkeypatch.setenv("EMBER_FUSE_CONV_BN", "1")
    net = mx.gluon.model_zoo.vision.get_model("resnet18_v1", classes=10)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(2).uniform(-1, 1, (2, 3, 32, 32)))
    ref = net(x).asnumpy()  # imperative: no graph passes
    net.hybridize(static_alloc=True, static_shape=True)
    np.testing.assert_allclose(net(x).asnumpy(), ref, rtol=1e-4, atol=1e-5)
    with mx.autograd.record():
        y = net(x)
    y.backward()
    assert all(p.grad() is not None for p in net.collect_params().values() if p.grad_req != "null")
