"""Executors: forward/backward against numpy and finite differences, grad_req, aux, reshape, errors."""
import threading

import numpy as np
import pytest

import ember as mx
from ember.base import ShapeError



def set_args(exe, rng, scale=1.0):
    """Fill every argument with uniform values; returns them as numpy arrays."""
    vals = {}
    for name, arr in exe.arg_dict.items():
        v = rng.uniform(-scale, scale, arr.shape).astype(arr.dtype)
        arr[:] = v
        vals[name] = v
    return vals


def _softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def mlp():
    data = mx.sym.var("data")
    h = mx.sym.FullyConnected(data, num_hidden=6, name="fc1")
    h = mx.sym.Activation(h, act_type="relu")
    h = mx.sym.FullyConnected(h, num_hidden=3, name="fc2")
    return mx.sym.SoftmaxOutput(h, name="softmax")


def test_mlp_forward_backward_matches_numpy(rng):
    exe = mlp().simple_bind(mx.cpu(), data=(4, 5))
    v = set_args(exe, rng)
    label = np.array([0, 2, 1, 2], dtype=np.float32)
    exe.arg_dict["softmax_label"][:] = label
    out = exe.forward(is_train=True)[0].asnumpy()
    h1 = v["data"] @ v["fc1_weight"].T + v["fc1_bias"]
    a1 = np.maximum(h1, 0)
    h2 = a1 @ v["fc2_weight"].T + v["fc2_bias"]
    p = _softmax(h2)
    np.testing.assert_allclose(out, p, rtol=1e-5, atol=1e-6)
    exe.backward()
    d2 = p.copy()
    d2[np.arange(4), label.astype(int)] -= 1
    np.testing.assert_allclose(exe.grad_dict["fc2_weight"].asnumpy(), d2.T @ a1, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["fc2_bias"].asnumpy(), d2.sum(0), rtol=1e-4, atol=1e-5)
    da1 = (d2 @ v["fc2_weight"]) * (h1 > 0)
    np.testing.assert_allclose(exe.grad_dict["fc1_weight"].asnumpy(), da1.T @ v["data"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(exe.grad_dict["data"].asnumpy(), da1 @ v["fc1_weight"], rtol=1e-4, atol=1e-5)


def _composed():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    c = mx.sym.tanh(a * b + 1)
    d = mx.sym.exp(c) / (b * b + 2) - a
    e = mx.sym.FullyConnected(d, num_hidden=3, name="fc")
    return mx.sym.Group([mx.sym.broadcast_mul(mx.sym.sigmoid(e), c.sum()), d * 3])


def _loss(exe, vals, ogs):
    for k, v in vals.items():
        exe.arg_dict[k][:] = v
    outs = exe.forward(is_train=True)
    return sum(float((o.asnumpy() * g).sum()) for o, g in zip(outs, ogs))


def test_composed_graph_gradients_match_finite_differences(rng):
    sym = _composed()
    shapes = {"a": (2, 4), "b": (2, 4)}
    exe = sym.simple_bind(mx.cpu(), type_dict={"a": np.float64, "b": np.float64}, **shapes)
    vals = {k: rng.uniform(-1, 1, a.shape) for k, a in exe.arg_dict.items()}
    outs = exe.forward(is_train=True, **{k: mx.nd.array(v, dtype=np.float64) for k, v in vals.items()})
    ogs = [rng.uniform(-1, 1, o.shape) for o in outs]
    _loss(exe, vals, ogs)
    exe.backward([mx.nd.array(g, dtype=np.float64) for g in ogs])
    grads = {k: g.asnumpy() for k, g in exe.grad_dict.items()}
    eps = 1e-6
    for name, v in vals.items():
        num = np.zeros_like(v)
        for idx in np.ndindex(v.shape):
            plus = {k: x.copy() for k, x in vals.items()}
            minus = {k: x.copy() for k, x in vals.items()}
            plus[name][idx] += eps
            minus[name][idx] -= eps
            num[idx] = (_loss(exe, plus, ogs) - _loss(exe, minus, ogs)) / (2 * eps)
        np.testing.assert_allclose(grads[name], num, rtol=1e-5, atol=1e-7, err_msg=name)


def test_grad_req_add_accumulates_and_null_skips(rng):
    sym = mlp()
    req = {"data": "null", "fc1_weight": "add", "fc1_bias": "write", "fc2_weight": "add", "fc2_bias": "null",
           "softmax_label": "null"}
    exe = sym.simple_bind(mx.cpu(), grad_req=req, data=(4, 5))
    ref = sym.simple_bind(mx.cpu(), grad_req="write", data=(4, 5))
    set_args(exe, rng)
    for k, v in exe.arg_dict.items():
        ref.arg_dict[k][:] = v
    for n in ("fc1_weight", "fc2_weight"):
        exe.grad_dict[n][:] = 1.0
    assert "fc2_bias" not in exe.grad_dict and "data" not in exe.grad_dict
    for _ in range(3):
        exe.forward(is_train=True)
        exe.backward()
    ref.forward(is_train=True)
    ref.backward()
    for n in ("fc1_weight", "fc2_weight"):
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), 1.0 + 3 * ref.grad_dict[n].asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["fc1_bias"].asnumpy(), ref.grad_dict["fc1_bias"].asnumpy(), rtol=1e-5)


def test_imperative_updates_interleave_without_waits(rng):
    """An SGD loop on executor weights with no explicit waits equals the same loop in numpy."""
    exe = mlp().simple_bind(mx.cpu(), data=(8, 5))
    v = set_args(exe, rng, 0.5)
    label = np.array([0, 1, 2, 0, 1, 2, 0, 1], dtype=np.float32)
    exe.arg_dict["softmax_label"][:] = label
    lr = 0.5
    ws = {k: v[k].astype(np.float64) for k in ("fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias")}
    for _ in range(5):
        exe.forward(is_train=True)
        exe.backward()
        for k in ws:
            w, g = exe.arg_dict[k], exe.grad_dict[k]
            w -= lr * g           # imperative update, ordered by the engine with the next forward
        h1 = v["data"] @ ws["fc1_weight"].T + ws["fc1_bias"]
        a1 = np.maximum(h1, 0)
        p = _softmax(a1 @ ws["fc2_weight"].T + ws["fc2_bias"])
        d2 = p.copy()
        d2[np.arange(8), label.astype(int)] -= 1
        da1 = (d2 @ ws["fc2_weight"]) * (h1 > 0)
        grads = {"fc2_weight": d2.T @ a1, "fc2_bias": d2.sum(0), "fc1_weight": da1.T @ v["data"],
                 "fc1_bias": da1.sum(0)}
        for k in ws:
            ws[k] = ws[k] - lr * grads[k]
    for k in ws:
        np.testing.assert_allclose(exe.arg_dict[k].asnumpy(), ws[k], rtol=1e-4, atol=1e-5, err_msg=k)


def test_batchnorm_aux_states_updated_in_training(rng):
    data = mx.sym.var("data")
    sym = mx.sym.BatchNorm(data, name="bn", momentum=0.9, fix_gamma=False)
    exe = sym.simple_bind(mx.cpu(), data=(6, 3))
    assert sym.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    x = rng.uniform(-1, 1, (6, 3)).astype(np.float32)
    exe.arg_dict["data"][:] = x
    exe.arg_dict["bn_gamma"][:] = 1
    exe.arg_dict["bn_beta"][:] = 0
    exe.aux_dict["bn_moving_var"][:] = 1
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), 0.1 * x.mean(0), rtol=1e-4, atol=1e-6)
    before = exe.aux_dict["bn_moving_mean"].asnumpy()
    exe.forward(is_train=False)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_mean"].asnumpy(), before)


def test_inplace_results_are_correct_when_inputs_live_on(rng):
    x = mx.sym.var("x")
    a = x * 2
    b = a + 1           # may not take a's bytes: a is read again below
    c = mx.sym.exp(b)   # may take b's bytes
    d = c * a
    e = mx.sym.relu(d - 0.5)
    exe = e.simple_bind(mx.cpu(), grad_req="null", x=(3, 4))
    xv = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    out = exe.forward(x=mx.nd.array(xv))[0].asnumpy()
    np.testing.assert_allclose(out, np.maximum(np.exp(xv * 2 + 1) * (xv * 2) - 0.5, 0), rtol=1e-5)
    assert exe.memory_stats()["inplace_pairs"] >= 2


def test_outputs_dicts_forward_kwargs_and_copy_params(rng):
    exe = mlp().simple_bind(mx.cpu(), data=(2, 5))
    assert list(exe.output_dict) == ["softmax_output"]
    assert exe.outputs[0] is exe.output_dict["softmax_output"]
    params = {k: mx.nd.array(rng.uniform(-1, 1, a.shape)) for k, a in exe.arg_dict.items() if "fc" in k}
    exe.copy_params_from(params)
    for k, v in params.items():
        np.testing.assert_allclose(exe.arg_dict[k].asnumpy(), v.asnumpy())
    with pytest.raises(ValueError, match="'nope' is not an argument"):
        exe.copy_params_from({"nope": mx.nd.zeros((1,))})
    exe.copy_params_from({"nope": mx.nd.zeros((1,))}, allow_extra_params=True)
    with pytest.raises(ValueError, match="not an argument"):
        exe.forward(dta=mx.nd.zeros((2, 5)))
    with pytest.raises(ShapeError, match="reshape"):
        exe.forward(data=mx.nd.zeros((3, 5)))


def test_reshape_shares_parameters(rng):
    exe = mlp().simple_bind(mx.cpu(), data=(2, 5))
    set_args(exe, rng)
    new = exe.reshape(data=(7, 5), softmax_label=(7,), allow_up_sizing=True)
    assert new.arg_dict["fc1_weight"] is exe.arg_dict["fc1_weight"]
    assert new.arg_dict["data"].shape == (7, 5)
    assert new.forward()[0].shape == (7, 3)
    with pytest.raises(ShapeError, match="allow_up_sizing"):
        exe.reshape(data=(9, 5), softmax_label=(9,))


def test_bind_errors_name_the_problem():
    sym = mlp()
    with pytest.raises(ValueError, match="missing arguments"):
        sym.bind(mx.cpu(), {"data": mx.nd.zeros((2, 5))})
    args = {n: mx.nd.zeros(s) for n, s in zip(sym.list_arguments(), sym.infer_shape(data=(2, 5))[0])}
    args["fc1_weight"] = mx.nd.zeros((6, 4))
    with pytest.raises(ShapeError, match="fc1"):
        sym.bind(mx.cpu(), args)
    with pytest.raises(ShapeError, match="cannot infer"):
        sym.simple_bind(mx.cpu())
    with pytest.raises(ValueError, match="grad_req"):
        sym.simple_bind(mx.cpu(), grad_req="sometimes", data=(2, 5))


def test_bulk_knob_gives_same_results(rng, monkeypatch):
    sym = _composed()
    results = []
    for size in ("1", "100"):
        monkeypatch.setenv("EMBER_EXEC_BULK_EXEC_MAX_NODE", size)
        exe = sym.simple_bind(mx.cpu(), a=(2, 4), b=(2, 4))
        r = np.random.RandomState(3)
        set_args(exe, r)
        outs = exe.forward(is_train=True)
        exe.backward([mx.nd.ones(o.shape) for o in outs])
        results.append([o.asnumpy() for o in outs] + [g.asnumpy() for g in exe.grad_arrays if g is not None])
        nseg = len(exe._fwd_segments) + len(exe._bwd_segments)
        assert (nseg == 2) if size == "100" else nseg > 10
    for x, y in zip(*results):
        np.testing.assert_allclose(x, y, rtol=1e-6)


def test_mirror_recomputes_and_keeps_gradients(rng, monkeypatch):
    x = mx.sym.var("x")
    h = x
    for i in range(6):
        h = mx.sym.FullyConnected(mx.sym.tanh(h) * 2, num_hidden=16, name=f"fc{i}")
    sym = mx.sym.MakeLoss(mx.sym.sum(h * h))
    grads = []
    for flag in ("0", "1"):
        monkeypatch.setenv("EMBER_BACKWARD_DO_MIRROR", flag)
        exe = sym.simple_bind(mx.cpu(), x=(32, 16))
        set_args(exe, np.random.RandomState(5), 0.3)
        exe.forward(is_train=True)
        exe.backward()
        grads.append({k: g.asnumpy() for k, g in exe.grad_dict.items()})
        stats = exe.memory_stats()
        if flag == "1":
            assert stats["mirrored_nodes"] >= 6
    for k in grads[0]:
        np.testing.assert_allclose(grads[0][k], grads[1][k], rtol=1e-5, err_msg=k)


def test_force_mirroring_attribute(rng):
    x = mx.sym.var("x")
    t = mx.sym.tanh(x, attr={"__force_mirroring__": "True"})
    sym = mx.sym.MakeLoss(mx.sym.sum(t * x))
    exe = sym.simple_bind(mx.cpu(), x=(4, 4))
    assert exe.memory_stats()["mirrored_nodes"] == 1
    v = set_args(exe, rng)
    exe.forward(is_train=True)
    exe.backward()
    t_ = np.tanh(v["x"])
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), t_ + v["x"] * (1 - t_ ** 2), rtol=1e-5)


def test_debug_str_reports_plan():
    exe = mlp().simple_bind(mx.cpu(), data=(4, 5))
    text = exe.debug_str()
    assert "Total 0 MB allocated" in text
    assert "storage_id=" in text and "Op:FullyConnected, Name=fc1" in text
    st = exe.memory_stats()
    assert st["lower_bound_bytes"] <= st["planned_bytes"] <= st["naive_bytes"] + 64 * st["num_nodes"]


def test_bind_with_lists_and_null_grad_req(rng):
    a, b = mx.sym.var("a"), mx.sym.var("b")
    s = mx.sym.exp(a) * b
    av, bv = rng.rand(2, 3).astype(np.float32), rng.rand(2, 3).astype(np.float32)
    exe = s.bind(mx.cpu(), [mx.nd.array(av), mx.nd.array(bv)], args_grad=[mx.nd.zeros((2, 3)), mx.nd.zeros((2, 3))],
                 grad_req=["write", "null"])
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 3)))
    np.testing.assert_allclose(exe.grad_arrays[0].asnumpy(), np.exp(av) * bv, rtol=1e-5)
    np.testing.assert_allclose(exe.grad_arrays[1].asnumpy(), 0)   # 'null': left alone
    inference = s.bind(mx.cpu(), {"a": mx.nd.array(av), "b": mx.nd.array(bv)})
    assert inference._graph.num_forward == len(inference._graph.nodes)  # no backward nodes
    inference.backward()  # nothing to do
    with pytest.raises(ValueError, match="1 gradient arrays given, the symbol has 2"):
        s.bind(mx.cpu(), [mx.nd.array(av), mx.nd.array(bv)], args_grad=[mx.nd.zeros((2, 3))])
    with pytest.raises(TypeError, match="must be an NDArray"):
        s.bind(mx.cpu(), {"a": av, "b": bv})
    exe.backward([mx.nd.ones((2, 3)), mx.nd.ones((5,))])  # a head gradient past the outputs: ignored, as in MXNet
    np.testing.assert_allclose(exe.grad_arrays[0].asnumpy(), np.exp(av) * bv, rtol=1e-5)


def test_gpu_executor_matches_cpu(rng):
    cupy = pytest.importorskip("cupy")
    if mx.num_gpus() == 0:
        pytest.skip("no GPU")
    sym = mlp()
    cpu = sym.simple_bind(mx.cpu(), data=(4, 5))
    gpu = sym.simple_bind(mx.gpu(0), data=(4, 5))
    v = set_args(cpu, rng)
    for k, x in v.items():
        gpu.arg_dict[k][:] = mx.nd.array(x, ctx=mx.gpu(0))
    for e in (cpu, gpu):
        e.forward(is_train=True)
        e.backward()
    np.testing.assert_allclose(gpu.outputs[0].asnumpy(), cpu.outputs[0].asnumpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gpu.grad_dict["fc1_weight"].asnumpy(), cpu.grad_dict["fc1_weight"].asnumpy(),
                               rtol=1e-4, atol=1e-5)
    assert cupy is not None


def test_mirror_on_a_deep_chain_is_bounded(monkeypatch):
    x = mx.sym.var("x")
    h = x
    for _ in range(300):
        h = mx.sym.tanh(h * 0.9)
    sym = mx.sym.MakeLoss(mx.sym.sum(h))
    grads = []
    for flag in ("0", "1"):
        monkeypatch.setenv("EMBER_BACKWARD_DO_MIRROR", flag)
        exe = sym.simple_bind(mx.cpu(), x=(2, 3))
        exe.arg_dict["x"][:] = np.linspace(-1, 1, 6).reshape(2, 3)
        exe.forward(is_train=True)
        exe.backward()
        grads.append(exe.grad_dict["x"].asnumpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-5)


def test_bind_rejects_arrays_on_another_device():
    s = mx.sym.exp(mx.sym.var("a"))
    with pytest.raises(mx.base.ContextError, match="'a' is on cpu"):
        s.bind(mx.gpu(0), {"a": mx.nd.zeros((2,))})


def test_kernel_override_applies_to_a_bound_executor():
    # a step calls the op's ufunc directly (OpDef.cpu_ufunc) until the kernel is replaced
    from ember import ops
    from ember.ops import registry
    x = mx.sym.var("x")
    exe = ((x * 3.0) + x).simple_bind(mx.cpu(), grad_req="null", x=(2, 3))
    exe.arg_dict["x"][:] = 2.0
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), np.full((2, 3), 8.0))

    def mul_then_one(ctx, attrs, inputs, outputs, aux):
        np.multiply(inputs[0], attrs["scalar"], out=outputs[0])
        outputs[0] += 1
    ops.override("_mul_scalar", "cpu", mul_then_one)
    try:
        np.testing.assert_array_equal(exe.forward()[0].asnumpy(), np.full((2, 3), 9.0))
    finally:
        ops.get("_mul_scalar").kernels.pop("cpu")
        registry._changed()
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), np.full((2, 3), 8.0))


@pytest.mark.parametrize("engine_type", ["ThreadedEngine", "NaiveEngine"])
def test_tiny_graph_runs_in_the_caller_and_waits_for_pending_writes(engine_type):
    x = mx.sym.var("x")
    exe = mx.sym.relu(x - 1.0).simple_bind(mx.cpu(), grad_req="null", x=(4,))
    old = mx.engine.set_engine_type(engine_type)
    try:
        arg = exe.arg_dict["x"]
        arg[:] = 3.0
        exe.forward()
        before = mx.engine.stats()["inline"]
        np.testing.assert_array_equal(exe.forward()[0].asnumpy(), [2, 2, 2, 2])
        assert mx.engine.stats()["inline"] > before  # an idle engine: run in this thread
        if engine_type == "NaiveEngine":
            return  # (a write cannot stay pending there)
        gate, data = threading.Event(), arg._data

        def slow_write():
            gate.wait(10)
            data[...] = 5.0
        mx.engine.push(slow_write, write=[arg.var], name="slow_write")
        out = exe.forward()[0]  # must come after the pending write
        gate.set()
        np.testing.assert_array_equal(out.asnumpy(), np.full(4, 4.0))
    finally:
        mx.engine.set_engine_type(old)
