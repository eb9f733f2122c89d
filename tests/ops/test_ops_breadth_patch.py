"""Correlation, im2col and col2im: numpy references, finite differences, adjointness, shape inference."""
import numpy as np
import pytest

import ember as mx
from ember.base import ShapeError

from ._gradcheck import check_grad, grads, run

RNG = np.random.default_rng(0)


def _np_correlation(a, b, k, md, s1, s2, pad, mul=True):
    n, c, h, w = a.shape
    pa = np.pad(a, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    pb = np.pad(b, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    kr = (k - 1) // 2
    border = md + kr
    th = int(np.ceil((h + 2 * pad - 2 * border) / s1))
    tw = int(np.ceil((w + 2 * pad - 2 * border) / s1))
    r = md // s2
    gw = 2 * r + 1
    out = np.zeros((n, gw * gw, th, tw))
    for i in range(th):
        for j in range(tw):
            y1, x1 = i * s1 + md, j * s1 + md
            for p in range(gw):
                for o in range(gw):
                    y2, x2 = y1 + (p - r) * s2, x1 + (o - r) * s2
                    pa_ = pa[:, :, y1:y1 + k, x1:x1 + k]
                    pb_ = pb[:, :, y2:y2 + k, x2:x2 + k]
                    v = (pa_ * pb_) if mul else np.abs(pa_ - pb_)
                    out[:, p * gw + o, i, j] = v.sum(axis=(1, 2, 3)) / (k * k * c)
    return out


@pytest.mark.parametrize("mul", [True, False])
def test_correlation_reference_and_gradient(mul):
    a = RNG.standard_normal((1, 2, 5, 6))
    b = RNG.standard_normal((1, 2, 5, 6))
    attrs = {"kernel_size": 3, "max_displacement": 2, "stride1": 1, "stride2": 1, "pad_size": 2, "is_multiply": mul}
    np.testing.assert_allclose(run("Correlation", [a, b], attrs), _np_correlation(a, b, 3, 2, 1, 1, 2, mul),
                               rtol=1e-12, atol=1e-12)
    # hidden outputs (padded inputs) carry no gradient: check output 0 only
    outs = run("Correlation", [a, b], attrs, all_outputs=True)
    w = RNG.standard_normal(outs[0].shape)
    ga, gb = grads("Correlation", [a, b], attrs, [w, np.zeros_like(outs[1]), np.zeros_like(outs[2])])
    eps = 1e-6
    for x, g in ((a, ga), (b, gb)):
        flat = x.reshape(-1)
        for idx in RNG.choice(flat.size, 12, replace=False):
            old = flat[idx]
            flat[idx] = old + eps
            fp = (run("Correlation", [a, b], attrs) * w).sum()
            flat[idx] = old - eps
            fm = (run("Correlation", [a, b], attrs) * w).sum()
            flat[idx] = old
            np.testing.assert_allclose(g.reshape(-1)[idx], (fp - fm) / (2 * eps), rtol=1e-5, atol=1e-7)


def test_correlation_shapes_and_errors():
    s = mx.sym.Correlation(mx.sym.var("a"), mx.sym.var("b"), kernel_size=1, max_displacement=4, stride2=2,
                           pad_size=4)
    assert s.infer_shape(a=(2, 3, 10, 12), b=(2, 3, 10, 12))[1] == [(2, 25, 10, 12)]
    with pytest.raises(ShapeError):
        s.infer_shape(a=(2, 3, 10, 12), b=(2, 3, 10, 11))
    with pytest.raises(Exception):
        mx.nd.Correlation(mx.nd.zeros((1, 1, 4, 4)), mx.nd.zeros((1, 1, 4, 4)), kernel_size=2)


def _np_im2col(x, k, s, d, p):
    n, c, h, w = x.shape
    xp_ = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    oh = (h + 2 * p[0] - (d[0] * (k[0] - 1) + 1)) // s[0] + 1
    ow = (w + 2 * p[1] - (d[1] * (k[1] - 1) + 1)) // s[1] + 1
    cols = np.zeros((n, c * k[0] * k[1], oh * ow))
    for ci in range(c):
        for i in range(k[0]):
            for j in range(k[1]):
                row = (ci * k[0] + i) * k[1] + j
                for y in range(oh):
                    for x_ in range(ow):
                        cols[:, row, y * ow + x_] = xp_[:, ci, y * s[0] + i * d[0], x_ * s[1] + j * d[1]]
    return cols


def test_im2col_reference_col2im_adjoint_and_gradients():
    x = RNG.standard_normal((2, 3, 5, 6))
    attrs = {"kernel": (2, 3), "stride": (2, 1), "dilate": (1, 2), "pad": (1, 1)}
    cols = run("im2col", [x], attrs)
    np.testing.assert_array_equal(cols, _np_im2col(x, (2, 3), (2, 1), (1, 2), (1, 1)))
    y = RNG.standard_normal(cols.shape)
    back = run("col2im", [y], dict(attrs, output_size=(5, 6)))
    # col2im is im2col's adjoint: <im2col(x), y> == <x, col2im(y)>
    np.testing.assert_allclose((cols * y).sum(), (x * back).sum(), rtol=1e-12)
    check_grad("im2col", [RNG.standard_normal((1, 2, 4, 4))], {"kernel": (2, 2), "pad": (1, 1)})
    check_grad("col2im", [RNG.standard_normal((1, 8, 25))], {"kernel": (2, 2), "pad": (1, 1), "output_size": (4, 4)})


def test_im2col_1d_and_3d_and_shape_errors():
    x = RNG.standard_normal((1, 2, 7))
    cols = run("im2col", [x], {"kernel": (3,), "stride": (2,)})
    assert cols.shape == (1, 6, 3)
    np.testing.assert_array_equal(cols[0, 1], x[0, 0, [1, 3, 5]])
    x3 = RNG.standard_normal((1, 1, 3, 3, 3))
    assert run("im2col", [x3], {"kernel": (2, 2, 2)}).shape == (1, 8, 8)
    s = mx.sym.col2im(mx.sym.var("c"), output_size=(4, 4), kernel=(2, 2))
    assert s.infer_shape(c=(2, 12, 9))[1] == [(2, 3, 4, 4)]
    with pytest.raises(ShapeError):
        s.infer_shape(c=(2, 12, 8))
    with pytest.raises(ShapeError):
        mx.sym.im2col(mx.sym.var("x"), kernel=(2, 2)).infer_shape(x=(1, 2, 3))


def test_correlation_abs_gradient_ties_count_as_positive():
    # equal values (here the zero padding against zeros) take sign +1 for data1, as MXNet's a >= b
    a = np.zeros((1, 1, 3, 3))
    b = np.zeros((1, 1, 3, 3))
    attrs = {"kernel_size": 1, "max_displacement": 1, "pad_size": 1, "is_multiply": False}
    outs = run("Correlation", [a, b], attrs, all_outputs=True)
    ga, gb = grads("Correlation", [a, b], attrs, [np.ones_like(outs[0]), np.zeros_like(outs[1]),
                                                 np.zeros_like(outs[2])])
    assert np.all(ga > 0) and np.all(gb < 0)
