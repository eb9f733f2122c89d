"""Symbolic backward through multi-output ops where some outputs get no gradient.

The gradient pass must hand such outputs a zero gradient (or None for hidden ones); these
graphs check the result against central finite differences and against mx.autograd.
"""
import numpy as np
import pytest

import ember as mx


def _split_middle_unused(F, x):
    parts = F.split(x, num_outputs=3, axis=1)  # output 1 is never read
    return F.sum(parts[0] * parts[2] + F.sin(parts[0]))


def _slicechannel_one_used(F, x):
    parts = F.SliceChannel(x, num_outputs=2, axis=0, name="sc")
    return F.sum(F.tanh(parts[1]) * 3)


def _topk_both_values_only(F, x):
    vals_idx = F.topk(x, k=2, axis=1, ret_typ="both")
    return F.sum(vals_idx[0] * vals_idx[0])  # the indices output gets no gradient


def _moments_var_only(F, x):
    mv = F.moments(x, axes=(1,))
    return F.sum(mv[1] * 2) + F.sum(F.square(x))  # the mean output gets no gradient


def _moments_mean_only(F, x):
    mv = F.moments(x, axes=(0,), keepdims=True)
    return F.sum(F.broadcast_mul(mv[0], x))


GRAPHS = [_split_middle_unused, _slicechannel_one_used, _topk_both_values_only,
          _moments_var_only, _moments_mean_only]


def _head_grads(exe):
    """Ones as the head gradient: the sums these graphs end in are not losses (MXNet requires it)."""
    return [mx.nd.ones(o.shape, dtype=o.dtype) for o in exe.outputs]


def _value(exe, x):
    exe.arg_dict["x"][:] = x
    return float(exe.forward(is_train=True)[0].asnumpy().sum())


@pytest.mark.parametrize("build", GRAPHS, ids=lambda f: f.__name__.strip("_"))
def test_gradient_matches_finite_differences(build, rng):
    sym = build(mx.sym, mx.sym.var("x"))
    x = rng.uniform(-1, 1, (4, 6))  # distinct values: topk's selection is stable under eps
    exe = sym.simple_bind(mx.cpu(), type_dict={"x": np.float64}, x=x.shape)
    _value(exe, x)
    exe.backward(_head_grads(exe))
    got = exe.grad_dict["x"].asnumpy()
    eps = 1e-6
    num = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += eps
        minus[idx] -= eps
        num[idx] = (_value(exe, plus) - _value(exe, minus)) / (2 * eps)
    np.testing.assert_allclose(got, num, rtol=1e-5, atol=1e-7)
    assert np.abs(got).sum() > 0  # the graph really depends on x


@pytest.mark.parametrize("build", GRAPHS, ids=lambda f: f.__name__.strip("_"))
def test_gradient_matches_autograd(build, rng):
    x = rng.uniform(-1, 1, (4, 6)).astype(np.float32)
    exe = build(mx.sym, mx.sym.var("x")).simple_bind(mx.cpu(), x=x.shape)
    exe.arg_dict["x"][:] = x
    out = exe.forward(is_train=True)[0].asnumpy()
    exe.backward(_head_grads(exe))
    xn = mx.nd.array(x)
    xn.attach_grad()
    with mx.autograd.record():
        y = build(mx.nd, xn)
    y.backward()
    np.testing.assert_allclose(out, y.asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), xn.grad.asnumpy(), rtol=1e-5, atol=1e-6)


def test_unused_output_gradient_with_grad_req_add(rng):
    """Accumulation works through a split whose middle output is unused."""
    x = rng.uniform(-1, 1, (4, 6))
    sym = _split_middle_unused(mx.sym, mx.sym.var("x"))
    exe = sym.simple_bind(mx.cpu(), grad_req="add", type_dict={"x": np.float64}, x=x.shape)
    ref = sym.simple_bind(mx.cpu(), type_dict={"x": np.float64}, x=x.shape)
    exe.grad_dict["x"][:] = 0.5
    for e in (exe, ref):
        e.arg_dict["x"][:] = x
    for _ in range(2):
        exe.forward(is_train=True)
        exe.backward(_head_grads(exe))
    ref.forward(is_train=True)
    ref.backward(_head_grads(ref))
    want = 0.5 + 2 * ref.grad_dict["x"].asnumpy()
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), want, rtol=1e-12)
    assert np.all(want[:, 2:4] == 0.5)  # the unused slice contributes nothing
