"""mx.np.unique (`_npi_unique`, value-dependent output shapes) and mx.np.histogram (`_histogram`): values
against numpy with MXNet 1.9.1's shapes, hybridized = imperative (a block holding a value-dependent op
runs op by op, sized anew at each call), gradients, and MXNet's errors."""
import numpy as onp
import pytest

import ember as mx
from ember import np
from ember.base import MXNetError
from ember.gluon import HybridBlock

from ._np_blocks import FnBlock

pytestmark = pytest.mark.usefixtures("np_semantics")

UNIQUE_CASES = [((), None), ((1,), -1), ((7,), 0), ((7,), None), ((6, 4), None), ((6, 4), 0), ((6, 4), -1),
                ((5, 3, 4), None), ((5, 3, 4), 1), ((5, 0, 4), None), ((0, 0, 0), None)]


def _numpy_unique(x, axis):
    """numpy's unique with MXNet 1.9.1's shapes: a 1-D inverse, 1-element results for a 0-d input, (0,)
    results for a zero-size one."""
    if x.ndim == 0:
        return [x.reshape(1), onp.array([0]), onp.array([0]), onp.array([1])]
    if x.size == 0:
        return [onp.zeros(0, x.dtype)] + [onp.zeros(0, onp.int64)] * 3
    res = onp.unique(x, True, True, True, axis=axis)
    return [res[0]] + [r.reshape(-1) for r in res[1:]]


def _data(shape, dtype, seed=0):
    # few distinct values (repeated rows too), so that every output has something to say
    rng = onp.random.RandomState(seed)
    return rng.randint(-2, 3, size=shape).astype(dtype)


@pytest.mark.parametrize("shape,axis", UNIQUE_CASES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "uint8", "int32", "int64"])
def test_unique_matches_numpy(shape, axis, dtype):
    x = _data(shape, dtype)
    got = np.unique(np.array(x, dtype=dtype), True, True, True, axis)
    want = _numpy_unique(x, axis)
    assert isinstance(got, tuple) and len(got) == 4
    assert got[0].dtype == onp.dtype(dtype) and all(g.dtype == onp.int64 for g in got[1:])
    for g, w in zip(got, want):
        assert g.shape == w.shape
        onp.testing.assert_array_equal(g.asnumpy(), w)


@pytest.mark.parametrize("flags", [(False, False, False), (True, False, False), (False, True, False),
                                   (False, False, True), (True, False, True)])
def test_unique_returns_what_is_asked(flags):
    x = _data((9,), "float32", seed=1)
    got = np.unique(np.array(x), *flags)
    want = [w for w, f in zip(_numpy_unique(x, None), (True,) + flags) if f]
    got = [got] if not isinstance(got, tuple) else list(got)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        onp.testing.assert_array_equal(g.asnumpy(), w)


def test_unique_reconstructs_and_keeps_nans_apart():
    x = onp.array([[3.0, onp.nan, 1.0], [onp.nan, 3.0, 3.0]], dtype="float32")
    u, inv = np.unique(np.array(x), return_inverse=True)
    assert u.shape == (4,) and onp.isnan(u.asnumpy()[-2:]).all()  # MXNet: NaNs are all distinct
    onp.testing.assert_array_equal(u.asnumpy()[inv.asnumpy()], x.reshape(-1))


@pytest.mark.parametrize("shape,axis", [c for c in UNIQUE_CASES if c[0] != ()])
@pytest.mark.parametrize("static_alloc", [False, True])
def test_unique_hybridized_equals_imperative(shape, axis, static_alloc):
    block = FnBlock(lambda F, a: F.np.unique(a, True, True, True, axis))
    block.hybridize(static_alloc=static_alloc)
    for seed in range(3):  # same input shape, other values: each call sized from its own values
        x = _data(shape, "float32", seed=seed)
        got = block(np.array(x))
        for g, w in zip(got, np.unique(np.array(x), True, True, True, axis)):
            assert g.shape == w.shape
            onp.testing.assert_array_equal(g.asnumpy(), w.asnumpy())


def test_unique_in_a_larger_hybridized_graph():
    class Net(HybridBlock):
        def hybrid_forward(self, F, x):
            u, counts = F.np.unique(x * 2, return_counts=True)
            return u + 1, counts

    net = Net()
    net.hybridize()
    x = onp.array([[1.0, 2.0], [2.0, 5.0]], dtype="float32")
    u, counts = net(np.array(x))
    onp.testing.assert_array_equal(u.asnumpy(), [3.0, 5.0, 11.0])
    onp.testing.assert_array_equal(counts.asnumpy(), [1, 2, 1])
    # the traced graph is still the block's (export writes MXNet's op)
    assert '"_npi_unique"' in net._cached_graph[1].tojson()


def test_unique_graph_loaded_as_symbol_block_names_the_node(tmp_path):
    # a SymbolBlock has no Python code to run op by op: its executor refuses the graph, naming the node
    block = FnBlock(lambda F, a: F.np.unique(a * 2))
    block.hybridize()
    x = np.array([1.0, 2.0, 2.0])
    block(x)
    sym_file, _ = block.export(str(tmp_path / "uq"))
    loaded = mx.gluon.SymbolBlock.imports(sym_file, ["data"])
    with pytest.raises(MXNetError, match="_npi_unique"):
        loaded(x)


def test_unique_gradient_is_zero():
    x = np.array([[1.0, 2.0], [2.0, 3.0]])
    x.attach_grad()
    with mx.autograd.record():
        u = np.unique(x)
        y = (u * u).sum() + (x * 3).sum()
    y.backward()
    onp.testing.assert_array_equal(x.grad.asnumpy(), onp.full((2, 2), 3.0))


def test_unique_errors():
    with pytest.raises(MXNetError, match="Axis should be in the range"):
        np.unique(np.ones((2, 3)), axis=2)
    with pytest.raises(MXNetError, match="scalor tensor"):
        np.unique(np.array(1.0), axis=1)
    with pytest.raises(TypeError):
        np.unique([1, 2, 2])
    with pytest.raises(TypeError):
        np.unique(np.ones(3), axis=0.5)


def test_boolean_mask_hybridized_outside_autograd():
    # another value-dependent op: a hybridized block holding it runs op by op, recording or not
    class Mask(HybridBlock):
        def hybrid_forward(self, F, data, index):
            return F.contrib.boolean_mask(data, index) * 2 + 1

    block = Mask()
    block.hybridize()
    data = mx.nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    for index, rows in (([0, 1, 1], [1, 2]), ([1, 0, 0], [0])):
        got = block(data, mx.nd.array(index))
        onp.testing.assert_array_equal(got.asnumpy(), data.asnumpy()[rows] * 2 + 1)


# -- histogram ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (3, 4), (3, 0), (50,)])
def test_histogram_matches_numpy(shape):
    x = onp.random.RandomState(0).uniform(0.0, 10.0, size=shape).astype("float32")
    edges = onp.array([0.0, 1.0, 2.5, 4.0, 7.0, 10.0], dtype="float32")
    for bins, rng in ((20, (0.0, 10.0)), (4, (2.0, 6.0)), (np.array(edges), None)):
        counts, got_edges = np.histogram(np.array(x), bins=bins, range=rng)
        want, want_edges = onp.histogram(x, bins=bins if rng else edges, range=rng)
        assert counts.dtype == onp.int64
        onp.testing.assert_array_equal(counts.asnumpy(), want)
        onp.testing.assert_allclose(got_edges.asnumpy(), want_edges, rtol=1e-6)


def test_histogram_hybridized_equals_imperative():
    x = onp.random.RandomState(1).uniform(0.0, 10.0, size=(4, 5)).astype("float32")
    edges = np.array([0.0, 3.0, 5.0, 10.0])
    by_count = FnBlock(lambda F, a: F.np.histogram(a, bins=5, range=(0.0, 10.0)))
    by_edges = FnBlock(lambda F, a, b: F.np.histogram(a, bins=b))
    for block, args in ((by_count, (np.array(x),)), (by_edges, (np.array(x), edges))):
        want = block(*args)
        block.hybridize()
        got = block(*args)
        for g, w in zip(got, want):
            onp.testing.assert_array_equal(g.asnumpy(), w.asnumpy())


@pytest.mark.parametrize("kwargs,error", [
    ({"normed": True}, NotImplementedError), ({"weights": np.ones(3)}, NotImplementedError),
    ({"density": True}, NotImplementedError), ({"bins": 5}, NotImplementedError),
    ({"bins": [0.0, 1.0, 2.0]}, NotImplementedError), ({"bins": "auto"}, NotImplementedError),
    ({"bins": None}, ValueError)])
def test_histogram_errors_as_mxnet(kwargs, error):
    with pytest.raises(error):
        np.histogram(np.ones(3), **kwargs)
