"""mx.np.arctan2 / hypot / copysign / ldexp / lcm / bitwise_and/or/xor against numpy, with gradients
checked by finite differences, imperative and hybridized."""
import numpy as onp
import pytest

import ember as mx
from ember import np
from ember.base import MXNetError

from ._np_blocks import FnBlock


pytestmark = pytest.mark.usefixtures("np_semantics")


_REF = {"ldexp": lambda u, v: u * onp.exp2(v)}  # numpy's ldexp takes integer exponents only


def _fd_grads(name, a, b, eps=1e-6):
    """Finite-difference gradients of sum(numpy's name(a, b)) in float64."""
    f = lambda u, v: _REF.get(name, getattr(onp, name))(u, v).sum()  # noqa: E731
    ga, gb = onp.zeros_like(a), onp.zeros_like(b)
    for arr, g in ((a, ga), (b, gb)):
        for i in onp.ndindex(arr.shape):
            old = arr[i]
            arr[i] = old + eps
            hi = f(a, b)
            arr[i] = old - eps
            lo = f(a, b)
            arr[i] = old
            g[i] = (hi - lo) / (2 * eps)
    return ga, gb


@pytest.mark.parametrize("name", ["arctan2", "hypot", "copysign", "ldexp"])
@pytest.mark.parametrize("shapes", [((3, 2), (3, 2)), ((2, 3, 4), (3, 1)), ((2, 3), ()), ((0, 2), (1, 2))])
@pytest.mark.parametrize("hybridize", [False, True])
def test_float_binary_values_and_gradients(name, shapes, hybridize):
    rng = onp.random.RandomState(0)
    a = onp.asarray(rng.uniform(-1, 1, shapes[0]) + 0.1, dtype=onp.float64)
    b = onp.asarray(rng.uniform(-1, 1, shapes[1]) + 0.1, dtype=onp.float64)
    if name == "ldexp":
        b = onp.asarray(onp.round(b * 3))
    blk = FnBlock(lambda F, u, v: getattr(F.np, name)(u, v))
    if hybridize:
        blk.hybridize()
    x, y = np.array(a, dtype=onp.float64), np.array(b, dtype=onp.float64)
    x.attach_grad()
    y.attach_grad()
    with mx.autograd.record():
        out = blk(x, y)
    out.backward()
    want = getattr(onp, name)(a, b.astype(onp.int64) if name == "ldexp" else b)
    onp.testing.assert_allclose(out.asnumpy(), want, rtol=1e-10)
    ga, gb = _fd_grads(name, a, b)
    onp.testing.assert_allclose(x.grad.asnumpy(), ga, rtol=1e-5, atol=1e-7)
    if name != "copysign":
        onp.testing.assert_allclose(y.grad.asnumpy(), gb, rtol=1e-5, atol=1e-7)
    else:
        assert not y.grad.asnumpy().any()  # numpy's copysign is flat in x2 away from 0


@pytest.mark.parametrize("name", ["lcm", "bitwise_and", "bitwise_or", "bitwise_xor"])
def test_integer_binary(name):
    rng = onp.random.RandomState(1)
    a = rng.randint(-100, 100, (3, 2)).astype(onp.int32)
    b = rng.randint(-100, 100, (3, 1)).astype(onp.int32)
    for hybridize in (False, True):
        blk = FnBlock(lambda F, u, v: getattr(F.np, name)(u, v))
        if hybridize:
            blk.hybridize()
        onp.testing.assert_array_equal(blk(np.array(a, dtype=onp.int32), np.array(b, dtype=onp.int32)).asnumpy(),
                                       getattr(onp, name)(a, b))
    onp.testing.assert_array_equal(getattr(np, name)(np.array(a, dtype=onp.int32), 6).asnumpy(),
                                   getattr(onp, name)(a, 6).astype(onp.int32))
    assert getattr(np, name)(5, 3) == getattr(onp, name)(5, 3)


def test_ldexp_integers_and_errors():
    a = onp.array([[1, 2], [3, 4]], dtype=onp.int32)
    b = onp.array([2, 3], dtype=onp.int32)
    r = np.ldexp(np.array(a, dtype=onp.int32), np.array(b, dtype=onp.int32))
    assert r.dtype == onp.int32
    onp.testing.assert_array_equal(r.asnumpy(), a * 2 ** b)
    with pytest.raises(MXNetError):
        np.arctan2(np.array(a, dtype=onp.int32), np.array(b, dtype=onp.int32))
    with pytest.raises(MXNetError):
        np.bitwise_and(np.ones((2,)), np.ones((2,)))
    with pytest.raises(NotImplementedError):
        np.hypot(np.ones((2,)), np.ones((2,)), where=False)
    with pytest.raises(MXNetError):
        np.copysign(np.ones((2,)), np.ones((3,)))
    out = np.empty((2,))
    np.hypot(np.array([3.0, 5.0]), np.array([4.0, 12.0]), out=out)
    onp.testing.assert_allclose(out.asnumpy(), [5.0, 13.0])
