"""Convolution's Winograd F(2x2, 3x3) form on CPU (native/conv_kernels.h, ember/ops/nn_conv.py): for 3x3
layers with stride 1 and padding 1 the output, the data gradient and the weight gradient equal the direct
form's and a float64 reference to float32 rounding (odd and even maps, a bias, a folded shift and relu, the
data gradient as Deconvolution's forward); the direct form wherever the Winograd one does not apply; entry
points that refuse what they cannot take."""
import os
import sys

import numpy as np
import pytest

import ember as mx
from ember import autograd
from ember.engine import native
from ember.ops import nn_conv

sys.path.insert(0, os.path.dirname(__file__))
from _native_spies import spy_native  # noqa: E402

ENTRIES = ("winograd_weights_f32", "winograd_input_f32", "winograd_output_f32", "winograd_grad_output_f32",
           "winograd_grad_weights_f32")


def _conv(x, w, b, winograd, monkeypatch, dtype="float32", op="Convolution", dy=None, **attrs):
    """op's output and the gradients of x, w, b (float64 numpy) for the output gradient dy (None: drawn),
    the Winograd form allowed or not; the Winograd entries' record; dy."""
    monkeypatch.setattr(nn_conv, "_WINOGRAD", winograd)
    taken = spy_native(monkeypatch, nn_conv, ENTRIES, True)
    arrays = [mx.nd.array(a, dtype=dtype) for a in (x, w, b)]
    for a in arrays:
        a.attach_grad()
    attrs = dict(dict(kernel=(3, 3), pad=(1, 1), num_filter=arrays[2].shape[0]), **attrs)
    with autograd.record():
        y = getattr(mx.nd, op)(*arrays, **attrs)
    if dy is None:
        dy = np.random.RandomState(9).standard_normal(y.shape)
    y.backward(mx.nd.array(dy, dtype=dtype))
    res = [a.asnumpy().astype(np.float64) for a in [y] + [a.grad for a in arrays]]
    monkeypatch.undo()
    return res, taken, dy


def _reference(x, w, b, dy):
    """float64 direct 3x3 convolution with padding 1, and its gradients."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((n, w.shape[0], h, wd)) + b.reshape(1, -1, 1, 1)
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for i in range(3):
        for j in range(3):
            win = xp[:, :, i:i + h, j:j + wd]
            y += np.einsum("nchw,fc->nfhw", win, w[:, :, i, j])
            dxp[:, :, i:i + h, j:j + wd] += np.einsum("nfhw,fc->nchw", dy, w[:, :, i, j])
            dw[:, :, i, j] = np.einsum("nchw,nfhw->fc", win, dy)
    return [y, dxp[:, :, 1:-1, 1:-1], dw, dy.sum(axis=(0, 2, 3))]


def _close(got, want, name):
    scale = np.abs(want).max() + 1
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-5 * scale, err_msg=name)


SHAPES = [(2, 4, 9, 9, 6), (1, 3, 4, 4, 5), (3, 8, 5, 7, 8), (2, 16, 8, 8, 16), (1, 5, 1, 6, 3)]  # n, c, h, w, f


@pytest.mark.parametrize("n,c,h,w,f", SHAPES)
def test_winograd_equals_the_direct_form_and_float64(n, c, h, w, f, monkeypatch):
    rs = np.random.RandomState(n * 100 + c)
    x, wt, b = rs.standard_normal((n, c, h, w)), rs.standard_normal((f, c, 3, 3)), rs.standard_normal(f)
    got, taken, dy = _conv(x, wt, b, True, monkeypatch)
    direct, refused, _ = _conv(x, wt, b, False, monkeypatch)
    assert taken and all(taken) and not refused
    ref = _reference(x.astype(np.float32), wt.astype(np.float32), b.astype(np.float32), dy.astype(np.float32))
    for name, g, d, r in zip(["y", "dx", "dw", "db"], got, direct, ref):
        _close(g, r, name)
        _close(g, d, name)


def test_deconvolution_forward_is_the_winograd_data_gradient(monkeypatch):
    """Deconvolution's forward (a data gradient) with a 3x3 kernel, stride 1, padding 1 takes the form."""
    rs = np.random.RandomState(3)
    x, wt, b = rs.standard_normal((2, 6, 6, 5)), rs.standard_normal((6, 4, 3, 3)), rs.standard_normal(4)
    got, taken, _ = _conv(x, wt, b, True, monkeypatch, op="Deconvolution", no_bias=False)
    direct, _, _ = _conv(x, wt, b, False, monkeypatch, op="Deconvolution", no_bias=False)
    assert taken and all(taken)
    for name, g, d in zip(["y", "dx", "dw", "db"], got, direct):
        _close(g, d, name)


@pytest.mark.parametrize("relu", [False, True])
def test_shift_and_relu_ride_on_the_output_transform(relu):
    """conv_forward's shift (a bias, or a folded BatchNorm's) and relu, as the fused executor kernels
    pass them."""
    rs = np.random.RandomState(4)
    x = rs.standard_normal((2, 8, 6, 6)).astype(np.float32)
    w, shift = rs.standard_normal((8, 8, 3, 3)).astype(np.float32), rs.standard_normal(8).astype(np.float32)
    geo = nn_conv.Geometry((3, 3), (1, 1), (1, 1), (1, 1), (1, 1), 1)
    got, want = np.empty((2, 8, 6, 6), np.float32), np.empty((2, 8, 6, 6), np.float32)
    assert nn_conv._winograd_fits(np, geo, x, w, got)
    nn_conv.conv_forward(np, x, w, geo, got, shift, relu)
    try:
        nn_conv._WINOGRAD = False
        nn_conv.conv_forward(np, x, w, geo, want, shift, relu)
    finally:
        nn_conv._WINOGRAD = True
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)
    assert (got >= 0).all() if relu else (got < 0).any()


@pytest.mark.filterwarnings("ignore:invalid value encountered")   # (numpy's, in the direct form's GEMMs)
@pytest.mark.parametrize("where", ["x", "w", "dy"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_values_take_the_direct_form(where, value, monkeypatch):
    """A NaN or an infinity would reach every output of its tiles through the transforms' adds: the
    entries refuse such arrays and the direct form keeps it where it belongs."""
    rs = np.random.RandomState(6)
    x, wt, b = rs.standard_normal((2, 4, 6, 6)), rs.standard_normal((5, 4, 3, 3)), rs.standard_normal(5)
    dy = rs.standard_normal((2, 5, 6, 6))
    {"x": x, "w": wt, "dy": dy}[where].reshape(-1)[7] = value
    direct, _, _ = _conv(x, wt, b, False, monkeypatch, dy=dy)
    got, taken, _ = _conv(x, wt, b, True, monkeypatch, dy=dy)
    assert False in taken
    for g, d in zip(got, direct):
        finite = np.isfinite(d)
        np.testing.assert_array_equal(np.isfinite(g), finite)
        np.testing.assert_array_equal(np.isnan(g), np.isnan(d))
        np.testing.assert_allclose(g[finite], d[finite], rtol=0, atol=1e-4 * (np.abs(d[finite]).max() + 1))
    assert not all(np.isfinite(g).all() for g in got)


@pytest.mark.parametrize("dtype,attrs,shape", [
    ("float64", {}, (2, 4, 8, 8)),
    ("float32", dict(stride=(2, 2)), (2, 4, 8, 8)),
    ("float32", dict(pad=(0, 0)), (2, 4, 8, 8)),
    ("float32", dict(dilate=(2, 2), pad=(2, 2)), (2, 4, 8, 8)),
    ("float32", dict(num_group=2), (2, 4, 8, 8)),
    ("float32", dict(kernel=(5, 5), pad=(2, 2)), (2, 4, 8, 8)),
    ("float32", {}, (1, 64, 2, 2)),          # one tile for 64 channels: the direct form is faster
])
def test_direct_form_where_winograd_does_not_apply(dtype, attrs, shape, monkeypatch):
    rs = np.random.RandomState(5)
    c = shape[1]
    k = attrs.get("kernel", (3, 3))
    x = rs.standard_normal(shape)
    wt = rs.standard_normal((c, c // attrs.get("num_group", 1)) + k)
    _, taken, _ = _conv(x, wt, np.zeros(c), True, monkeypatch, dtype=dtype, **attrs)
    assert taken == []


def test_entry_points_refuse_what_does_not_fit():
    f32 = np.float32
    x, w = np.ones((2, 3, 4, 5), f32), np.ones((4, 3, 3, 3), f32)
    tiles = 2 * 2 * 3
    u, v = np.empty((16, 3, 4), f32), np.empty((16, tiles, 3), f32)
    m, y = np.ones((16, tiles, 4), f32), np.empty((2, 4, 4, 5), f32)
    assert native.winograd_weights_f32(w, u, False) and native.winograd_input_f32(x, v)
    assert native.winograd_output_f32(m, y, None, False) and native.winograd_output_f32(m, y, np.ones(4, f32), True)
    dm, dw = np.empty((16, tiles, 4), f32), np.empty((4, 3, 3, 3), f32)
    assert native.winograd_grad_output_f32(y, dm) and native.winograd_grad_weights_f32(np.ones((16, 3, 4), f32), dw)
    refusals = [
        lambda: native.winograd_weights_f32(w.astype(np.float64), u, False),
        lambda: native.winograd_weights_f32(np.ones((4, 3, 2, 2), f32), u, False),     # not 3x3
        lambda: native.winograd_weights_f32(w, u[:-1], False),
        lambda: native.winograd_input_f32(x[:, :, :, ::2], v),                         # not C-contiguous
        lambda: native.winograd_input_f32(x.reshape(6, 4, 5), v),                      # not 4-D
        lambda: native.winograd_input_f32(x, v[:, :-1]),
        lambda: native.winograd_output_f32(m[:, :-1], y, None, False),
        lambda: native.winograd_output_f32(m, y, np.ones(3, f32), False),              # shift of 3 for 4
        lambda: native.winograd_grad_output_f32(y, dm[:1]),
        lambda: native.winograd_grad_weights_f32(np.ones((16, 3, 5), f32), dw),
    ]
    for call in refusals:
        assert not call()
    shared = np.zeros(x.size + v.size, f32)   # input and transform overlapping
    assert not native.winograd_input_f32(shared[:x.size].reshape(x.shape), shared[x.size // 2:][:v.size].reshape(v.shape))


def test_environment_variable_keeps_the_direct_form(monkeypatch):
    """EMBER_CONV_WINOGRAD=0 keeps every layer in the direct form (read per call)."""
    rs = np.random.RandomState(8)
    x, wt, b = rs.standard_normal((2, 4, 6, 6)), rs.standard_normal((5, 4, 3, 3)), rs.standard_normal(5)
    monkeypatch.setenv("EMBER_CONV_WINOGRAD", "0")
    _, taken, _ = _conv(x, wt, b, True, monkeypatch)
    assert taken == []
    monkeypatch.setenv("EMBER_CONV_WINOGRAD", "1")
    _, taken, _ = _conv(x, wt, b, True, monkeypatch)
    assert taken and all(taken)
