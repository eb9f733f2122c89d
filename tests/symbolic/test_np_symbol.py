"""np symbols (`mx.sym.np._Symbol`): the mx.np function library builds graphs on them, with shapes and
dtypes inferred per node; the graphs compute what the same functions compute on arrays."""
import numpy as np
import pytest

import ember as mx
from ember.base import MXNetError
from ember.symbolic import np_symbol


def _np_var(name, shape, dtype="float32"):
    v = np_symbol.as_np(mx.sym.var(name))
    np_symbol.describe(v, shape, dtype)
    return v


def _run(sym, **inputs):
    used = set(sym.list_arguments())
    ex = sym.as_nd_ndarray().bind(mx.cpu(), {k: mx.nd.array(v, dtype=v.dtype) for k, v in inputs.items()
                                             if k in used})
    return ex.forward()[0].asnumpy()


def test_functions_and_operators_on_np_symbols_match_numpy():
    rs = np.random.RandomState(0)
    a, b = rs.randn(3, 4).astype(np.float32), rs.randn(4).astype(np.float32)
    x, y = _np_var("x", (3, 4)), _np_var("y", (4,))
    cases = [
        (x + y * 2, a + b * 2),                       # numpy broadcasting of (3, 4) with (4,)
        (mx.np.dot(x, y), a @ b),                     # matrix . vector: shape (3,)
        (mx.np.sum(x, axis=0) - 1, a.sum(axis=0) - 1),
        (x.T.reshape(-1), a.T.reshape(-1)),
        (mx.np.mean(x), np.float32(a.mean())),        # a 0-d result
        (x[1:, ::2], a[1:, ::2]),
        (x[-1], a[-1]),
        (x[None, ..., 1], a[None, ..., 1]),
        (mx.np.concatenate(mx.np.split(x, 2, axis=1)[::-1], axis=1), np.concatenate(np.split(a, 2, axis=1)[::-1], 1)),
        (mx.np.where(x > 0, x, 0.5), np.where(a > 0, a, 0.5)),
    ]
    for sym, want in cases:
        assert type(sym) is np_symbol._Symbol
        assert sym.shape == np.shape(want)
        np.testing.assert_allclose(_run(sym, x=a, y=b), want, rtol=1e-5, atol=1e-6)


def test_dtypes_follow_mx_np_rules():
    i = _np_var("i", (2,), "int32")
    f = _np_var("f", (2,), "float32")
    assert (i + f).dtype == np.float32          # int with float gives that float (MXNet's rule)
    assert (i > 1).dtype == np.bool_
    assert (i / 2).dtype == np.float32          # true division of integers
    out = _run(i + f, i=np.array([1, 2], np.int32), f=np.array([0.5, 0.25], np.float32))
    np.testing.assert_allclose(out, [1.5, 2.25])


def test_multi_output_symbols_index_outputs():
    x = _np_var("x", (4, 2))
    parts = np_symbol.as_np(mx.sym.split(x.as_nd_ndarray(), num_outputs=2, axis=0))
    assert len(parts) == 2 and type(parts[1]) is np_symbol._Symbol and parts[1].shape == (2, 2)


def test_unknown_shape_is_a_clear_error_and_dtype_is_none():
    w = np_symbol.as_np(mx.sym.var("w", shape=(0, 3)))  # 0: not known yet (a deferred parameter)
    assert w.ndim == 2
    with pytest.raises(MXNetError, match="shape of symbol 'w' is not known while tracing"):
        w.shape
    assert np_symbol.as_np(mx.sym.var("v")).dtype is None


def test_arrays_cannot_join_a_traced_graph():
    with pytest.raises(TypeError, match="every array operand must be a symbol"):
        mx.np.add(_np_var("x", (2,)), mx.np.ones((2,)))


def test_sym_np_creation_builds_nodes():
    x = _np_var("x", (2, 3))
    z = mx.sym.np.zeros((2, 3)) + mx.sym.np.ones_like(x) + mx.sym.np.arange(3)
    np.testing.assert_allclose(_run(z, x=np.zeros((2, 3), np.float32)), np.ones((2, 3)) + np.arange(3))
    assert mx.sym.np.tanh is mx.np.tanh and mx.nd.np is mx.np and mx.nd.npx is mx.npx


def test_legacy_symbol_converts_both_ways_without_copying():
    x = mx.sym.var("x")
    assert x.as_nd_ndarray() is x  # already a legacy symbol
    y = x.as_np_ndarray()
    assert type(y) is np_symbol._Symbol and y._outputs == x._outputs
    out = (y * 2).as_nd_ndarray()
    ex = out.bind(mx.cpu(), {"x": mx.nd.array([1.0, -3.0])})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), [2.0, -6.0])
