"""softmax / log_softmax's native row kernels (native/softmax_kernels.h) and the vectorized
exponential, tanh and sigmoid they and the LSTM kernels share (native/fast_math.h): results agree
with float64 references and with the numpy code they replace (to float32 rounding), the same
non-finite values where rows hold infinities or NaN, in place as the op may run; numpy's code
where they do not apply; the functions' accuracy in ulp over their whole range; entry points that
refuse arrays they cannot take."""
import os
import sys

import numpy as np
import pytest

import ember as mx
from ember import autograd
from ember.engine import native
from ember.ops import nn_softmax

sys.path.insert(0, os.path.dirname(__file__))
from _native_spies import spy_native  # noqa: E402

# the kernels answer False (numpy's code runs) on an x86-64 CPU without AVX2 and FMA
needs_fast_math = pytest.mark.skipif(not native.fast_math_available(),
                                     reason="this CPU has no vector FMA: the native kernels leave it to numpy")


def _native(monkeypatch, on: bool) -> list:
    return spy_native(monkeypatch, nn_softmax, ("softmax_rows_f32", "softmax_rows_backward_f32"), on)


def _run(monkeypatch, on, op, x, dy, dtype="float32", **attrs):
    taken = _native(monkeypatch, on)
    xa = mx.nd.array(x, dtype=dtype)
    xa.attach_grad()
    with autograd.record():
        y = getattr(mx.nd, op)(xa, **attrs)
    y.backward(mx.nd.array(dy, dtype=dtype))
    res = [y.asnumpy().astype(np.float64), xa.grad.asnumpy().astype(np.float64)]
    monkeypatch.undo()
    return res, taken


def _reference(op, x, dy):
    x, dy = x.astype(np.float64), dy.astype(np.float64)
    z = x - x.max(axis=-1, keepdims=True)
    lse = np.log(np.exp(z).sum(axis=-1, keepdims=True))
    if op == "log_softmax":
        return z - lse, dy - np.exp(z - lse) * dy.sum(axis=-1, keepdims=True)
    y = np.exp(z - lse)
    return y, y * (dy - (dy * y).sum(axis=-1, keepdims=True))


@needs_fast_math
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(2, 3, 7), (5, 1000), (1, 1), (4, 33), (17,)])
def test_native_rows_agree_with_float64_and_numpy(monkeypatch, op, shape):
    rng = np.random.RandomState(len(shape) + shape[-1])
    x = (rng.standard_normal(shape) * 4).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    got, taken = _run(monkeypatch, True, op, x, dy)
    want, refused = _run(monkeypatch, False, op, x, dy)
    assert taken == [True, True] and refused == [False, False]
    ref = _reference(op, x, dy)
    for name, g, w, r in zip(("y", "dx"), got, want, ref):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(g, r, rtol=1e-5, atol=1e-6, err_msg=name)


@needs_fast_math
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_non_finite_rows_as_the_numpy_code(monkeypatch, op):
    inf, nan = np.inf, np.nan
    x = np.array([[1, 2, 3, -inf], [-inf, -inf, -inf, -inf], [1, inf, 2, 3], [1, nan, 2, 3], [-inf, 0, -inf, 5],
                  [1e30, -1e30, 0, 3e38]], np.float32)
    dy = np.ones_like(x)
    with np.errstate(all="ignore"):
        got, taken = _run(monkeypatch, True, op, x, dy)
        want, _ = _run(monkeypatch, False, op, x, dy)
    assert taken[0]
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)   # NaN where numpy has NaN
    np.testing.assert_array_equal(np.isnan(got[1]), np.isnan(want[1]))


@needs_fast_math
def test_in_place_forward_and_backward():
    rng = np.random.RandomState(0)
    x = rng.standard_normal((6, 40)).astype(np.float32)
    y = np.empty_like(x)
    assert native.softmax_rows_f32(x, y, True)
    x2 = x.copy()
    assert native.softmax_rows_f32(x2, x2, True)
    np.testing.assert_array_equal(x2, y)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    dx = np.empty_like(dy)
    assert native.softmax_rows_backward_f32(dy, y, dx, True)
    assert native.softmax_rows_backward_f32(dy, y, dy, True)
    np.testing.assert_array_equal(dy, dx)


@pytest.mark.parametrize("attrs", [{"axis": 0}, {"temperature": 2.0}])
def test_numpy_code_where_the_kernels_do_not_apply(monkeypatch, attrs):
    rng = np.random.RandomState(1)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    dy = rng.standard_normal((3, 5)).astype(np.float32)
    got, taken = _run(monkeypatch, True, "log_softmax", x, dy, **attrs)
    assert taken == []
    t = attrs.get("temperature", 1.0)
    ax = attrs.get("axis", -1)
    z = x.astype(np.float64) / t
    want = z - np.log(np.exp(z - z.max(axis=ax, keepdims=True)).sum(axis=ax, keepdims=True)) - z.max(axis=ax,
                                                                                                     keepdims=True)
    np.testing.assert_allclose(got[0], want, rtol=1e-5, atol=1e-6)


def test_float16_and_float64_run_numpy_code(monkeypatch):
    x = np.random.RandomState(2).standard_normal((3, 8))
    for dtype in ("float16", "float64"):
        got, taken = _run(monkeypatch, True, "softmax", x, np.ones_like(x), dtype=dtype)
        assert taken == []
        np.testing.assert_allclose(got[0], _reference("softmax", x, x)[0], rtol=2e-3 if dtype == "float16" else 1e-12)


def test_softmax_with_length_runs_numpy_code(monkeypatch):
    taken = _native(monkeypatch, True)
    y = mx.nd.softmax(mx.nd.ones((2, 4)), mx.nd.array([2, 3], dtype="int32"), use_length=True, axis=-1)
    np.testing.assert_allclose(y.asnumpy(), [[0.5, 0.5, 0, 0], [1 / 3, 1 / 3, 1 / 3, 0]], rtol=1e-6)
    assert taken == []


# -- the vectorized functions' accuracy ------------------------------------------------
def _ulps(got, want):
    """|got - want| in units of float32's spacing at want (want in float64)."""
    spacing = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / spacing


@needs_fast_math
def test_exp_within_2_ulp_over_its_range():
    """exp through the log_softmax backward: dy = (-1, 0, ..., 0) per row makes dx[i] = exp(y[i])."""
    grid = np.concatenate([np.linspace(-87.3, 88.7, 400000), np.random.RandomState(0).uniform(-5, 5, 100000)])
    y = grid.astype(np.float32).reshape(-1, 1000)
    y = np.concatenate([np.zeros((y.shape[0], 1), np.float32), y], axis=1)
    dy = np.zeros_like(y)
    dy[:, 0] = -1
    dx = np.empty_like(y)
    assert native.softmax_rows_backward_f32(dy, y, dx, True)
    want = np.exp(y[:, 1:].astype(np.float64))
    assert _ulps(dx[:, 1:], want).max() <= 2
    special = np.array([[0, np.inf, -np.inf, np.nan, 89.0, -104.0, -0.0]], np.float32)
    d = np.zeros_like(special)
    d[0, 0] = -1
    out = np.empty_like(special)
    with np.errstate(all="ignore"):
        assert native.softmax_rows_backward_f32(d, special, out, True)
    np.testing.assert_array_equal(out[0, 1:], [np.inf, 0, np.nan, np.inf, 0, 1])


def _lstm_gates(a):
    """The gates of a one-step LSTM forward (native.lstm_forward_f32) over a.size sequences of one
    unit whose pre-activations are all `a` (no recurrent weight, no bias): sigmoid(a), sigmoid(a),
    tanh(a), sigmoid(a)."""
    n = a.size
    gates = np.empty((1, 4, n, 1), np.float32)
    gates.reshape(1, n, 4)[...] = a[:, None]
    states = [np.zeros((2, n, 1), np.float32) for _ in range(2)]
    assert native.lstm_forward_f32(np.zeros((4, 1), np.float32), np.zeros(4, np.float32), gates, states[0],
                                   np.empty((1, n, 1), np.float32), states[1], False)
    return gates[0, :, :, 0]


@needs_fast_math
def test_sigmoid_and_tanh_within_4_ulp_over_their_range():
    """Through the LSTM forward: with zero recurrent weights and c_prev = 0 the gates are sigmoid(a),
    sigmoid(a), tanh(a), sigmoid(a) of the given values a."""
    a = np.concatenate([np.linspace(-60, 60, 120000), np.linspace(-1, 1, 40000), [0.0, -0.0, 0.625, -0.625]])
    a = a.astype(np.float32)
    gates = _lstm_gates(a)
    a64 = a.astype(np.float64)
    sig = 1 / (1 + np.exp(-a64))
    assert _ulps(gates[0], sig).max() <= 4
    assert _ulps(gates[2], np.tanh(a64)).max() <= 4
    special = np.array([np.inf, -np.inf, np.nan, 100.0, -100.0], np.float32)
    with np.errstate(invalid="ignore"):
        gates = _lstm_gates(special)
    np.testing.assert_array_equal(gates[0], [1, 0, np.nan, 1, 0])
    np.testing.assert_array_equal(gates[2], [1, -1, np.nan, 1, -1])


# -- the entry points -----------------------------------------------------------------
def _overlapping(rows, n):
    """Two C-contiguous (rows, n) float32 arrays sharing all but one row of memory."""
    buf = np.zeros((rows + 1) * n, np.float32)
    return buf[:rows * n].reshape(rows, n), buf[n:].reshape(rows, n)


@needs_fast_math
def test_entry_points_refuse_what_they_cannot_take():
    x = np.random.RandomState(0).standard_normal((4, 6)).astype(np.float32)
    y = np.zeros_like(x)
    for xs, ys in [(x.astype(np.float64), y), (x, y[:, :5]), (x[:, ::2], y[:, :3]), (x, x.T.copy().T[:, :]),
                   (np.zeros((0, 3), np.float32), np.zeros((0, 3), np.float32)), (np.float32(1.0), y),
                   (x[:, 1:], x[:, :-1]), _overlapping(4, 6)]:
        assert not native.softmax_rows_f32(xs, ys, True)
    assert not y.any()
    dy, yy, dx = (np.zeros((3, 5), np.float32) for _ in range(3))
    assert native.softmax_rows_backward_f32(dy, yy, dx, False)
    assert not native.softmax_rows_backward_f32(dy, yy, yy, False)       # dx over y: y is read after writes
    assert not native.softmax_rows_backward_f32(dy, yy, dx[:2], False)
    assert not native.softmax_rows_backward_f32(dy[:, 1:], yy[:, 1:], dx[:, 1:], True)
