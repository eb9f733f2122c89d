"""The native window copies of Convolution on CPU (native/conv_kernels.h: im2col and col2im): the
same bits as the numpy code they replace for both internal layouts, strides, dilations, padding,
groups, 1-D and 3-D convolutions and Deconvolution (whose forward is a data gradient); numpy's code
where the arrays do not fit; entry points that refuse what they cannot take."""
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


def _use_native(monkeypatch, on: bool) -> list:
    return spy_native(monkeypatch, nn_conv, ("im2col_f32", "col2im_f32"), on)


def _run(op, x, w, on, monkeypatch, **attrs):
    """op's output and the gradients of x and w (as float32 numpy), native copies on or off (the
    Winograd form, which copies no windows, off: tests/ops/test_winograd.py has it)."""
    monkeypatch.setattr(nn_conv, "_WINOGRAD", False)
    taken = _use_native(monkeypatch, on)
    xa, wa = mx.nd.array(x), mx.nd.array(w)
    xa.attach_grad()
    wa.attach_grad()
    with autograd.record():
        y = getattr(mx.nd, op)(xa, wa, no_bias=True, **attrs)
    dy = np.random.RandomState(9).standard_normal(y.shape).astype(np.float32)
    y.backward(mx.nd.array(dy))
    res = (y.asnumpy(), xa.grad.asnumpy(), wa.grad.asnumpy())
    monkeypatch.undo()
    return res, taken


CASES = [  # (data shape, weight shape, attrs)
    ((2, 4, 9, 9), (6, 4, 3, 3), dict(kernel=(3, 3), num_filter=6, pad=(1, 1))),                  # CHWN
    ((2, 4, 9, 8), (5, 4, 3, 3), dict(kernel=(3, 3), num_filter=5, stride=(2, 2), pad=(1, 1))),    # CNHW
    ((3, 3, 10, 11), (4, 3, 3, 2), dict(kernel=(3, 2), num_filter=4, stride=(2, 3), dilate=(2, 1), pad=(2, 0))),
    ((2, 6, 7, 7), (6, 3, 3, 3), dict(kernel=(3, 3), num_filter=6, num_group=2, pad=(1, 1))),     # groups
    ((2, 4, 8, 8), (8, 4, 1, 1), dict(kernel=(1, 1), num_filter=8, stride=(2, 2))),               # strided 1x1
    ((1, 2, 5, 5), (3, 2, 5, 5), dict(kernel=(5, 5), num_filter=3)),                                # one window
    ((2, 3, 12), (4, 3, 3), dict(kernel=(3,), num_filter=4, stride=(2,), pad=(1,))),                # 1-D
    ((1, 2, 4, 5, 5), (3, 2, 2, 3, 3), dict(kernel=(2, 3, 3), num_filter=3, pad=(0, 1, 1))),        # 3-D
    ((2, 3, 62, 62), (4, 3, 7, 7), dict(kernel=(7, 7), num_filter=4, stride=(2, 2), pad=(3, 3))),  # per image: a stem
]


@pytest.mark.parametrize("shapes", CASES)
def test_native_window_copies_give_the_numpy_codes_bits(shapes, monkeypatch):
    xs, ws, attrs = shapes
    rs = np.random.RandomState(1)
    x, w = rs.standard_normal(xs).astype(np.float32), rs.standard_normal(ws).astype(np.float32)
    want, _ = _run("Convolution", x, w, False, monkeypatch, **attrs)
    got, taken = _run("Convolution", x, w, True, monkeypatch, **attrs)
    if attrs["kernel"] != (1, 1):  # (a strided 1x1 convolution copies windows too; a plain one does not)
        assert any(taken)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_per_image_forward_takes_the_native_im2col(monkeypatch):
    """A stem-like layer (maps large enough for a GEMM per image) copies each image's windows natively."""
    monkeypatch.setattr(nn_conv, "_WINOGRAD", False)
    rs = np.random.RandomState(3)
    x, w = rs.standard_normal((2, 3, 62, 62)).astype(np.float32), rs.standard_normal((4, 3, 7, 7)).astype(np.float32)
    attrs = dict(kernel=(7, 7), num_filter=4, stride=(2, 2), pad=(3, 3), no_bias=True)
    for on in (False, True):
        taken = _use_native(monkeypatch, on)
        y = mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), **attrs).asnumpy()
        assert len(taken) == 2 and all(taken) == on   # one call an image
        if on:
            np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))
        want = y
        monkeypatch.undo()
        monkeypatch.setattr(nn_conv, "_WINOGRAD", False)


def test_deconvolution_forward_takes_the_native_col2im(monkeypatch):
    rs = np.random.RandomState(2)
    x, w = rs.standard_normal((2, 4, 5, 5)).astype(np.float32), rs.standard_normal((4, 3, 3, 3)).astype(np.float32)
    attrs = dict(kernel=(3, 3), num_filter=3, stride=(2, 2), pad=(1, 1), adj=(1, 1))
    want, _ = _run("Deconvolution", x, w, False, monkeypatch, **attrs)
    got, taken = _run("Deconvolution", x, w, True, monkeypatch, **attrs)
    assert any(taken)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.view(np.uint32), b.view(np.uint32))


def test_float64_runs_numpys_code(monkeypatch):
    taken = _use_native(monkeypatch, True)
    x = mx.nd.array(np.ones((1, 2, 5, 5)), dtype="float64")
    w = mx.nd.array(np.ones((3, 2, 3, 3)), dtype="float64")
    y = mx.nd.Convolution(x, w, kernel=(3, 3), num_filter=3, no_bias=True).asnumpy()
    np.testing.assert_array_equal(y, np.full((1, 3, 3, 3), 18.0))
    assert not any(taken)


def test_entry_points_copy_and_add_exactly_and_refuse_what_does_not_fit():
    x = np.arange(2 * 3 * 5 * 6, dtype=np.float32).reshape(2, 3, 5, 6)  # (C, N, H, W): CNHW
    windows = (False, 2, 2, 3, 3, 2, 2, 1, 1)                            # oh, ow, kernel, stride, dilation
    cols = np.empty((2 * 3 * 3, 3 * 2 * 2), np.float32)
    assert native.im2col_f32(x, cols, *windows)
    want = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))[:, :, ::2, ::2]  # (C, N, oh, ow, kh, kw)
    np.testing.assert_array_equal(cols.reshape(2, 3, 3, 3, 2, 2), want.transpose(0, 4, 5, 1, 2, 3))
    canvas = np.zeros_like(x)
    assert native.col2im_f32(np.ones_like(cols), canvas, *windows)
    counts = np.zeros((5, 6), np.float32)
    for i in range(2):
        for j in range(2):
            counts[2 * i:2 * i + 3, 2 * j:2 * j + 3] += 1
    np.testing.assert_array_equal(canvas, np.broadcast_to(counts, x.shape))
    bad = [
        (x.astype(np.float64), cols, windows),                      # format
        (x.reshape(6, 5, 6), cols, windows),                        # not 4-D
        (x[:, :, :, ::2], cols, windows),                           # not C-contiguous
        (x, cols[:-1], windows),                                    # columns of another size
        (x, cols, (False, 3, 2, 3, 3, 2, 2, 1, 1)),                 # windows past the map's last row
        (x, cols, (False, 2, 2, 3, 3, 0, 2, 1, 1)),                 # zero stride
        (x, cols, (False, 2, 2, 3, 3, 2 ** 40, 2, 1, 1)),           # a stride past any map
    ]
    shared = np.zeros(x.size + cols.size - 10, np.float32)             # columns overlapping the map
    bad.append((shared[:x.size].reshape(x.shape), shared[-cols.size:].reshape(cols.shape), windows))
    for xa, ca, win in bad:
        before = ca.copy()
        assert not native.im2col_f32(xa, ca, *win)
        np.testing.assert_array_equal(ca, before)
        target, before = xa, xa.copy()
        assert not native.col2im_f32(ca, target, *win)
        np.testing.assert_array_equal(target, before)
    with pytest.raises(TypeError):
        native.im2col_f32(x, cols, False, 2, 2)
