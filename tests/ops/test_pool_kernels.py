"""The native max pooling kernels (native/pool_kernels.h) behind Pooling / _backward_Pooling on CPU:
the same bits as the numpy code they replace for 1-D and 2-D windows of every geometry (padding,
the 'full' and 'same' conventions, global pooling, windows hanging off the map) on data with ties,
signed zeros, infinities and NaNs; numpy's code where the arrays do not fit; entry points that
refuse what they cannot take without touching their output."""
import os
import sys

import numpy as np
import pytest

import ember as mx
from ember import autograd
from ember.engine import native
from ember.ops import nn_pool

sys.path.insert(0, os.path.dirname(__file__))
from _native_spies import spy_native  # noqa: E402


def _data(shape, seed):
    """Few distinct values (ties everywhere), signed zeros and the IEEE specials."""
    rs = np.random.RandomState(seed)
    x = rs.randint(-3, 4, size=shape).astype(np.float32)
    flat = x.reshape(-1)
    special = np.array([-0.0, 0.0, np.inf, -np.inf, np.nan], np.float32)
    picks = rs.randint(0, flat.size, size=max(1, flat.size // 6))
    flat[picks] = special[rs.randint(0, len(special), size=picks.size)]
    return x


def _pool(x, dy, numpy_only, monkeypatch, **attrs):
    """Pooling forward and its data gradient (as float32 numpy), by the native kernels or numpy's
    code; also how many native calls took the arrays."""
    taken = spy_native(monkeypatch, nn_pool, ("max_pool2d_f32", "max_pool2d_backward_f32"), not numpy_only)
    xa = mx.nd.array(x)
    xa.attach_grad()
    with autograd.record():
        y = mx.nd.Pooling(xa, pool_type="max", **attrs)
    y.backward(mx.nd.array(dy))
    out = (y.asnumpy(), xa.grad.asnumpy())
    monkeypatch.undo()
    return out, sum(taken)


GEOMETRIES_2D = [
    dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1)),                  # a ResNet stem
    dict(kernel=(2, 2), stride=(2, 2)),
    dict(kernel=(3, 3), stride=(1, 1), pad=(1, 1)),                  # overlapping windows
    dict(kernel=(3, 2), stride=(2, 3), pad=(2, 1)),
    dict(kernel=(3, 3), stride=(2, 2), pooling_convention="full"),   # windows past the map's end
    dict(kernel=(4, 4), stride=(3, 3), pad=(1, 2), pooling_convention="full"),
    dict(kernel=(1, 1), stride=(1, 1)),
    dict(kernel=(1, 1), global_pool=True),
    dict(kernel=(5, 5), stride=(1, 1), pad=(0, 0)),
]


def _same_bits(a, b):
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_array_equal(np.where(np.isnan(a), 0, a).view(np.uint32),
                                  np.where(np.isnan(b), 0, b).view(np.uint32))


def _native_is_numpy(x, monkeypatch, **attrs):
    """Pooling x forward and backward both ways: the native kernels took the arrays, same bits."""
    y_shape = mx.nd.Pooling(mx.nd.array(x), pool_type="max", **attrs).shape
    dy = np.random.RandomState(2).randn(*y_shape).astype(np.float32)
    (y0, dx0), _ = _pool(x, dy, True, monkeypatch, **attrs)
    (y1, dx1), taken = _pool(x, dy, False, monkeypatch, **attrs)
    assert taken == 2
    _same_bits(y1, y0)
    _same_bits(dx1, dx0)


@pytest.mark.parametrize("attrs", GEOMETRIES_2D)
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (1, 1, 5, 5), (2, 2, 10, 8)])
def test_native_2d_max_pooling_is_the_numpy_code(attrs, shape, monkeypatch):
    _native_is_numpy(_data(shape, 1), monkeypatch, **attrs)


@pytest.mark.parametrize("attrs", [dict(kernel=(3,), stride=(2,), pad=(1,)), dict(kernel=(2,), stride=(1,)),
                                   dict(kernel=(3,), stride=(2,), pooling_convention="full"),
                                   dict(kernel=(4,), stride=(3,), pooling_convention="same"),
                                   dict(kernel=(2,), global_pool=True)])
def test_native_1d_max_pooling_is_the_numpy_code(attrs, monkeypatch):
    _native_is_numpy(_data((2, 3, 11), 3), monkeypatch, **attrs)


def test_gradient_goes_to_the_first_maximum_and_sums_where_windows_overlap():
    x = mx.nd.array(np.array([[[[1, 5, 5], [5, 2, 0], [3, 5, 4]]]], np.float32))
    x.attach_grad()
    with autograd.record():
        y = mx.nd.Pooling(x, kernel=(2, 2), stride=(1, 1), pool_type="max")
    y.backward(mx.nd.array(np.array([[[[1, 2], [4, 8]]]], np.float32)))
    np.testing.assert_array_equal(y.asnumpy()[0, 0], [[5, 5], [5, 5]])
    # windows at (0,0) and (0,1) both pick x[0,1]; (1,0) picks x[1,0]; (1,1) picks x[2,1]
    np.testing.assert_array_equal(x.grad.asnumpy()[0, 0], [[0, 3, 0], [4, 0, 0], [0, 8, 0]])


def test_arrays_the_kernels_do_not_take_run_numpys_code(monkeypatch):
    taken = []
    real = native.max_pool2d_f32
    monkeypatch.setattr(nn_pool.native, "max_pool2d_f32", lambda *a: taken.append(real(*a)) or taken[-1])
    x = _data((2, 5, 6, 4), 5)
    want = mx.nd.Pooling(mx.nd.array(x), kernel=(2, 2), stride=(2, 2), pool_type="max").asnumpy()
    # channel-last (a transposed view reaches the kernel) and float64 data
    nhwc = mx.nd.Pooling(mx.nd.array(x.transpose(0, 2, 3, 1)), kernel=(2, 2), stride=(2, 2), pool_type="max",
                         layout="NHWC").asnumpy()
    f64 = mx.nd.Pooling(mx.nd.array(x, dtype="float64"), kernel=(2, 2), stride=(2, 2), pool_type="max").asnumpy()
    assert taken == [True, False, False]
    _same_bits(nhwc.transpose(0, 3, 1, 2), want)
    _same_bits(f64.astype(np.float32), want)
    # 3-D pooling never reaches the 2-D kernel
    mx.nd.Pooling(mx.nd.array(_data((1, 2, 4, 4, 4), 6)), kernel=(2, 2, 2), pool_type="max").wait_to_read()
    assert len(taken) == 3


def test_entry_points_refuse_what_does_not_fit_and_leave_the_output_alone():
    x = np.arange(2 * 3 * 6 * 6, dtype=np.float32).reshape(2, 3, 6, 6)
    y = np.full((2, 3, 3, 3), 7, np.float32)
    window = (2, 2, 2, 2, 0, 0)
    assert native.max_pool2d_f32(x, y, *window)
    np.testing.assert_array_equal(y, x[:, :, 1::2, 1::2])
    bad = [
        (x.astype(np.float64), y, window),                    # format
        (x.reshape(6, 6, 6), y, window),                      # not 4-D
        (x, np.full((2, 4, 3, 3), 7, np.float32), window),    # planes differ
        (x[:, :, ::2], y, window),                            # not C-contiguous
        (x, y, (0, 2, 2, 2, 0, 0)),                           # empty window
        (x, y, (2, 2, 0, 2, 0, 0)),                           # zero step
        (x, y, (2, 2, 2, 2, -1, 0)),                          # negative padding
        (x, y, (2, 2, 2 ** 40, 2, 0, 0)),                     # a step past any map (index products could overflow)
    ]
    for args in bad:
        out = np.full(args[1].shape, 7, np.float32) if args[1] is not y else np.full_like(y, 7)
        assert not native.max_pool2d_f32(args[0], out, *args[2])
        assert (out == 7).all()
    assert not native.max_pool2d_f32(x, x, *window)           # output overlapping the input
    assert not native.max_pool2d_f32(x, np.full((2, 3, 3, 3), 7, np.float32).view(np.int32), *window)
    y = np.full((2, 3, 3, 3), 7, np.float32)
    native.max_pool2d_f32(x, y, *window)
    dy, dx = np.ones_like(y), np.full_like(x, 9)
    for args in [(x, y, dy, x), (x, y, dy, dx[:, :, :4]), (x, y, dy[:, :2], dx), (x, y, dy.astype(np.float64), dx)]:
        assert not native.max_pool2d_backward_f32(*args, *window)
    assert (dx == 9).all()
    assert native.max_pool2d_backward_f32(x, y, dy, dx, *window)
    want = np.zeros_like(x)
    want[:, :, 1::2, 1::2] = 1
    np.testing.assert_array_equal(dx, want)
    with pytest.raises(TypeError):
        native.max_pool2d_f32(x, y, 2, 2)
