"""The native LSTM directions (native/lstm_kernels.h: every step's GEMM and element-wise part in one
call) inside the fused RNN op on CPU: the forward's outputs, states and reserve and the backward's
gradients agree with a float64 reference and with the numpy code they replace (to float32
rounding), in every layout the op takes natively (layers, bidirectional, given states, state
outputs); numpy's code where the kernels do not apply (sequence lengths, cell clipping, a
projection, float64); the skipped data gradient; entry points against float64 loops, and refusing
arrays they cannot take."""
import os
import subprocess
import sys

import numpy as np
import pytest

import ember as mx
from ember import autograd
from ember.engine import native
from ember.ops import nn_rnn
from ember.symbolic.gradient import build_gradient
from ember.symbolic.graph import topo_order

sys.path.insert(0, os.path.dirname(__file__))
from _native_spies import spy_native  # noqa: E402

# the kernels answer False (numpy's code runs) on an x86-64 CPU without AVX2 and FMA
needs_fast_math = pytest.mark.skipif(not native.fast_math_available(),
                                     reason="this CPU has no vector FMA: the native kernels leave it to numpy")

T, N, I, H = 5, 3, 4, 6


def _native(monkeypatch, on: bool) -> list:
    return spy_native(monkeypatch, nn_rnn, ("lstm_forward_f32", "lstm_backward_f32"), on)


def _sigmoid(a):
    return 1 / (1 + np.exp(-a))


def _reference(x, flat, h0, c0, layers, bidirectional):
    """Forward outputs, hy, cy of a stacked LSTM in float64 (MXNet's flat parameter layout)."""
    dirs = 2 if bidirectional else 1
    attrs = {"mode": "lstm", "state_size": H, "num_layers": layers, "bidirectional": bidirectional,
             "projection_size": None}
    weights = nn_rnn.unpack_params(attrs, flat.astype(np.float64), x.shape[2])
    layer_in, hy, cy = x.astype(np.float64), [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            wx, wh, bx, bh, _ = weights[(layer, d)]
            h, c = h0[layer * dirs + d].astype(np.float64), c0[layer * dirs + d].astype(np.float64)
            seq = [None] * T
            for t in (range(T - 1, -1, -1) if d else range(T)):
                a = layer_in[t] @ wx.T + bx + h @ wh.T + bh
                i, f = _sigmoid(a[:, :H]), _sigmoid(a[:, H:2 * H])
                g, o = np.tanh(a[:, 2 * H:3 * H]), _sigmoid(a[:, 3 * H:])
                c = f * c + i * g
                h = o * np.tanh(c)
                seq[t] = h
            outs.append(np.stack(seq))
            hy.append(h)
            cy.append(c)
        layer_in = np.concatenate(outs, axis=2)
    return layer_in, np.stack(hy), np.stack(cy)


def _inputs(layers, bidirectional, seed):
    rng = np.random.RandomState(seed)
    dirs = 2 if bidirectional else 1
    attrs = {"mode": "lstm", "state_size": H, "num_layers": layers, "bidirectional": bidirectional,
             "projection_size": None}
    size = nn_rnn.param_size(attrs, I)
    x = rng.standard_normal((T, N, I)).astype(np.float32)
    flat = rng.uniform(-0.8, 0.8, size).astype(np.float32)
    h0 = rng.standard_normal((layers * dirs, N, H)).astype(np.float32) * 0.5
    c0 = rng.standard_normal((layers * dirs, N, H)).astype(np.float32) * 0.5
    return x, flat, h0, c0


def _run(monkeypatch, on, x, flat, h0, c0, layers, bidirectional, heads, dtype="float32", **extra):
    """Forward + backward through mx.nd.RNN while recording: outputs, hy, cy, then the gradients of
    data, parameters, h0, c0 (float64), and the spies' record."""
    taken = _native(monkeypatch, on)
    arrays = [mx.nd.array(a, dtype=dtype) for a in (x, flat, h0, c0)]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        out, hy, cy = mx.nd.RNN(*arrays, state_size=H, num_layers=layers, bidirectional=bidirectional, mode="lstm",
                                state_outputs=True, **extra)
    autograd.backward([out, hy, cy], [mx.nd.array(g, dtype=dtype) for g in heads])
    res = [a.asnumpy().astype(np.float64) for a in [out, hy, cy] + [a.grad for a in arrays]]
    monkeypatch.undo()
    return res, taken


def _heads(layers, bidirectional, seed):
    rng = np.random.RandomState(seed + 100)
    dirs = 2 if bidirectional else 1
    return [rng.standard_normal(s).astype(np.float32)
            for s in ((T, N, dirs * H), (layers * dirs, N, H), (layers * dirs, N, H))]


@needs_fast_math
@pytest.mark.parametrize("layers,bidirectional", [(1, False), (2, False), (1, True), (2, True)])
def test_native_steps_agree_with_float64_and_numpy(monkeypatch, layers, bidirectional):
    x, flat, h0, c0 = _inputs(layers, bidirectional, seed=layers + 2 * bidirectional)
    heads = _heads(layers, bidirectional, seed=layers)
    got, taken = _run(monkeypatch, True, x, flat, h0, c0, layers, bidirectional, heads)
    want, refused = _run(monkeypatch, False, x, flat, h0, c0, layers, bidirectional, heads)
    dirs = 2 if bidirectional else 1
    assert taken and all(taken) and len(taken) == 2 * layers * dirs   # one call a direction, both ways
    assert refused and not any(refused)
    for name, g, w in zip(["out", "hy", "cy", "dx", "dparams", "dh0", "dc0"], got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=name)
    ref = _reference(x, flat, h0, c0, layers, bidirectional)
    for name, g, w in zip(["out", "hy", "cy"], got, ref):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)


@needs_fast_math
def test_native_gradient_against_finite_differences(monkeypatch):
    """The native backward is the gradient of the native forward (float64 differences of the float64
    reference, whose forward the float32 kernels match above)."""
    layers, bidirectional = 1, False
    x, flat, h0, c0 = _inputs(layers, bidirectional, seed=7)
    heads = _heads(layers, bidirectional, seed=7)
    got, taken = _run(monkeypatch, True, x, flat, h0, c0, layers, bidirectional, heads)
    assert taken and all(taken)

    def loss(flat64):
        out, hy, cy = _reference(x, flat64, h0, c0, layers, bidirectional)
        return sum(float((o * g).sum()) for o, g in zip((out, hy, cy), heads))
    rng = np.random.RandomState(3)
    for k in rng.choice(flat.size, 12, replace=False):
        e = np.zeros(flat.size)
        e[k] = 1e-6
        fd = (loss(flat.astype(np.float64) + e) - loss(flat.astype(np.float64) - e)) / 2e-6
        assert abs(got[4][k] - fd) <= 1e-4 * (1 + abs(fd)), (k, got[4][k], fd)


@pytest.mark.parametrize("extra", [{"use_sequence_length": True}, {"lstm_state_clip_min": -0.5,
                                                                   "lstm_state_clip_max": 0.5},
                                   {"projection_size": 3}])
def test_numpy_code_where_the_kernels_do_not_apply(monkeypatch, extra):
    attrs = {"mode": "lstm", "state_size": H, "num_layers": 1, "bidirectional": False,
             "projection_size": extra.get("projection_size")}
    rng = np.random.RandomState(0)
    x = mx.nd.array(rng.standard_normal((T, N, I)))
    flat = mx.nd.array(rng.uniform(-0.5, 0.5, nn_rnn.param_size(attrs, I)))
    h0 = mx.nd.zeros((1, N, extra.get("projection_size") or H))
    c0 = mx.nd.zeros((1, N, H))
    ins = [x, flat, h0, c0] + ([mx.nd.array([T, 2, 1])] if "use_sequence_length" in extra else [])
    taken = _native(monkeypatch, True)
    flat.attach_grad()
    with autograd.record():
        out = mx.nd.RNN(*ins, state_size=H, num_layers=1, mode="lstm", **extra)
    out.backward()
    flat.grad.wait_to_read()
    assert taken == []


def test_float64_runs_numpy_code(monkeypatch):
    x, flat, h0, c0 = _inputs(1, False, seed=1)
    heads = _heads(1, False, seed=1)
    got, taken = _run(monkeypatch, True, x, flat, h0, c0, 1, False, heads, dtype="float64")
    assert taken == []
    ref = _reference(x, flat, h0, c0, 1, False)
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-10)


def test_data_gradient_skipped_when_nobody_wants_it(monkeypatch):
    """The first layer's data gradient GEMM is skipped when the data has no gradient; the other
    gradients are those computed with it."""
    x, flat, h0, c0 = _inputs(2, True, seed=4)
    calls = []
    real = nn_rnn._direction_backward

    def spy(*args, **kw):
        calls.append(args[-1] if len(args) > 11 else kw.get("want_dx", True))
        return real(*args, **kw)
    monkeypatch.setattr(nn_rnn, "_direction_backward", spy)
    grads = {}
    for data_grad in (True, False):
        arrays = [mx.nd.array(a) for a in (x, flat, h0, c0)]
        for a in arrays[int(not data_grad):]:
            a.attach_grad()
        with autograd.record():
            out = mx.nd.RNN(*arrays, state_size=H, num_layers=2, bidirectional=True, mode="lstm")
        out.backward()
        grads[data_grad] = [a.grad.asnumpy() for a in arrays[1:]]
    assert calls == [True] * 4 + [True, True, False, False]   # layer 1's directions, then layer 0's
    for g, w in zip(grads[False], grads[True]):
        np.testing.assert_array_equal(g, w)


def test_gradient_pass_skips_the_data_gradient_only_without_one():
    """The graph's gradient pass tells _backward_RNN to skip the data gradient exactly when the data
    is not among the arguments whose gradients are wanted; a bound graph then gives the same
    parameter gradients either way."""
    out = mx.sym.RNN(mx.sym.var("data"), mx.sym.var("p"), mx.sym.var("h0"), mx.sym.var("c0"), state_size=H,
                     num_layers=1, mode="lstm", name="rnn")
    order = topo_order(out._outputs)
    for wanted, skip in (({"p", "h0", "c0"}, True), ({"data", "p"}, False)):
        entries, _ = build_gradient(out._outputs, [n for n in order if n.op is None and n.name in wanted], order)
        nodes = [n for n in topo_order([e for e in entries if e is not None])
                 if n.op is not None and n.op.name == "_backward_RNN"]
        assert len(nodes) == 1 and nodes[0].parsed_attrs["no_data_grad"] is skip
    size = nn_rnn.param_size({"mode": "lstm", "state_size": H, "num_layers": 1, "bidirectional": False,
                              "projection_size": None}, I)
    rng = np.random.RandomState(0)
    vals = {"data": rng.standard_normal((T, N, I)), "p": rng.uniform(-0.5, 0.5, size),
            "h0": rng.standard_normal((1, N, H)), "c0": rng.standard_normal((1, N, H))}
    head = rng.standard_normal((T, N, H))
    grads = {}
    for data_req in ("null", "write"):
        args = {k: mx.nd.array(v) for k, v in vals.items()}
        grad_arrays = {k: mx.nd.zeros(v.shape) for k, v in vals.items()}
        exe = out.bind(mx.cpu(), args, args_grad=grad_arrays, grad_req=dict(data=data_req, p="write", h0="write",
                                                                              c0="write"))
        exe.forward(is_train=True)
        exe.backward(mx.nd.array(head))
        grads[data_req] = {k: v.asnumpy() for k, v in grad_arrays.items()}
    assert not grads["null"]["data"].any() and grads["write"]["data"].any()
    for k in ("p", "h0", "c0"):
        np.testing.assert_array_equal(grads["null"][k], grads["write"][k])


# -- the entry points -----------------------------------------------------------------
def _direction_arrays(t_len, n, h, reverse, seed=0):
    """An LSTM direction's arrays as the op hands them to the native forward (lstm_kernels.h)."""
    rng = np.random.RandomState(seed)
    f = np.float32
    first = t_len if reverse else 0
    d = dict(wh=(rng.standard_normal((4 * h, h)) * 0.4).astype(f), bias=rng.standard_normal(4 * h).astype(f),
             gates=np.empty((t_len, 4, n, h), f), c_seq=np.zeros((t_len + 1, n, h), f), tc=np.empty((t_len, n, h), f),
             h_seq=np.zeros((t_len + 1, n, h), f))
    d["gates"].reshape(t_len, n, 4 * h)[...] = rng.standard_normal((t_len, n, 4 * h))   # x_t W_x^T
    d["h_seq"][first] = rng.standard_normal((n, h))
    d["c_seq"][first] = rng.standard_normal((n, h))
    return d


def _forward_call(d, reverse):
    return native.lstm_forward_f32(d["wh"], d["bias"], d["gates"], d["c_seq"], d["tc"], d["h_seq"], reverse)


def _steps(t_len, reverse):
    """(t, the state entry before it, the one after) in the order the forward takes the steps."""
    order = range(t_len - 1, -1, -1) if reverse else range(t_len)
    return [(t, t + 1, t) if reverse else (t, t, t + 1) for t in order]


@needs_fast_math
@pytest.mark.parametrize("t_len,n,h,reverse", [(3, 3, 5, False), (2, 1, 1, True), (4, 32, 20, False),
                                               (3, 17, 33, True)])
def test_forward_entry_point_against_float64(t_len, n, h, reverse):
    """Each step from the kernel's own state before it (so float32 errors do not compound)."""
    d = _direction_arrays(t_len, n, h, reverse)
    pre = d["gates"].reshape(t_len, n, 4 * h).astype(np.float64)
    assert _forward_call(d, reverse)
    wh, bias = d["wh"].astype(np.float64), d["bias"].astype(np.float64)
    for t, b, e in _steps(t_len, reverse):
        s = pre[t] + d["h_seq"][b].astype(np.float64) @ wh.T + bias
        i, f, g, o = _sigmoid(s[:, :h]), _sigmoid(s[:, h:2 * h]), np.tanh(s[:, 2 * h:3 * h]), _sigmoid(s[:, 3 * h:])
        c = f * d["c_seq"][b] + i * g
        np.testing.assert_allclose(d["gates"][t], np.stack([i, f, g, o]), rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(d["c_seq"][e], c, rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(d["tc"][t], np.tanh(c), rtol=2e-5, atol=1e-6)
        np.testing.assert_allclose(d["h_seq"][e], o * np.tanh(c), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("reverse", [False, True])
def test_backward_entry_point_against_float64(reverse):
    t_len, n, h = 4, 3, 7
    rng = np.random.RandomState(5)
    f = np.float32
    d = _direction_arrays(t_len, n, h, reverse, seed=6)
    d["gates"][...] = np.concatenate([rng.uniform(0.05, 0.95, (t_len, 2, n, h)),   # i, f
                                      rng.uniform(-0.9, 0.9, (t_len, 1, n, h)),    # g
                                      rng.uniform(0.05, 0.95, (t_len, 1, n, h))], axis=1)   # o
    d["c_seq"][...] = rng.standard_normal(d["c_seq"].shape)
    d["tc"][...] = np.tanh(rng.standard_normal(d["tc"].shape))
    d_out = rng.standard_normal((t_len, n, h)).astype(f)
    dh, dc = rng.standard_normal((n, h)).astype(f), rng.standard_normal((n, h)).astype(f)
    d_a = np.empty((t_len, n, 4 * h), f)
    dh64, dc64 = dh.astype(np.float64), dc.astype(np.float64)
    assert native.lstm_backward_f32(d["wh"], d["gates"], d["c_seq"], d["tc"], d_out, dh, dc, d_a, reverse)
    for t, b, _ in reversed(_steps(t_len, reverse)):
        i, fg, g, o = (d["gates"][t, k].astype(np.float64) for k in range(4))
        tc = d["tc"][t].astype(np.float64)
        dhv = dh64 + d_out[t]
        dcv = dc64 + dhv * o * (1 - tc ** 2)
        want = np.concatenate([dcv * g * i * (1 - i), dcv * d["c_seq"][b] * fg * (1 - fg), dcv * i * (1 - g * g),
                               dhv * tc * o * (1 - o)], axis=1)
        np.testing.assert_allclose(d_a[t], want, rtol=1e-5, atol=1e-6)
        dc64 = dcv * fg
        dh64 = d_a[t].astype(np.float64) @ d["wh"]   # from the kernel's own d_a, as the reference forward above
    np.testing.assert_allclose(dh, dh64, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dc, dc64, rtol=1e-5, atol=1e-6)


def test_entry_points_refuse_what_they_cannot_take():
    d = _direction_arrays(3, 3, 5, False)
    bad = [dict(d, wh=d["wh"].astype(np.float64)), dict(d, bias=d["bias"][:-1]), dict(d, tc=d["tc"][:, :, ::2].copy()),
           dict(d, c_seq=d["h_seq"]), dict(d, gates=np.empty((3, 4, 3, 4), np.float32)),
           dict(d, h_seq=np.empty((1, 3, 5), np.float32)), dict(d, h_seq=d["h_seq"].reshape(4, 15)),
           dict(d, c_seq=d["c_seq"][:, :, ::-1]), dict(d, tc=d["gates"][:, 0])]
    for case in bad:
        before = {k: v.copy() for k, v in case.items()}
        assert not _forward_call(case, False)
        for k, v in case.items():
            np.testing.assert_array_equal(v, before[k])
    t_len, n, h = 3, 3, 5
    f = np.float32
    ok = [d["wh"], d["gates"], d["c_seq"], d["tc"], np.zeros((t_len, n, h), f), np.zeros((n, h), f),
          np.zeros((n, h), f), np.zeros((t_len, n, 4 * h), f)]
    assert native.lstm_backward_f32(*ok, False)
    for k, wrong in [(5, np.zeros((n, h + 1), f)), (6, ok[5]), (7, ok[1].reshape(t_len, n, 4 * h)),
                     (4, np.zeros((t_len, n, h))), (4, np.zeros((n, h), f)), (0, d["wh"][:, :4])]:
        args = list(ok)
        args[k] = wrong
        assert not native.lstm_backward_f32(*args, False)


def test_entry_points_refuse_without_a_gemm(monkeypatch):
    """Without a BLAS sgemm (numpy on another BLAS) the entry points answer False and the op runs numpy's
    code, with the same results."""
    from ember.engine import cpu_team
    from ember.engine._native import ffi, lib
    if not native.gemm_ready():
        pytest.skip("no sgemm installed here")
    x, flat, h0, c0 = _inputs(1, False, seed=11)
    heads = _heads(1, False, seed=11)
    want, _ = _run(monkeypatch, True, x, flat, h0, c0, 1, False, heads)
    _, address, wide = cpu_team._gemm   # what install() found, to put back
    split = lib.ember_gemm_splits()
    lib.ember_gemm_install(ffi.NULL, 0)
    try:
        assert not _forward_call(_direction_arrays(2, 3, 4, False), False)
        got, taken = _run(monkeypatch, True, x, flat, h0, c0, 1, False, heads)
    finally:
        lib.ember_gemm_install(ffi.cast("void *", address), int(wide))
        lib.ember_gemm_split_on_team(split)
    assert native.gemm_ready() and taken and not any(taken)
    for name, g, w in zip(["out", "hy", "cy", "dx", "dparams", "dh0", "dc0"], got, want):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=2e-6, err_msg=name)


def _lstm_step_and_grads(x, params, h0, c0, hidden):
    """Outputs and gradients of a bidirectional one-layer mx.nd.RNN LSTM (numpy arrays)."""
    arrays = [mx.nd.array(a) for a in (x, params, h0, c0)]
    for a in arrays:
        a.attach_grad()
    with autograd.record():
        out, hy, cy = mx.nd.RNN(*arrays, state_size=hidden, num_layers=1, bidirectional=True, mode="lstm",
                                state_outputs=True)
        total = (out * out).sum() + hy.sum() + (cy * cy).sum()
    total.backward()
    return [a.asnumpy() for a in (out, hy, cy)] + [a.grad.asnumpy() for a in arrays]


def test_split_products_equal_whole_ones():
    """The installed sgemm with each product split over the CPU team (as MKL's sequential layer runs):
    an LSTM's outputs and gradients are the bits of the unsplit products.  The sizes make every step's
    product large enough to split (4 * 128 x 32 x 128)."""
    from ember.engine._native import lib
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not native.gemm_ready():
        pytest.skip("no sgemm installed here")
    rng = np.random.RandomState(13)
    t_len, n, i_size, hidden = 4, 32, 64, 128
    size = nn_rnn.param_size({"mode": "lstm", "state_size": hidden, "num_layers": 1, "bidirectional": True,
                              "projection_size": None}, i_size)
    x = rng.standard_normal((t_len, n, i_size)).astype(np.float32)
    params = rng.uniform(-0.2, 0.2, size).astype(np.float32)
    h0, c0 = (rng.standard_normal((2, n, hidden)).astype(np.float32) for _ in range(2))
    split = lib.ember_gemm_splits()
    # one BLAS thread: the parts run on the team's threads, where OpenBLAS may not start a region of its own
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        try:
            results = []
            for on in (0, 1):
                lib.ember_gemm_split_on_team(on)
                results.append(_lstm_step_and_grads(x, params, h0, c0, hidden))
        finally:
            lib.ember_gemm_split_on_team(split)
    for name, g, w in zip(["out", "hy", "cy", "dx", "dparams", "dh0", "dc0"], results[1], results[0]):
        np.testing.assert_array_equal(g, w, err_msg=name)


def _mkl_installed() -> bool:
    from ember.engine import cpu_team
    return cpu_team._mkl_sgemm() is not None


def test_sgemm_is_installed():
    """The kernels get an sgemm at import (ember.engine.cpu_team): oneMKL's sequential one, split over the
    team, when the `mkl` package is installed; else numpy's OpenBLAS, whole."""
    from ember.engine import cpu_team
    from ember.engine._native import lib
    if os.environ.get("EMBER_GEMM", "").lower() != "openblas" and _mkl_installed():
        assert native.gemm_ready() and "libmkl_rt" in cpu_team.gemm_library() and lib.ember_gemm_splits()
        return
    assert not lib.ember_gemm_splits()
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not any(i.get("internal_api") == "openblas" for i in threadpoolctl.threadpool_info()):
        pytest.skip("numpy's BLAS is not OpenBLAS")
    assert native.gemm_ready() and cpu_team.gemm_library() is not None
    numpy64 = [i["filepath"] for i in threadpoolctl.threadpool_info()
               if i.get("internal_api") == "openblas" and "openblas64" in i["filepath"]]
    if numpy64:   # chosen by name, whatever threadpoolctl's order: the 64-bit build (numpy's) first
        assert cpu_team.gemm_library() == numpy64[0]


def test_openblas_chosen_over_mkl_by_environment():
    """EMBER_GEMM=openblas keeps numpy's sgemm, unsplit, where MKL is installed too."""
    code = ("import ember; from ember.engine import cpu_team; from ember.engine._native import lib; "
            "print(cpu_team.gemm_library(), lib.ember_gemm_splits())")
    env = dict(os.environ, EMBER_GEMM="openblas")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    path, splits = out.split()
    assert "libmkl_rt" not in path and splits == "0"


@pytest.mark.parametrize("shape", [(8, 3), (1024, 256), (4100, 130), (3000, 700)])
def test_banded_transpose_equals_numpy(shape):
    w = np.random.RandomState(0).standard_normal(shape).astype(np.float32)
    got = nn_rnn._transposed(np, w)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, w.T)
