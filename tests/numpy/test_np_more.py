"""mx.np delete / insert / unravel_index / pad and npx.slice (ember/ops/np_more.py,
ember/numpy/functions_index.py): numpy's results imperatively and hybridized, gradients against finite
differences, MXNet's errors."""
import numpy as onp
import pytest

import ember as mx
from ember import autograd, np, npx
from ember.base import MXNetError

from ._np_blocks import FnBlock as _Fn


pytestmark = pytest.mark.usefixtures("np_semantics")


def _rand(shape, seed=0):
    return onp.random.RandomState(seed).uniform(-1, 1, shape)


def _check_grad(fn, inputs, eps=1e-6):
    """fn(F, *arrays) imperatively and hybridized: values agree; gradients of sum(out * head) agree with
    finite differences in float64."""
    xs = [np.array(v, dtype="float64") for v in inputs]
    out0 = fn(np, *xs)
    head = _rand(out0.shape, 7)
    for hyb in (False, True):
        blk = _Fn(fn)
        if hyb:
            blk.hybridize()
        xs = [np.array(v, dtype="float64") for v in inputs]
        for x in xs:
            x.attach_grad()
        with autograd.record():
            out = blk(*xs)
            loss = (out * np.array(head)).sum()
        loss.backward()
        onp.testing.assert_allclose(out.asnumpy(), out0.asnumpy())
        for k, v in enumerate(inputs):
            num = onp.zeros_like(v)
            for idx in onp.ndindex(v.shape):
                p = [onp.array(u, copy=True) for u in inputs]
                m = [onp.array(u, copy=True) for u in inputs]
                p[k][idx] += eps
                m[k][idx] -= eps
                fp = fn(np, *[np.array(u, dtype="float64") for u in p]).asnumpy()
                fm = fn(np, *[np.array(u, dtype="float64") for u in m]).asnumpy()
                num[idx] = ((fp - fm) * head).sum() / (2 * eps)
            onp.testing.assert_allclose(xs[k].grad.asnumpy(), num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape,obj,axis", [
    ((3, 4), 1, 1), ((3, 4), -3, 0), ((3, 4), slice(0, 3, 2), None), ((3, 4), slice(None, None, -2), 1),
    ((2, 3, 4), [0, 2, 2], 2), ((5,), [], None), ((2, 3), slice(5, 9), 0)])
def test_delete(shape, obj, axis):
    a = _rand(shape)
    want = onp.delete(a, obj, axis=axis)
    mobj = np.array(obj, dtype="int64") if isinstance(obj, list) else obj
    got = np.delete(np.array(a), mobj, axis=axis)
    assert got.shape == want.shape
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    _check_grad(lambda F, x: F.np.delete(x, mobj, axis=axis) if F is not np else np.delete(x, mobj, axis=axis),
                [a])


def test_delete_mxnet_index_rules():
    a = np.arange(6)
    # negative and too large positions in an index array are ignored (MXNet), an int out of range is not
    assert np.delete(a, np.array([-1, 1, 9], dtype="int64")).asnumpy().tolist() == [0, 2, 3, 4, 5]
    with pytest.raises(IndexError):
        np.delete(a, 6)
    with pytest.raises(TypeError):
        np.delete(a, 1.5)
    assert np.delete(np.array(onp.ones(())), 0).shape == (0,)


@pytest.mark.parametrize("shape,obj,vshape,axis", [
    ((3, 2), 1, (2,), None), ((3, 2), -6, (1,), None), ((3, 2), 3, (2, 2), 0), ((3, 2), 0, (3, 1), 0),
    ((3, 2), 2, (2, 3), 1), ((3, 2), [1], (3, 2), 1), ((3, 2), [2, 0, 2], (3, 1), 1),
    ((3, 2), slice(0, 3), (3, 1), 0), ((3, 2), slice(None, None, -1), (1,), 1), ((2, 2, 3), [1], (1,), 2)])
def test_insert(shape, obj, vshape, axis):
    a, v = _rand(shape, 1), _rand(vshape, 2)
    want = onp.insert(a, obj, v, axis=axis)
    mobj = np.array(obj, dtype="int64") if isinstance(obj, list) else obj
    got = np.insert(np.array(a), mobj, np.array(v), axis=axis)
    assert got.shape == want.shape
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    _check_grad(lambda F, x, y: (F.np if F is not np else np).insert(x, mobj, y, axis=axis), [a, v])


def test_insert_dtype_and_errors():
    a = np.array([[1, 2], [3, 4]], dtype="int32")
    got = np.insert(a, 1, np.array([7.9, -1.5]), axis=0)
    assert got.dtype == onp.int32
    assert got.asnumpy().tolist() == onp.insert(a.asnumpy(), 1, [7.9, -1.5], axis=0).tolist()
    assert np.insert(a, 0, 5).asnumpy().tolist() == [5, 1, 2, 3, 4]
    with pytest.raises(IndexError):
        np.insert(a, 3, np.array([1]), axis=0).asnumpy()
    with pytest.raises(MXNetError):
        np.insert(a, 0, np.ones((3,)), axis=0)


def test_insert_graph_from_shapeless_variables():
    a, v = mx.sym.var("a"), mx.sym.var("v")
    s = mx.sym._npi_insert_slice(a, v, start=0, stop=None, step=2, axis=1)
    _, outs, _ = s.infer_shape(a=(3, 4), v=(3, 1))
    assert outs == [(3, 6)]


@pytest.mark.parametrize("ishape,shape", [((), (3, 4)), ((5,), 20), ((2, 3), (2, 3, 4))])
def test_unravel_index(ishape, shape):
    idx = onp.random.RandomState(0).randint(0, int(onp.prod(shape)), size=ishape)
    want = onp.unravel_index(idx, shape)
    for hyb in (False, True):
        blk = _Fn(lambda F, x: F.np.unravel_index(x, shape))
        if hyb:
            blk.hybridize()
        got = blk(np.array(idx, dtype="int32"))
        assert got.dtype == onp.int64 and got.shape == (len(want),) + idx.shape
        for g, w in zip(got, want):
            assert g.asnumpy().tolist() == onp.asarray(w).tolist()
    with pytest.raises(ValueError):
        np.unravel_index(np.array([12], dtype="int32"), (3, 4)).asnumpy()


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "maximum", "minimum"])
@pytest.mark.parametrize("shape,pw", [((2, 3), ((2, 3), (1, 0))), ((1, 5), 2), ((3, 2, 2), ((0, 1), (3, 2), (1, 1)))])
def test_pad(mode, shape, pw):
    a = _rand(shape, 3)
    want = onp.pad(a, pw, mode=mode)
    got = np.pad(np.array(a), pw, mode=mode)
    onp.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)
    if mode in ("maximum", "minimum"):
        x = np.array(a)
        x.attach_grad()
        with pytest.raises(MXNetError):
            with autograd.record():
                y = np.pad(x, pw, mode=mode)
            y.backward()
            x.grad.asnumpy()
        return
    _check_grad(lambda F, x: (F.np if F is not np else np).pad(x, pw, mode=mode), [a])


def test_pad_args():
    a = np.ones((2, 2))
    assert np.pad(a, 1, constant_values=3).asnumpy()[0, 0] == 3
    with pytest.raises(ValueError):
        np.pad(a, 1, mode="edge", constant_values=3)
    with pytest.raises(ValueError):
        np.pad(a, -1)
    with pytest.raises(ValueError):
        np.pad(a, 1, mode="wrap")


@pytest.mark.parametrize("begin,end,step", [([], [], None), ([1], [4], None), ([10], [None], [-1]),
                                            ([1, 0, 3], [-2, 10, -4], [None, 2, 3])])
def test_npx_slice(begin, end, step):
    a = onp.arange(8 * 16 * 9, dtype="float64").reshape(8, 16, 9)
    key = tuple(slice(b, e, None if step is None else step[i]) for i, (b, e) in enumerate(zip(begin, end)))
    for hyb in (False, True):
        blk = _Fn(lambda F, x: F.npx.slice(x, begin, end, step))
        if hyb:
            blk.hybridize()
        x = np.array(a)
        x.attach_grad()
        with autograd.record():
            y = blk(x)
        y.backward()
        assert y.asnumpy().tolist() == a[key].tolist()
        g = onp.zeros_like(a)
        g[key] = 1
        assert x.grad.asnumpy().tolist() == g.tolist()
