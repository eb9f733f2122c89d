"""_contrib_fft, _contrib_ifft and _contrib_count_sketch (GPU-only in MXNet 1.9.1, here on CPU too): values
against numpy (the unnormalized DFT, interleaved; the inverse's real part; the sketch's sums), gradients
against float64 finite differences, symbol inference, and clear errors."""
import numpy as np
import pytest

import ember as mx
from ember import autograd
from ember.base import MXNetError


def _grad(fn, x, head):
    a = mx.nd.array(x, dtype=x.dtype)
    a.attach_grad()
    with autograd.record():
        y = fn(a)
    y.backward(mx.nd.array(head, dtype=head.dtype))
    return y.asnumpy(), a.grad.asnumpy()


def _finite_difference(fn, x, head, eps=1e-6):
    flat = x.reshape(-1)
    out = np.empty(flat.size)
    for k in range(flat.size):
        e = np.zeros_like(flat)
        e[k] = eps
        plus = fn(mx.nd.array((flat + e).reshape(x.shape), dtype=x.dtype)).asnumpy()
        minus = fn(mx.nd.array((flat - e).reshape(x.shape), dtype=x.dtype)).asnumpy()
        out[k] = ((plus - minus) * head).sum() / (2 * eps)
    return out.reshape(x.shape)


@pytest.mark.parametrize("shape", [(3, 5), (2, 1, 3, 4)])
def test_fft_and_ifft_against_numpy(shape):
    x = np.random.RandomState(0).standard_normal(shape).astype(np.float32)
    y = mx.nd.contrib.fft(mx.nd.array(x)).asnumpy()
    z = np.fft.fft(x.astype(np.float64), axis=-1)
    assert y.shape == shape[:-1] + (2 * shape[-1],)
    np.testing.assert_allclose(y[..., 0::2], z.real, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(y[..., 1::2], z.imag, rtol=1e-5, atol=1e-5)
    back = mx.nd.contrib.ifft(mx.nd.array(y)).asnumpy()
    np.testing.assert_allclose(back, shape[-1] * x, rtol=1e-5, atol=1e-5)   # unnormalized, as MXNet's
    c = np.random.RandomState(1).standard_normal(shape[:-1] + (2 * shape[-1],))
    want = (np.fft.ifft(c[..., 0::2] + 1j * c[..., 1::2], axis=-1) * shape[-1]).real
    np.testing.assert_allclose(mx.nd.contrib.ifft(mx.nd.array(c, dtype="float64")).asnumpy(), want, rtol=1e-12)


def test_gradients_against_finite_differences():
    rs = np.random.RandomState(2)
    x = rs.standard_normal((2, 5))
    head = rs.standard_normal((2, 10))
    _, g = _grad(mx.nd.contrib.fft, x, head)
    np.testing.assert_allclose(g, _finite_difference(mx.nd.contrib.fft, x, head), rtol=1e-6, atol=1e-8)
    c = rs.standard_normal((2, 8))
    head2 = rs.standard_normal((2, 4))
    _, g2 = _grad(mx.nd.contrib.ifft, c, head2)
    np.testing.assert_allclose(g2, _finite_difference(mx.nd.contrib.ifft, c, head2), rtol=1e-6, atol=1e-8)
    h = mx.nd.array([[0, 2, 1, 2, 0]], dtype="float64")
    s = mx.nd.array([[1, -1, 0.5, 1, -1]], dtype="float64")

    def sketch(a):
        return mx.nd.contrib.count_sketch(a, h, s, out_dim=3)
    head3 = rs.standard_normal((2, 3))
    _, g3 = _grad(sketch, x, head3)
    np.testing.assert_allclose(g3, _finite_difference(sketch, x, head3), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 1, 6)])
def test_count_sketch_sums_into_its_positions(shape):
    rs = np.random.RandomState(3)
    x = rs.standard_normal(shape).astype(np.float32)
    h = np.array([[0, 3, 1, 3, 0, 2]], np.float32)
    s = np.array([[1, -1, 1, -1, 1, 1]], np.float32)
    y = mx.nd.contrib.count_sketch(mx.nd.array(x), mx.nd.array(h), mx.nd.array(s), out_dim=5).asnumpy()
    want = np.zeros(shape[:-1] + (5,))
    for i in range(6):
        want[..., int(h[0, i])] += s[0, i] * x[..., i]
    assert y.shape == want.shape
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)
    assert not y[..., 4].any()


def test_symbol_inference():
    for sym, shapes, out in [
            (mx.sym.contrib.fft(mx.sym.var("d")), dict(d=(3, 4)), (3, 8)),
            (mx.sym.contrib.ifft(mx.sym.var("d")), dict(d=(2, 3, 4, 8)), (2, 3, 4, 4)),
            (mx.sym.contrib.count_sketch(mx.sym.var("d"), mx.sym.var("h"), mx.sym.var("s"), out_dim=7),
             dict(d=(5, 6), h=(1, 6), s=(1, 6)), (5, 7))]:
        assert sym.infer_shape(**shapes)[1] == [out]


@pytest.mark.parametrize("call, match", [
    (lambda: mx.nd.contrib.fft(mx.nd.ones((2, 3, 4))), "2-D .* or 4-D"),
    (lambda: mx.nd.contrib.ifft(mx.nd.ones((2, 5))), "even"),
    (lambda: mx.nd.contrib.fft(mx.nd.ones((2, 4)), compute_size=0), "compute_size"),
    (lambda: mx.nd.contrib.count_sketch(mx.nd.ones((2, 3)), mx.nd.array([[0, 1, 5]]), mx.nd.ones((1, 3)),
                                        out_dim=4), r"h\[2\] = 5"),
    (lambda: mx.nd.contrib.count_sketch(mx.nd.ones((2, 3)), mx.nd.array([[0, 1.5, 2]]), mx.nd.ones((1, 3)),
                                        out_dim=4), r"h\[1\] = 1.5"),
    (lambda: mx.nd.contrib.count_sketch(mx.nd.ones((2, 3)), mx.nd.zeros((1, 4)), mx.nd.ones((1, 3)),
                                        out_dim=4), "h must be"),
    (lambda: mx.nd.contrib.count_sketch(mx.nd.ones((2, 3)), mx.nd.zeros((1, 3)), mx.nd.ones((1, 3)),
                                        out_dim=0), "out_dim"),
])
def test_bad_inputs_raise_clear_errors(call, match):
    with pytest.raises(MXNetError, match=match):
        call().wait_to_read()
