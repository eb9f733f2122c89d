"""The one-pass native relu and its gradient (native/act_kernels.h) behind Activation(act_type='relu'),
its backward and the relu op on CPU: numpy's maximum(x, 0) and MXNet's relu_grad bit for bit (NaN,
infinities, signed zeros, subnormals), in place or not, and numpy's code where the arrays do not fit."""
import numpy as np
import pytest

import ember as mx
from ember.ops import nn_activation

from ._native_spies import spy_native


def _values(n, seed):
    rs = np.random.RandomState(seed)
    x = (rs.standard_normal(n) * 10.0 ** rs.randint(-6, 6, n)).astype(np.float32)
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -3e-39, np.finfo(np.float32).max], np.float32)
    x[:min(n, 8)] = np.roll(special, seed)[:min(n, 8)]
    return x


def _relu_grad(y):
    """MXNet's relu_grad: 1 above 0, NaN at NaN, else 0."""
    return np.where(np.isnan(y), y, (y > 0).astype(np.float32))


def _same_bits(a, b):
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    keep = ~np.isnan(a)
    np.testing.assert_array_equal(a[keep].view(np.int32), b[keep].view(np.int32))


@pytest.mark.parametrize("n", [1, 7, 1000, 70_000])  # (past 64 KiB: run without the GIL)
@pytest.mark.parametrize("native_on", [True, False])
def test_activation_relu_forward_and_backward(n, native_on, monkeypatch):
    names = ["relu_f32", "relu_backward_f32"]
    taken = spy_native(monkeypatch, nn_activation, names, native_on)
    xv, dyv = _values(n, 1), _values(n, 2)
    x = mx.nd.array(xv)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Activation(x, act_type="relu")
    y.backward(mx.nd.array(dyv))
    want_y = np.maximum(xv, np.float32(0))
    _same_bits(y.asnumpy(), want_y)
    with np.errstate(invalid="ignore"):
        _same_bits(x.grad.asnumpy(), dyv * _relu_grad(want_y))
    assert taken == [native_on, native_on]


def test_in_place_relu_and_the_relu_op():
    xv = _values(5000, 3)
    for in_place in (True, False):
        x = mx.nd.array(xv)
        out = x if in_place else mx.nd.zeros(x.shape)
        mx.nd.Activation(x, act_type="relu", out=out)
        _same_bits(out.asnumpy(), np.maximum(xv, np.float32(0)))
    _same_bits(mx.nd.relu(mx.nd.array(xv)).asnumpy(), np.maximum(xv, np.float32(0)))


def test_arrays_the_kernel_does_not_take_run_numpy(monkeypatch):
    taken = spy_native(monkeypatch, nn_activation, ["relu_f32", "relu_backward_f32"], True)
    v = _values(64, 4).astype(np.float64)
    x = mx.nd.array(v, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Activation(x, act_type="relu")
    y.backward(mx.nd.ones(y.shape, dtype="float64"))
    want = np.maximum(v, 0)
    np.testing.assert_array_equal(y.asnumpy(), want)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(x.grad.asnumpy(), np.where(np.isnan(want), want, want > 0))
    assert taken == [False, False]  # float64: numpy's code, the same semantics


def test_the_native_functions_refuse_what_does_not_fit():
    from ember.engine import native
    a = np.ones(8, np.float32)
    assert not native.relu_f32(a, np.empty(7, np.float32))           # lengths differ
    assert not native.relu_f32(a.astype(np.float64), a)               # not float32
    assert not native.relu_f32(a[:6], a[2:])                          # overlapping, not the same buffer
    assert not native.relu_backward_f32(a, a, np.empty(4, np.float32))
    assert native.relu_backward_f32(a, a, a) and native.relu_f32(a, a)


@pytest.mark.parametrize("shape, kernel_runs", [((4, 16), False), ((128, 512), True)])
def test_executors_run_the_relu_kernel_on_large_outputs(shape, kernel_runs, monkeypatch):
    """A bound graph's relu node runs numpy's inner loop on small outputs (chained with its
    neighbours) and the native kernel from `UfuncForm.kernel_from` elements on."""
    taken = spy_native(monkeypatch, nn_activation, ["relu_f32"], True)
    v = _values(int(np.prod(shape)), 5).reshape(shape)
    ex = mx.sym.relu(mx.sym.var("x") * 2.0).simple_bind(mx.cpu(), x=shape)
    ex.arg_dict["x"][:] = v
    out = ex.forward()[0].asnumpy()
    _same_bits(out, np.maximum(v * np.float32(2.0), np.float32(0)))
    assert bool(taken) == kernel_runs
