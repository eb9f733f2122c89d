"""mx.np.nonzero, mx.np.flatnonzero, one-argument mx.np.where and mx.npx.nonzero (the registry's
_npx_nonzero, whose row count depends on the values): numpy's indices, imperative and hybridized."""
import threading

import numpy as np
import pytest

import ember as mx
from ember import engine
from ember import np as mnp
from ember import npx

from ._np_blocks import FnBlock

pytestmark = pytest.mark.usefixtures("np_semantics")


def _rows(v):
    """numpy 1.x's transpose(nonzero(v)) (a 0-d v as its 1-d view)."""
    return np.argwhere(np.atleast_1d(v) if v.ndim == 0 else v)


@pytest.mark.parametrize("shape", [(), (7,), (3, 4), (2, 3, 4), (1, 0), (0, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64", "bool"])
def test_indices_equal_numpy(shape, dtype):
    rng = np.random.default_rng(abs(hash((shape, dtype))) % 2**32)
    v = (rng.integers(-1, 2, size=shape) * rng.random(shape)).astype(dtype)
    x = mnp.array(v, dtype=dtype)
    rows = npx.nonzero(x)
    assert rows.dtype == np.int64 and rows.shape == _rows(v).shape
    np.testing.assert_array_equal(rows.asnumpy(), _rows(v))
    if v.ndim:
        for got, want in zip(mnp.nonzero(x), np.nonzero(v)):
            assert got.dtype == np.int64
            np.testing.assert_array_equal(got.asnumpy(), want)
        for got, want in zip(mnp.where(x), np.nonzero(v)):
            np.testing.assert_array_equal(got.asnumpy(), want)
    np.testing.assert_array_equal(mnp.flatnonzero(x).asnumpy(), np.flatnonzero(v))


def test_hybridized_blocks_run_op_by_op_and_resize_each_call():
    nz = FnBlock(lambda F, x: F.npx.nonzero(x))
    tup = FnBlock(lambda F, x: F.np.nonzero(x * 2))
    nz.hybridize()
    tup.hybridize()
    for v in (np.array([[0, 1.5, 0], [2, 0, 3]], np.float32), np.array([[0, 0, 0], [0, 0, 4]], np.float32),
              np.zeros((2, 3), np.float32)):
        x = mnp.array(v)
        np.testing.assert_array_equal(nz(x).asnumpy(), _rows(v))
        for got, want in zip(tup(x), np.nonzero(v)):
            np.testing.assert_array_equal(got.asnumpy(), want)


def test_reads_the_values_after_a_pending_write():
    x = mnp.zeros((4,))
    gate = threading.Event()
    data = x._data

    def write():
        gate.wait(10)
        data[2] = 5.0
    engine.push(write, write=[x._chunk.var], name="late_write")  # (np arrays: .var is the variance)
    threading.Timer(0.05, gate.set).start()
    np.testing.assert_array_equal(npx.nonzero(x).asnumpy(), [[2]])


def test_recorded_use_gives_no_gradient_to_indices():
    x = mnp.array([[1.0, 0.0], [0.0, 2.0]])
    x.attach_grad()
    with mx.autograd.record():
        y = (x * npx.nonzero(x).astype("float32").sum()).sum()
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), np.full((2, 2), 2.0))  # d/dx of x * const


def test_where_needs_both_or_neither():
    with pytest.raises(ValueError, match="both or neither"):
        mnp.where(mnp.ones((2,)), mnp.ones((2,)))
    with pytest.raises(TypeError, match="mx.np.ndarray"):
        npx.nonzero([1, 0, 2])
