"""mx.np functions composed from registry operators (ember/numpy/functions_more.py): values against
numpy, gradients against finite differences, and the same results from a hybridized block."""
import numpy as onp
import pytest

import ember as mx
from ember import np
from ember.gluon import HybridBlock

from ._np_blocks import FnBlock
from ._numeric import central_difference


def _fd_grad(f, x, eps=1e-3):
    """Central finite differences of sum(f(x) * w) for a fixed random w, and w."""
    w = onp.random.RandomState(1).uniform(-1, 1, f(x).shape)
    return central_difference(f, x, w, eps), w


CASES = [
    ("tensordot", lambda a: (a, onp.ones((4, 5)) * 0.5), {"axes": 2}, (3, 4, 5)),
    ("inner", lambda a: (a, onp.arange(5.0)), {}, (3, 5)),
    ("outer", lambda a: (a, onp.arange(3.0)), {}, (4,)),
    ("vdot", lambda a: (a, onp.arange(6.0).reshape(2, 3)), {}, (2, 3)),
    ("rot90", lambda a: (a,), {"k": 3, "axes": (1, 2)}, (2, 3, 4)),
    ("roll", lambda a: (a, (1, -2)), {"axis": (0, 1)}, (3, 4)),
    ("roll", lambda a: (a, 5), {}, (3, 4)),
    ("tril", lambda a: (a,), {"k": -1}, (2, 4, 5)),
    ("triu", lambda a: (a,), {"k": 1}, (4, 3)),
    ("trace", lambda a: (a,), {"offset": 1, "axis1": 1, "axis2": 2}, (2, 3, 4)),
    ("diagonal", lambda a: (a,), {"offset": -1}, (4, 3)),
    ("diagonal", lambda a: (a,), {"offset": 7}, (4, 3)),
    ("diag", lambda a: (a,), {"k": 1}, (3,)),
    ("diagflat", lambda a: (a,), {"k": -1}, (2, 2)),
    ("diff", lambda a: (a,), {"n": 2, "axis": 0}, (4, 3)),
    ("ediff1d", lambda a: (a,), {"to_begin": 2.0, "to_end": [1.0, 3.0]}, (2, 3)),
    ("polyval", lambda a: (onp.array([2.0, -1.0, 3.0]), a), {}, (5,)),
    ("average", lambda a: (a,), {"axis": 1, "weights": onp.array([1.0, 2.0, 3.0])}, (2, 3)),
    ("append", lambda a: (a, onp.ones((1, 3))), {"axis": 0}, (2, 3)),
    ("resize", lambda a: (a, (3, 5)), {}, (2, 3)),
    ("fliplr", lambda a: (a,), {}, (2, 3)),
    ("flipud", lambda a: (a,), {}, (2, 3)),
]


def _to_mx(v):
    if isinstance(v, onp.ndarray):
        return np.array(v, dtype=v.dtype)
    if isinstance(v, list) and v and isinstance(v[0], onp.ndarray):
        return [np.array(x, dtype=x.dtype) for x in v]
    return v


def _call_np(name, make, kwargs, x):
    args = make(x)
    kw = {k: (onp.asarray(v) if isinstance(v, onp.ndarray) else v) for k, v in kwargs.items()}
    return onp.asarray(getattr(onp, name)(*args, **kw), dtype=onp.float64)


@pytest.mark.parametrize("name,make,kwargs,shape", CASES, ids=[c[0] for c in CASES])
def test_values_and_gradient(name, make, kwargs, shape):
    rng = onp.random.RandomState(0)
    x = rng.uniform(-1, 1, shape)
    want = _call_np(name, make, kwargs, x)
    xm = np.array(x, dtype="float64")
    xm.attach_grad()
    with mx.autograd.record():
        args = [_to_mx(v) for v in make(xm.asnumpy())]
        # the differentiated operand is always the one built from x: put the recorded array there
        args = [xm if isinstance(v, np.ndarray) and v.shape == shape and onp.array_equal(v.asnumpy(), x) else v
                for v in args]
        kw = {k: _to_mx(v) for k, v in kwargs.items()}
        got = getattr(np, name)(*args, **kw)
        onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6, atol=1e-8)
        w_fd, w = _fd_grad(lambda v: _call_np(name, make, kwargs, v), x)
        got.backward(np.array(w, dtype="float64"))
    onp.testing.assert_allclose(xm.grad.asnumpy(), w_fd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("name,kw,shape", [
    ("tril", {"k": 1}, (3, 4)), ("roll", {"shift": 2, "axis": 1}, (2, 5)), ("rot90", {"k": 1}, (3, 4)),
    ("trace", {}, (3, 3)), ("diff", {"n": 1}, (2, 4)), ("around", {"decimals": 1}, (3,)),
    ("ediff1d", {"to_begin": 1.0}, (4,)), ("nan_to_num", {}, (3,)), ("diagonal", {"offset": 9}, (3, 3)),
])
def test_hybridized_matches_imperative(name, kw, shape):
    mx.npx.set_np()
    try:
        x = np.array(onp.random.RandomState(2).uniform(-3, 3, shape))
        outs = []
        for hybrid in (False, True):
            blk = FnBlock(lambda F, v: getattr(F.np, name)(v, **kw))
            if hybrid:
                blk.hybridize()
            outs.append(blk(x).asnumpy())
        onp.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)
        onp.testing.assert_allclose(outs[0], getattr(onp, name)(x.asnumpy(), **kw), rtol=1e-5, atol=1e-6)
    finally:
        mx.npx.reset_np()


@pytest.mark.parametrize("name,args", [("logspace", (0.0, 2.0, 5)), ("indices", ((2, 3),)), ("hanning", (7,)),
                                       ("hamming", (6,)), ("blackman", (5,))])
def test_creation_imperative_and_traced(name, args):
    want = getattr(onp, name)(*args)
    onp.testing.assert_allclose(getattr(np, name)(*args).asnumpy(), want, rtol=1e-5, atol=1e-6)

    class Add(HybridBlock):
        def hybrid_forward(self, F, x):
            return x + getattr(F.np, name)(*args)

    mx.npx.set_np()
    try:
        blk = Add()
        blk.hybridize()
        zero = np.zeros(want.shape, dtype=getattr(np, name)(*args).dtype)
        onp.testing.assert_allclose(blk(zero).asnumpy(), want, rtol=1e-5, atol=1e-6)
    finally:
        mx.npx.reset_np()


def test_misc_values():
    x = onp.array([onp.nan, onp.inf, -onp.inf, 1.5], dtype=onp.float32)
    onp.testing.assert_array_equal(np.nan_to_num(np.array(x)).asnumpy(), onp.nan_to_num(x))
    # MXNet's around divides integers by 10 per place, truncating (numpy's -1300 is MXNet's -1200)
    onp.testing.assert_array_equal(np.around(np.array([1234, 1250, -1251], dtype="int32"), -2).asnumpy(),
                                   [1200, 1200, -1200])
    onp.testing.assert_array_equal(np.bitwise_not(np.array([0, 5, -3], dtype="int32")).asnumpy(), [-1, -6, 2])
    onp.testing.assert_array_equal(np.invert(np.array([True, False], dtype="bool")).asnumpy(), [False, True])
    grids = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    for g, w in zip(grids, onp.meshgrid(onp.arange(3), onp.arange(4), indexing="ij")):
        onp.testing.assert_array_equal(g.asnumpy(), w)
    b = np.broadcast_arrays(np.ones((3, 1)), np.ones((4,)))
    assert [t.shape for t in b] == [(3, 4), (3, 4)]
    assert [i.asnumpy().tolist() for i in np.diag_indices_from(np.ones((3, 3)))] == [[0, 1, 2]] * 2


@pytest.mark.parametrize("name,shape", [("hstack", (2, 3)), ("hstack", (3,)), ("dstack", (2, 3)),
                                        ("column_stack", (3,)), ("column_stack", (3, 2))])
def test_joins_values_and_gradient(name, shape):
    x = onp.random.RandomState(3).uniform(-1, 1, shape)
    other = onp.ones(shape) * 2
    want = getattr(onp, name)([x, other])
    xm = np.array(x, dtype="float64")
    xm.attach_grad()
    with mx.autograd.record():
        got = getattr(np, name)([xm, np.array(other, dtype="float64")])
    onp.testing.assert_allclose(got.asnumpy(), want)
    g, w = _fd_grad(lambda v: getattr(onp, name)([v, other]), x)
    got.backward(np.array(w, dtype="float64"))
    onp.testing.assert_allclose(xm.grad.asnumpy(), g, rtol=1e-4, atol=1e-6)


def test_errors():
    with pytest.raises(ValueError):
        np.rot90(np.ones((2, 2)), axes=(0, 0))
    with pytest.raises(ValueError):
        np.tensordot(np.ones((2, 3)), np.ones((4, 3)), axes=([1], [0]))
    with pytest.raises(ValueError):
        np.diff(np.ones((3,)), n=-1)
    with pytest.raises(ValueError):
        np.roll(np.ones((3, 3)), (1, 2, 3), axis=(0, 1))
    with pytest.raises(TypeError):
        np.bitwise_not(np.ones((2,)))
    with pytest.raises(NotImplementedError):
        np.sin(np.ones((2,)), where=False)
    with pytest.raises(TypeError):
        np.add(np.ones((2,)), 1, dtype="abcdefg")
    with pytest.raises(NotImplementedError):
        np.add(np.ones((2,)), 1, casting="safe")
    with pytest.raises(TypeError):
        np.add(np.ones((2,)), 1, casting="mxnet")


def test_null_grad_req_has_no_gradient():
    x = np.ones((2,))
    x.attach_grad(grad_req="null")
    assert x.grad is None
