"""reset_arrays, multi_all_finite, all_finite and _square_sum against numpy (semantics checked
with MXNet 1.9.1: init_output=False keeps a finite check's output, integer inputs are refused)."""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
from _gradcheck import check_grad, run  # noqa: E402

import ember as mx  # noqa: E402
from ember import nd, ops  # noqa: E402
from ember.base import DTypeError, MXNetError, OperatorError  # noqa: E402

rng = np.random.default_rng(7)


# -- reset_arrays ---------------------------------------------------------------------------------------
def test_reset_arrays_zeros_every_input_in_place_and_returns_nothing():
    arrays = [nd.array(rng.standard_normal((2, 3)).astype(np.float32)),
              nd.array(rng.standard_normal(5).astype(np.float16), dtype=np.float16),
              nd.array(np.arange(1, 7, dtype=np.int32).reshape(3, 2), dtype=np.int32)]
    keep = nd.array(np.ones(4, np.float32))
    assert nd.reset_arrays(*arrays, num_arrays=3) == []
    for a in arrays:
        assert a.asnumpy().dtype == a.dtype and not a.asnumpy().any()
    np.testing.assert_array_equal(keep.asnumpy(), np.ones(4))


def test_reset_arrays_is_ordered_after_pending_writes_and_before_reads():
    a = nd.array(rng.standard_normal((64, 64)).astype(np.float32))
    b = nd.dot(a, a)  # pending work writing b
    nd.reset_arrays(b, num_arrays=1)
    c = b + 1
    np.testing.assert_array_equal(c.asnumpy(), np.ones((64, 64)))


def test_reset_arrays_kernel_matches_numpy_zeros():
    xs = [rng.standard_normal((3, 2)), rng.standard_normal(4).astype(np.float32)]
    ops.get("reset_arrays").kernel("cpu")(None, {"num_arrays": 2}, xs, [], [])
    assert all(not x.any() for x in xs)


def test_reset_arrays_errors():
    a = nd.ones(3)
    with pytest.raises(MXNetError, match="reset_arrays"):
        nd.reset_arrays(a, a, num_arrays=3)  # MXNet: "expects 3 inputs, but got 2"
    with pytest.raises(OperatorError, match="num_arrays must be >= 1"):
        nd.reset_arrays(num_arrays=0)
    with pytest.raises(OperatorError, match="num_arrays"):
        ops.get("reset_arrays").parse_attrs({})  # required, as in MXNet


# -- multi_all_finite / all_finite ----------------------------------------------------------------------
def _flag(arrays):
    return float(all(np.isfinite(a).all() for a in arrays))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("bad", [None, np.inf, -np.inf, np.nan])
def test_multi_all_finite_against_numpy(dtype, bad):
    arrays = [rng.standard_normal(s).astype(dtype) for s in [(3, 4), (5,), (2, 2, 2)]]
    if bad is not None:
        arrays[1][3] = bad
    out = run("multi_all_finite", arrays, {"num_arrays": 3})
    assert out.dtype == np.float32 and out.shape == (1,)
    assert out.tolist() == [_flag(arrays)]
    got = nd.multi_all_finite(*[nd.array(a, dtype=dtype) for a in arrays], num_arrays=3)
    assert got.asnumpy().tolist() == [_flag(arrays)]
    single = nd.all_finite(nd.array(arrays[1], dtype=dtype))
    assert single.dtype == np.float32 and single.asnumpy().tolist() == [_flag(arrays[1:2])]


def test_init_output_false_ands_into_the_existing_flag():
    ok, bad = nd.array([1.0, 2.0]), nd.array([1.0, np.nan])
    out = nd.array([5.0])
    nd.multi_all_finite(ok, ok, num_arrays=2, init_output=False, out=out)
    assert out.asnumpy().tolist() == [5.0]  # a finite check leaves the output as it was (MXNet)
    nd.multi_all_finite(ok, bad, num_arrays=2, init_output=False, out=out)
    assert out.asnumpy().tolist() == [0.0]
    nd.multi_all_finite(ok, ok, num_arrays=2, init_output=False, out=out)
    assert out.asnumpy().tolist() == [0.0]  # chunks AND into one flag (AMP's loss scaler)
    nd.multi_all_finite(ok, ok, num_arrays=2, out=out)
    assert out.asnumpy().tolist() == [1.0]
    flag = nd.array([3.0])
    nd.all_finite(ok, init_output=False, out=flag)
    assert flag.asnumpy().tolist() == [3.0]
    nd.all_finite(bad, init_output=False, out=flag)
    assert flag.asnumpy().tolist() == [0.0]


def test_empty_arrays_are_finite():
    assert run("multi_all_finite", [np.zeros((0, 3), np.float32)], {"num_arrays": 1}).tolist() == [1.0]


def test_finite_checks_refuse_integers_and_mixed_dtypes():
    with pytest.raises(DTypeError, match="only floating-point arrays.*int32"):
        nd.all_finite(nd.array([1, 2], dtype=np.int32))
    with pytest.raises(DTypeError, match="input 1 is float16 but input 0 is float32"):
        nd.multi_all_finite(nd.ones(2), nd.ones(2, dtype=np.float16), num_arrays=2)


def test_multi_all_finite_in_symbols():
    s = mx.sym.multi_all_finite(mx.sym.var("a"), mx.sym.var("b"), num_arrays=2)
    assert s.list_arguments() == ["a", "b"]
    _, out_shapes, _ = s.infer_shape(a=(2, 3), b=(4,))
    assert out_shapes == [(1,)]
    exe = s.bind(mx.cpu(), {"a": nd.array(np.ones((2, 3))), "b": nd.array([1.0, np.inf, 0.0, 2.0])})
    assert exe.forward()[0].asnumpy().tolist() == [0.0]


# -- _square_sum ---------------------------------------------------------------------------------------
CASES = [({}, None, False), ({"axis": 1}, (1,), False), ({"axis": (0, 2)}, (0, 2), False),
         ({"axis": -1, "keepdims": True}, (2,), True), ({"axis": 1, "exclude": True}, (0, 2), False)]


@pytest.mark.parametrize("attrs,axes,keep", CASES)
def test_square_sum_against_numpy(attrs, axes, keep):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    want = np.sum(x.astype(np.float64) ** 2, axis=axes, keepdims=keep)
    want = np.asarray(want).reshape(want.shape if np.ndim(want) else (1,))
    out = run("_square_sum", [x], attrs)
    assert out.dtype == np.float32 and out.shape == want.shape
    np.testing.assert_allclose(out, want, rtol=1e-5)
    np.testing.assert_allclose(nd._internal._square_sum(nd.array(x), **attrs).asnumpy(), want, rtol=1e-5)


@pytest.mark.parametrize("attrs,axes,keep", CASES)
def test_square_sum_gradient(attrs, axes, keep):
    check_grad("_square_sum", [rng.standard_normal((2, 3, 4))], attrs)


def test_square_sum_mxnet_doc_example_and_autograd():
    dns = np.array([[0, 0], [1, 2], [0, 0], [3, 4], [0, 0]], np.float32)
    assert nd._internal._square_sum(nd.array(dns), axis=1).asnumpy().tolist() == [0, 5, 0, 25, 0]
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    x.attach_grad()
    with mx.autograd.record():
        y = nd._internal._square_sum(x, axis=1)
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * x.asnumpy())
