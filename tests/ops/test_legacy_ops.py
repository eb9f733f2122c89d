"""MXNet 1.9.1's legacy Crop, Convolution_v1 and Pooling_v1 (old model files still name them): values against
numpy references, gradients (the window's, finite differences), shapes and MXNet's checks."""
import math

import numpy as np
import pytest

import ember as mx
from ember.base import ShapeError
from ember.test_utils import check_numeric_gradient


def _data(shape, seed=0):
    return np.random.RandomState(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("kwargs, window", [
    (dict(h_w=(3, 4), offset=(2, 3)), (2, 3, 3, 4)),
    (dict(h_w=(2, 5), center_crop=True), (2, 1, 2, 5)),   # ((7 - 2) // 2, (8 - 5) // 2)
    (dict(h_w=(7, 8)), (0, 0, 7, 8)),
])
def test_crop_to_h_w(kwargs, window):
    v = _data((2, 3, 7, 8))
    y, x, h, w = window
    out = mx.nd.Crop(mx.nd.array(v), **kwargs)
    np.testing.assert_array_equal(out.asnumpy(), v[:, :, y:y + h, x:x + w])


def test_crop_like_and_its_gradient():
    v = _data((2, 3, 7, 8))
    x, like = mx.nd.array(v), mx.nd.zeros((1, 1, 4, 5))
    x.attach_grad()
    like.attach_grad()
    with mx.autograd.record():
        out = mx.nd.Crop(x, like, num_args=2, offset=(1, 2))
    np.testing.assert_array_equal(out.asnumpy(), v[:, :, 1:5, 2:7])
    g = _data(out.shape, 1)
    out.backward(mx.nd.array(g))
    want = np.zeros_like(v)
    want[:, :, 1:5, 2:7] = g
    np.testing.assert_array_equal(x.grad.asnumpy(), want)
    np.testing.assert_array_equal(like.grad.asnumpy(), 0)
    centred = mx.nd.Crop(mx.nd.array(v), like, num_args=2, center_crop=True)
    np.testing.assert_array_equal(centred.asnumpy(), v[:, :, 1:5, 1:6])


def test_crop_symbol_and_checks():
    s = mx.sym.Crop(mx.sym.var("a"), mx.sym.var("b"), num_args=2)
    assert s.list_arguments() == ["a", "b"]
    assert s.infer_shape(a=(2, 3, 7, 8), b=(2, 3, 4, 4))[1] == [(2, 3, 4, 4)]
    ex = s.simple_bind(mx.cpu(), a=(1, 1, 5, 5), b=(1, 1, 2, 2))
    ex.arg_dict["a"][:] = np.arange(25, dtype=np.float32).reshape(1, 1, 5, 5)
    np.testing.assert_array_equal(ex.forward()[0].asnumpy()[0, 0], [[0, 1], [5, 6]])
    x = mx.nd.zeros((2, 3, 7, 8))
    with pytest.raises(ShapeError, match="outside the input"):
        mx.nd.Crop(x, h_w=(3, 4), offset=(5, 0))
    with pytest.raises(ShapeError, match="exceeds"):
        mx.nd.Crop(x, h_w=(8, 4))
    with pytest.raises(ShapeError, match="h_w"):
        mx.nd.Crop(x)  # num_args 1 needs h_w
    with pytest.raises(ShapeError, match="4-D"):
        mx.nd.Crop(mx.nd.zeros((3, 7, 8)), h_w=(2, 2))


def test_convolution_v1_is_convolution():
    x, w = _data((2, 3, 6, 6)), _data((4, 3, 3, 3), 1)
    kw = dict(num_filter=4, kernel=(3, 3), pad=(1, 1), stride=(2, 2), no_bias=True)
    np.testing.assert_array_equal(mx.nd.Convolution_v1(mx.nd.array(x), mx.nd.array(w), **kw).asnumpy(),
                                  mx.nd.Convolution(mx.nd.array(x), mx.nd.array(w), **kw).asnumpy())


def _avg_pool_v1(v, k, s, p, full):
    """Pooling_v1's avg: sums over the zero-padded input, windows past its end included, / kernel area."""
    n, c, h, w = v.shape
    size = [(h + 2 * p[0] - k[0]), (w + 2 * p[1] - k[1])]
    oh, ow = [1 + (math.ceil(d / st) if full else d // st) for d, st in zip(size, s)]
    padded = np.zeros((n, c, h + 2 * p[0] + k[0], w + 2 * p[1] + k[1]), np.float64)
    padded[:, :, p[0]:p[0] + h, p[1]:p[1] + w] = v
    out = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = padded[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].sum(axis=(2, 3))
    return out / (k[0] * k[1])


@pytest.mark.parametrize("convention", ["valid", "full"])
def test_pooling_v1_avg_divides_by_the_kernel_area(convention):
    v = _data((2, 3, 7, 7))
    got = mx.nd.Pooling_v1(mx.nd.array(v), kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg",
                           pooling_convention=convention).asnumpy()
    np.testing.assert_allclose(got, _avg_pool_v1(v, (3, 3), (2, 2), (1, 1), convention == "full"), rtol=1e-5, atol=1e-6)
    glob = mx.nd.Pooling_v1(mx.nd.array(v), kernel=(3, 3), pool_type="avg", global_pool=True).asnumpy()
    np.testing.assert_allclose(glob[:, :, 0, 0], v.mean(axis=(2, 3)), rtol=1e-5)


@pytest.mark.parametrize("pool_type", ["max", "sum"])
def test_pooling_v1_max_and_sum_are_pooling(pool_type):
    v = _data((2, 3, 7, 7))
    kw = dict(kernel=(2, 2), stride=(2, 2), pool_type=pool_type, pooling_convention="full")
    np.testing.assert_array_equal(mx.nd.Pooling_v1(mx.nd.array(v), **kw).asnumpy(),
                                  mx.nd.Pooling(mx.nd.array(v), **kw).asnumpy())


@pytest.mark.parametrize("kwargs", [dict(kernel=(3, 3), stride=(2, 2), pad=(1, 1), pool_type="avg", pooling_convention="full"),
                                    dict(kernel=(2, 2), pool_type="avg", global_pool=True),
                                    dict(kernel=(2, 2), stride=(1, 1), pool_type="max")])
def test_pooling_v1_gradient_by_finite_differences(kwargs):
    sym = mx.sym.Pooling_v1(mx.sym.var("data"), **kwargs)
    check_numeric_gradient(sym, [np.random.RandomState(3).uniform(-1, 1, (1, 2, 5, 5))],
                           numeric_eps=1e-3, rtol=1e-2, atol=1e-3)


def test_pooling_v1_refuses_3d():
    with pytest.raises(ShapeError, match="4-D"):
        mx.nd.Pooling_v1(mx.nd.zeros((1, 1, 4, 4, 4)), kernel=(2, 2, 2))
